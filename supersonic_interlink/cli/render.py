"""Render a stack offline: what `pulumi up` would deploy, as reviewable files, with optional checks.

    ./supersonic render <stack> [--out DIR] [--check [--chart DIR]]
    ./supersonic render <stack> --fetch-chart
    ./supersonic render <stack> --pin-chart [REF]

Evaluates the real program for the stack (Pulumi's mock engine stands in for the engine; there is no cluster)
with the config the Pulumi CLI would pass, and writes DIR/manifests.yaml (every object the program creates
directly), DIR/release.yaml (the Helm release and its values) and DIR/envoy.yaml (the Envoy configuration as
stored in its ConfigMap). --check validates them (strict Kubernetes schemas, envoy --mode validate) and, when the
chart is on disk (a chart directory, a fetched pinned commit, or --chart DIR), runs the chart conformance check
with the real Helm v3; it exits 1 on any finding. --fetch-chart fetches the stack's pinned git chart into .charts/;
--pin-chart resolves REF (default main) of the stack's git chart to a commit and writes it into the stack file.
Both need network access to the chart's repository. Invalid stack config or options exit 2 with one line per problem.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.config import ChartSource, ConfigError
from supersonic_interlink.config.stack_config import stack_names
from supersonic_interlink.render.stack import conformance, findings, render, summary, write


def _fetch(stack: str, chart: ChartSource) -> int:
    if chart.kind != "git":
        print(f"stack {stack}: the chart is a {chart.kind} source; nothing to fetch")
        return 0
    if chart.commit is None:
        print(f"stack {stack}: {chart_source.unpinned_message(stack)}", file=sys.stderr)
        return 1
    try:
        directory = chart_source.fetch(str(chart.git), chart.commit, str(chart.path))
    except chart_source.ChartSourceError as error:
        print(f"stack {stack}: {error}", file=sys.stderr)
        return 1
    print(f"stack {stack}: chart {chart.commit} at {directory.relative_to(chart_source.ROOT)}")
    return 0


def _pin(stack: str, ref: str) -> int:
    from supersonic_interlink.chart.pin import pin_chart

    try:
        commit, path = pin_chart(stack, ref)
    except ConfigError as error:
        _config_problems(stack, error)
        return 2
    except chart_source.ChartSourceError as error:
        print(f"stack {stack}: --pin-chart {ref}: {error}", file=sys.stderr)
        return 1
    print(f"stack {stack}: release.chart pinned to {commit} ({ref}); wrote {path.relative_to(chart_source.ROOT)}")
    return 0


def _config_problems(stack: str, error: ConfigError) -> None:
    print(f"stack {stack}: invalid config:", file=sys.stderr)
    for problem in error.problems:
        print(f"  {problem}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./supersonic render", description=__doc__.split("\n\n")[0])
    parser.add_argument("stack", help=f"stack name ({', '.join(stack_names())})")
    parser.add_argument("--out", type=Path, help="directory to write manifests.yaml, release.yaml, envoy.yaml")
    parser.add_argument("--check", action="store_true", help="validate the output; exit 1 on any finding")
    parser.add_argument(
        "--chart", type=Path, metavar="DIR", help="with --check: the chart directory to check instead of the stack's"
    )
    parser.add_argument(
        "--fetch-chart", action="store_true", help="fetch the stack's pinned git chart into .charts/ (needs network)"
    )
    parser.add_argument(
        "--pin-chart",
        nargs="?",
        const="main",
        metavar="REF",
        help="write the commit REF (default main) of the stack's git chart into the stack file (needs network)",
    )
    args = parser.parse_args(argv)
    if args.chart is not None and not args.check:
        parser.error("--chart DIR names the chart --check renders: give --check too")
    if args.chart is not None and not (args.chart / "Chart.yaml").is_file():
        parser.error(f"--chart {args.chart}: not a chart directory (no Chart.yaml in it)")
    if args.pin_chart is not None and not args.pin_chart.strip():
        parser.error("--pin-chart REF: REF is empty (a branch, a tag or a full commit id; without REF: main)")
    chart_actions = [
        flag for flag, given in (("--pin-chart", args.pin_chart), ("--fetch-chart", args.fetch_chart)) if given
    ]
    if chart_actions and (args.check or args.out or len(chart_actions) > 1):
        parser.error(f"{' and '.join(chart_actions)} only changes the chart: run --check / --out as a second command")
    if args.pin_chart is not None:
        return _pin(args.stack, args.pin_chart)
    try:
        rendered = render(args.stack)
    except ConfigError as error:
        _config_problems(args.stack, error)
        return 2
    chart = rendered["chart_source"]
    if args.fetch_chart:
        return _fetch(args.stack, chart)
    if args.out:
        try:
            written = write(rendered, args.out)
        except OSError as error:
            print(f"render: --out {args.out}: cannot write: {error.strerror or error}", file=sys.stderr)
            return 2
        for path in written:
            print(f"wrote {path}")
        if chart.kind == "git" and chart.commit is None:
            print(f"stack {args.stack}: {chart_source.unpinned_message(args.stack)}")
    else:
        print(summary(args.stack, rendered))
    if args.check:
        print(
            f"stack {args.stack}: checking: Kubernetes schemas, envoy --mode validate, then the chart conformance "
            "check with the real Helm v3 when the chart is on disk (a few seconds)",
            file=sys.stderr,
            flush=True,
        )
        found = findings(rendered) + conformance(args.stack, rendered, args.chart)
        for finding in found:
            print(f"check: {finding}", file=sys.stderr)
        if found:
            print(f"stack {args.stack}: {len(found)} finding(s)", file=sys.stderr)
            return 1
        print(f"stack {args.stack}: checks passed")
    return 0
