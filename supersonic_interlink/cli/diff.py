"""What a change deploys, object by object: the stack rendered at a base ref and in the working tree.

    ./supersonic diff <stack> [--base REF] [--chart DIR] [--markdown | --json] [--strict]

docs/render.md says how each side is rendered and what is compared. Exit 0 when the diff is printed, 1 when a side
cannot be rendered, 2 for a usage or config error, 3 under --strict when the chart's objects could not be compared.
"""

from __future__ import annotations

from supersonic_interlink.cli import args as args_
from supersonic_interlink.config.stack_config import stack_names


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic diff",
        description=__doc__.split("\n\n")[0],
        epilog="example: ./supersonic diff hammer --base main --chart tests/charts/conforming",
    )
    args_.add_stack(parser, help=f"stack name ({', '.join(stack_names())}, or one only the base has)")
    parser.add_argument("--base", metavar="REF", help="git ref to compare with (default: merge base with main)")
    parser.add_argument("--chart", type=args_.path, metavar="DIR", help="render both sides with this chart directory")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true", help="the same text as a pull request comment section")
    output.add_argument("--json", action="store_true", help="the same as one JSON document (docs/json.md)")
    parser.add_argument("--strict", action="store_true", help="exit 3 when the chart's objects could not be compared")
    return parser


def main(argv: list[str] | None = None) -> int:
    command = parser()
    args = command.parse_args(argv)
    if args.base is not None and not args.base.strip():
        command.error("--base is empty: give a branch, a tag or a commit, or leave it out for the merge base with main")
    if args.chart is not None and not (args.chart / "Chart.yaml").is_file():
        command.error(f"--chart {args.chart}: not a chart directory (no Chart.yaml in it)")
    # lazy: the verb's package loads only when the verb runs (--help and completion build every parser)
    from supersonic_interlink.diff.report import run

    return run(args.stack, args.base, args.chart, markdown=args.markdown, strict=args.strict, json=args.json)
