"""Take over a live Flux-managed release with a stack: the steps, and the values the first upgrade changes.

    ./supersonic takeover steps <stack>
    ./supersonic takeover values <stack> --live FILE [--out FILE] [--json]
    ./supersonic takeover objects <stack> --live FILE [--live-object FILE ...] [--live-manifest FILE] [--chart DIR]
        [--out FILE] [--json]

docs/takeover.md says what each prints and when it exits 1. Invalid stack config, an unreadable input file or no
chart to render exits 2.
"""

from __future__ import annotations

import sys

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.cli import args as args_
from supersonic_interlink.config.stack_config import stack_names
from supersonic_interlink.files import output_path

TAKEOVER_COMMANDS = ("steps", "values", "objects")


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic takeover",
        usage="%(prog)s {steps,values,objects} STACK [options]",
        description=__doc__.split("\n\n")[0],
        epilog="example: ./supersonic takeover steps hammer",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{steps,values,objects}")
    stack_help = f"stack name ({', '.join(stack_names())})"
    steps_parser = commands.add_parser(
        "steps", prog="./supersonic takeover steps", help="print the takeover steps with this stack's URNs and names"
    )
    args_.add_stack(steps_parser, metavar="STACK", help=stack_help)
    steps_parser.add_argument(
        "--live",
        dest="check_live",
        action="store_true",
        help="first check the live release on the cluster KUBECONFIG names (its HelmRelease suspended, its chart "
        "source and reconcileStrategy, no Helm operation in flight); refuse while a check fails",
    )
    values = commands.add_parser(
        "values", prog="./supersonic takeover values", help="the live values against this stack's, as a markdown table"
    )
    args_.add_stack(values, metavar="STACK", help=stack_help)
    values.add_argument("--live", type=args_.path, required=True, help="the live release's values (YAML)")
    values.add_argument("--out", type=output_path, help="write the table here instead of standard output")
    values.add_argument("--json", action="store_true", help="the comparison as one JSON document (docs/json.md)")
    objects = commands.add_parser(
        "objects",
        prog="./supersonic takeover objects",
        help="what the upgrade deletes, creates and changes, object by object",
    )
    args_.add_stack(objects, metavar="STACK", help=stack_help)
    source = objects.add_mutually_exclusive_group(required=True)
    source.add_argument("--live", type=args_.path, help="the live release's values (YAML)")
    source.add_argument(
        "--from-cluster",
        action="store_true",
        help="read the live release from the cluster KUBECONFIG names (pinned helm and kubectl): its values, the "
        "objects the chart looks up, and its stored manifest as what the upgrade compares against",
    )
    objects.add_argument(
        "--live-object",
        type=args_.path,
        action="append",
        default=[],
        dest="live_objects",
        metavar="FILE",
        help="live objects the chart looks up (kubectl get -o yaml): the old Envoy ConfigMap, the ScaledObject",
    )
    objects.add_argument(
        "--live-manifest",
        type=args_.path,
        metavar="FILE",
        help="with --live: the live release's stored manifest (helm get manifest), what the upgrade compares "
        "against; needed when the chart generation moves",
    )
    objects.add_argument(
        "--chart", type=args_.path, metavar="DIR", help="render this chart instead of the stack's pinned one"
    )
    objects.add_argument("--out", type=output_path, help="write the report here instead of standard output")
    objects.add_argument("--json", action="store_true", help="the comparison as one JSON document (docs/json.md)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) >= 2 and argv[1] in TAKEOVER_COMMANDS and argv[0] not in TAKEOVER_COMMANDS:
        print(f"takeover: the command comes first: ./supersonic takeover {argv[1]} {argv[0]}", file=sys.stderr)
        return EXIT_USAGE
    # lazy: the verb's package loads only when the verb runs (--help and completion build every parser)
    from supersonic_interlink.takeover.run import run

    return run(**vars(parser().parse_args(argv)))
