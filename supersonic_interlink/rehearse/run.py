"""A whole cold start on the local control plane: a client through the real Envoy wakes Triton from zero, the real
KEDA operator and the chart's sidecar hold and release it, kwok plays the Slurm queue; a watcher follows the pods."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink.chart.helm import ChartRenderError, render_chart
from supersonic_interlink.config import Settings
from supersonic_interlink.config.envoy import build_envoy_config, render_envoy_yaml
from supersonic_interlink.config.values import release_values
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
from supersonic_interlink.rehearse import loopback
from supersonic_interlink.wake.probe import ProbeResult, probe_deadline_seconds, probe_once

WATCH_SECONDS = 0.2
VIRTUAL_NODE_NAME = str(VIRTUAL_NODE["name"])
OPERATOR = "keda-operator"
CLUSTER_OBJECT_NAMESPACE = "keda"
START_TIMEOUT_SECONDS = 60.0
QUEUE_DELAY = "rehearse.supersonic-interlink/queue-delay"
LUA_KEY, ADMISSION_KEY = "envoy-filter.lua", "admission-server.py"
"""The keys of the chart's ConfigMaps holding its Lua filter and its admission sidecar's code."""
ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
APPLIED = {"ScaledObject", "PersistentVolumeClaim", "ServiceAccount", "Role", "RoleBinding"}


def _is(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def rehearsal_stages(namespace: str, node: str) -> list[dict[str, Any]]:
    """kwok's default stages (``kustomize/stage/pod/fast``; kwok drops them once given any) for every pod but those on
    ``node`` in ``namespace``, which stay Pending for their ``QUEUE_DELAY`` annotation, the Slurm queue."""
    source = toolchain.module_source("kwok") / "kustomize" / "stage" / "pod" / "fast"
    ready, complete, delete = (
        yaml.safe_load((source / f"{name}.yaml").read_text()) for name in ("pod-ready", "pod-complete", "pod-delete")
    )

    def narrowed(name: str, *expressions: dict[str, Any]) -> dict[str, Any]:
        stage = copy.deepcopy(ready)
        stage["metadata"]["name"] = name
        stage["spec"]["selector"]["matchExpressions"] += expressions
        return stage

    here = _is(".metadata.namespace", "In", namespace)
    annotation = f'.metadata.annotations["{QUEUE_DELAY}"]'
    queue = narrowed("rehearse-slurm-queue", here, _is(".spec.nodeName", "In", node), _is(annotation, "Exists"))
    queue["spec"]["delay"] = {"durationMilliseconds": 0, "durationFrom": {"jq": {"expression": annotation}}}
    return [
        narrowed("pod-ready", _is(".metadata.namespace", "NotIn", namespace)),
        narrowed("pod-ready-other-nodes", here, _is(".spec.nodeName", "NotIn", node)),
        queue,
        complete,
        delete,
    ]


def chart_parts(settings: Settings, chart: Path, prometheus_port: int) -> tuple[list[dict[str, Any]], str, str]:
    """``chart`` rendered by Helm with the stack's values, Prometheus at ``prometheus_port`` on loopback: the objects
    a wake needs (the inference Deployment at zero replicas, where KEDA leaves it; the ScaledObject; the claims; the
    sidecar's ServiceAccount, Role and RoleBinding), the Lua filter and the admission sidecar's code. Raises
    ``ChartRenderError``, also for a chart without the two."""
    release, namespace, name = settings.release.name, settings.namespace, "rehearsal-envoy-config"
    values = release_values(settings, name, "")
    values["prometheus"]["external"].update(url=LOOPBACK, port=prometheus_port, scheme="http")
    envoy = {CHART.envoy_config_key: render_envoy_yaml(build_envoy_config(settings))}
    served = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}
    objects = render_chart(chart, release, namespace, values, [{**served, "data": envoy}])
    data = {k: v for o in objects if o["kind"] == "ConfigMap" for k, v in (o.get("data") or {}).items()}
    if not (data.get(LUA_KEY) and data.get(ADMISSION_KEY)):
        raise ChartRenderError(f"the chart {chart} renders no {LUA_KEY} or {ADMISSION_KEY}: scale from zero runs both")
    inference = ("Deployment", settings.generation.inference_object_name(release))
    applied = [o for o in objects if o["kind"] in APPLIED or (o["kind"], o["metadata"]["name"]) == inference]
    for deployment in (o for o in applied if o["kind"] == "Deployment"):
        deployment["spec"]["replicas"] = 0
    return applied, data[LUA_KEY], data[ADMISSION_KEY]


@contextlib.contextmanager
def keda_running(cluster: LocalCluster, namespace: str, directory: Path) -> Iterator[subprocess.Popen[bytes]]:
    """KEDA's real operator (``tools/keda``'s pin; built if not cached: about 25 minutes on two cores) watching
    ``namespace``, with the API server's own certificates in the ``--cert-dir`` its metrics service loads or exits."""
    executable = toolchain.ensure([OPERATOR], log=lambda _line: None)[OPERATOR]
    certs = directory / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    links = {"ca.crt": cluster.ca_certificate, "tls.crt": cluster.serving_certificate, "tls.key": cluster.serving_key}
    for name, target in links.items():
        (certs / name).unlink(missing_ok=True)
        (certs / name).symlink_to(target)
    cluster.kubectl("create", "namespace", CLUSTER_OBJECT_NAMESPACE, check=False)
    flags = ("metrics-bind-address", "health-probe-bind-address", "metrics-service-bind-address")
    addresses = {flag: f"{LOOPBACK}:{free_port()}" for flag in flags}
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "WATCH_NAMESPACE": namespace,
        "KEDA_CLUSTER_OBJECT_NAMESPACE": CLUSTER_OBJECT_NAMESPACE,
        "POD_NAMESPACE": CLUSTER_OBJECT_NAMESPACE,
    }
    argv = [str(executable), "--leader-elect=false", f"--cert-dir={certs}", f"--ca-dir={certs}"]
    argv += [f"--{flag}={address}" for flag, address in addresses.items()]
    log = directory / "keda-operator.log"
    process = start_process(argv, log, env=env)
    try:
        ready = partial(loopback.answers, f"http://{addresses['health-probe-bind-address']}/readyz")
        wait_until(ready, START_TIMEOUT_SECONDS, f"{OPERATOR} to be ready", interval=0.2, log_file=log, process=process)
        yield process
    finally:
        stop_process(process)


