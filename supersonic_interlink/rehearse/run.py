"""A whole cold start on the local control plane: a client's RepositoryIndex through the real Envoy wakes Triton
from zero, the real KEDA operator holds and releases it, and kwok plays the Slurm queue.

``rehearsal(cluster, settings, delay)`` starts, beside a running ``LocalCluster`` whose kwok runs
``stages.rehearsal_stages`` for the stack's namespace:

- the stack's namespace with the Triton Deployment at 0 replicas and its ScaledObject, modelled on the chart
  contract and the stack's values (``objects``): the chart's own are rendered only where the chart is on disk;
- the real KEDA operator watching that namespace, its Prometheus trigger pointed at a Prometheus stand-in;
- the chart's own scale-from-zero parts (``chart_parts``): its admission sidecar as a process acting on the cluster
  with a ServiceAccount token, and its Lua filter, filled in as the chart fills it, in the real Envoy with the
  program's computed configuration; the DNS stand-in and the Triton stand-in;
- a pod watcher: each new Triton pod is given a queue delay (the next scripted one, else a draw from ``delay``)
  as the annotation kwok's queue stage waits on; the Triton stand-in's DNS name is published while a Triton
  pod is Ready and withdrawn when none is, as a headless Service's records follow its ready pods; and the times
  the ScaledObject's floor went up from the stack's own and back (the sidecar's hold, as the live API shows it).

``Rehearsal.wake()`` is one client session started with the project's own probe (``wake.probe.probe_once``).
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from supersonic_interlink.config import Settings
from supersonic_interlink.config.loading import thaw
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.cluster import VIRTUAL_NODE, LocalCluster
from supersonic_interlink.rehearse import stages
from supersonic_interlink.rehearse.chart_parts import AdmissionProcess, admission_running, filled_lua
from supersonic_interlink.rehearse.delays import QueueDelay
from supersonic_interlink.rehearse.keda import KedaOperator, keda_running
from supersonic_interlink.rehearse.loopback import DnsStandIn, EnvoyProcess, dns_standin, envoy_running
from supersonic_interlink.rehearse.standins import PrometheusStandIn, TritonStandIn
from supersonic_interlink.wake.probe import ProbeResult, probe_deadline_seconds, probe_once

WATCH_SECONDS = 0.2
VIRTUAL_NODE_NAME = str(VIRTUAL_NODE["name"])


# --------------------------------------------------------------------------------------------- objects


def triton_deployment(settings: Settings) -> dict[str, Any]:
    """The Triton Deployment as the chart shapes it for scheduling: its name, pod labels, placement on the
    virtual node and pod annotations from the stack; at 0 replicas, as scale from zero leaves it."""
    release = settings.release.name
    labels = settings.generation.inference_pod_labels(release)
    triton = settings.triton
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": settings.generation.inference_object_name(release),
            "namespace": settings.namespace,
            "labels": labels,
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": thaw(triton.podAnnotations)},
                "spec": {
                    "nodeSelector": thaw(triton.nodeSelector),
                    "tolerations": thaw(triton.tolerations),
                    "containers": [{"name": settings.generation.inference_component, "image": triton.image}],
                },
            },
        },
    }


def scaled_object(settings: Settings, prometheus_address: str) -> dict[str, Any]:
    """The ScaledObject with the stack's KEDA values and load trigger, the trigger's server the stand-in."""
    release = settings.release.name
    keda = settings.keda

    def policy(p: Any) -> dict[str, Any]:
        return {
            "stabilizationWindowSeconds": p.stabilizationWindowSeconds,
            "policies": [{"type": "Pods", "value": p.stepsize, "periodSeconds": p.periodSeconds}],
        }

    trigger: dict[str, Any] = {"serverAddress": prometheus_address, "threshold": str(settings.serverLoad.threshold)}
    if settings.serverLoad.metric:
        trigger["query"] = settings.serverLoad.metric
    else:
        raise ValueError("serverLoad.metric is empty: the chart's default query is not known here; set it")
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": CHART.scaled_object_name(release), "namespace": settings.namespace},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": settings.generation.inference_object_name(release)},
            "minReplicaCount": keda.minReplicaCount,
            "maxReplicaCount": keda.maxReplicaCount,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {"scaleUp": policy(keda.scaleUp), "scaleDown": policy(keda.scaleDown)}
                }
            },
            "triggers": [{"type": "prometheus", "metadata": trigger}],
        },
    }


# --------------------------------------------------------------------------------------------- pods


@dataclass
class PodTrack:
    """One Triton pod as the rehearsal saw it; times are ``time.monotonic()``."""

    name: str
    seen: float
    queue_delay: float | None = None
    job_seconds: float | None = None
    ready: float | None = None
    failed: float | None = None
    gone: float | None = None
    phase: str = "Pending"
    exit_code: int | None = None


@dataclass
class Rehearsal:
    cluster: LocalCluster
    settings: Settings
    delay: QueueDelay
    envoy: EnvoyProcess
    dns: DnsStandIn
    prometheus: PrometheusStandIn
    admission: AdmissionProcess
    triton: TritonStandIn
    keda: KedaOperator
    rng: random.Random
    stack: str
    """The stack's name, as the probe records it."""
    scripted: deque[float] = field(default_factory=deque)
    """Queue delays to give the next pods, before any draw from ``delay``."""
    scripted_jobs: deque[float] = field(default_factory=deque)
    """Job times for the next pods: each such pod's Slurm job ends (exit 255) that long after it started running;
    a pod after them runs until it is deleted."""
    pods: dict[str, PodTrack] = field(default_factory=dict)
    floor_raised: list[float] = field(default_factory=list)
    """Monotonic times the ScaledObject's minReplicaCount was seen go above the stack's own (a wake's hold began)."""
    floor_lowered: list[float] = field(default_factory=list)
    """Monotonic times it was seen back at the stack's own (the hold ended)."""
    errors: list[str] = field(default_factory=list)
    published: bool = False

    @property
    def namespace(self) -> str:
        return self.settings.namespace

    @property
    def deployment(self) -> str:
        return self.settings.generation.inference_object_name(self.settings.release.name)

    def wake(self, *, deadline: float | None = None) -> ProbeResult:
        """One client session through Envoy, by the project's probe, with the stack's RepositoryIndex deadline."""
        return probe_once(
            self.envoy.target,
            float(deadline if deadline is not None else probe_deadline_seconds(self.settings)),
            stack=self.stack,
            ready_timeout=self.settings.scaleFromZero.readyTimeoutSeconds,
        )

    def replicas(self) -> int:
        done = self.cluster.kubectl(
            "get", "deployment", self.deployment, "-n", self.namespace, "-o", "jsonpath={.spec.replicas}"
        )
        return int(done.stdout.strip() or 0)

    def scaled_object_status(self) -> dict[str, Any]:
        name = CHART.scaled_object_name(self.settings.release.name)
        done = self.cluster.kubectl("get", "scaledobject", name, "-n", self.namespace, "-o", "json")
        return dict(json.loads(done.stdout).get("status") or {})

    # ----------------------------------------------------------------------------------------- the watcher

    def _watch(self, stopping: threading.Event) -> None:
        while not stopping.wait(WATCH_SECONDS):
            try:
                self._look()
            except Exception as error:
                self.errors.append(f"pod watcher: {error}")

    def _look(self) -> None:
        done = self.cluster.kubectl(
            "get", "pods,scaledobjects.keda.sh", "-n", self.namespace, "-o", "json", check=False
        )
        if done.returncode != 0:
            return
        now = time.monotonic()
        labels = self.settings.generation.inference_pod_labels(self.settings.release.name).items()
        listed = json.loads(done.stdout)["items"]
        items = [i for i in listed if i["kind"] == "Pod" and (i["metadata"].get("labels") or {}).items() >= labels]
        for scaled in (i for i in listed if i["kind"] == "ScaledObject"):
            raised = int(scaled["spec"].get("minReplicaCount") or 0) > self.settings.keda.minReplicaCount
            if raised and len(self.floor_raised) == len(self.floor_lowered):
                self.floor_raised.append(now)
            elif not raised and len(self.floor_raised) > len(self.floor_lowered):
                self.floor_lowered.append(now)
        names = set()
        any_ready = False
        for pod in items:
            name = pod["metadata"]["name"]
            names.add(name)
            track = self.pods.get(name)
            if track is None:
                track = self.pods[name] = PodTrack(name, now)
            annotations = pod["metadata"].get("annotations") or {}
            if stages.QUEUE_DELAY not in annotations and track.queue_delay is None:
                self._hold(pod, track)
            status = pod.get("status") or {}
            track.phase = status.get("phase", "Pending")
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
            if ready and track.ready is None:
                track.ready = now
            if track.phase == "Failed" and track.failed is None:
                track.failed = now
                for container in status.get("containerStatuses", []):
                    terminated = (container.get("state") or {}).get("terminated") or {}
                    if "exitCode" in terminated:
                        track.exit_code = int(terminated["exitCode"])
            deleting = pod["metadata"].get("deletionTimestamp") is not None
            any_ready = any_ready or (ready and track.phase == "Running" and not deleting)
        for name, track in self.pods.items():
            if name not in names and track.gone is None:
                track.gone = now
        fqdn = self.settings.generation.inference_service_fqdn(self.settings.release.name, self.namespace)
        if any_ready and not self.published:
            self.dns.publish(fqdn)
            self.published = True
        elif not any_ready and self.published:
            self.dns.unpublish(fqdn)
            self.published = False

    def _hold(self, pod: dict[str, Any], track: PodTrack) -> None:
        delay = self.scripted.popleft() if self.scripted else self.delay.draw(self.rng)
        track.queue_delay = delay
        notes = [f"{stages.QUEUE_DELAY}={stages.go_duration(delay)}"]
        if self.scripted_jobs:
            track.job_seconds = self.scripted_jobs.popleft()
            notes.append(f"{stages.JOB_TIME}={stages.go_duration(track.job_seconds)}")
        self.cluster.kubectl("annotate", "pod", pod["metadata"]["name"], "-n", self.namespace, *notes)


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
    """Everything of a rehearsal for ``settings``'s namespace on ``cluster``, with the scale-from-zero parts of the
    chart directory ``chart``; stops all it started."""
    namespace = settings.namespace
    release = settings.release.name
    lua = filled_lua(chart, settings)  # a chart without the file fails here, before anything starts
    work_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as started:
        prometheus = PrometheusStandIn(0.0)
        started.callback(prometheus.stop)
        cluster.kubectl("create", "namespace", namespace, check=False)
        documents = [triton_deployment(settings), scaled_object(settings, prometheus.address)]
        cluster.kubectl(
            "apply", "--server-side", "-f", "-", input_text="\n---\n".join(json.dumps(d) for d in documents)
        )
        keda = started.enter_context(keda_running(cluster, namespace, work_dir))
        dns = started.enter_context(dns_standin())
        triton = TritonStandIn()
        started.callback(triton.stop)
        admission = started.enter_context(admission_running(cluster, settings, chart, work_dir / "admission"))
        envoy = started.enter_context(
            envoy_running(
                settings,
                tritons=[(settings.generation.inference_service_fqdn(release, namespace), triton.port)],
                admission_port=admission.port,
                dns_port=dns.port,
                lua=lua,
            )
        )
        result = Rehearsal(
            cluster=cluster,
            settings=settings,
            delay=delay,
            envoy=envoy,
            dns=dns,
            prometheus=prometheus,
            admission=admission,
            triton=triton,
            keda=keda,
            rng=random.Random(seed),
            stack=stack,
        )
        stopping = threading.Event()
        watcher = threading.Thread(target=result._watch, args=(stopping,), name="rehearsal-pods", daemon=True)
        watcher.start()

        def stop_watching() -> None:
            stopping.set()
            watcher.join(10)

        started.callback(stop_watching)
        yield result
