"""``./supersonic pulumi preview|up|refresh|destroy <stack>``: the real engine for a stack, guarded."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from supersonic_interlink.cli import args as args_
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.run import ACTIONS, ROOT, Engine, EngineError, Refused, gated, scratch_project


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic pulumi",
        description="Run the real Pulumi engine for a stack against the cluster KUBECONFIG names.",
        epilog='example: eval "$(./supersonic cluster env)" && ./supersonic pulumi preview hammer --diff',
    )
    parser.add_argument("action", choices=ACTIONS)
    args_.add_stack(parser, help="stack name, as in stacks/Pulumi.<stack>.yaml")
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
    if args.action in ("up", "destroy") and not args.yes:
        print(
            f"supersonic pulumi: {args.action} changes the cluster: review `./supersonic pulumi preview "
            f"{args.stack} --diff` first, then add --yes",
            file=sys.stderr,
        )
        return 2
    kwargs: dict[str, Any] = {}
    if args.diff:
        if args.action == "destroy":
            print("supersonic pulumi: --diff goes with preview, up or refresh", file=sys.stderr)
            return 2
        kwargs["diff"] = True
    if args.expect_no_changes:
        if args.action not in ("preview", "up", "refresh"):
            print("supersonic pulumi: --expect-no-changes goes with preview, up or refresh", file=sys.stderr)
            return 2
        kwargs["expect_no_changes"] = True
    if args.json:
        if args.action != "preview":
            print("supersonic pulumi: --json goes with preview", file=sys.stderr)
            return 2
        kwargs["json"] = True
    from supersonic_interlink.config import ConfigError

    printer = (
        (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else (lambda line: print(line, flush=True))
    )
    from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV

    scratch = os.environ.get(SCRATCH_PROJECT_ENV)
    try:
        work_dir = scratch_project(Path(scratch)) if scratch else ROOT
        # Only `up` creates a stack in a real backend; on the local cluster's throwaway backend anything may.
        engine = Engine(args.stack, work_dir=work_dir, log=printer, create=bool(scratch) or args.action == "up")
        result = gated(engine, args.action, **kwargs)
        if args.json:
            print(result.stdout)
    except ConfigError as error:
        print("\n".join(error.problems), file=sys.stderr)
        return 2
    except Refused as error:
        print(f"supersonic pulumi: {error}", file=sys.stderr)
        return 2 if args.action == "destroy" else 1
    except (EngineError, toolchain.ToolchainError) as error:
        print(f"supersonic pulumi: {args.action} of {args.stack} failed:\n{error}", file=sys.stderr)
        return 1
    return 0