@contextlib.contextmanager
def admission_running(cluster: LocalCluster, settings: Settings, code: str, directory: Path) -> Iterator[int]:
    """The chart's sidecar ``code`` as a process, reading a token of its ServiceAccount and the API server's CA where
    ``ACCOUNT_DIR`` was; yields its port."""
    account, namespace = CHART.envoy_object_name(settings.release.name), settings.namespace
    files = directory / "serviceaccount"
    files.mkdir(parents=True, exist_ok=True)
    token = cluster.kubectl("create", "token", account, "-n", namespace, "--duration=24h").stdout.strip()
    (files / "token").write_text(token)
    (files / "namespace").write_text(namespace)
    shutil.copyfile(cluster.ca_certificate, files / "ca.crt")
    runnable = directory / ADMISSION_KEY
    runnable.write_text(code.replace(ACCOUNT_DIR, str(files)))
    server = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    host, _, port = server.removeprefix("https://").rpartition(":")
    listen = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "GPU_DEPLOYMENT": settings.generation.inference_object_name(settings.release.name),
        "SCALEDOBJECT_NAME": CHART.scaled_object_name(settings.release.name),
        "IDLE_MIN_REPLICAS": str(settings.keda.minReplicaCount),
        "HOLD_MIN_REPLICAS_SECONDS": str(settings.scaleFromZero.holdMinReplicasSeconds),
        "LISTEN_PORT": str(listen),
    }
    log_path = directory / "admission.log"
    process = start_process([sys.executable, "-u", str(runnable)], log_path, env=env)
    try:
        healthy = partial(loopback.answers, f"http://{LOOPBACK}:{listen}/health")
        wait_until(healthy, START_TIMEOUT_SECONDS, "the sidecar's /health", log_file=log_path, process=process)
        yield listen
    finally:
        stop_process(process)


