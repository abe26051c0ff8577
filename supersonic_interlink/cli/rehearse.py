"""``./supersonic rehearse <stack> --queue-delay fixed:S|uniform:A:B|history:FILE``: a cold start rehearsed on the
local control plane, and what it predicts for the stack's readyTimeoutSeconds."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from supersonic_interlink.cli import args as args_

if TYPE_CHECKING:
    from supersonic_interlink.config import Settings
    from supersonic_interlink.rehearse.delays import QueueDelay


def parser() -> args_.Parser:
    from supersonic_interlink.rehearse.delays import FORMS

    parser = args_.Parser(
        prog="./supersonic rehearse",
        description="Rehearse a cold start of the stack on a local control plane: a client's RepositoryIndex through "
        "the real Envoy (the stack's computed configuration) wakes Triton from zero under the real KEDA operator, "
        "while kwok holds the Triton pod Pending for a Slurm queue delay. One wake with no queue delay measures the "
        "overhead around the queue; the queue-delay distribution then predicts the share of cold sessions the "
        "stack's readyTimeoutSeconds serves. Prints which parts are real and which are modelled. Builds the "
        "engine toolchain and the KEDA operator first if they are not cached (tens of minutes, once).",
        epilog="example: ./supersonic rehearse hammer --queue-delay history:wakes.jsonl",
    )
    args_.add_stack(parser, help="stack name, as in stacks/Pulumi.<stack>.yaml")
    parser.add_argument("--queue-delay", required=True, metavar="SPEC", help=f"the Slurm queue delay: {FORMS}")
    parser.add_argument("--dir", type=Path, default=None, help="where the local cluster's files live")
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    why = args_.unknown_stack(args.stack)
    if why is not None:
        print(f"supersonic rehearse: {why}", file=sys.stderr)
        return 2
    from supersonic_interlink.config import ConfigError, load_settings
    from supersonic_interlink.config.stack_config import load_stack_config
    from supersonic_interlink.rehearse.delays import DelaySpecError, parse

    try:
        delay = parse(args.queue_delay, stack=args.stack)
        settings = load_settings(load_stack_config(args.stack))
    except DelaySpecError as error:
        print(f"supersonic rehearse: {error}", file=sys.stderr)
        return 2
    except ConfigError as error:
        print(f"supersonic rehearse: {args.stack}: {'; '.join(error.problems)}", file=sys.stderr)
        return 2
    if not settings.scaleFromZero.enabled:
        print(f"supersonic rehearse: {args.stack} has scaleFromZero.enabled false: nothing wakes", file=sys.stderr)
        return 2
    return _rehearse(args.stack, settings, delay, args.dir)


def _rehearse(stack: str, settings: Settings, delay: QueueDelay, directory: Path | None) -> int:
    from supersonic_interlink.engine import toolchain
    from supersonic_interlink.engine.cluster import ClusterError, LocalCluster
    from supersonic_interlink.rehearse import report
    from supersonic_interlink.rehearse.keda import OPERATOR, KedaError
    from supersonic_interlink.rehearse.run import VIRTUAL_NODE_NAME, rehearsal
    from supersonic_interlink.rehearse.stages import rehearsal_stages
    from supersonic_interlink.wake.probe import READY, describe

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    root = (directory or toolchain.cache_dir() / "rehearse").resolve()
    try:
        toolchain.ensure(
            ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", OPERATOR], log=log
        )
        versions = {
            name: toolchain.version(toolchain.build_for(name)) for name in ("keda-operator", "kwok", "kube-apiserver")
        }
        cluster = LocalCluster(root, tied=True, pod_stages=rehearsal_stages(settings.namespace, VIRTUAL_NODE_NAME))
        cluster.start(log=log)
        try:
            with rehearsal(cluster, settings, delay, root / "rehearsal", stack=stack) as run:
                run.scripted.append(0.0)
                log("rehearse: one cold wake with no queue delay, to measure the overhead around the queue")
                started = time.monotonic()
                result = run.wake()
                log(f"rehearse: {describe(result)} ({time.monotonic() - started:.1f} s)")
                errors = run.errors + run.admission.errors
        finally:
            cluster.stop(log=log)
    except (ClusterError, KedaError, toolchain.ToolchainError) as error:
        print(f"supersonic rehearse: {error}", file=sys.stderr)
        return 1
    print("parts of this rehearsal:")
    print(
        "\n".join(
            report.describe_parts(report.parts(versions["keda-operator"], versions["kwok"], versions["kube-apiserver"]))
        )
    )
    if result.outcome != READY or result.wake_seconds is None:
        print(f"the measuring wake was not served ({result.outcome}: {result.detail}); no prediction")
        for problem in errors:
            print(f"  {problem}")
        return 1
    print("\n".join(report.prediction(settings, delay, result.wake_seconds)))
    return 0
