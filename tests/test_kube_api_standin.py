"""The stand-in API server selects, deletes, chunks, authorizes and fails as the API server does.

The cleanup tests mean something only if the stand-in evaluates selectors as the API server would; these check its
wire format with plain HTTP, and its chunking with the real kubectl 1.34.5 (the cleanup tests run that kubectl
against it in every case). That the real API server selects the same pods is tests/e2e/test_cleanup_api_server.py's.
"""

from __future__ import annotations

import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from busybox_harness import kubectl_path
from kube_api_standin import KubeApiStandIn, kube_api_standin, pod
from kube_api_standin import call as raw

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
def server() -> Iterator[KubeApiStandIn]:
    with kube_api_standin(PODS) as standin:
        yield standin


def pods_path(**selectors: str) -> str:
    return "/api/v1/namespaces/cms/pods" + (f"?{urllib.parse.urlencode(selectors)}" if selectors else "")


@pytest.mark.parametrize(
    ("selectors", "expected"),
    [
        ({}, ["bare", "db-a", "db-b", "web-a", "web-b"]),
        ({"labelSelector": "app=web"}, ["web-a", "web-b"]),
        ({"labelSelector": "app==web"}, ["web-a", "web-b"]),
        ({"labelSelector": "app!=web"}, ["bare", "db-a", "db-b"]),
        ({"labelSelector": "app=web,tier=back"}, ["web-b"]),
        ({"labelSelector": "tier!=back"}, ["bare", "db-a", "web-a"]),
        ({"fieldSelector": "status.phase=Failed"}, ["bare", "db-a", "web-a"]),
        ({"fieldSelector": "status.phase==Failed,metadata.name!=db-a"}, ["bare", "web-a"]),
        ({"fieldSelector": "metadata.namespace=other"}, []),
        ({"labelSelector": "app=web", "fieldSelector": "status.phase!=Running"}, ["web-a"]),
    ],
)
def test_a_list_selects_what_the_api_server_would_in_key_order(
    server: KubeApiStandIn, selectors: dict[str, str], expected: list[str]
) -> None:
    status, body = raw(server, pods_path(**selectors))
    assert status == 200 and body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"].isdigit()
    assert [item["metadata"]["name"] for item in body["items"]] == expected, f"{selectors}: label and field semantics"
    assert all("kind" not in i and "apiVersion" not in i and i["metadata"]["uid"] for i in body["items"]), (
        "list items carry no type meta, and a uid"
    )


def test_a_deletecollection_deletes_exactly_the_selection(server: KubeApiStandIn) -> None:
    status, answer = raw(server, pods_path(labelSelector="app!=db", fieldSelector="status.phase=Failed"), "DELETE")
    assert status == 200
    assert answer["kind"] == "PodList" and {i["metadata"]["name"] for i in answer["items"]} == {"web-a", "bare"}
    assert server.names() == {"web-b", "db-a", "db-b", "elsewhere"}, "only the Failed non-db pods in cms went"


def test_kubectl_lists_in_chunks_unless_told_not_to(tmp_path: Path) -> None:
    many = [pod(f"p-{i:04d}", created=CREATED, phase="Failed", labels={"app": "x"}) for i in range(501)]
    env = {"KUBECONFIG": str(tmp_path / "kubeconfig"), "HOME": str(tmp_path), "KUBECACHEDIR": str(tmp_path / "c")}
    with kube_api_standin(many) as server:
        server.kubeconfig(tmp_path / "kubeconfig")
        listed = [
            subprocess.run(
                [str(kubectl_path()), "get", "pods", "-n", "cms", *chunking, "-o", "name"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout.split()
            for chunking in ([], ["--chunk-size=0"])
        ]
        lists = [r for r in server.requests if r.verb == "list"]
    assert [len(names) for names in listed] == [501, 501]
    assert [r.param("limit") for r in lists] == ["500", "500", None], (
        "kubectl's default chunks of 500 make a list request per 500 pods; --chunk-size=0 makes one"
    )


def test_the_listing_order_can_be_reversed_to_show_a_client_does_not_depend_on_it() -> None:
    with kube_api_standin(PODS[2:5], order="reverse") as server:
        _, body = raw(server, pods_path())
    assert [item["metadata"]["name"] for item in body["items"]] == ["db-b", "db-a", "bare"]


# A selector term the stand-in does not model (set-based, existence, escaped) is refused, never guessed.
UNMODELLED = ["app in (a,b)", "!app", "app", "a=b,", ",a=b", "app=x y", "app>1", r"metadata.name=a\,b"]


@pytest.mark.parametrize(
    ("method", "path", "code", "reason"),
    [
        *(("DELETE", pods_path(labelSelector=selector), 400, "BadRequest") for selector in UNMODELLED),
        ("GET", "/api/v1/namespaces/cms/pods?fieldSelector=spec.bogus%3Dx", 400, "BadRequest"),
        ("DELETE", "/api/v1/namespaces/cms/pods?fieldSelector=status.phase", 400, "BadRequest"),
        ("GET", "/api/v1/namespaces/cms/pods/missing", 404, "NotFound"),
        ("GET", "/api/v1/namespaces/cms/services", 404, "NotFound"),
    ],
)
def test_errors_are_status_objects(server: KubeApiStandIn, method: str, path: str, code: int, reason: str) -> None:
    status, body = raw(server, path, method)
    assert status == code
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == code
    assert body["reason"] == reason
    assert server.names() == {p["metadata"]["name"] for p in PODS}, "a refused request changes nothing"


def test_a_role_without_the_verb_gets_403_and_discovery_stays_open() -> None:
    with kube_api_standin(PODS, rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]) as server:
        assert raw(server, "/api")[0] == 200
        assert raw(server, "/api/v1/namespaces/cms/pods")[0] == 200
        status, body = raw(server, "/api/v1/namespaces/cms/pods", "DELETE")
        assert (status, body["reason"]) == (403, "Forbidden")
        assert "cannot deletecollection resource" in body["message"]
        assert server.names() == {p["metadata"]["name"] for p in PODS}


def test_the_store_refuses_a_name_the_api_server_would_refuse_unless_injected(server: KubeApiStandIn) -> None:
    bad = pod("Not_DNS", created=CREATED, phase="Failed", labels={})
    with pytest.raises(ValueError, match="inject"):
        server.add([bad])
    server.inject([bad])
    assert "Not_DNS" in server.names()