@dataclass
class PodTrack:
    """One Triton pod as the rehearsal saw it; times are ``time.monotonic()``."""

    queue_delay: float | None = None
    ready: float | None = None


@dataclass
class Rehearsal:
    cluster: LocalCluster
    settings: Settings
    envoy: loopback.EnvoyProcess
    dns: loopback.DnsStandIn
    prometheus: loopback.PrometheusStandIn
    triton: loopback.TritonServicer
    admission_log_path: Path
    stack: str
    scripted: deque[float] = field(default_factory=deque)
    """Queue delays for the next pods; a pod after them has none."""
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
        any_ready = False
        for pod in (i for i in listed if i["kind"] == "Pod" and (i["metadata"].get("labels") or {}).items() >= labels):
            name, track = pod["metadata"]["name"], self.pods.setdefault(pod["metadata"]["name"], PodTrack())
            if track.queue_delay is None:
                track.queue_delay = self.scripted.popleft() if self.scripted else 0.0
                notes = f"{QUEUE_DELAY}={track.queue_delay:.3f}s"  # kwok reads Go's durations
                self.cluster.kubectl("annotate", "pod", name, "-n", namespace, notes)
            status = pod.get("status") or {}
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
            if ready and track.ready is None:
                track.ready = now
            deleting = pod["metadata"].get("deletionTimestamp") is not None
            any_ready = any_ready or (ready and status.get("phase") == "Running" and not deleting)
        if any_ready != self.published:
            fqdn = self.settings.generation.inference_service_fqdn(release, namespace)
            (self.dns.publish if any_ready else self.dns.unpublish)(fqdn)
            self.published = any_ready


@contextlib.contextmanager
def rehearsal(cluster: LocalCluster, settings: Settings, work: Path, *, stack: str, chart: Path) -> Iterator[Rehearsal]:
    """Everything of a rehearsal in ``settings``'s namespace, with ``chart``'s own parts; stops all it started."""
    namespace, release = settings.namespace, settings.release.name
    work.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as started:
        prometheus = loopback.PrometheusStandIn(0.0)
        started.callback(prometheus.stop)
        objects, lua, admission = chart_parts(settings, chart, prometheus.port)
        cluster.kubectl("create", "namespace", namespace, check=False)
        documents = "\n---\n".join(map(json.dumps, objects))
        cluster.kubectl("apply", "--server-side", "-n", namespace, "-f", "-", input_text=documents)
        started.enter_context(keda_running(cluster, namespace, work))
        dns = started.enter_context(loopback.DnsStandIn())
        triton = loopback.TritonServicer()
        server, triton_port = triton.serve()
        started.callback(lambda: server.stop(grace=None).wait(5))
        sidecar = work / "admission"
        admission_port = started.enter_context(admission_running(cluster, settings, admission, sidecar))
        tritons = [(settings.generation.inference_service_fqdn(release, namespace), triton_port)]
        envoy = started.enter_context(
            loopback.envoy_running(settings, tritons=tritons, admission_port=admission_port, dns_port=dns.port, lua=lua)
        )
        result = Rehearsal(cluster, settings, envoy, dns, prometheus, triton, sidecar / "admission.log", stack)
        stopping = threading.Event()
        watcher = threading.Thread(target=result._watch, args=(stopping,), name="rehearsal-pods", daemon=True)
        watcher.start()
        started.callback(watcher.join, 10)
        started.callback(stopping.set)
        yield result
