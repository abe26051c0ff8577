"""``./supersonic render``: the verb's work once its parser has read and checked the command line (``cli/render.py``):
pin or fetch the stack's chart, or render the stack and write it (``--out``), summarize it, and check it (``--check``).
Exit codes as ``cli/main.py`` states them for every verb."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

from supersonic_interlink import EXIT_FINDING, EXIT_SKIPPED, EXIT_USAGE, progress
from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.chart.binaries import BinaryError
from supersonic_interlink.chart.helm import ChartRenderError
from supersonic_interlink.config import ChartSource, ConfigError
from supersonic_interlink.render.stack import checks, release_chart_objects, render, summary, write


def run(
    stack: str,
    *,
    out: Path | None,
    check: bool,
    strict: bool,
    chart_dir: Path | None,
    fetch_chart: bool,
    pin_chart: str | None,
    as_json: bool = False,
) -> int:
    """With ``as_json`` the one JSON document (docs/json.md) is all that goes to standard output; every line the
    text form prints there goes to standard error instead."""
    say = functools.partial(print, file=sys.stderr if as_json else sys.stdout)
    if pin_chart is not None:
        return _pin(stack, pin_chart)
    try:
        rendered = render(stack, chart_dir=chart_dir)
    except ConfigError as error:
        _config_problems(stack, error)
        return EXIT_USAGE
    chart = rendered["chart_source"]
    if fetch_chart:
        return _fetch(stack, chart)
    document: dict[str, Any] = {
        "stack": stack,
        "release": rendered["release"],
        "manifests": rendered["manifests"],
        "envoy": rendered["envoy"],
        "generation": rendered["generation"].name,
        "chart_objects": None,
        "written": [],
        "check": None,
    }
    if out:
        refused = ""
        try:
            objects, why = release_chart_objects(stack, rendered, chart_dir)
        except (ChartRenderError, BinaryError) as error:
            objects, refused = None, " ".join(str(error).split())
        try:
            written = write(rendered, out, objects)
        except OSError as error:
            print(f"render: --out {out}: cannot write: {error.strerror or error}", file=sys.stderr)
            return EXIT_USAGE
        document["chart_objects"], document["written"] = objects, [str(path) for path in written]
        for path in written:
            say(f"wrote {path}/ ({len(objects or [])} chart objects)" if path.is_dir() else f"wrote {path}")
        if refused:
            print(f"stack {stack}: the chart's objects cannot be rendered: {refused}", file=sys.stderr)
            if not check:
                return _done(document, as_json, EXIT_FINDING)
        elif objects is None:
            say(f"stack {stack}: the chart's objects are not rendered: {why}")
        if chart.kind == "git" and chart.commit is None:
            say(f"stack {stack}: {chart_source.unpinned_message(stack)}")
    else:
        say(summary(stack, rendered))
    if check:
        what = (
            f"stack {stack}: checking: Kubernetes schemas and the API server's rules, envoy --mode validate, then, "
            "when the chart is on disk, the same over the chart's objects and the chart conformance check with the "
            "real Helm v3"
        )
        with progress.step(what):
            outcome = checks(stack, rendered, chart_dir)
        for finding in outcome.findings:
            print(f"check: {finding}", file=sys.stderr)
        for name, why in outcome.skipped:
            say(f"stack {stack}: check skipped: {name}: {why}")
        for name, why in outcome.deferred:
            say(f"stack {stack}: check deferred: {name}: {why}")
        document["check"] = {
            "findings": list(outcome.findings),
            "skipped": [{"check": name, "why": why} for name, why in outcome.skipped],
            "deferred": [{"check": name, "why": why} for name, why in outcome.deferred],
        }
        if outcome.findings:
            print(outcome.last_line(stack), file=sys.stderr)
            return _done(document, as_json, EXIT_FINDING)
        say(outcome.last_line(stack))
        if outcome.skipped and strict:
            print(f"stack {stack}: --strict: a check that could not run fails the run (exit 3)", file=sys.stderr)
            return _done(document, as_json, EXIT_SKIPPED)
    return _done(document, as_json, 0)


def _done(document: dict[str, Any], as_json: bool, code: int) -> int:
    if as_json:
        print(json.dumps(document, indent=2, default=str))
    return code


def _fetch(stack: str, chart: ChartSource) -> int:
    if chart.kind != "git":
        print(f"stack {stack}: the chart is a {chart.kind} source; nothing to fetch")
        return 0
    if chart.commit is None:
        print(f"stack {stack}: {chart_source.unpinned_message(stack)}", file=sys.stderr)
        return EXIT_FINDING
    try:
        with progress.step(f"stack {stack}: fetching chart {chart.commit} from {chart.git}"):
            directory = chart_source.fetch(str(chart.git), chart.commit, str(chart.path))
    except chart_source.ChartSourceError as error:
        print(f"stack {stack}: {error}", file=sys.stderr)
        return EXIT_FINDING
    print(f"stack {stack}: chart {chart.commit} at {directory.relative_to(chart_source.ROOT)}")
    return 0


def _pin(stack: str, ref: str) -> int:
    from supersonic_interlink.chart.pin import pin_chart

    try:
        with progress.step(f"stack {stack}: resolving {ref} and fetching the chart"):
            commit, path = pin_chart(stack, ref)
    except ConfigError as error:
        _config_problems(stack, error)
        return EXIT_USAGE
    except chart_source.ChartSourceError as error:
        print(f"stack {stack}: --pin-chart {ref}: {error}", file=sys.stderr)
        return EXIT_FINDING
    print(f"stack {stack}: release.chart pinned to {commit} ({ref}); wrote {path.relative_to(chart_source.ROOT)}")
    return 0


def _config_problems(stack: str, error: ConfigError) -> None:
    print(f"stack {stack}: invalid config:", file=sys.stderr)
    for problem in error.problems:
        print(f"  {problem}", file=sys.stderr)
