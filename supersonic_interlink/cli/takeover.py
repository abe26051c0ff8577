"""Take over a live Flux-managed release with a stack: the steps, and the values the first upgrade changes.

    ./supersonic takeover steps <stack>
    ./supersonic takeover values <stack> --live FILE [--out FILE] [--json]
    ./supersonic takeover objects <stack> --live FILE [--live-object FILE ...] [--live-manifest FILE] [--chart DIR]
        [--out FILE] [--json]

`steps` prints the runbook (docs/takeover.md) for the stack with its real URNs and object names. `values` compares
the live release's values (`helm get values -n <ns> <release> -o yaml`, or Flux's values ConfigMap) with the values
the stack deploys and prints the difference table as markdown for the pull request; it exits 1 when a difference is
not declared in supersonic_interlink/takeover/values_diff.py or a declared one no longer differs. `objects` renders the
stack's pinned chart (or DIR) with the real Helm v3 twice, with the live values and with the stack's, the chart's
lookup answered from the live objects given (`kubectl get -o yaml`: the old Envoy ConfigMap, the ScaledObject), and
prints what the upgrade deletes, creates and changes, object by object; it exits 1 when a deletion is not
declared in supersonic_interlink/takeover/objects_diff.py, a declared one is no longer made, or the chart refuses either
side's values.
Invalid stack config, an unreadable input file or no chart to render exits 2.
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
    from supersonic_interlink.takeover.run import run

    return run(**vars(parser().parse_args(argv)))
