"""The inferenceServer generation installed for real: ``./supersonic pulumi up`` of a hammer-like stack with scale from
zero whose chart is the tests' model of SuperSONIC 42b2b933 (tests/charts/inference-server/, a path source), on the
local control plane with the real KEDA operator, checked step by step as an operator checks the live API."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from e2e_harness import Project, e2e_chart, hammer_like, helm_history, kubectl_json, run_supersonic
from project_copies import project_with

from supersonic_interlink.contract import CHART, INFERENCE_SERVER
from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV, wait_until
from supersonic_interlink.rehearse.loopback import PrometheusStandIn
from supersonic_interlink.rehearse.run import keda_running

pytestmark = pytest.mark.timeout(900)

STACK = "inference-server-e2e"
RELEASE = "supersonic-interlink"
NAMESPACE = "e2e-inference-server"
ZERO_WAIT_SECONDS = 120.0
"""KEDA's first poll of the trigger (pollingInterval 30 s) and a scale to zero, with room for a loaded machine."""


def wait_for(condition, timeout: float, what: str) -> float:
    """The seconds until ``condition()`` held."""
    started = time.monotonic()
    wait_until(condition, timeout, what, interval=0.5)
    return time.monotonic() - started


def test_the_inference_server_generation_installs_with_scale_from_zero(project: Project, tmp_path: Path) -> None:
    cluster = project.cluster
    numbers: dict[str, float] = {}
    chart = e2e_chart(tmp_path / "chart", "inference-server")
    inference = INFERENCE_SERVER.inference_object_name(RELEASE)
    cluster.kubectl("create", "namespace", NAMESPACE)
    prometheus = PrometheusStandIn(0.0)
    try:
        prometheus_at = {"url": "127.0.0.1", "port": prometheus.port, "scheme": "http"}
        config = hammer_like(NAMESPACE, RELEASE, chart, prometheus=prometheus_at)
        (tmp_path / "copy").mkdir()
        root = project_with(tmp_path / "copy", STACK, yaml.safe_dump({"config": config}, sort_keys=False))
        env = {**project.env, SCRATCH_PROJECT_ENV: str(tmp_path / "scratch")}

        # Step 1: up, as an operator runs it.
        started = time.monotonic()
        up = run_supersonic("pulumi", "up", STACK, "--yes", cwd=root, env=env, timeout=900)
        numbers["up_s"] = time.monotonic() - started
        assert up.returncode == 0, up.stdout + up.stderr
        history = helm_history(cluster, RELEASE, NAMESPACE)
        assert [(h["revision"], h["status"]) for h in history] == [(1, "deployed")], history

        # Step 2: the floor is 0; KEDA takes the Deployment the chart left at its default one replica down to it.
        scaled = kubectl_json(cluster, "get", "scaledobject", CHART.scaled_object_name(RELEASE), "-n", NAMESPACE)
        assert scaled["spec"]["minReplicaCount"] == 0, scaled["spec"]
        assert scaled["spec"]["scaleTargetRef"]["name"] == inference, "the ScaledObject scales the inference server"
        deployment = kubectl_json(cluster, "get", "deployment", inference, "-n", NAMESPACE)
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert labels == INFERENCE_SERVER.inference_pod_labels(RELEASE), labels
        assert deployment["spec"]["replicas"] == 1, "with scale from zero the chart leaves the count to KEDA"

        def replicas() -> int:
            found = kubectl_json(cluster, "get", "deployment", inference, "-n", NAMESPACE)
            return int(found["spec"].get("replicas", 0))

        with keda_running(cluster, NAMESPACE, tmp_path / "keda"):
            numbers["zero_after_keda_start_s"] = wait_for(
                lambda: replicas() == 0, ZERO_WAIT_SECONDS, "KEDA scaling the inference server to 0"
            )
        assert prometheus.queries > 0, "KEDA asked the ScaledObject's Prometheus: it acted on the chart's trigger"
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        wait_for(
            lambda: not kubectl_json(cluster, "get", "pods", "-n", NAMESPACE, "-l", selector)["items"],
            60,
            "the inference-server pods to go",
        )
    finally:
        prometheus.stop()

    # Step 3: the chart's own Envoy ConfigMap holds the program's configuration, copied by lookup.
    config_maps = {
        item["metadata"]["name"]: item for item in kubectl_json(cluster, "get", "configmap", "-n", NAMESPACE)["items"]
    }
    external = [n for n in config_maps if n.startswith(f"{CHART.envoy_object_name(RELEASE)}-external-")]
    assert len(external) == 1, sorted(config_maps)
    computed = config_maps[external[0]]["data"][CHART.envoy_config_key]
    copied = config_maps[CHART.envoy_config_map_name(RELEASE)]["data"][CHART.envoy_config_key]
    assert copied == computed, "the chart copied the program's ConfigMap, byte for byte"
    clusters = {c["name"] for c in yaml.safe_load(copied)["static_resources"]["clusters"]}
    assert {INFERENCE_SERVER.inference_cluster, INFERENCE_SERVER.admission_cluster, CHART.admin_cluster} <= clusters

    # Step 4: the Lua filter (its placeholders filled in) and the admission sidecar, with its code and its RBAC.
    lua = config_maps[f"{RELEASE}-lua-config"]["data"]["envoy-filter.lua"]
    assert 'tonumber("900")' in lua and '("true" == "true")' in lua, "the chart filled in its placeholders"
    assert f'"{INFERENCE_SERVER.admission_cluster}"' in lua
    assert "admission-server.py" in config_maps[f"{CHART.envoy_object_name(RELEASE)}-admission"]["data"]
    envoy = kubectl_json(cluster, "get", "deployment", CHART.envoy_object_name(RELEASE), "-n", NAMESPACE)
    pod = envoy["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    assert set(containers) == {CHART.envoy_container, CHART.admission_container}, sorted(containers)
    admission_env = {e["name"]: e["value"] for e in containers[CHART.admission_container]["env"]}
    assert admission_env["GPU_DEPLOYMENT"] == inference and admission_env["IDLE_MIN_REPLICAS"] == "0", admission_env
    mounts = {m["mountPath"] for m in containers[CHART.envoy_container]["volumeMounts"]}
    assert str(Path(CHART.lua_filter_path).parent) in mounts, mounts
    assert pod["serviceAccountName"] == CHART.envoy_object_name(RELEASE)
    can = cluster.kubectl(
        "auth", "can-i", "patch", "deployments.apps/" + inference, "--subresource=scale", "-n", NAMESPACE,
        f"--as=system:serviceaccount:{NAMESPACE}:{CHART.envoy_object_name(RELEASE)}", check=False,
    )  # fmt: skip
    assert can.stdout.strip() == "yes", "the sidecar's ServiceAccount may scale the inference server"

    # Step 5: nothing left to change.
    started = time.monotonic()
    preview = run_supersonic("pulumi", "preview", STACK, "--expect-no-changes", cwd=root, env=env, timeout=600)
    numbers["second_preview_s"] = time.monotonic() - started
    assert preview.returncode == 0, preview.stdout + preview.stderr
    print(json.dumps({"timings": {k: round(v, 1) for k, v in numbers.items()}}))
