"""``./supersonic completion bash|zsh``: a completion script for the front door, made by shtab from the parsers.

The script offers what the parsers take today: the verb table in ``cli/main.py``, each verb's parser (its ``parser()``)
with its sub-verbs, options and choices; stack names are read from ``stacks/`` at each completion.
The commands that install it are the verb's ``--help`` (``INSTALL``).
"""

from __future__ import annotations

import argparse
import importlib

import shtab

from supersonic_interlink.cli import args as args_
from supersonic_interlink.cli import main as cli_main

SHELLS = ("bash", "zsh")
INSTALL = """install (the directories may not exist on a fresh HOME):
  bash: mkdir -p ~/.local/share/bash-completion/completions
        ./supersonic completion bash > ~/.local/share/bash-completion/completions/supersonic
  zsh:  mkdir -p ~/.zfunc && ./supersonic completion zsh > ~/.zfunc/_supersonic
        and in ~/.zshrc, before compinit: fpath=(~/.zfunc $fpath); autoload -Uz compinit && compinit
  either, for this shell only: source <(./supersonic completion bash)   (or zsh)"""


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic completion",
        description=__doc__.split("\n\n")[0],
        epilog=INSTALL,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell the script is for")
    return parser


def tree() -> args_.Parser:
    """The whole command line as one argparse tree: every verb's own parser under the verb table."""
    root = args_.Parser(prog="supersonic", description="The project's one front door.")
    verbs = root.add_subparsers(dest="verb", metavar="VERB")
    for verb, (module_name, text) in cli_main.VERBS.items():
        module = importlib.import_module(module_name)
        verbs.add_parser(verb, help=text)
        verbs.choices[verb] = verb_parser = module.parser()
        # A sub-verb the verb reads before its parser, whose first word is a stack (probe report FILE).
        sub_verbs = getattr(module, "SUB_VERBS", {})
        if sub_verbs:
            subs = verb_parser.add_subparsers(dest="sub_verb")
            for sub, build in sub_verbs.items():
                subs.add_parser(sub, help=sub)
                subs.choices[sub] = build()
    for verb, text in cli_main.FRONT_DOOR_ONLY.items():
        verbs.add_parser(verb, help=text, add_help=False)
    return root


def script(shell: str) -> str:
    return shtab.complete(tree(), shell=shell)


def main(argv: list[str]) -> int:
    print(script(parser().parse_args(argv).shell), end="")
    return 0
