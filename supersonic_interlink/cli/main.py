"""``python -m supersonic_interlink <verb>``, behind ``./supersonic``: the verb table. A verb's parser and package load
only when it runs; the exit codes are the package's (``supersonic_interlink/__init__.py``)."""

from __future__ import annotations

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
}
"""verb -> (what has its ``parser()`` and ``main(argv)``, under ``supersonic_interlink.cli``; one line of help)."""
FRONT_DOOR_ONLY = {"test": "the unit tests", "e2e": "the end-to-end tier", "lint": "every static check CI runs"}
"""Verbs only ``./supersonic`` runs: they set up tools outside Python first."""


def verb(name: str) -> Any:
    return pkgutil.resolve_name(f"supersonic_interlink.cli.{VERBS[name][0]}")


def main(argv: list[str]) -> int:
    if argv == ["--version"]:
        from supersonic_interlink.cli.verbs import version  # lazy, as every verb's parser: start-up time

        print(version())
        return EXIT_OK
    name, rest = (argv or [""])[0], argv[1:]
    if name not in VERBS:
        parser = Parser(prog="supersonic", epilog="`./supersonic <verb> --help` for one verb; exit codes: README.md")
        parser.add_argument("--version", action="store_true", help="the versions, each stack's chart, the pinned tools")
        verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
        for verb_name, (_target, text) in VERBS.items():
            verbs.add_parser(verb_name, help=text, add_help=False)
        for verb_name, text in FRONT_DOOR_ONLY.items():
            verbs.add_parser(verb_name, help=f"{text} (only through ./supersonic)", add_help=False)
        parser.parse_args(argv[:1])  # --help, or a usage error naming the verbs
        print(f"supersonic: {name} runs through the front door: ./supersonic {name}", file=sys.stderr)
        return EXIT_USAGE
    # Every verb echoes its arguments: a control character could forge a line or drive the terminal.
    for number, arg in enumerate(rest, start=1):
        if printable(arg) != arg:
            said = f"argument {number} {printable(arg)!r} holds control characters; none is allowed"
            print(f"supersonic {name}: {said}", file=sys.stderr)
            return EXIT_USAGE
    try:
        return int(verb(name).main(rest) or 0)
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say, and no traceback for it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDING
