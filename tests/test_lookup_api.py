"""The stand-in Kubernetes API answers discovery and a named GET as a cluster holding the given objects would."""

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


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        ("/apis/keda.sh/v1alpha1", 200, {"kind": "APIResourceList", "groupVersion": "keda.sh/v1alpha1"}),
        ("/api/v1/namespaces/cms/configmaps/envoy-external", 200, CONFIG_MAP),
        ("/apis/keda.sh/v1alpha1/namespaces/cms/scaledobjects/x-keda-so", 200, SCALED_OBJECT),
        # Helm's lookup turns exactly a NotFound into an empty result.
        ("/api/v1/namespaces/default/configmaps/envoy-external", 404, {"kind": "Status", "reason": "NotFound"}),
        ("/apis/example.com/v1", 404, {"reason": "NotFound"}),
        ("/version", 404, {"reason": "NotFound"}),  # helm template --dry-run=server asks only what lookup needs
        ("/api/v1/namespaces/cms/configmaps", 404, {"reason": "NotFound"}),  # no chart lists
        ("/api/v1/namespaces/cms/namespaces/cms", 404, {"reason": "NotFound"}),
    ],
)
def test_a_get_or_list_answers_as_the_cluster_would(path: str, status: int, body: dict) -> None:
    with LookupApi([CONFIG_MAP, OTHER, SCALED_OBJECT]) as api:
        got_status, got = get(api, path)
    assert got_status == status and body.items() <= got.items(), got


def test_discovery_says_which_kinds_are_namespaced() -> None:
    with LookupApi() as api:
        _, core = get(api, "/api/v1")
    namespaced = {r["kind"]: r["namespaced"] for r in core["resources"]}
    assert namespaced["ConfigMap"] is True and namespaced["Namespace"] is False


def test_it_is_read_only_and_records_every_request() -> None:
    path = "/api/v1/namespaces/cms/configmaps/envoy-external"
    with LookupApi([CONFIG_MAP]) as api:
        status, body = get(api, path, "DELETE")
        again = get(api, path + "?timeout=32s")
    assert status == 405 and body["reason"] == "MethodNotAllowed"
    assert again == (200, CONFIG_MAP), "a refused write changes nothing and leaves the connection usable"
    assert api.requests == [("DELETE", path), ("GET", path + "?timeout=32s")]


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "x"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "x"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
    ],
)
def test_an_object_it_cannot_serve_is_refused_up_front(obj: dict) -> None:
    with pytest.raises(
        LookupApiError, match=r"no discovery for this kind, or no metadata\.name or metadata\.namespace"
    ):
        LookupApi([obj])


def test_the_kubeconfig_points_at_the_server_and_is_private(tmp_path) -> None:
    with LookupApi() as api:
        config = json.loads(write_loopback_kubeconfig(tmp_path / "kubeconfig", api.url, "cms").read_text())
        assert config["clusters"][0]["cluster"]["server"] == api.url
    assert config["contexts"][0]["context"]["namespace"] == "cms"
    assert (tmp_path / "kubeconfig").stat().st_mode & 0o077 == 0, "Helm warns about a kubeconfig others can read"
