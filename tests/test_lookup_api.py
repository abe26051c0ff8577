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


def test_discovery_lists_the_served_kinds_of_a_group_version() -> None:
    with LookupApi() as api:
        status, core = get(api, "/api/v1")
        _, keda = get(api, "/apis/keda.sh/v1alpha1")
    assert status == 200 and core["kind"] == "APIResourceList" and core["groupVersion"] == "v1"
    assert {"name": "configmaps", "kind": "ConfigMap", "namespaced": True}.items() <= next(
        r for r in core["resources"] if r["kind"] == "ConfigMap"
    ).items()
    assert [r["name"] for r in keda["resources"]] == ["scaledobjects"], "the chart looks up the live ScaledObject"


def test_a_served_object_is_returned_and_a_missing_one_is_a_404_status() -> None:
    with LookupApi([CONFIG_MAP, SCALED_OBJECT]) as api:
        found = get(api, "/api/v1/namespaces/cms/configmaps/envoy-external")
        live = get(api, "/apis/keda.sh/v1alpha1/namespaces/cms/scaledobjects/x-keda-so")
        missing = get(api, "/api/v1/namespaces/cms/configmaps/other")
        elsewhere = get(api, "/api/v1/namespaces/default/configmaps/envoy-external")
    assert found == (200, CONFIG_MAP)
    assert live == (200, SCALED_OBJECT)
    assert missing[0] == 404 and missing[1]["kind"] == "Status" and missing[1]["reason"] == "NotFound", (
        "Helm's lookup turns exactly a NotFound into an empty result"
    )
    assert elsewhere[0] == 404, "objects are served in their own namespace only"


def test_a_list_holds_the_namespaces_objects_of_that_kind() -> None:
    other = {**CONFIG_MAP, "metadata": {"name": "b", "namespace": "default"}}
    with LookupApi([CONFIG_MAP, other, SCALED_OBJECT]) as api:
        status, listed = get(api, "/api/v1/namespaces/cms/configmaps")
        _, everywhere = get(api, "/api/v1/configmaps")
        _, none = get(api, "/apis/apps/v1/namespaces/cms/deployments")
    assert status == 200 and listed["kind"] == "ConfigMapList" and listed["items"] == [CONFIG_MAP]
    assert len(everywhere["items"]) == 2
    assert none["items"] == [], "an empty namespace lists nothing, not an error"


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_it_is_read_only(method: str) -> None:
    with LookupApi([CONFIG_MAP]) as api:
        status, body = get(api, "/api/v1/namespaces/cms/configmaps/envoy-external", method)
        again = get(api, "/api/v1/namespaces/cms/configmaps/envoy-external")
    assert status == 405 and body["reason"] == "MethodNotAllowed"
    assert again == (200, CONFIG_MAP), "a refused write changes nothing and leaves the connection usable"


def test_an_unserved_group_version_or_path_is_a_404() -> None:
    with LookupApi() as api:
        assert get(api, "/apis/example.com/v1")[0] == 404
        assert get(api, "/openapi/v2")[0] == 404
        assert get(api, "/version")[0] == 404, "helm template --dry-run=server asks only what lookup needs"
        assert get(api, "/api/v1/namespaces/cms/widgets/x")[0] == 404


def test_every_request_is_recorded() -> None:
    with LookupApi([CONFIG_MAP]) as api:
        get(api, "/api/v1?timeout=32s")
        get(api, "/api/v1/namespaces/cms/configmaps/envoy-external")
    assert api.requests == [("GET", "/api/v1?timeout=32s"), ("GET", "/api/v1/namespaces/cms/configmaps/envoy-external")]


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
