"""``./supersonic drift <stack> [--json | --markdown] [--correct]``: what changed on the cluster outside Pulumi.

Read-only without ``--correct``: a ``pulumi preview --refresh`` of the stack (the objects Pulumi manages directly,
and the Helm release's record) and a server-side dry-run apply of the live release's stored manifest (the release's
objects). Exit 0 no drift, 1 drift, 2 could not check.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from supersonic_interlink.cli import args as args_


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic drift",
        description="Compare the cluster KUBECONFIG names with what the stack deployed: the objects Pulumi manages "
        "(pulumi preview --refresh) and the Helm release's objects (a server-side dry-run apply of its stored "
        "manifest). Exit 0 no drift, 1 drift, 2 could not check.",
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
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    why = args_.unknown_stack(args.stack)
    if why is not None:
        print(f"supersonic drift: {why}", file=sys.stderr)
        return 2
    from supersonic_interlink.drift import report as printed
    from supersonic_interlink.drift.check import CannotCheck, EngineError, Tools, run
    from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV
    from supersonic_interlink.engine.run import ROOT, Engine, scratch_project
    from supersonic_interlink.engine.toolchain import ToolchainError

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    scratch = os.environ.get(SCRATCH_PROJECT_ENV)
    try:
        work_dir = scratch_project(Path(scratch)) if scratch else ROOT
        engine = Engine(args.stack, work_dir=work_dir, log=log, create=False)
        first, second = run(engine, Tools(), fix=args.correct, log=log)
    except (CannotCheck, EngineError, ToolchainError) as error:
        print(f"supersonic drift: could not check {args.stack}: {error}", file=sys.stderr)
        return 2
    final = second or first
    if args.json:
        document = final.as_json()
        if second is not None:
            document["corrected"] = first.as_json()
        print(json.dumps(document, indent=2))
    elif args.markdown:
        print(printed.markdown(final, correct_command=f"./supersonic drift {args.stack} --correct"), end="")
    else:
        if second is not None:
            print("before the correction:\n" + printed.text(first) + "\nafter it:")
        print(printed.text(final), end="")
        if final.drift and not args.correct:
            print(f"to bring it back: ./supersonic drift {args.stack} --correct")
    return 1 if final.drift else 0
