"""Render a stack offline: what `pulumi up` would deploy, as reviewable files, with optional checks.

    ./supersonic render <stack> [--out DIR] [--check [--strict]] [--chart DIR]
    ./supersonic render <stack> --fetch-chart
    ./supersonic render <stack> --pin-chart [REF]

Evaluates the real program for the stack (Pulumi's mock engine stands in for the engine; there is no cluster) with the
config the Pulumi CLI would pass, and writes DIR/manifests.yaml (every object the program creates directly),
DIR/release.yaml (the Helm release and its values), DIR/envoy.yaml (the Envoy configuration as stored in its ConfigMap)
and, when the chart is on disk (a chart directory, a fetched pinned commit, or --chart DIR),
DIR/chart/<Kind>[.<group>]/<name>.yaml: each object of the chart as the real Helm v3 renders it with the stack's values
and the post-renderer (Secret data masked). --check validates them (strict Kubernetes schemas, envoy --mode validate)
and, with the chart on disk, runs the chart conformance check with the real Helm v3; it exits 1 on any finding, and
names each check that could not run; --strict makes such a check exit 3. --fetch-chart fetches the stack's pinned git
chart into .charts/; --pin-chart resolves REF (default main) of the stack's git chart to a commit and writes it into the
stack file. Both need network access to the chart's repository. Invalid stack config or options exit 2 with one line per
problem.
"""

from __future__ import annotations

import sys
from pathlib import Path

from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.chart.binaries import BinaryError
from supersonic_interlink.chart.helm import ChartRenderError
from supersonic_interlink.cli import args as args_
from supersonic_interlink.cli.main import EXIT_FINDING, EXIT_SKIPPED
from supersonic_interlink.config import ChartSource, ConfigError
from supersonic_interlink.config.stack_config import stack_names
from supersonic_interlink.files import output_path
from supersonic_interlink.render.stack import checks, release_chart_objects, render, summary, write


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


def parser() -> args_.Parser:
    parser = args_.Parser(prog="./supersonic render", description=__doc__.split("\n\n")[0])
    args_.add_stack(parser, help=f"stack name ({', '.join(stack_names())})")
    parser.add_argument("--out", type=output_path, help="directory to write manifests.yaml, release.yaml, envoy.yaml")
    parser.add_argument("--check", action="store_true", help="validate the output; exit 1 on any finding")
    parser.add_argument(
        "--strict", action="store_true", help="with --check: a check that could not run fails the run (exit 3)"
    )
    parser.add_argument(
        "--chart",
        type=Path,
        metavar="DIR",
        help="with --check or --out: the chart directory to check and render instead of the stack's",
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
    return parser


def main(argv: list[str] | None = None) -> int:
    command = parser()
    args = command.parse_args(argv)
    if args.chart is not None and not (args.check or args.out):
        command.error("--chart DIR names the chart --check checks and --out renders: give --check or --out too")
    if args.strict and not args.check:
        command.error("--strict fails a check that could not run: give --check too")
    if args.chart is not None and not (args.chart / "Chart.yaml").is_file():
        command.error(f"--chart {args.chart}: not a chart directory (no Chart.yaml in it)")
    if args.pin_chart is not None and not args.pin_chart.strip():
        command.error("--pin-chart REF: REF is empty (a branch, a tag or a full commit id; without REF: main)")
    chart_actions = [
        flag for flag, given in (("--pin-chart", args.pin_chart), ("--fetch-chart", args.fetch_chart)) if given
    ]
    if chart_actions and (args.check or args.out or len(chart_actions) > 1):
        command.error(f"{' and '.join(chart_actions)} only changes the chart: run --check / --out as a second command")
    if args.pin_chart is not None:
        return _pin(args.stack, args.pin_chart)
    try:
        rendered = render(args.stack, chart_dir=args.chart)
    except ConfigError as error:
        _config_problems(args.stack, error)
        return 2
    chart = rendered["chart_source"]
    if args.fetch_chart:
        return _fetch(args.stack, chart)
    if args.out:
        refused = ""
        try:
            objects, why = release_chart_objects(args.stack, rendered, args.chart)
        except (ChartRenderError, BinaryError) as error:
            objects, refused = None, " ".join(str(error).split())
        try:
            written = write(rendered, args.out, objects)
        except OSError as error:
            print(f"render: --out {args.out}: cannot write: {error.strerror or error}", file=sys.stderr)
            return 2
        for path in written:
            print(f"wrote {path}/ ({len(objects or [])} chart objects)" if path.is_dir() else f"wrote {path}")
        if refused:
            print(f"stack {args.stack}: the chart's objects cannot be rendered: {refused}", file=sys.stderr)
            if not args.check:
                return EXIT_FINDING
        elif objects is None:
            print(f"stack {args.stack}: the chart's objects are not rendered: {why}")
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
        outcome = checks(args.stack, rendered, args.chart)
        for finding in outcome.findings:
            print(f"check: {finding}", file=sys.stderr)
        for check, why in outcome.skipped:
            print(f"stack {args.stack}: check skipped: {check}: {why}")
        for check, why in outcome.deferred:
            print(f"stack {args.stack}: check deferred: {check}: {why}")
        if outcome.findings:
            print(outcome.last_line(args.stack), file=sys.stderr)
            return EXIT_FINDING
        print(outcome.last_line(args.stack))
        if outcome.skipped and args.strict:
            print(f"stack {args.stack}: --strict: a check that could not run fails the run (exit 3)", file=sys.stderr)
            return EXIT_SKIPPED
    return 0
