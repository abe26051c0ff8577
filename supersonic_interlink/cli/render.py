"""Render a stack offline: what `pulumi up` would deploy, as reviewable files, with optional checks.

    ./supersonic render <stack> [--out DIR] [--check [--strict]] [--chart DIR] [--json]
    ./supersonic render <stack> --fetch-chart
    ./supersonic render <stack> --pin-chart [REF]

The real program runs under Pulumi's mock engine with the config the Pulumi CLI would pass; docs/render.md lists the
files written and the checks run, docs/chart.md the chart pin. Invalid stack config or options exit 2.
"""

from __future__ import annotations

from pathlib import Path

from supersonic_interlink.cli import args as args_
from supersonic_interlink.config.stack_config import stack_names
from supersonic_interlink.files import output_path


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
        "--json",
        action="store_true",
        help="print the render (and --check's outcome) as one JSON document (docs/json.md)",
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
    if chart_actions and (args.check or args.out or args.json or len(chart_actions) > 1):
        command.error(
            f"{' and '.join(chart_actions)} only changes the chart: run --check / --out / --json as a second command"
        )
    # lazy: the verb's package loads only when the verb runs (--help and completion build every parser)
    from supersonic_interlink.render.stack import run

    return run(
        args.stack,
        out=args.out,
        check=args.check,
        strict=args.strict,
        chart_dir=args.chart,
        fetch_chart=args.fetch_chart,
        pin_chart=args.pin_chart,
        as_json=args.json,
    )
