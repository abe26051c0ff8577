"""The probe's two commands: from parsed arguments to output lines and an exit code.

``run_probes`` measures wakes (``wake_probe``), prints each and appends it to the history (``wake_history``);
``run_report`` reads a history and prints what it supports (``wake_report``). ``./supersonic probe`` builds the argument
parsers and calls one of them. Each message names the command it comes from (``./supersonic probe``, ``./supersonic
probe report``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping
from typing import Any, TextIO

from supersonic_interlink.config import ConfigError, Settings
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake import report as wake_report
from supersonic_interlink.wake.probe import (
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_RECORD_FAILED,
    ProbeResult,
    Progress,
    default_endpoint,
    describe,
    describe_summary,
    parse_endpoint,
    probe_deadline_seconds,
    probe_once,
    summarize,
)

EXIT_NOTHING_TO_REPORT = 1
DAMAGED_SHOWN = 20
"""Damaged lines listed one by one on stderr; past this many, only their count."""


def _settings(stack: str, config: Mapping[str, Any] | None) -> Settings:
    return settings_from_config(load_stack_config(stack) if config is None else config)


def run_probes(args: argparse.Namespace, config: Mapping[str, Any] | None, stdout: TextIO, stderr: TextIO) -> int:
    try:
        settings = _settings(args.stack, config)
    except ConfigError as error:
        for problem in error.problems:
            # A missing stack file's problem names the stack already; a setting's names only its key.
            named = problem.startswith(f"stack {args.stack!r}")
            print(f"probe: {'' if named else f'stack {args.stack}: '}{problem}", file=stderr)
        return EXIT_CONFIG
    try:
        endpoint = default_endpoint(settings) if args.endpoint is None else parse_endpoint(args.endpoint)
    except ValueError as error:
        print(f"probe: {error}", file=stderr)
        return EXIT_CONFIG
    if args.record is not None:
        try:
            wake_history.check_appendable(args.record)
        except OSError as error:
            print(f"probe: --record {str(args.record)!r}: cannot append: {error.strerror}", file=stderr)
            return EXIT_CONFIG

    deadline = probe_deadline_seconds(settings)
    progress = Progress(stderr, deadline, args.progress_every)
    results: list[ProbeResult] = []

    def emit(document: Mapping[str, Any], text: str) -> None:
        print(json.dumps(document) if args.json else text, file=stdout, flush=True)

    try:
        for index in range(args.repeat):
            if index:
                time.sleep(args.interval)
            result = probe_once(
                endpoint,
                deadline,
                stack=args.stack,
                ready_timeout=settings.scaleFromZero.readyTimeoutSeconds,
                connect_timeout=args.connect_timeout,
                progress=progress,
            )
            results.append(result)
            emit(result.record(), describe(result))
            if args.record is not None:
                try:
                    wake_history.append(args.record, result.record())
                except OSError as error:
                    print(f"probe: --record {str(args.record)!r}: could not append: {error}", file=stderr)
                    return EXIT_RECORD_FAILED
    except KeyboardInterrupt:
        print("probe: interrupted", file=stderr)
        if args.repeat > 1 and results:
            summary = summarize(results)
            emit(summary, describe_summary(summary))
        return EXIT_INTERRUPTED
    if args.repeat > 1:
        summary = summarize(results)
        emit(summary, describe_summary(summary))
        return summary["exit_code"]
    return results[0].exit_code


def run_report(
    args: argparse.Namespace,
    stack_configs: Mapping[str, Mapping[str, str]] | None,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    if args.png is not None and not args.png.parent.is_dir():
        print(f"probe report: --png {str(args.png)!r}: no directory {str(args.png.parent)!r}", file=stderr)
        return EXIT_CONFIG
    try:
        history = wake_history.read(args.file)
    except OSError as error:
        print(f"probe report: cannot read {str(args.file)!r}: {error.strerror}", file=stderr)
        return EXIT_CONFIG
    for damaged in history.damaged[:DAMAGED_SHOWN]:
        print(damaged.describe(args.file), file=stderr)
    if len(history.damaged) > DAMAGED_SHOWN:
        print(f"{args.file}: {len(history.damaged) - DAMAGED_SHOWN} more line(s) skipped", file=stderr)

    chosen = wake_report.select(history.wakes, args.stack, args.since)
    if not chosen:
        which = (f" of stack {args.stack}" if args.stack else "") + (
            f" since {args.since.isoformat()}" if args.since else ""
        )
        print(f"probe report: no probe records{which} in {str(args.file)!r}", file=stderr)
        return EXIT_NOTHING_TO_REPORT

    reports = []
    for stack, wakes in chosen.items():
        if stack_configs is not None and stack in stack_configs:
            config = wake_report.StackConfig(stack_configs[stack], f"the given config of {stack}")
        else:
            config = wake_report.load_config(stack)
        reports.append(wake_report.build_report(stack, wakes, config))

    for index, report in enumerate(reports):
        if args.json:
            print(json.dumps(report.record), file=stdout)
        else:
            if index:
                print(file=stdout)
            print("\n".join(wake_report.describe(report)), file=stdout)
    if history.damaged and not args.json:
        print(f"\n{len(history.damaged)} line(s) of {args.file} skipped (listed on stderr)", file=stdout)
    if args.png is not None:
        try:
            wake_report.figure(reports).savefig(args.png, format="png")
        except OSError as error:
            print(f"probe report: --png {str(args.png)!r}: cannot write: {error.strerror}", file=stderr)
            return EXIT_CONFIG
        print(f"probe report: wrote {args.png}", file=stderr)
    return 0
