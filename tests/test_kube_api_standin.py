"""The pod stand-in selects and deletes as the API server does: the cleanup tests' deletions rest on it. That the real
API server selects the same pods for the script is tests/e2e/test_cleanup_api_server.py's."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator

import pytest
from kube_api_standin import KubeApiStandIn, call, kube_api_standin, pod

CREATED = "2025-06-01T08:00:00Z"
PODS = [
    pod("web-a", created=CREATED, phase="Failed", labels={"app": "web", "tier": "front"}),
    pod("web-b", created=CREATED, phase="Running", labels={"app": "web", "tier": "back"}),
    pod("db-a", created=CREATED, phase="Failed", labels={"app": "db"}),
    pod("bare", created=CREATED, phase="Failed", labels={}),
    pod("elsewhere", created=CREATED, phase="Failed", labels={"app": "web"}, namespace="other"),
]


def pods(server: KubeApiStandIn, method: str = "GET", **selectors: str) -> tuple[int, dict]:
    return call(server, f"/api/v1/namespaces/cms/pods?{urllib.parse.urlencode(selectors)}", method)


@pytest.fixture
def server() -> Iterator[KubeApiStandIn]:
    with kube_api_standin(PODS) as standin:
        yield standin


@pytest.mark.parametrize(
    ("selectors", "expected"),
    [
        ({}, ["web-a", "web-b", "db-a", "bare"]),
        ({"labelSelector": "app==web"}, ["web-a", "web-b"]),
        ({"labelSelector": "app!=web"}, ["db-a", "bare"]),
        ({"labelSelector": "app=web,tier=back"}, ["web-b"]),
        ({"fieldSelector": "status.phase=Failed,metadata.name!=db-a"}, ["web-a", "bare"]),
        ({"labelSelector": "app=web", "fieldSelector": "status.phase!=Running"}, ["web-a"]),
    ],
)
def test_a_list_selects_what_the_api_server_would(server: KubeApiStandIn, selectors: dict, expected: list) -> None:
    status, body = pods(server, **selectors)
    assert status == 200 and body["kind"] == "PodList"
    assert [item["metadata"]["name"] for item in body["items"]] == expected, f"{selectors}: label and field semantics"


def test_a_deletecollection_deletes_exactly_the_selection_and_a_bad_selector_nothing(server: KubeApiStandIn) -> None:
    for selectors in ({"labelSelector": "app in (a,b)"}, {"fieldSelector": "spec.bogus=x"}):
        assert pods(server, "DELETE", **selectors)[0] == 400, "a term the stand-in does not model is refused"
    status, answer = pods(server, "DELETE", labelSelector="app!=db", fieldSelector="status.phase=Failed")
    assert status == 200 and {i["metadata"]["name"] for i in answer["items"]} == {"web-a", "bare"}
    assert server.names() == {"web-b", "db-a", "elsewhere"}, "only the Failed non-db pods in cms went"
