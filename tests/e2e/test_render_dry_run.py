"""The whole rendered release, the program's objects and the chart's, through a server-side dry-run create on the
real API server: the oracle for the rules the schemas cannot state. For each hostile value ``render --check``'s
unit tests name (tests/test_hostile_inputs.py), the API server refuses the release, and ``render --check`` names the
stack key; a clean stack is taken whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import hammer_like

from supersonic_interlink.config import PROJECT
from supersonic_interlink.engine.cluster import LocalCluster
from supersonic_interlink.render.stack import chart_findings, chart_objects, findings, render

pytestmark = pytest.mark.timeout(600)

NAMESPACE = "e2e-dry-run"
RELEASE = "supersonic-interlink"


def release_objects(config: dict[str, Any], chart: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every object the stack deploys (the program's and the chart's) and what render --check's checks find in them."""
    cli = {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}
    rendered = render("dry-run-e2e", cli, chart_dir=chart)
    objects = [*rendered["manifests"], *chart_objects(chart, rendered)]
    return objects, findings(rendered) + chart_findings(chart, rendered)


def dry_run_create(cluster: LocalCluster, objects: list[dict[str, Any]]) -> str:
    """The API server's answer to creating every object at once with dryRun=All: "" when it takes them all."""
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    done = cluster.kubectl(
        "create", "--dry-run=server", "-n", NAMESPACE, "-o", "name", "-f", "-", input_text=listed, check=False
    )
    return "" if done.returncode == 0 else done.stderr.strip()


@pytest.fixture(scope="module")
def namespace(cluster: LocalCluster) -> str:
    cluster.kubectl("create", "namespace", NAMESPACE)
    return NAMESPACE


def test_the_hammer_release_is_taken_whole_by_the_api_server(
    cluster: LocalCluster, namespace: str, chart: Path
) -> None:
    objects, found = release_objects(hammer_like(namespace, RELEASE, chart), chart)
    assert found == [], found
    assert {o["kind"] for o in objects} >= {"Deployment", "Service", "ConfigMap", "ScaledObject", "CronJob"}
    assert dry_run_create(cluster, objects) == "", "a stack render --check passes is one the API server takes"


HOSTILE = {
    "probe-period-negative": ({"startupProbe": {"periodSeconds": -5}}, "startupProbe.periodSeconds"),
    "probe-period-fraction": ({"readinessProbe": {"periodSeconds": 1.5}}, "readinessProbe.periodSeconds"),
    "failure-threshold-negative": ({"readinessProbe": {"failureThreshold": -1}}, "readinessProbe.failureThreshold"),
    "probe-port-0": ({"startupProbe": {"httpGet": {"path": "/v2", "port": 0}}}, "startupProbe.httpGet.port"),
    "probe-port-65536": ({"startupProbe": {"httpGet": {"path": "/v2", "port": 65536}}}, "startupProbe.httpGet.port"),
    "probe-port-name": (
        {"startupProbe": {"httpGet": {"path": "/v2", "port": "Http_Port"}}},
        "startupProbe.httpGet.port",
    ),
}


@pytest.mark.parametrize(("fields", "key"), HOSTILE.values(), ids=HOSTILE.keys())
def test_a_value_the_api_server_refuses_is_a_finding_of_render_check_naming_its_key(
    cluster: LocalCluster, namespace: str, chart: Path, fields: dict[str, Any], key: str
) -> None:
    config = hammer_like(namespace, RELEASE, chart)
    triton = dict(config[f"{PROJECT}:triton"])
    for name, value in fields.items():
        triton[name] = {**(triton.get(name) or {}), **value}
    config[f"{PROJECT}:triton"] = triton
    objects, found = release_objects(config, chart)
    refused = dry_run_create(cluster, objects)
    assert refused, "the API server is the oracle: this value must be one it refuses"
    assert any(line.startswith(f"{PROJECT}:triton.{key} = ") for line in found), (
        f"render --check must refuse what the API server refuses ({refused}), naming the stack key: {found}"
    )
