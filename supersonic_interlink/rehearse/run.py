"""A whole cold start on the local control plane: a client through the real Envoy wakes Triton from zero, the real
KEDA operator and the chart's sidecar hold and release it, kwok plays the Slurm queue; a watcher follows the pods."""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from supersonic_interlink.config import Settings
from supersonic_interlink.config.loading import thaw
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import (
    LOOPBACK,
    VIRTUAL_NODE,
    LocalCluster,
    free_port,
    start_process,
    stop_process,
    wait_until,
)
from supersonic_interlink.rehearse import loopback, stages
from supersonic_interlink.rehearse.chart_parts import admission_running, filled_lua
from supersonic_interlink.rehearse.delays import QueueDelay
from supersonic_interlink.wake.probe import ProbeResult, probe_deadline_seconds, probe_once

WATCH_SECONDS = 0.2
VIRTUAL_NODE_NAME = str(VIRTUAL_NODE["name"])


OPERATOR = "keda-operator"
CLUSTER_OBJECT_NAMESPACE = "keda"
KEDA_START_TIMEOUT_SECONDS = 60.0


@contextlib.contextmanager
def keda_running(cluster: LocalCluster, namespace: str, directory: Path) -> Iterator[subprocess.Popen[bytes]]:
    """KEDA's real operator (``tools/keda``'s pin; built if not cached: about 25 minutes on two cores) watching
    ``namespace`` (``WATCH_NAMESPACE``, ``pkg/util/watch.go``), with the API server's own certificates in the
    ``--cert-dir`` its metrics service loads or exits (``pkg/metricsservice/utils/tls.go``)."""
    executable = toolchain.ensure([OPERATOR], log=lambda _line: None)[OPERATOR]
    certs = directory / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    links = {"ca.crt": cluster.ca_certificate, "tls.crt": cluster.serving_certificate, "tls.key": cluster.serving_key}
    for name, target in links.items():
        (certs / name).unlink(missing_ok=True)
        (certs / name).symlink_to(target)
    cluster.kubectl("create", "namespace", CLUSTER_OBJECT_NAMESPACE, check=False)
    health = f"{LOOPBACK}:{free_port()}"
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "WATCH_NAMESPACE": namespace,
        "KEDA_CLUSTER_OBJECT_NAMESPACE": CLUSTER_OBJECT_NAMESPACE,
        "POD_NAMESPACE": CLUSTER_OBJECT_NAMESPACE,
    }
    argv = [
        str(executable),
        "--leader-elect=false",
        f"--cert-dir={certs}",
        f"--ca-dir={certs}",
        f"--metrics-bind-address={LOOPBACK}:{free_port()}",
        f"--health-probe-bind-address={health}",
        f"--metrics-service-bind-address={LOOPBACK}:{free_port()}",
        "--zap-log-level=info",
    ]
    log = directory / "keda-operator.log"
    process = start_process(argv, log, env=env)
    try:
        ready = partial(loopback.answers, f"http://{health}/readyz")
        wait_until(
            ready, KEDA_START_TIMEOUT_SECONDS, f"{OPERATOR} to be ready", interval=0.2, log_file=log, process=process
        )
        yield process
    finally:
        stop_process(process)


def triton_deployment(settings: Settings) -> dict[str, Any]:
    """The Triton Deployment as the chart shapes it for scheduling, at 0 replicas."""
    release, triton = settings.release.name, settings.triton
    labels = settings.generation.inference_pod_labels(release)
    name, namespace = settings.generation.inference_object_name(release), settings.namespace
    container = {"name": settings.generation.inference_component, "image": triton.image}
    pod = {
        "nodeSelector": thaw(triton.nodeSelector),
        "tolerations": thaw(triton.tolerations),
        "containers": [container],
    }
    template = {"metadata": {"labels": labels, "annotations": thaw(triton.podAnnotations)}, "spec": pod}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": template},
    }


