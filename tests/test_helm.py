"""The one Helm render: the real Helm v3, `--dry-run=server` against the stand-in API, with the post-renderer."""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path

import pytest
from chart_fixtures import fixture_chart

from supersonic_interlink.chart.helm import (
    ChartRenderer,
    ChartRenderError,
    _helm_error,
    missing_dependencies,
    render_chart,
)
from supersonic_interlink.components.supersonic_release import POSTRENDER
from supersonic_interlink.config import load_yaml
from supersonic_interlink.contract import CHART, INFERENCE_SERVER, TRITON
from supersonic_interlink.postrender import patch
from supersonic_interlink.render import stack as rendering
from supersonic_interlink.render.checks import envoy_findings
from supersonic_interlink.render.conformance import Expected

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def hammer() -> Expected:
    return Expected.from_rendered(rendering.render("hammer"))


def find(objects: list[dict], kind: str, name: str) -> dict:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} rendered"
    return found[0]


def tree_digest(directory: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        digest.update(str(path.relative_to(directory)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def test_lookup_and_a_missing_dependency_are_answered_as_on_the_cluster_without_touching_the_chart(hammer, tmp_path):
    chart = fixture_chart("conforming", tmp_path)
    assert missing_dependencies(chart) == [("grafana", "1.0.0")]
    before = tree_digest(chart)
    objects = render_chart(chart, hammer.release_name, hammer.namespace, hammer.values, hammer.served)
    assert tree_digest(chart) == before, "the missing dependency is stood in for: the checkout stays its commit"
    copied = find(objects, "ConfigMap", CHART.envoy_config_map_name(hammer.release_name))
    assert copied["data"][CHART.envoy_config_key] == hammer.envoy_yaml, "the stand-in API answers as the cluster"
    values = copy.deepcopy(hammer.values)
    values["grafana"]["enabled"] = True
    enabled = re.escape("dependency grafana 1.0.0 is not on disk and the values enable it")
    with pytest.raises(ChartRenderError, match=enabled):
        render_chart(chart, hammer.release_name, hammer.namespace, values, hammer.served)
    (chart / "charts").mkdir()
    (chart / "charts" / "grafana-1.0.0.tgz").write_bytes(b"")
    assert missing_dependencies(chart) == [], "a dependency on disk is not stood in for"


@pytest.mark.parametrize(("chart", "generation"), [("conforming", TRITON), ("inference-server", INFERENCE_SERVER)])
def test_without_an_external_config_the_test_chart_generates_one_envoy_accepts(chart, generation, tmp_path) -> None:
    values = {"scaleFromZero": {"enabled": True, "readyTimeoutSeconds": 900, "holdMinReplicasSeconds": 900}}
    objects = render_chart(fixture_chart(chart, tmp_path), "supersonic-interlink", "cms", values)
    text = find(objects, "ConfigMap", "supersonic-interlink-envoy-config")["data"][CHART.envoy_config_key]
    deprecated = "Using deprecated option 'envoy.config.cluster.v3.Cluster.dns_refresh_rate'"
    assert [f for f in envoy_findings(text) if deprecated not in f] == [], "Envoy accepts it (warning as SuperSONIC's)"
    config = load_yaml(text)
    clusters = {c["name"]: c for c in config["static_resources"]["clusters"]}
    assert list(clusters) == [generation.admission_cluster, CHART.admin_cluster, generation.inference_cluster]
    (endpoint,) = clusters[generation.inference_cluster]["load_assignment"]["endpoints"][0]["lb_endpoints"]
    assert endpoint["endpoint"]["address"]["socket_address"] == {
        "address": generation.inference_service_fqdn("supersonic-interlink", "cms"),
        "port_value": CHART.inference_grpc_port,
    }
    (hcm,) = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"]
    index, rest = hcm["typed_config"]["route_config"]["virtual_hosts"][0]["routes"]
    assert index["route"]["idle_timeout"] == "1020s", "readyTimeoutSeconds + 120"
    assert rest["route"] == {"cluster": generation.inference_cluster, "timeout": "0s"}


def test_an_upgrade_keeps_the_live_scaled_objects_replica_floor(hammer, tmp_path) -> None:
    live = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": CHART.scaled_object_name(hammer.release_name), "namespace": hammer.namespace},
        "spec": {"minReplicaCount": 1},
    }
    chart = fixture_chart("conforming", tmp_path)
    values, release, namespace = hammer.values, hammer.release_name, hammer.namespace
    awake = render_chart(chart, release, namespace, values, [*hammer.served, live], is_upgrade=True)
    asleep = render_chart(chart, release, namespace, values, hammer.served, is_upgrade=True)
    name = CHART.scaled_object_name(release)
    assert find(awake, "ScaledObject", name)["spec"]["minReplicaCount"] == 1, "the live floor wins while awake"
    assert find(asleep, "ScaledObject", name)["spec"]["minReplicaCount"] == 0


def test_helm_only_reads_what_lookup_needs_and_the_post_renderer_runs_through_helm_and_in_process_alike(
    hammer, tmp_path
) -> None:
    with ChartRenderer(
        fixture_chart("conforming", tmp_path), hammer.release_name, hammer.namespace, hammer.served, ROOT / POSTRENDER
    ) as renderer:
        through_helm = renderer.render(hammer.values)
        in_process = renderer.render(hammer.values, post_render=patch)
        without = renderer.render(hammer.values, post_render=lambda text: text)
        requests = list(renderer.api.requests)
    scaled = find(through_helm, "ScaledObject", CHART.scaled_object_name(hammer.release_name))
    assert scaled["spec"]["triggers"][0]["metadata"]["timeout"] == "60000", "the post-renderer ran"
    assert in_process == through_helm
    assert without != through_helm, "the comparison can tell a post-rendered render from one that is not"
    paths = [path.split("?")[0] for method, path in requests]
    assert {method for method, _ in requests} == {"GET"}, "helm template --dry-run=server writes nothing"
    assert "/api/v1" in paths and "/apis/keda.sh/v1alpha1" in paths, "discovery of the looked-up kinds"
    assert f"/api/v1/namespaces/cms/configmaps/{hammer.served[0]['metadata']['name']}" in paths
    assert not [p for p in paths if "secrets" in p or "openapi" in p], (
        "no release Secret is listed and no OpenAPI schema read: template runs client-only apart from lookup"
    )


def test_a_directory_without_chart_yaml_is_refused_and_helms_error_drops_its_framing(tmp_path) -> None:
    with pytest.raises(ChartRenderError, match=r"Chart\.yaml file is missing"):
        render_chart(tmp_path, "r", "ns", {})
    stderr = (
        "WARNING: Kubernetes configuration file is group-readable.\n"
        "Error: execution error at (c/templates/x.yaml:1:2): refused\n\nUse --debug flag to render out invalid YAML\n"
    )
    assert _helm_error(stderr) == "execution error at (c/templates/x.yaml:1:2): refused"
