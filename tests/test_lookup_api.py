"""The stand-in Kubernetes API answers discovery, GET and LIST as a cluster holding the given objects would."""

from __future__ import annotations

import json

import pytest
from kube_api_standin import call as get

from supersonic_interlink.chart.lookup_api import LookupApi, LookupApiError, write_loopback_kubeconfig

CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "envoy-external", "namespace": "cms"},
    "data": {"envoy.yaml": "admin: {}\n"},
}
SCALED_OBJECT = {
    "apiVersion": "keda.sh/v1alpha1",
    "kind": "ScaledObject",
    "metadata": {"name": "x-keda-so", "namespace": "cms"},
    "spec": {"minReplicaCount": 2},
}
OTHER = {**CONFIG_MAP, "metadata": {"name": "b", "namespace": "default"}}
SERVED = [CONFIG_MAP, OTHER, SCALED_OBJECT]


def test_discovery_lists_the_served_kinds_of_a_group_version() -> None:
    with LookupApi() as api:
        status, core = get(api, "/api/v1")
        _, keda = get(api, "/apis/keda.sh/v1alpha1")
    assert status == 200 and core["kind"] == "APIResourceList" and core["groupVersion"] == "v1"
    assert {"name": "configmaps", "kind": "ConfigMap", "namespaced": True}.items() <= next(
        r for r in core["resources"] if r["kind"] == "ConfigMap"
    ).items()
    assert {"name": "namespaces", "kind": "Namespace", "namespaced": False}.items() <= next(
        r for r in core["resources"] if r["kind"] == "Namespace"
    ).items()
    assert [r["name"] for r in keda["resources"]] == ["scaledobjects"], "the chart looks up the live ScaledObject"


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        ("/api/v1/namespaces/cms/configmaps/envoy-external", 200, CONFIG_MAP),
        ("/apis/keda.sh/v1alpha1/namespaces/cms/scaledobjects/x-keda-so", 200, SCALED_OBJECT),
        ("/api/v1/namespaces/cms/configmaps", 200, {"kind": "ConfigMapList", "items": [CONFIG_MAP]}),
        ("/api/v1/configmaps", 200, {"items": [CONFIG_MAP, OTHER]}),
        ("/apis/apps/v1/namespaces/cms/deployments", 200, {"items": []}),  # an empty namespace lists nothing
        # Helm's lookup turns exactly a NotFound into an empty result.
        ("/api/v1/namespaces/cms/configmaps/other", 404, {"kind": "Status", "reason": "NotFound"}),
        ("/api/v1/namespaces/default/configmaps/envoy-external", 404, {"reason": "NotFound"}),  # its namespace only
        ("/apis/example.com/v1", 404, {"reason": "NotFound"}),
        ("/openapi/v2", 404, {"reason": "NotFound"}),
        ("/version", 404, {"reason": "NotFound"}),  # helm template --dry-run=server asks only what lookup needs
        ("/api/v1/namespaces/cms/widgets/x", 404, {"reason": "NotFound"}),
        ("/api/v1/namespaces/cms/namespaces/cms", 404, {"reason": "NotFound"}),
    ],
)
def test_a_get_or_list_answers_as_the_cluster_would(path: str, status: int, body: dict) -> None:
    with LookupApi(SERVED) as api:
        got_status, got = get(api, path)
    assert got_status == status and body.items() <= got.items(), got


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_it_is_read_only_and_records_every_request(method: str) -> None:
    path = "/api/v1/namespaces/cms/configmaps/envoy-external"
    with LookupApi([CONFIG_MAP]) as api:
        status, body = get(api, path, method)
        again = get(api, path + "?timeout=32s")
    assert status == 405 and body["reason"] == "MethodNotAllowed"
    assert again == (200, CONFIG_MAP), "a refused write changes nothing and leaves the connection usable"
    assert api.requests == [(method, path), ("GET", path + "?timeout=32s")]


@pytest.mark.parametrize(
    "obj, complaint",
    [
        (
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "x"}},
            "no discovery",
        ),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "x"}}, "metadata.name"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, "metadata.namespace"),
    ],
)
def test_an_object_it_cannot_serve_is_refused_up_front(obj: dict, complaint: str) -> None:
    with pytest.raises(LookupApiError, match=complaint):
        LookupApi([obj])


def test_the_kubeconfig_points_at_the_server_and_is_private(tmp_path) -> None:
    with LookupApi() as api:
        path = write_loopback_kubeconfig(tmp_path / "kubeconfig", api.url, "cms")
        config = json.loads(path.read_text())
        url = api.url
    assert config["clusters"][0]["cluster"]["server"] == url and url.startswith("http://127.0.0.1:")
    assert config["contexts"][0]["context"]["namespace"] == "cms"
    assert path.stat().st_mode & 0o077 == 0, "Helm warns about a kubeconfig others can read"
