"""``python -m supersonic_interlink <verb>``, behind ``./supersonic``: the verb table. A verb's parser and package load
only when it runs; the exit codes are the package's (``supersonic_interlink/__init__.py``)."""

from __future__ import annotations

import argparse
import os
import pkgutil
import sys
from typing import Any

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE
from supersonic_interlink.cli.args import Parser
from supersonic_interlink.config.rules import printable

VERBS: dict[str, tuple[str, str]] = {
    "render": ("verbs:RENDER", "render a stack offline and check it"),
    "diff": ("verbs:DIFF", "what a change deploys: the stack rendered at a base ref vs. now"),
    "stack": ("verbs:STACK", "write a new cluster's stack file from an existing one, and check it"),
    "takeover": ("verbs:TAKEOVER", "take a live release over from Flux (docs/takeover.md)"),
    "probe": ("probe", "measure a cold start through Envoy; wake history and report"),
    "state": ("state", "the S3 state bucket: bootstrap, check"),
    "cluster": ("verbs:CLUSTER", "local control plane on 127.0.0.1: start|stop|env|status"),
    "pulumi": ("verbs:PULUMI", "the real engine for a stack: preview|up|refresh|destroy|gate"),
    "drift": ("verbs:DRIFT", "what changed on the cluster outside Pulumi; --correct brings it back"),
    "toolchain": ("verbs:TOOLCHAIN", "build the Pulumi CLI, provider and control plane"),
    "rehearse": ("verbs:REHEARSE", "rehearse a cold start on the local control plane, real KEDA"),
    "completion": ("completion", "print a bash or zsh completion script"),
}
"""verb -> (what has its ``parser()`` and ``main(argv)``, under ``supersonic_interlink.cli``; one line of help)."""

FRONT_DOOR_ONLY: dict[str, str] = {
    "test": "the unit tests (it installs what they need first)",
    "e2e": "the end-to-end tier: the real engine on a local cluster",
    "lint": "every static check CI and the pre-commit hooks run",
}
"""Verbs only ``./supersonic`` runs: they set up tools outside Python first."""


def verb(name: str) -> Any:
    return pkgutil.resolve_name(f"supersonic_interlink.cli.{VERBS[name][0]}")


def root() -> tuple[argparse.ArgumentParser, Any]:
    """The verb table as a parser, and its verbs: its help lists them; completion puts each verb's own parser there."""
    parser = Parser(
        prog="supersonic",
        description="The project's one front door; `./supersonic <verb> --help` for one verb.",
        epilog="exit codes: 0 ok, 1 a finding or a failed operation, 2 a usage or config error, 3 a check could not "
        "run (--strict). example: ./supersonic render hammer --out rendered/hammer --check",
    )
    parser.add_argument("--version", action="store_true", help="the versions, each stack's chart, the pinned tools")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name, (_target, text) in VERBS.items():
        verbs.add_parser(name, help=text, add_help=False)
    for name, text in FRONT_DOOR_ONLY.items():
        verbs.add_parser(name, help=f"{text} (only through ./supersonic)", add_help=False)
    return parser, verbs


def main(argv: list[str]) -> int:
    if argv == ["--version"]:
        from supersonic_interlink.cli.verbs import version  # lazy, as every verb's parser: start-up time

        print(version())
        return EXIT_OK
    name, rest = (argv or [""])[0], argv[1:]
    if name not in VERBS:
        root()[0].parse_args(argv[:1])  # --help, or a usage error naming the verbs
        print(f"supersonic: {name} runs through the front door: ./supersonic {name}", file=sys.stderr)
        return EXIT_USAGE
    for number, arg in enumerate(rest, start=1):
        if printable(arg) != arg:
            # Every verb echoes its arguments in its messages: a control character could forge a line or drive the
            # terminal, and no stack, path or flag needs one.
            print(
                f"supersonic {name}: argument {number} {printable(arg)!r} holds control characters; none is allowed",
                file=sys.stderr,
            )
            return EXIT_USAGE
    try:
        return int(verb(name).main(rest) or 0)
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say, and no traceback for it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDING
