"""``./supersonic rehearse``: one cold wake measured on the local control plane, and the share of cold sessions the
stack's ``readyTimeoutSeconds`` serves predicted from it. Inputs are checked before anything is built or started."""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

from supersonic_interlink.chart.binaries import BinaryError
from supersonic_interlink.chart.helm import ChartRenderError
from supersonic_interlink.config import ConfigError, Settings, load_settings
from supersonic_interlink.config.loading import CHART_OVERRIDE, chart_directory
from supersonic_interlink.config.stack_config import load_stack
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import COMPONENTS, ClusterError, LocalCluster
from supersonic_interlink.rehearse.delays import QueueDelay, parse, served_share
from supersonic_interlink.rehearse.run import OPERATOR, VIRTUAL_NODE_NAME, chart_parts, rehearsal, rehearsal_stages
from supersonic_interlink.wake.probe import LUA_CLOCK_SECONDS, READY, describe


def prediction(settings: Settings, delay: QueueDelay, overhead_seconds: float) -> list[str]:
    sfz = settings.scaleFromZero
    usable = sfz.readyTimeoutSeconds - LUA_CLOCK_SECONDS
    return [
        f"queue delay: {delay.describe()}",
        f"measured overhead of a wake (everything but the queue): {overhead_seconds:.1f} s",
        (f"readyTimeoutSeconds {sfz.readyTimeoutSeconds}: a cold session is served when queue delay + overhead "
         f"<= {usable} s (the filter counts whole seconds)"),
        f"predicted share of cold sessions served: {served_share(delay, usable, overhead_seconds):.1%}",
        (f"holdMinReplicasSeconds {sfz.holdMinReplicasSeconds}: KEDA keeps Triton only while the admission sidecar "
         "holds minReplicaCount at 1; after a wake from outside KEDA its LastActiveTime is unset, so once the hold "
         "ends it scales to zero at once, with no cooldown"),
        (f"a session served at the limit has Triton for at least {sfz.holdMinReplicasSeconds - usable} s after its "
         "first answer without load (holdMinReplicasSeconds - the wait); load above the threshold keeps it longer"),
    ]  # fmt: skip


def _inputs(stack: str, queue_delay: str, chart: Path | None) -> tuple[Settings, QueueDelay, Path]:
    delay = parse(queue_delay, stack=stack)
    config = load_stack(stack).config
    found = chart or chart_directory(load_settings(config).release.chart)
    if found is None or not found.is_dir():
        where = f"--chart {chart}" if chart else f"release.chart {found or 'unpinned'}"
        fetch = f"`./supersonic render {stack} --fetch-chart`"
        raise ValueError(f"{where}: no chart directory there; give --chart DIR, or fetch the pinned chart: {fetch}")
    token = CHART_OVERRIDE.set(found.resolve())
    try:
        settings = load_settings(config)  # the generation read from the chart that runs
    finally:
        CHART_OVERRIDE.reset(token)
    if not settings.scaleFromZero.enabled:
        raise ValueError("scaleFromZero.enabled false: nothing wakes; the rehearsal needs true")
    chart_parts(settings, found, 0)  # the chart renders its parts, before anything starts
    return settings, delay, found


def run(stack: str, queue_delay: str, directory: Path | None, chart: Path | None = None) -> int:
    """Exit 2 for a bad delay, stack config or chart, 1 when the rehearsal could not run or its wake was not served."""
    try:
        settings, delay, chart = _inputs(stack, queue_delay, chart)
    except (ValueError, ChartRenderError, ConfigError) as error:
        why = "; ".join(error.problems) if isinstance(error, ConfigError) else str(error)
        print(f"supersonic rehearse: {stack}: {why}", file=sys.stderr)
        return 2
    except BinaryError as error:
        print(f"supersonic rehearse: {error}", file=sys.stderr)
        return 1
    log = partial(print, file=sys.stderr, flush=True)
    root = (directory or toolchain.cache_dir() / "rehearse").resolve()
    try:
        toolchain.ensure([*COMPONENTS.values(), OPERATOR], log=log)
        cluster = LocalCluster(root, tied=True, pod_stages=rehearsal_stages(settings.namespace, VIRTUAL_NODE_NAME))
        cluster.start(log=log)
        try:
            with rehearsal(cluster, settings, root / "rehearsal", stack=stack, chart=chart) as rehearsed:
                rehearsed.scripted.append(0.0)
                log("rehearse: one cold wake with no queue delay, to measure the overhead around the queue")
                started = time.monotonic()
                result = rehearsed.wake()
                log(f"rehearse: {describe(result)} ({time.monotonic() - started:.1f} s)")
                sidecar = [f"admission sidecar: {line}" for line in rehearsed.admission_log().splitlines()[-5:]]
                errors = rehearsed.errors + sidecar
        finally:
            cluster.stop(log=log)
    except (ClusterError, toolchain.ToolchainError) as error:
        print(f"supersonic rehearse: {error}", file=sys.stderr)
        return 1
    if result.outcome != READY or result.wake_seconds is None:
        print(f"the measuring wake was not served ({result.outcome}: {result.detail}); no prediction")
        for problem in errors:
            print(f"  {problem}")
        return 1
    print("\n".join(prediction(settings, delay, result.wake_seconds)))
    return 0
