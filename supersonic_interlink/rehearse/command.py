"""``./supersonic rehearse``: the verb's work once its parser has read the command line (``cli/rehearse.py``): the
stack and its queue delay read, the toolchain and KEDA built if missing, the local control plane started, one
measuring wake, then what is real and modelled and the prediction printed."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from supersonic_interlink.config import ConfigError, Settings, load_settings
from supersonic_interlink.config.stack_config import load_stack
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import ClusterError, LocalCluster
from supersonic_interlink.rehearse import report
from supersonic_interlink.rehearse.delays import DelaySpecError, QueueDelay, parse
from supersonic_interlink.rehearse.keda import OPERATOR
from supersonic_interlink.rehearse.run import VIRTUAL_NODE_NAME, rehearsal
from supersonic_interlink.rehearse.stages import rehearsal_stages
from supersonic_interlink.wake.probe import READY, describe


def run(stack: str, queue_delay: str, directory: Path | None) -> int:
    """Exit 2 for a bad delay or stack config, 1 when the rehearsal could not run or its wake was not served."""
    try:
        delay = parse(queue_delay, stack=stack)
        settings = load_settings(load_stack(stack).config)
    except DelaySpecError as error:
        print(f"supersonic rehearse: {error}", file=sys.stderr)
        return 2
    except ConfigError as error:
        print(f"supersonic rehearse: {stack}: {'; '.join(error.problems)}", file=sys.stderr)
        return 2
    if not settings.scaleFromZero.enabled:
        print(f"supersonic rehearse: {stack} has scaleFromZero.enabled false: nothing wakes", file=sys.stderr)
        return 2
    return _rehearse(stack, settings, delay, directory)


def _rehearse(stack: str, settings: Settings, delay: QueueDelay, directory: Path | None) -> int:

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
    except (ClusterError, toolchain.ToolchainError) as error:
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
