"""``./supersonic pulumi preview|up|refresh|destroy <stack>``: the real engine for a stack, guarded;
``./supersonic pulumi gate <stack> FILE``: the same gate on ``pulumi preview --json`` output from any CLI."""

from __future__ import annotations

import sys
from typing import Any

from supersonic_interlink.cli import args as args_
from supersonic_interlink.engine.installed import CLI_ENV
from supersonic_interlink.engine.run import ACTIONS

FLAG_ACTIONS = {
    "diff": ("preview", "up", "refresh"),
    "expect_no_changes": ("preview", "up", "refresh"),
    "json": ("preview",),
}
"""The engine's flags and the actions each goes with."""


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic pulumi",
        description="Run the real Pulumi engine for a stack against the cluster KUBECONFIG names.",
        epilog='example: eval "$(./supersonic cluster env)" && ./supersonic pulumi preview hammer --diff',
    )
    parser.add_argument("action", choices=[*ACTIONS, "gate"])
    args_.add_stack(parser, help="stack name, as in stacks/Pulumi.<stack>.yaml")
    parser.add_argument(
        "file",
        nargs="?",
        type=args_.path,
        help="gate: `pulumi preview --json` output of any CLI, e.g. ./supersonic pulumi gate hammer preview.json",
    )
    parser.add_argument(
        "--pulumi",
        metavar="PATH",
        help=f"the Pulumi CLI to run (default: ${CLI_ENV}, else `pulumi` on PATH, else one built from Go modules)",
    )
    parser.add_argument("--yes", action="store_true", help="apply without asking (up, destroy)")
    parser.add_argument("--diff", action="store_true", help="show the property-level diff")
    parser.add_argument("--json", action="store_true", help="the CLI's JSON output (preview)")
    parser.add_argument("--expect-no-changes", action="store_true", help="fail if anything would change")
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    why = args_.unknown_stack(args.stack)
    if why is not None:
        print(f"supersonic pulumi: {why}", file=sys.stderr)
        return 2
    if (args.action == "gate") != (args.file is not None):
        print(
            "supersonic pulumi: FILE goes with gate, and gate needs it (`pulumi preview --json` output)",
            file=sys.stderr,
        )
        return 2
    if args.action == "gate":
        # lazy: the verb's package loads only when the verb runs (--help and completion build every parser)
        from supersonic_interlink.engine import gate

        return gate.main([args.stack, str(args.file)])
    if args.action in ("up", "destroy") and not args.yes:
        print(
            f"supersonic pulumi: {args.action} changes the cluster: review `./supersonic pulumi preview "
            f"{args.stack} --diff` first, then add --yes",
            file=sys.stderr,
        )
        return 2
    for flag, actions in FLAG_ACTIONS.items():
        if getattr(args, flag) and args.action not in actions:
            allowed = " or ".join(filter(None, (", ".join(actions[:-1]), actions[-1])))
            print(f"supersonic pulumi: --{flag.replace('_', '-')} goes with {allowed}", file=sys.stderr)
            return 2
    kwargs: dict[str, Any] = {flag: True for flag in FLAG_ACTIONS if getattr(args, flag)}
    # lazy: the verb's package loads only when the verb runs (--help and completion build every parser)
    from supersonic_interlink.engine.run import run_pulumi

    return run_pulumi(args.stack, args.action, cli=args.pulumi, **kwargs)
