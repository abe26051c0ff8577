"""``./supersonic rehearse``: the verb's work once its parser has read the command line (``cli/rehearse.py``): the
stack, its chart (``--chart DIR``, else the stack's own chart on disk: a path source or a fetched pinned commit) and
its queue delay read, the toolchain and KEDA built if missing, the local control plane started, one measuring wake,
then what ran, what is modelled and the prediction printed."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from supersonic_interlink.config import ConfigError, Settings, generation, load_settings
from supersonic_interlink.config.stack_config import load_stack
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import ClusterError, LocalCluster
from supersonic_interlink.rehearse import report
from supersonic_interlink.rehearse.chart_parts import ADMISSION_FILE, LUA_FILE, ChartPartError, chart_file
from supersonic_interlink.rehearse.delays import DelaySpecError, QueueDelay, parse
from supersonic_interlink.rehearse.keda import OPERATOR
from supersonic_interlink.rehearse.run import VIRTUAL_NODE_NAME, rehearsal
from supersonic_interlink.rehearse.stages import rehearsal_stages
from supersonic_interlink.wake.probe import READY, describe


def run(stack: str, queue_delay: str, directory: Path | None, chart: Path | None = None) -> int:
    """Exit 2 for a bad delay, stack config or chart, 1 when the rehearsal could not run or its wake was not served."""
    try:
        delay = parse(queue_delay, stack=stack)
        config = load_stack(stack).config
        if chart is not None and not chart.is_dir():
            print(f"supersonic rehearse: --chart {chart}: not a directory; give a chart directory", file=sys.stderr)
            return 2
        if chart is None:
            chart = generation.chart_directory(load_settings(config).release.chart)
        if chart is None or not chart.is_dir():
            print(
                f"supersonic rehearse: {stack}: the stack's chart is not on disk ({chart or 'unpinned'}), and the "
                "rehearsal runs the chart's own Lua filter and admission sidecar: pass --chart DIR, or fetch the "
                f"pinned chart with `./supersonic render {stack} --fetch-chart`",
                file=sys.stderr,
            )
            return 2
        token = generation.CHART_OVERRIDE.set(chart.resolve())
        try:
            settings = load_settings(config)  # the generation read from the chart that runs
        finally:
            generation.CHART_OVERRIDE.reset(token)
        files = [chart_file(chart, LUA_FILE), chart_file(chart, ADMISSION_FILE)]
    except ChartPartError as error:
        print(f"supersonic rehearse: {stack}: {error}", file=sys.stderr)
        return 2
    except DelaySpecError as error:
        print(f"supersonic rehearse: {error}", file=sys.stderr)
        return 2
    except ConfigError as error:
        print(f"supersonic rehearse: {stack}: {'; '.join(error.problems)}", file=sys.stderr)
        return 2
    if not settings.scaleFromZero.enabled:
        print(f"supersonic rehearse: {stack} has scaleFromZero.enabled false: nothing wakes", file=sys.stderr)
        return 2
    return _rehearse(stack, settings, delay, directory, chart=chart, files=files)


def _rehearse(
    stack: str, settings: Settings, delay: QueueDelay, directory: Path | None, *, chart: Path, files: list[Path]
) -> int:

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
            log("rehearse: starting the KEDA operator, Envoy and the chart's Lua filter and admission sidecar ...")
            started = time.monotonic()
            with rehearsal(cluster, settings, delay, root / "rehearsal", stack=stack, chart=chart) as run:
                log(f"rehearse: KEDA operator, Envoy and the chart's parts ready in {time.monotonic() - started:.1f} s")
                run.scripted.append(0.0)
                log("rehearse: one cold wake with no queue delay, to measure the overhead around the queue")
                started = time.monotonic()
                result = run.wake()
                log(f"rehearse: {describe(result)} ({time.monotonic() - started:.1f} s)")
                errors = run.errors + [f"admission sidecar: {line}" for line in run.admission.log().splitlines()[-5:]]
        finally:
            cluster.stop(log=log)
    except (ClusterError, toolchain.ToolchainError) as error:
        print(f"supersonic rehearse: {error}", file=sys.stderr)
        return 1
    print("parts of this rehearsal:")
    print(
        "\n".join(
            report.describe_parts(
                report.parts(versions["keda-operator"], versions["kwok"], versions["kube-apiserver"], *files)
            )
        )
    )
    if result.outcome != READY or result.wake_seconds is None:
        print(f"the measuring wake was not served ({result.outcome}: {result.detail}); no prediction")
        for problem in errors:
            print(f"  {problem}")
        return 1
    print("\n".join(report.prediction(settings, delay, result.wake_seconds)))
    return 0
