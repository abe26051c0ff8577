"""The pods of a cluster on loopback, for the real kubectl 1.34: the package's stand-in API with kubectl's aggregated
discovery, equality selectors, DELETE of a pod or a collection, and a failure injected on request. Pods are listed in
the order stored (the API server's is by name: a client must not depend on it)."""

from __future__ import annotations

import contextlib
import copy
import http.server
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supersonic_interlink.chart.lookup_api import LookupApi, reply, status_object, write_loopback_kubeconfig

JSONObject = dict[str, Any]

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
"""The media type of kubectl 1.34's discovery: answered with it, kubectl asks nothing else before its request."""

POD_RESOURCE = {
    "resource": "pods",
    "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
    "scope": "Namespaced",
    "singularResource": "pod",
    "verbs": ["delete", "deletecollection", "get", "list"],
}


def call(server: LookupApi, path: str, method: str = "GET") -> tuple[int, JSONObject]:
    """One request to a stand-in: status and JSON body."""
    request = urllib.request.Request(server.url + path, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def pod(
    name: str,
    *,
    created: str,
    phase: str,
    labels: Mapping[str, str],
    namespace: str = "cms",
    reason: str | None = None,
    exit_code: int | None = None,
    container_reason: str | None = None,
) -> JSONObject:
    """A pod as the API server returns it, with the fields the cleanup reads."""
    status: JSONObject = {"phase": phase}
    if reason is not None:
        status["reason"] = reason
    if exit_code is not None or container_reason is not None:
        terminated = {"exitCode": exit_code, "reason": container_reason}
        terminated = {key: value for key, value in terminated.items() if value is not None}
        status["containerStatuses"] = [{"name": "triton", "restartCount": 0, "state": {"terminated": terminated}}]
    metadata = {"name": name, "namespace": namespace, "labels": dict(labels), "creationTimestamp": created}
    return {"kind": "Pod", "apiVersion": "v1", "metadata": metadata, "spec": {}, "status": status}


FIELDS = {
    "metadata.name": lambda item: item["metadata"]["name"],
    "metadata.namespace": lambda item: item["metadata"].get("namespace", ""),
    "status.phase": lambda item: item.get("status", {}).get("phase", ""),
}
"""The field selectors pods support that the cleanup may send; any other is a 400."""


def selects(selector: str, value_of: Any) -> bool:
    """Whether every ``k=v``, ``k==v`` or ``k!=v`` term holds; any other term is a ``ValueError`` (a 400)."""
    for term in filter(None, selector.split(",")):
        match = re.fullmatch(r"([^\s!=]+)(!=|==|=)([^\s!=]*)", term)
        if match is None:
            raise ValueError(f"unable to parse requirement: {term!r}")
        key, operator, value = match.groups()
        if (value_of(key) == value) != (operator != "!="):
            return False
    return True


@dataclass(frozen=True)
class Recorded:
    """One request as the stand-in saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    verb: str
    """``discovery``, ``list``, ``get``, ``delete``, ``deletecollection`` or ``unknown``."""
    status: int
    seconds: float
    """Time the stand-in took to compute and encode its answer."""

    def param(self, name: str) -> str | None:
        return self.query.get(name, [None])[0]


class KubeApiStandIn(LookupApi):
    """Pods served while entered; ``kube_api_standin()`` manages one."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Recorded] = []
        self.failing: set[str] = set()
        """Verbs whose next request gets an ``InternalError`` and changes nothing."""

    def add(self, pods: Iterable[JSONObject]) -> None:  # type: ignore[override]
        """Store pods as given, even ones the API server would refuse (a name that is no DNS subdomain)."""
        with self.lock:
            for item in pods:
                stored = copy.deepcopy(item)
                metadata = stored["metadata"]
                metadata.setdefault("uid", f"00000000-0000-4000-8000-{len(self.objects):012d}")
                self.objects[("v1", "pods", str(metadata.get("namespace", "")), str(metadata["name"]))] = stored

    def names(self) -> set[str]:
        with self.lock:
            return {name for (_, _, _, name) in self.objects}

    def kubeconfig(self, path: Path, namespace: str = "cms") -> Path:
        return write_loopback_kubeconfig(path, self.url, namespace)

    def requests_since(self, start: int) -> list[Recorded]:
        with self.lock:
            return list(self.requests[start:])

    def handle(self, request: http.server.BaseHTTPRequestHandler) -> None:
        started = time.perf_counter()
        parsed = urllib.parse.urlsplit(request.path)
        path, query = parsed.path.rstrip("/") or "/", urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        parts = path.strip("/").split("/")
        verbs = {("GET", 5): "list", ("GET", 6): "get", ("DELETE", 5): "deletecollection", ("DELETE", 6): "delete"}
        on_pods = parts[:3] == ["api", "v1", "namespaces"] and parts[4:5] == ["pods"]
        verb = verbs.get((request.command, len(parts)), "unknown") if on_pods else "unknown"
        if request.command == "GET" and path in ("/api", "/apis"):
            verb = "discovery"
        with self.lock:
            try:
                if verb in self.failing or verb == "unknown":
                    self.failing.discard(verb)
                    code, reason = (500, "InternalError") if verb != "unknown" else (404, "NotFound")
                    body = status_object(code, reason, f"stand-in: {request.command} {path} fails")
                else:
                    code, body = self._answer(verb, path, parts, query)
            except (ValueError, KeyError) as error:
                code, body = 400, status_object(400, "BadRequest", str(error))
            self.requests.append(Recorded(request.command, path, query, verb, code, time.perf_counter() - started))
        reply(request, code, body, AGGREGATED_V2 if verb == "discovery" else "application/json")

    def _answer(self, verb: str, path: str, parts: list[str], query: dict[str, list[str]]) -> tuple[int, JSONObject]:
        if verb == "discovery":
            resources = [{"version": "v1", "resources": [POD_RESOURCE], "freshness": "Current"}]
            items = [{"metadata": {"creationTimestamp": None}, "versions": resources}] if path == "/api" else []
            return 200, {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": items}
        if verb in ("get", "delete"):
            code, body = self.answer(path)
            if code == 200 and verb == "delete":
                del self.objects[("v1", "pods", parts[3], parts[5])]
            return code, body
        labels, fields = query.get("labelSelector", [""])[0], query.get("fieldSelector", [""])[0]

        def selected(item: JSONObject) -> bool:
            metadata = item["metadata"]
            in_namespace = metadata.get("namespace") == parts[3]
            return (
                in_namespace
                and selects(labels, metadata.get("labels", {}).get)
                and selects(fields, lambda k: FIELDS[k](item))
            )

        chosen = [key for key, item in self.objects.items() if selected(item)]
        take = self.objects.pop if verb == "deletecollection" else self.objects.__getitem__
        items = [copy.deepcopy(take(key)) for key in chosen]
        for item in items:
            item.pop("kind", None)
            item.pop("apiVersion", None)
        return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}


@contextlib.contextmanager
def kube_api_standin(pods: Iterable[JSONObject] = ()) -> Iterator[KubeApiStandIn]:
    with KubeApiStandIn() as server:
        server.add(pods)
        yield server