def scaled_object(settings: Settings, prometheus_port: int) -> dict[str, Any]:
    """The ScaledObject with the stack's floor, ceiling and load trigger, pointed at the Prometheus stand-in (the HPA's
    behaviour is left out: it acts only above one replica, which a rehearsal without load never reaches)."""
    release, keda = settings.release.name, settings.keda
    trigger = {"serverAddress": f"http://{LOOPBACK}:{prometheus_port}", "threshold": str(settings.serverLoad.threshold)}
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": CHART.scaled_object_name(release), "namespace": settings.namespace},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": settings.generation.inference_object_name(release)},
            "minReplicaCount": keda.minReplicaCount,
            "maxReplicaCount": keda.maxReplicaCount,
            "triggers": [{"type": "prometheus", "metadata": {**trigger, "query": settings.serverLoad.metric}}],
        },
    }


@dataclass
class PodTrack:
    """One Triton pod as the rehearsal saw it; times are ``time.monotonic()``."""

    queue_delay: float | None = None
    job_seconds: float | None = None
    ready: float | None = None
    gone: float | None = None
    exit_code: int | None = None


@dataclass
class Rehearsal:
    cluster: LocalCluster
    settings: Settings
    delay: QueueDelay
    envoy: loopback.EnvoyProcess
    dns: loopback.DnsStandIn
    prometheus: loopback.PrometheusStandIn
    triton: loopback.TritonStandIn
    admission_log_path: Path
    rng: random.Random
    stack: str
    scripted: deque[float] = field(default_factory=deque)
    """Queue delays for the next pods, before any draw from ``delay``."""
    scripted_jobs: deque[float] = field(default_factory=deque)
    """Job times for the next pods (then exit 255); a pod after them runs until deleted."""
    pods: dict[str, PodTrack] = field(default_factory=dict)
    floor_raised: list[float] = field(default_factory=list)
    """When the ScaledObject's minReplicaCount went above the stack's own (a hold began), and back (it ended)."""
    floor_lowered: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    published: bool = False

    def wake(self) -> ProbeResult:
        deadline, timeout = probe_deadline_seconds(self.settings), self.settings.scaleFromZero.readyTimeoutSeconds
        return probe_once(self.envoy.target, deadline, stack=self.stack, ready_timeout=timeout)

    def admission_log(self) -> str:
        return self.admission_log_path.read_text(errors="replace")

    def replicas(self) -> int:
        name = self.settings.generation.inference_object_name(self.settings.release.name)
        jsonpath = "jsonpath={.spec.replicas}"
        done = self.cluster.kubectl("get", "deployment", name, "-n", self.settings.namespace, "-o", jsonpath)
        return int(done.stdout.strip() or 0)

    def scaled_object_status(self) -> dict[str, Any]:
        name = CHART.scaled_object_name(self.settings.release.name)
        done = self.cluster.kubectl("get", "scaledobject", name, "-n", self.settings.namespace, "-o", "json")
        return dict(json.loads(done.stdout).get("status") or {})

    def _watch(self, stopping: threading.Event) -> None:
        while not stopping.wait(WATCH_SECONDS):
            try:
                self._look()
            except Exception as error:
                self.errors.append(f"pod watcher: {error}")

    def _look(self) -> None:
        namespace, release = self.settings.namespace, self.settings.release.name
        done = self.cluster.kubectl("get", "pods,scaledobjects.keda.sh", "-n", namespace, "-o", "json")
        now = time.monotonic()
        labels = self.settings.generation.inference_pod_labels(release).items()
        listed = json.loads(done.stdout)["items"]
        for scaled in (i for i in listed if i["kind"] == "ScaledObject"):
            raised = int(scaled["spec"].get("minReplicaCount") or 0) > self.settings.keda.minReplicaCount
            if raised != (len(self.floor_raised) > len(self.floor_lowered)):  # a hold began or ended
                (self.floor_raised if raised else self.floor_lowered).append(now)
        pods = [i for i in listed if i["kind"] == "Pod" and (i["metadata"].get("labels") or {}).items() >= labels]
        any_ready = False
        for pod in pods:
            track = self.pods.setdefault(pod["metadata"]["name"], PodTrack())
            if stages.QUEUE_DELAY not in (pod["metadata"].get("annotations") or {}) and track.queue_delay is None:
                self._hold(pod["metadata"]["name"], track)
            status = pod.get("status") or {}
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
            if ready and track.ready is None:
                track.ready = now
            if status.get("phase") == "Failed" and track.exit_code is None:
                ended = [(c.get("state") or {}).get("terminated") or {} for c in status.get("containerStatuses", [])]
                track.exit_code = next((int(t["exitCode"]) for t in ended if "exitCode" in t), None)
            deleting = pod["metadata"].get("deletionTimestamp") is not None
            any_ready = any_ready or (ready and status.get("phase") == "Running" and not deleting)
        names = {pod["metadata"]["name"] for pod in pods}
        for name, track in self.pods.items():
            if name not in names and track.gone is None:
                track.gone = now
        if any_ready != self.published:
            fqdn = self.settings.generation.inference_service_fqdn(release, namespace)
            (self.dns.publish if any_ready else self.dns.unpublish)(fqdn)
            self.published = any_ready

    def _hold(self, name: str, track: PodTrack) -> None:
        track.queue_delay = self.scripted.popleft() if self.scripted else self.delay.draw(self.rng)
        notes = [f"{stages.QUEUE_DELAY}={stages.go_duration(track.queue_delay)}"]
        if self.scripted_jobs:
            track.job_seconds = self.scripted_jobs.popleft()
            notes += [f"{stages.JOB_TIME}={stages.go_duration(track.job_seconds)}"]
            notes += [f"{key}={value}" for key, value in stages.JOB_END.items()]
        self.cluster.kubectl("annotate", "pod", name, "-n", self.settings.namespace, *notes)


