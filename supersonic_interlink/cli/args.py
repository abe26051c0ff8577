"""What the verbs' parsers share: the one usage error every verb gives, argument types that refuse an empty path or
name, and the stack positional with its shell completion."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

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
"""Shell completion of a stack name (shtab's ``.complete`` form): the stack files under ``stacks/`` of the directory
completion runs in, read at each completion, so a new stack completes without a new script."""


class Parser(argparse.ArgumentParser):
    """Every verb's parser: a usage error is one line on stderr that names the argument, the value and what is allowed,
    and the exit code is 2, instead of argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog.removeprefix('./supersonic ')}: {message} (see `{self.prog} --help`)\n")


def add_stack(parser: argparse.ArgumentParser, help: str, metavar: str | None = None) -> argparse.Action:
    """The stack positional, completed from ``stacks/``."""
    action = parser.add_argument("stack", metavar=metavar, help=help)
    action.complete = STACKS_COMPLETE  # type: ignore[attr-defined]
    return action


def path(text: str) -> Path:
    """A path argument: ``Path("")`` would silently mean the current directory."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: expected a path")
    return Path(text)


def name(text: str) -> str:
    """A name argument (a stack to filter by): empty would match nothing and report nothing."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: expected a name")
    return text


def unknown_stack(stack: str) -> str | None:
    """Why ``stack`` names no stack file here (the Pulumi CLI's name rule first), or None when it does."""
    try:
        check_stack_name(stack)
    except ConfigError as error:
        return error.problems[0]
    if stack not in stack_names():
        return f"no stack {stack!r}; stacks: {', '.join(stack_names())}"
    return None
