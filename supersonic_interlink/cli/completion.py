"""``./supersonic completion bash|zsh``: the script shtab makes from the verb table and every verb's ``parser()``."""

from __future__ import annotations

import argparse

import shtab

from supersonic_interlink.cli import main as cli_main
from supersonic_interlink.cli.args import Parser

INSTALL = """install (the directories may not exist on a fresh HOME):
  bash: mkdir -p ~/.local/share/bash-completion/completions
        ./supersonic completion bash > ~/.local/share/bash-completion/completions/supersonic
  zsh:  mkdir -p ~/.zfunc && ./supersonic completion zsh > ~/.zfunc/_supersonic
        and in ~/.zshrc, before compinit: fpath=(~/.zfunc $fpath); autoload -Uz compinit && compinit
  either, for this shell only: source <(./supersonic completion bash)   (or zsh)"""


def parser() -> Parser:
    parser = Parser(
        prog="./supersonic completion",
        description="Print a completion script for the front door.",
        epilog=INSTALL,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=("bash", "zsh"), help="the shell the script is for")
    return parser


def tree() -> argparse.ArgumentParser:
    """The whole command line as one argparse tree: every verb's own parser under the verb table."""
    root, verbs = cli_main.root()
    for name in cli_main.VERBS:
        verb = cli_main.verb(name)
        verbs.choices[name] = verb_parser = verb.parser()
        # A form the verb reads before its parser, whose first word is a stack (probe report FILE).
        sub_verbs = getattr(verb, "SUB_VERBS", {})
        if sub_verbs:
            subs = verb_parser.add_subparsers(dest="sub_verb")
            for sub, build in sub_verbs.items():
                subs.add_parser(sub, help=sub)
                subs.choices[sub] = build()
    return root


def main(argv: list[str]) -> int:
    print(shtab.complete(tree(), shell=parser().parse_args(argv).shell), end="")
    return 0
