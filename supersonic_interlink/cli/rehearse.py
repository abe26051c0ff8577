"""``./supersonic rehearse <stack> --queue-delay fixed:S|uniform:A:B|history:FILE``: a cold start rehearsed on the
local control plane, and what it predicts for the stack's readyTimeoutSeconds."""

from __future__ import annotations

import sys
from pathlib import Path

from supersonic_interlink.cli import args as args_
from supersonic_interlink.rehearse.delays import FORMS


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic rehearse",
        description="Rehearse a cold start of the stack on a local control plane: a client's RepositoryIndex through "
        "the real Envoy (the stack's computed configuration, the chart's own Lua filter and admission sidecar) wakes "
        "Triton from zero under the real KEDA operator, "
        "while kwok holds the Triton pod Pending for a Slurm queue delay. One wake with no queue delay measures the "
        "overhead around the queue; the queue-delay distribution then predicts the share of cold sessions the "
        "stack's readyTimeoutSeconds serves. Prints which parts are real and which are modelled. Builds the "
        "engine toolchain and the KEDA operator first if they are not cached (tens of minutes, once).",
        epilog="example: ./supersonic rehearse hammer --queue-delay history:wakes.jsonl",
    )
    args_.add_stack(parser, help="stack name, as in stacks/Pulumi.<stack>.yaml")
    parser.add_argument("--queue-delay", required=True, metavar="SPEC", help=f"the Slurm queue delay: {FORMS}")
    parser.add_argument("--dir", type=Path, default=None, help="where the local cluster's files live")
    parser.add_argument(
        "--chart",
        type=Path,
        default=None,
        metavar="DIR",
        help="the chart whose cfg/envoy-filter.lua and cfg/admission-server.py run (default: the stack's own chart, "
        "when it is on disk)",
    )
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    why = args_.unknown_stack(args.stack)
    if why is not None:
        print(f"supersonic rehearse: {why}", file=sys.stderr)
        return 2
    # lazy: the verb's package loads only when the verb runs (--help and completion build every parser)
    from supersonic_interlink.rehearse.measure import run

    return run(args.stack, args.queue_delay, args.dir, args.chart)
