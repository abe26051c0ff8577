"""Cold-start probe: measure wakes against a live endpoint, keep them, and turn them into a readyTimeoutSeconds.

    ./supersonic probe <stack> [--endpoint HOST:PORT] [--json] [--repeat N --interval S] [--record FILE]
    ./supersonic probe report FILE [--stack S] [--since DATE] [--json] [--png OUT]

A probe starts a session as a CMSSW client does: a ServerReady (which wakes nothing) tells a cold wake from a warm
answer, then a RepositoryIndex, with the deadline readyTimeoutSeconds plus the chart's route margin, waits for the wake.
The result goes to stdout as text or, with --json, one JSON object per probe (and a summary after several); --record
FILE appends each probe's object to FILE (JSON Lines, safe to share). `report` reads such a file and prints, per
stack, the cold wakes' distribution, the share the current readyTimeoutSeconds covered and the value the history
supports; --png draws it. See docs/probe.md.

Outcomes and exit codes (docs/probe.md says what each means and what to do):
  0 ready, 3 rejected (at readyTimeoutSeconds: the Lua filter found no healthy Triton in time), 4 deadline exceeded,
  5 unreachable, 6 not ready (ServerReady false or failed), 7 not recorded (appending to --record failed),
  2 usage error or invalid stack config, 130 interrupted. With --repeat, that of the worst outcome (ready < not ready
  < rejected < deadline exceeded < unreachable). `report` exits 0, 1 when FILE holds no probe of the selection, 2 on
  bad usage or an unreadable FILE.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TextIO

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.cli import args as args_
from supersonic_interlink.config.stack_config import stack_names
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake.probe import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_INTERVAL,
    DEFAULT_PROGRESS_EVERY,
    run_probes,
)
from supersonic_interlink.wake.report import run_report

REPORT = "report"
BOUNDS: dict[str, Callable[[float], bool]] = {
    ">= 1": lambda n: n >= 1,
    ">= 0": lambda s: s >= 0,
    "> 0": lambda s: s > 0,
}
"""A number option's bound, by the words its error gives."""
SECONDS = "a finite number of seconds"
# fmt: off
NUMBERS = (
    ("--repeat", int, "a whole number", ">= 1", 1, "probe N times"),
    ("--interval", float, SECONDS, ">= 0", DEFAULT_INTERVAL, "seconds from the end of one probe to the next"),
    ("--connect-timeout", float, SECONDS, "> 0", DEFAULT_CONNECT_TIMEOUT, "seconds allowed to connect"),
    ("--progress-every", float, SECONDS, "> 0", DEFAULT_PROGRESS_EVERY, "off a terminal, a progress line every S s"),
)
# fmt: on


def _number(kind: Callable[[str], float], allowed: str, ok: Callable[[float], bool]) -> Callable[[str], float]:
    """An option's number type: ``kind`` of the text, refused unless finite and ``ok``, naming what is ``allowed``."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and ok(value)):
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}")
        return value

    return parse


def _since(text: str) -> datetime:
    try:
        return wake_history.parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a date (2026-05-01) or an ISO 8601 time (2026-05-01T03:00:00Z), got {text!r}"
        ) from None


def parser() -> args_.Parser:
    """``probe <stack>``; ``main`` hands ``probe report ...`` to ``report_parser`` before this parser reads it."""
    description, _, outcomes = (__doc__ or "").split("\n\n", 2)[2].partition("\n\nOutcomes")
    parser = args_.Parser(
        prog="./supersonic probe",
        usage="%(prog)s <stack> [options]\n       %(prog)s report FILE [--stack S] [--since DATE] [--json] [--png OUT]",
        description=description,
        epilog="Outcomes" + outcomes.rstrip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    args_.add_stack(
        parser, help=f"stack name ({', '.join(stack_names())}): gives the deadline and the default endpoint"
    )
    add = parser.add_argument
    add(
        "--endpoint",
        metavar="HOST:PORT",
        help="Envoy's gRPC endpoint; default the stack's in-cluster Service "
        "(<release>.<namespace>.svc.cluster.local:8001)",
    )
    add("--json", action="store_true", help="print one JSON object per probe (and a summary after several) to stdout")
    add(
        "--record",
        metavar="FILE",
        type=args_.path,
        help="append each probe's JSON object to FILE as one line (JSON Lines; several probes may share FILE)",
    )
    for flag, kind, words, bound, default, what in NUMBERS:
        number = _number(kind, f"{words} {bound}", BOUNDS[bound])
        metavar = "N" if kind is int else "S"
        add(flag, type=number, default=default, metavar=metavar, help=f"{what} (default {default:g})")
    return parser


def report_parser() -> args_.Parser:
    parser = args_.Parser(
        prog=f"./supersonic probe {REPORT}",
        description="Per stack: cold wakes, their outcomes and wake times, the share the current readyTimeoutSeconds "
        "covered, and the readyTimeoutSeconds the history supports (docs/probe.md).",
    )
    add = parser.add_argument
    add("file", metavar="FILE", type=args_.path, help="a history written by ./supersonic probe --record")
    add("--stack", metavar="S", type=args_.name, help="only this stack")
    add("--since", metavar="DATE", type=_since, help="only probes started at or after DATE (UTC)")
    add("--json", action="store_true", help="one JSON object per stack instead of text")
    add("--png", metavar="OUT", type=args_.path, help="draw each stack's cold-wake distribution and timeouts to OUT")
    return parser


SUB_VERBS = {REPORT: report_parser}
"""What ``main`` reads before ``parser`` (whose first word is a stack), for completion to offer."""


def main(
    argv: list[str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    stack_configs: Mapping[str, Mapping[str, str]] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the command. The tests shorten timeouts with ``config`` (replaces the probed stack's config map) and
    ``stack_configs`` (the config map of each stack a report names)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    argv = sys.argv[1:] if argv is None else argv
    report = argv[:1] == [REPORT]
    try:
        with contextlib.redirect_stderr(stderr):
            args = (report_parser() if report else parser()).parse_args(argv[1:] if report else argv)
    except SystemExit as exited:
        return EXIT_USAGE if exited.code else 0
    return run_report(args, stack_configs, stdout, stderr) if report else run_probes(args, config, stdout, stderr)