@contextlib.contextmanager
def rehearsal(
    cluster: LocalCluster,
    settings: Settings,
    delay: QueueDelay,
    work_dir: Path,
    *,
    stack: str,
    chart: Path,
    seed: int | None = None,
) -> Iterator[Rehearsal]:
    """Everything of a rehearsal in ``settings``'s namespace, with ``chart``'s own parts; stops all it started."""
    namespace, release = settings.namespace, settings.release.name
    lua = filled_lua(chart, settings)  # before anything starts
    work_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as started:
        prometheus = loopback.PrometheusStandIn(0.0)
        started.callback(prometheus.stop)
        cluster.kubectl("create", "namespace", namespace, check=False)
        documents = [triton_deployment(settings), scaled_object(settings, prometheus.port)]
        cluster.kubectl("apply", "--server-side", "-f", "-", input_text="\n---\n".join(map(json.dumps, documents)))
        started.enter_context(keda_running(cluster, namespace, work_dir))
        dns = started.enter_context(loopback.dns_standin())
        triton = loopback.TritonStandIn()
        started.callback(triton.stop)
        admission_port = started.enter_context(admission_running(cluster, settings, chart, work_dir / "admission"))
        envoy = started.enter_context(
            loopback.envoy_running(
                settings,
                tritons=[(settings.generation.inference_service_fqdn(release, namespace), triton.port)],
                admission_port=admission_port,
                dns_port=dns.port,
                lua=lua,
            )
        )
        result = Rehearsal(
            cluster, settings, delay, envoy, dns, prometheus, triton, work_dir / "admission" / "admission.log",
            random.Random(seed), stack,
        )  # fmt: skip
        stopping = threading.Event()
        watcher = threading.Thread(target=result._watch, args=(stopping,), name="rehearsal-pods", daemon=True)
        watcher.start()
        started.callback(watcher.join, 10)
        started.callback(stopping.set)
        yield result
