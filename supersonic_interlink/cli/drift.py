"""``./supersonic drift <stack> [--json | --markdown] [--correct]``: what changed on the cluster outside Pulumi.

Compare the cluster KUBECONFIG names with what the stack deployed, read-only without --correct: the objects Pulumi
manages (pulumi preview --refresh) and the Helm release's objects (a server-side dry-run apply of its stored manifest).
Exit 0 no drift, 1 drift, 2 could not check.
"""

from __future__ import annotations

import sys

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.cli import args as args_
from supersonic_interlink.engine.installed import CLI_ENV


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic drift",
        description=__doc__.split("\n\n")[1],
        epilog="example: ./supersonic drift hammer --json",
    )
    args_.add_stack(parser, help="stack name, as in stacks/Pulumi.<stack>.yaml")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the report as JSON")
    output.add_argument("--markdown", action="store_true", help="the report as markdown (the scheduled issue)")
    parser.add_argument(
        "--correct",
        action="store_true",
        help="bring drifted objects back (the release's objects to its manifest, Pulumi's to its state), then check "
        "again; the exit code is the second check's",
    )
    parser.add_argument(
        "--pulumi",
        metavar="PATH",
        help=f"the Pulumi CLI to run (default: ${CLI_ENV}, else `pulumi` on PATH, else one built from Go modules)",
    )
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    why = args_.unknown_stack(args.stack)
    if why is not None:
        print(f"supersonic drift: {why}", file=sys.stderr)
        return EXIT_USAGE
    # lazy: the verb's package loads only when the verb runs (--help and completion build every parser)
    from supersonic_interlink.drift.check import run

    output = "json" if args.json else "markdown" if args.markdown else "text"
    return run(args.stack, output=output, correct=args.correct, cli=args.pulumi)
