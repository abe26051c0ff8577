"""The chart's own scale-from-zero parts: its Lua filter (filled in as ``templates/envoy/configmaps.yaml`` at 42b2b933
does) and its admission sidecar, run with the env and ServiceAccount files it reads (c292baf1, db73925, 009ed995)."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import yaml

from supersonic_interlink.config import Settings
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.cluster import (
    LOOPBACK,
    LocalCluster,
    free_port,
    start_process,
    stop_process,
    wait_until,
)
from supersonic_interlink.rehearse.loopback import answers

LUA_FILE = "cfg/envoy-filter.lua"
ADMISSION_FILE = "cfg/admission-server.py"
ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
START_TIMEOUT_SECONDS = 20.0


class ChartPartError(ValueError):
    """The chart has no such file."""


def chart_file(chart: Path, name: str) -> Path:
    path = chart / name
    if not path.is_file():
        raise ChartPartError(f"the chart {chart} has no {name}, which its scale from zero runs")
    return path


def filled_lua(chart: Path, settings: Settings) -> str:
    prometheus = settings.prometheus
    fills = (
        ("SERVER_LOAD_METRIC", json.dumps(settings.serverLoad.metric)),
        # serverAdmissionThreshold's default (_scaling-metric.tpl at 42b2b933): this program never sets it
        ("SERVER_LOAD_THRESHOLD", json.dumps("3")),
        ("PROMETHEUS_SCHEME", prometheus.scheme),
        ("PROMETHEUS_HOST", prometheus.url),
        ("PROMETHEUS_PORT", str(prometheus.port)),
        ("SCALE_FROM_ZERO_ENABLED", "true"),
        ("READY_TIMEOUT_SECONDS", str(settings.scaleFromZero.readyTimeoutSeconds)),
        ("PROMETHEUS_RATE_LIMIT_ENABLED", "false"),  # this program never enables the chart's rate limiter
    )
    text = chart_file(chart, LUA_FILE).read_text()
    for placeholder, value in fills:
        text = text.replace(placeholder, value)
    return text


def admission_rbac(settings: Settings, account: str) -> list[dict]:
    """The sidecar's ServiceAccount, Role and RoleBinding as ``templates/envoy/admission.yaml`` (42b2b933) has them."""
    release, rbac = settings.release.name, "rbac.authorization.k8s.io"
    meta = {"name": account, "namespace": settings.namespace}
    targets = [("apps", "deployments/scale", settings.generation.inference_object_name(release))]
    targets.append(("keda.sh", "scaledobjects", CHART.scaled_object_name(release)))
    rules = [
        {"apiGroups": [g], "resources": [r], "resourceNames": [n], "verbs": ["get", "patch", "update"]}
        for g, r, n in targets
    ]
    subject = {"kind": "ServiceAccount", **meta}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": meta, "rules": rules},
        {"apiVersion": f"{rbac}/v1", "kind": "RoleBinding", "metadata": meta, "subjects": [subject],
         "roleRef": {"apiGroup": rbac, "kind": "Role", "name": account}},
    ]  # fmt: skip


@contextlib.contextmanager
def admission_running(cluster: LocalCluster, settings: Settings, chart: Path, directory: Path) -> Iterator[int]:
    """The chart's sidecar, with a token for its ServiceAccount at ``ACCOUNT_DIR``'s place; yields its port."""
    script = chart_file(chart, ADMISSION_FILE)
    code = script.read_text()
    account, namespace = CHART.envoy_object_name(settings.release.name), settings.namespace
    cluster.kubectl(
        "apply", "-f", "-", input_text="\n---\n".join(json.dumps(d) for d in admission_rbac(settings, account))
    )
    files = directory / "serviceaccount"
    files.mkdir(parents=True, exist_ok=True)
    token = cluster.kubectl("create", "token", account, "-n", namespace, "--duration=24h").stdout.strip()
    (files / "token").write_text(token)
    (files / "namespace").write_text(namespace)
    shutil.copyfile(cluster.ca_certificate, files / "ca.crt")
    runnable = directory / "admission-server.py"
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
    healthy = partial(answers, f"http://{LOOPBACK}:{listen}/health")
    try:
        wait_until(healthy, START_TIMEOUT_SECONDS, f"{script} to answer /health", log_file=log_path, process=process)
        yield listen
    finally:
        stop_process(process)
