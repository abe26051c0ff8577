"""The stand-in API server selects, deletes, chunks, authorizes and fails as the API server does, for the real kubectl.

The cleanup tests mean something only if the stand-in evaluates selectors as the API server would; these check it
with the real kubectl 1.34.5 (which also shows what kubectl sends) and with plain HTTP for the wire format.
"""

from __future__ import annotations

import functools
import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kube_api_standin import KubeApiStandIn, kube_api_standin, parse_field_selector, parse_label_selector, pod

from supersonic_interlink.chart import binaries

CREATED = "2025-06-01T08:00:00Z"
PODS = [
    pod("web-a", created=CREATED, phase="Failed", labels={"app": "web", "tier": "front", "rank": "3"}),
    pod("web-b", created=CREATED, phase="Running", labels={"app": "web", "tier": "back"}),
    pod("db-a", created=CREATED, phase="Failed", labels={"app": "db"}),
    pod("db-b", created=CREATED, phase="Succeeded", labels={"app": "db", "tier": "back", "rank": "10"}),
    pod("bare", created=CREATED, phase="Failed", labels={}),
    pod("elsewhere", created=CREATED, phase="Failed", labels={"app": "web"}, namespace="other"),
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[KubeApiStandIn]:
    with kube_api_standin(PODS) as standin:
        standin.kubeconfig(tmp_path / "kubeconfig")
        yield standin


@functools.cache
def kubectl_path() -> Path:
    return binaries.ensure("kubectl")


def kubectl(server: KubeApiStandIn, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "HOME": str(tmp_path), "KUBECACHEDIR": str(tmp_path / "c")}
    return subprocess.run(
        [str(kubectl_path()), *argv], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def listed(server: KubeApiStandIn, tmp_path: Path, *selectors: str) -> set[str]:
    result = kubectl(server, tmp_path, "get", "pods", "-n", "cms", *selectors, "-o", "name")
    assert result.returncode == 0, result.stderr
    return {line.removeprefix("pod/") for line in result.stdout.split()}


@pytest.mark.parametrize(
    ("selectors", "expected"),
    [
        ((), {"web-a", "web-b", "db-a", "db-b", "bare"}),
        (("-l", "app=web"), {"web-a", "web-b"}),
        (("-l", "app==web"), {"web-a", "web-b"}),
        (("-l", "app!=web"), {"db-a", "db-b", "bare"}),
        (("-l", "app=web,tier=back"), {"web-b"}),
        (("-l", "tier!=back"), {"web-a", "db-a", "bare"}),
        (("--field-selector", "status.phase=Failed"), {"web-a", "db-a", "bare"}),
        (("--field-selector", "status.phase==Failed,metadata.name!=db-a"), {"web-a", "bare"}),
        (("--field-selector", "metadata.namespace=other"), set()),
        (("-l", "app=web", "--field-selector", "status.phase!=Running"), {"web-a"}),
    ],
)
def test_the_real_kubectl_lists_what_the_api_server_would_select(
    server: KubeApiStandIn, tmp_path: Path, selectors: tuple[str, ...], expected: set[str]
) -> None:
    assert listed(server, tmp_path, *selectors) == expected, f"selectors {selectors}: label and field semantics"


def test_a_deletecollection_deletes_exactly_the_selection(server: KubeApiStandIn, tmp_path: Path) -> None:
    uri = "/api/v1/namespaces/cms/pods?labelSelector=app%21%3Ddb&fieldSelector=status.phase%3DFailed"
    result = kubectl(server, tmp_path, "delete", "--raw", uri)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["kind"] == "PodList" and {i["metadata"]["name"] for i in answer["items"]} == {"web-a", "bare"}
    assert server.names() == {"web-b", "db-a", "db-b", "elsewhere"}, "only the Failed non-db pods in cms went"
    assert [r.verb for r in server.requests] == ["deletecollection"], "kubectl delete --raw needs no discovery"


def test_kubectl_lists_in_chunks_unless_told_not_to(tmp_path: Path) -> None:
    many = [pod(f"p-{i:04d}", created=CREATED, phase="Failed", labels={"app": "x"}) for i in range(1200)]
    with kube_api_standin(many) as server:
        server.kubeconfig(tmp_path / "kubeconfig")
        chunked = kubectl(server, tmp_path, "get", "pods", "-n", "cms", "-o", "name")
        whole = kubectl(server, tmp_path, "get", "pods", "-n", "cms", "--chunk-size=0", "-o", "name")
        lists = [r for r in server.requests if r.verb == "list"]
    assert len(chunked.stdout.split()) == len(whole.stdout.split()) == 1200
    assert [r.param("limit") for r in lists] == ["500", "500", "500", None], (
        "kubectl's default chunks of 500 make a list request per 500 pods; --chunk-size=0 makes one"
    )


def test_the_listing_order_can_be_reversed_to_show_a_client_does_not_depend_on_it(tmp_path: Path) -> None:
    for order, expected in (("key", ["bare", "db-a", "db-b"]), ("reverse", ["db-b", "db-a", "bare"])):
        with kube_api_standin(PODS[2:5], order=order) as server:
            server.kubeconfig(tmp_path / "kubeconfig")
            result = kubectl(server, tmp_path, "get", "pods", "-n", "cms", "-o", "name")
        assert result.stdout.split() == [f"pod/{n}" for n in expected], f"{order} order"


def raw(server: KubeApiStandIn, method: str, path: str) -> tuple[int, dict]:
    request = urllib.request.Request(server.url + path, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize(
    ("method", "path", "code", "reason"),
    [
        ("GET", "/api/v1/namespaces/cms/pods?labelSelector=app%20in%20(web)", 400, "BadRequest"),
        ("GET", "/api/v1/namespaces/cms/pods?fieldSelector=spec.bogus%3Dx", 400, "BadRequest"),
        ("DELETE", "/api/v1/namespaces/cms/pods?fieldSelector=status.phase", 400, "BadRequest"),
        ("GET", "/api/v1/namespaces/cms/pods/missing", 404, "NotFound"),
        ("GET", "/api/v1/namespaces/cms/services", 404, "NotFound"),
        ("POST", "/api/v1/namespaces/cms/pods", 405, "MethodNotAllowed"),
    ],
)
def test_errors_are_status_objects(server: KubeApiStandIn, method: str, path: str, code: int, reason: str) -> None:
    status, body = raw(server, method, path)
    assert status == code
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == code
    assert body["reason"] == reason
    assert server.names() == {p["metadata"]["name"] for p in PODS}, "a refused request changes nothing"


def test_an_unsupported_field_label_gets_the_api_servers_message(server: KubeApiStandIn) -> None:
    _, body = raw(server, "GET", "/api/v1/namespaces/cms/pods?fieldSelector=spec.bogus%3Dx")
    assert body["message"] == "field label not supported: spec.bogus"


def test_a_role_without_the_verb_gets_403_and_discovery_stays_open(tmp_path: Path) -> None:
    with kube_api_standin(PODS, rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]) as server:
        assert raw(server, "GET", "/api")[0] == 200
        assert raw(server, "GET", "/api/v1/namespaces/cms/pods")[0] == 200
        status, body = raw(server, "DELETE", "/api/v1/namespaces/cms/pods")
        assert (status, body["reason"]) == (403, "Forbidden")
        assert "cannot deletecollection resource" in body["message"]
        assert server.names() == {p["metadata"]["name"] for p in PODS}


def test_the_list_is_shaped_as_the_api_server_answers(server: KubeApiStandIn) -> None:
    status, body = raw(server, "GET", "/api/v1/namespaces/cms/pods?fieldSelector=metadata.name%3Dweb-a")
    assert status == 200 and body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"].isdigit()
    (item,) = body["items"]
    assert "kind" not in item and "apiVersion" not in item, "list items carry no type meta"
    assert item["metadata"]["name"] == "web-a" and item["metadata"]["uid"]


def test_the_store_refuses_a_name_the_api_server_would_refuse_unless_injected(server: KubeApiStandIn) -> None:
    bad = pod("Not_DNS", created=CREATED, phase="Failed", labels={})
    with pytest.raises(ValueError, match="inject"):
        server.add([bad])
    server.inject([bad])
    assert "Not_DNS" in server.names()


@pytest.mark.parametrize(
    "selector",
    ["app in (a,b)", "!app", "app", "a=b,", ",a=b", "app=x y", "-app=x", "app=-x", "a/b/c=d", "k" * 64 + "=v", "app>1"],
)
def test_malformed_label_selectors_are_refused(selector: str) -> None:
    with pytest.raises(Exception, match="unable to parse requirement"):
        parse_label_selector(selector)


def test_field_selector_values_are_unescaped_as_the_api_server_does() -> None:
    (requirement,) = parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert (requirement.field, requirement.operator, requirement.value) == ("metadata.name", "=", "a,b=c\\d")
