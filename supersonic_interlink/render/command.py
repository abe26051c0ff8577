"""``./supersonic render``: the verb's work once its parser has read and checked the command line (``cli/render.py``):
pin or fetch the stack's chart, or render the stack and write it (``--out``), summarize it, and check it (``--check``).
Exit codes as ``cli/main.py`` states them for every verb."""

from __future__ import annotations

import sys
from pathlib import Path

from supersonic_interlink import EXIT_FINDING, EXIT_SKIPPED, EXIT_USAGE
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
) -> int:
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
        for path in written:
            print(f"wrote {path}/ ({len(objects or [])} chart objects)" if path.is_dir() else f"wrote {path}")
        if refused:
            print(f"stack {stack}: the chart's objects cannot be rendered: {refused}", file=sys.stderr)
            if not check:
                return EXIT_FINDING
        elif objects is None:
            print(f"stack {stack}: the chart's objects are not rendered: {why}")
        if chart.kind == "git" and chart.commit is None:
            print(f"stack {stack}: {chart_source.unpinned_message(stack)}")
    else:
        print(summary(stack, rendered))
    if check:
        print(
            f"stack {stack}: checking: Kubernetes schemas and the API server's rules, envoy --mode validate, then, "
            "when the chart is on disk, the same over the chart's objects and the chart conformance check with the "
            "real Helm v3 (a few seconds)",
            file=sys.stderr,
            flush=True,
        )
        outcome = checks(stack, rendered, chart_dir)
        for finding in outcome.findings:
            print(f"check: {finding}", file=sys.stderr)
        for name, why in outcome.skipped:
            print(f"stack {stack}: check skipped: {name}: {why}")
        for name, why in outcome.deferred:
            print(f"stack {stack}: check deferred: {name}: {why}")
        if outcome.findings:
            print(outcome.last_line(stack), file=sys.stderr)
            return EXIT_FINDING
        print(outcome.last_line(stack))
        if outcome.skipped and strict:
            print(f"stack {stack}: --strict: a check that could not run fails the run (exit 3)", file=sys.stderr)
            return EXIT_SKIPPED
    return 0


def _fetch(stack: str, chart: ChartSource) -> int:
    if chart.kind != "git":
        print(f"stack {stack}: the chart is a {chart.kind} source; nothing to fetch")
        return 0
    if chart.commit is None:
        print(f"stack {stack}: {chart_source.unpinned_message(stack)}", file=sys.stderr)
        return EXIT_FINDING
    try:
        directory = chart_source.fetch(str(chart.git), chart.commit, str(chart.path))
    except chart_source.ChartSourceError as error:
        print(f"stack {stack}: {error}", file=sys.stderr)
        return EXIT_FINDING
    print(f"stack {stack}: chart {chart.commit} at {directory.relative_to(chart_source.ROOT)}")
    return 0


def _pin(stack: str, ref: str) -> int:
    from supersonic_interlink.chart.pin import pin_chart

    try:
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
