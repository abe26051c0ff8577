"""What the verbs share: the parser whose usage error is one line with exit 2, the verb record, the argument types
that refuse an empty or unknown value, and the stack positional with its shell completion."""

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
from supersonic_interlink.config.stack_config import check_stack_name, stack_names

STACKS_COMPLETE = {
    "bash": "_supersonic_stacks",
    "zsh": "_supersonic_stacks",
    "preamble": {
        "bash": '_supersonic_stacks() {\n  local f\n  for f in stacks/Pulumi.*.yaml; do [ -e "$f" ] || continue; '
        'f=${f#stacks/Pulumi.}; compgen -W "${f%.yaml}" -- "$1"; done\n}',
        "zsh": "_supersonic_stacks() {\n  local -a stacks\n  stacks=(stacks/Pulumi.*.yaml(N:t:r))\n"
        "  compadd -- ${stacks#Pulumi.}\n}",
    },
}
"""shtab's ``.complete`` for a stack: the files under ``stacks/`` read at each completion, so a new stack completes."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog.removeprefix('./supersonic ')}: {message} (see `{self.prog} --help`)\n")


@dataclass(frozen=True)
class Verb:
    """A verb: its parser (completion reads it), what it refuses across arguments, and its package's work."""

    name: str
    arguments: Callable[[Parser], object]
    run: Callable[[argparse.Namespace], int]
    problem: Callable[[argparse.Namespace], str | None] = lambda args: None

    def parser(self) -> Parser:
        return parser_of(self.name, self.arguments)

    def main(self, argv: list[str]) -> int:
        parser = self.parser()
        args = parser.parse_args(argv)
        why = self.problem(args)
        if why:
            parser.error(why)
        return self.run(args)


def parser_of(verb: str, arguments: Callable[[Parser], object]) -> Parser:
    """``verb``'s parser: ``arguments`` adds them, and its docstring is the description, then ``example: ...``."""
    description, _, example = (inspect.getdoc(arguments) or "").partition("\n\nexample: ")
    parser = Parser(prog=f"./supersonic {verb}", description=description, epilog=f"example: {example}")
    arguments(parser)
    return parser


def calls(target: str) -> Callable[[argparse.Namespace], int]:
    """``target`` (``module:function`` of the verb's package) called with the arguments, imported when the verb runs."""
    return lambda args: pkgutil.resolve_name(target)(**vars(args))


def given(allowed: str, kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argument type that refuses an empty value (``Path("")`` would mean the current directory)."""

    def parse(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"is empty: expected {allowed}")
        return kind(text)

    return parse


path = given("a path", Path)
name = given("a name", str)
ref = given("a branch, a tag or a commit", str)


def chart_dir(text: str) -> Path:
    if not (path(text) / "Chart.yaml").is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a chart directory (no Chart.yaml in it)")
    return Path(text)


def known_stack(stack: str) -> str:
    """A stack with a file under ``stacks/``, named by the Pulumi CLI's rule."""
    try:
        check_stack_name(stack)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(error.problems[0]) from None
    if stack not in stack_names():
        raise argparse.ArgumentTypeError(f"no stack {stack!r}; stacks: {', '.join(stack_names())}")
    return stack


def add_stack(parser: argparse.ArgumentParser, help: str, **kwargs: object) -> None:
    action = parser.add_argument("stack", help=help, **kwargs)  # type: ignore[arg-type]
    action.complete = STACKS_COMPLETE  # type: ignore[attr-defined]
