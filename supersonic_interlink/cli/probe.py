"""``./supersonic probe <stack>`` and ``probe report FILE``: cold starts measured through Envoy, kept, and reported
(docs/probe.md). A module of its own: its defaults come with the gRPC client."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TextIO

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.cli.verbs import Parser, Verb, add_stack, name, path
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake import probe as wake_probe
from supersonic_interlink.wake.report import run_report

SECONDS = "a finite number of seconds"


def _number(kind: Callable[[str], float], allowed: str, ok: Callable[[float], bool]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = math.nan
        with contextlib.suppress(ValueError):
            value = kind(text)
        if not (math.isfinite(value) and ok(value)):
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}")
        return value

    return parse


def _since(text: str) -> datetime:
    try:
        return wake_history.parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date (2026-05-01) or an ISO 8601 time, got {text!r}") from None


def _probe(parser: Parser) -> None:
    """Start a session as a CMSSW client does: a ServerReady (which wakes nothing) tells a cold wake from a warm
    answer, then a RepositoryIndex waits for the wake until readyTimeoutSeconds plus the chart's route margin. Exit 0
    ready, 3 rejected, 4 deadline exceeded, 5 unreachable, 6 not ready, 7 not recorded, 2 usage or stack config, 130
    interrupted; with --repeat the worst outcome's (docs/probe.md)."""
    parser.usage = "%(prog)s <stack> [options]\n       %(prog)s report FILE [options]"
    add_stack(parser, ": gives the deadline and the default endpoint")
    add = parser.add_argument
    add("--endpoint", metavar="HOST:PORT", help="Envoy's gRPC endpoint (default: the stack's Service, port 8001)")
    add("--json", action="store_true", help="print one JSON object per probe to stdout")
    add("--record", metavar="FILE", type=path, help="append each probe's JSON object to FILE as one line (JSON Lines)")
    at_least_one = _number(int, "a whole number >= 1", lambda n: n >= 1)
    positive = _number(float, f"{SECONDS} > 0", lambda s: s > 0)
    not_negative = _number(float, f"{SECONDS} >= 0", lambda s: s >= 0)
    add("--repeat", type=at_least_one, default=1, metavar="N", help="probe N times (default 1)")
    interval = "seconds from one probe's end to the next (default %(default)g)"
    add("--interval", type=not_negative, default=wake_probe.DEFAULT_INTERVAL, metavar="S", help=interval)
    timeout, every = wake_probe.DEFAULT_CONNECT_TIMEOUT, wake_probe.DEFAULT_PROGRESS_EVERY
    add("--connect-timeout", type=positive, default=timeout, metavar="S", help="seconds to connect (%(default)g)")
    add("--progress-every", type=positive, default=every, metavar="S", help="a progress line every S (%(default)g)")


def _report(parser: Parser) -> None:
    """Per stack: the cold wakes, their outcomes and wake times, the share readyTimeoutSeconds covered and the
    readyTimeoutSeconds the history supports (docs/probe.md)."""
    add = parser.add_argument
    add("file", metavar="FILE", type=path, help="a history written by ./supersonic probe --record")
    add("--stack", metavar="S", type=name, help="only this stack")
    add("--since", metavar="DATE", type=_since, help="only probes started at or after DATE (UTC)")
    add("--json", action="store_true", help="one JSON object per stack instead of text")
    add("--png", metavar="OUT", type=path, help="draw each stack's cold-wake distribution and timeouts to OUT")


# What runs each is called by ``main`` below, with the tests' stand-ins.
PROBE = Verb("probe", _probe, "supersonic_interlink.wake.probe:run_probes")
REPORT = Verb("probe report", _report, "supersonic_interlink.wake.report:run_report")
parser = PROBE.parser


def main(
    argv: list[str],
    *,
    config: Mapping[str, Any] | None = None,
    stack_configs: Mapping[str, Mapping[str, str]] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``config`` replaces the probed stack's config map, ``stack_configs`` a report's (the tests' short timeouts)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    report = argv[:1] == ["report"]
    try:
        with contextlib.redirect_stderr(stderr):
            args = (REPORT if report else PROBE).parser().parse_args(argv[1:] if report else argv)
    except SystemExit as exited:
        return EXIT_USAGE if exited.code else 0
    if report:
        return run_report(args, stack_configs, stdout, stderr)
    return wake_probe.run_probes(args, config, stdout, stderr)
