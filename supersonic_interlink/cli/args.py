"""What the verbs share: the parser whose usage error is one line with exit 2, the verb record, the argument types
that refuse an empty or unknown value, and the stack positional."""

from __future__ import annotations

import argparse
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.stack_config import stack_file, stack_names


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog.removeprefix('./supersonic ')}: {message} (see `{self.prog} --help`)\n")


@dataclass(frozen=True)
class Verb:
    """A verb: the function adding its arguments (its docstring the help), what it refuses across them, and what runs
    it: a ``module:function`` called with the arguments, imported when the verb runs."""

    name: str
    arguments: Callable[[Parser], object]
    run: str | Callable[[argparse.Namespace], int]
    problem: Callable[[argparse.Namespace], str | None] = lambda args: None

    def parser(self) -> Parser:
        parser = Parser(prog=f"./supersonic {self.name}", description=inspect.getdoc(self.arguments))
        self.arguments(parser)
        return parser

    def main(self, argv: list[str]) -> int:
        parser = self.parser()
        args = parser.parse_args(argv)
        if why := self.problem(args):
            parser.error(why)
        if isinstance(self.run, str):
            return int(pkgutil.resolve_name(self.run)(**vars(args)))
        return self.run(args)


def given(allowed: str, kind: Callable[[str], Any] = str) -> Callable[[str], Any]:
    """An argument type that refuses an empty value (``Path("")`` would mean the current directory)."""

    def parse(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"is empty: expected {allowed}")
        return kind(text)

    return parse


path, name, ref = given("a path", Path), given("a name"), given("a branch, a tag or a commit")


def chart_dir(text: str) -> Path:
    if not (path(text) / "Chart.yaml").is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a chart directory (no Chart.yaml in it)")
    return Path(text)


def known_stack(stack: str) -> str:
    """A stack with a file under ``stacks/``, named by the Pulumi CLI's rule."""
    try:
        found = stack_file(stack).is_file()
    except ConfigError as error:
        raise argparse.ArgumentTypeError(error.problems[0]) from None
    if not found:
        raise argparse.ArgumentTypeError(f"no stack {stack!r}; stacks: {', '.join(stack_names())}")
    return stack


def add_stack(parser: argparse.ArgumentParser, more: str = "", **kwargs: object) -> None:
    """The stack positional: its help lists the stacks, then ``more``."""
    parser.add_argument("stack", help=f"stack name ({', '.join(stack_names())}{more})", **kwargs)  # type: ignore[arg-type]
