"""A stand-in Kubernetes API server on loopback, for running the real kubectl 1.34 against pods without a cluster.

docs/cleanup.md says what it answers, authorizes, records and fakes (faults, a name the API server would refuse, a
phase change between two requests); ``tests/e2e/test_cleanup_api_server.py`` holds it to the real API server."""

from __future__ import annotations

import base64
import contextlib
import copy
import http.server
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supersonic_interlink.chart.lookup_api import LookupApi, reply, status_object, write_loopback_kubeconfig

JSONObject = dict[str, Any]


def call(server: LookupApi, path: str, method: str = "GET") -> tuple[int, JSONObject]:
    """One request to a stand-in (a write carries a body, which it must read and discard): status and JSON body."""
    request = urllib.request.Request(server.url + path, method=method, data=b"{}" if method != "GET" else None)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _key(namespace: str, name: str) -> tuple[str, str, str, str]:
    """Where a pod sits in the package stand-in's store."""
    return ("v1", "pods", namespace, name)


AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
"""The media type of kubectl 1.34's discovery: answered with it, kubectl asks nothing else before its request."""

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")

POD_FIELDS: dict[str, Callable[[JSONObject], str]] = {
    "metadata.name": lambda p: str(p["metadata"]["name"]),
    "metadata.namespace": lambda p: str(p["metadata"].get("namespace", "")),
    "status.phase": lambda p: str((p.get("status") or {}).get("phase", "")),
}

POD_RESOURCE = {
    "resource": "pods",
    "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
    "scope": "Namespaced",
    "singularResource": "pod",
    "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    "shortNames": ["po"],
    "categories": ["all"],
}


class ApiError(Exception):
    """Answered as a ``Status`` object with ``code`` and ``reason``."""

    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


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
    node: str = "interlink-hammer",
) -> JSONObject:
    """A pod as the API server returns it, with the fields the cleanup reads."""
    status: JSONObject = {"phase": phase}
    if reason is not None:
        status["reason"] = reason
    if exit_code is not None or container_reason is not None:
        terminated: JSONObject = {}
        if exit_code is not None:
            terminated["exitCode"] = exit_code
        if container_reason is not None:
            terminated["reason"] = container_reason
        status["containerStatuses"] = [{"name": "triton", "restartCount": 0, "state": {"terminated": terminated}}]
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels), "creationTimestamp": created},
        "spec": {"nodeName": node},
        "status": status,
    }


def is_dns_subdomain(name: str) -> bool:
    return len(name) <= 253 and DNS_SUBDOMAIN.fullmatch(name) is not None


_TERM = re.compile(r"\s*([^\s!=,\\]+)\s*(!=|==|=)\s*([^\s!=,\\]*)\s*")


def parse_selector(text: str) -> list[tuple[str, bool, str]]:
    """``(key, equal, value)`` per ``k=v``, ``k==v`` or ``k!=v`` term (comma-separated); any other term (``in``,
    ``notin``, ``!k``, ``k``, an escaped value) is a 400. The cleanup sends only these: its script refuses any
    other SELECTOR, and its names need no escaping."""
    terms = []
    for term in text.split(",") if text.strip() else []:
        match = _TERM.fullmatch(term)
        if match is None:
            raise bad_request(f"unable to parse requirement: {term!r} (the stand-in models key=value and key!=value)")
        key, operator, value = match.groups()
        terms.append((key, operator != "!=", value))
    return terms


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
    """Time the stand-in took to read the request and compute and encode its answer."""

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


class KubeApiStandIn(LookupApi):
    """The pods of a cluster, served on loopback while entered: the package's stand-in API with kubectl's discovery,
    selectors, chunking, deletion, a Role's authorization and injected faults. ``kube_api_standin()`` manages one."""

    def __init__(self, *, rules: Sequence[Mapping[str, Any]] | None = None, order: str = "key") -> None:
        super().__init__()
        self.rules = rules
        """A Role's rules to authorize requests against; None authorizes everything."""
        self.order = order
        """``key``: list in the API server's (namespace, name) order; ``reverse``: the opposite, to show a client
        does not depend on the order."""
        self.requests: list[Recorded] = []
        self._faults: dict[str, tuple[int, bool]] = {}
        self._hooks: dict[str, list[Callable[[], None]]] = {}
        self._resource_version = 1000

    # -------------------------------------------------------------------------------------------- fixtures

    def add(self, pods: Iterable[JSONObject]) -> None:  # type: ignore[override]
        """Store pods as the API server would accept them: a DNS-subdomain name, unique in its namespace."""
        for item in pods:
            name = item["metadata"]["name"]
            if not is_dns_subdomain(name):
                raise ValueError(f"the API server refuses pod name {name!r}: use inject() to store it anyway")
            self.inject([item])

    def inject(self, pods: Iterable[JSONObject]) -> None:
        """Store pods as given, even ones the API server would never hold."""
        with self.lock:
            for item in pods:
                stored = copy.deepcopy(item)
                metadata = stored["metadata"]
                key = _key(str(metadata.get("namespace", "")), str(metadata["name"]))
                if key in self.objects:
                    raise ValueError(f"pod {key[2:]} already exists")
                self._resource_version += 1
                metadata.setdefault("uid", f"00000000-0000-4000-8000-{self._resource_version:012d}")
                metadata["resourceVersion"] = str(self._resource_version)
                self.objects[key] = stored

    def names(self, namespace: str | None = None) -> set[str]:
        with self.lock:
            return {name for (_, _, ns, name) in self.objects if namespace is None or ns == namespace}

    def fail(self, verb: str, *, code: int = 500, truncate: bool = False) -> None:
        """The next request authorized as ``verb`` gets an ``InternalError`` ``Status`` with ``code`` and nothing
        changes; with ``truncate``, it gets the first half of the real answer (nothing changes either) and the
        connection drops, as when the API server goes away mid-answer."""
        with self.lock:
            self._faults[verb] = (code, truncate)

    def after(self, verb: str, action: Callable[[], None]) -> None:
        """Run ``action`` once, after the next request of ``verb`` is answered and before the client reads the answer
        (what another client may do between a list and the delete that follows it)."""
        with self.lock:
            self._hooks.setdefault(verb, []).append(action)

    def set_phase(self, name: str, phase: str, namespace: str = "cms") -> None:
        with self.lock:
            self._resource_version += 1
            stored = self.objects[_key(namespace, name)]
            stored.setdefault("status", {})["phase"] = phase
            stored["metadata"]["resourceVersion"] = str(self._resource_version)

    def kubeconfig(self, path: Path, namespace: str = "cms") -> Path:
        """A kubeconfig whose current context is this server."""
        return write_loopback_kubeconfig(path, self.url, namespace)

    def requests_since(self, start: int) -> list[Recorded]:
        with self.lock:
            return list(self.requests[start:])

    # -------------------------------------------------------------------------------------------- serving

    def handle(self, request: http.server.BaseHTTPRequestHandler) -> None:
        started = time.perf_counter()
        method = request.command
        parsed = urllib.parse.urlsplit(request.path)
        path = parsed.path.rstrip("/") or "/"
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        verb = self._verb(method, path)
        content_type = "application/json"
        truncate = False
        try:
            with self.lock:
                self._authorize(verb, path)
                if verb in self._faults:
                    code, truncate = self._faults.pop(verb)
                    if not truncate:
                        raise ApiError(code, "InternalError", f"stand-in: injected failure of {verb}")
                    # The answer a list would get, computed without changing anything.
                    code, body, content_type = self._answer("GET", path, query, "list")
                else:
                    code, body, content_type = self._answer(method, path, query, verb)
        except ApiError as error:
            code, body = error.code, status_object(error.code, error.reason, error.message)
        # Recorded before the answer goes out, so it is there by the time the client has read it.
        recorded = Recorded(method, path, query, verb, code, time.perf_counter() - started)
        with self.lock:
            self.requests.append(recorded)
            hooks = self._hooks.pop(verb, []) if code < 300 and not truncate else []
        for action in hooks:
            action()
        if not truncate:
            reply(request, code, body, content_type)
            return
        # The content-length promises the whole answer; half of it comes, then the connection drops.
        data = json.dumps(body, separators=(",", ":")).encode()
        request.close_connection = True
        request.send_response(code)
        request.send_header("content-type", content_type)
        request.send_header("content-length", str(len(data)))
        request.end_headers()
        request.wfile.write(data[: len(data) // 2])

    @staticmethod
    def _verb(method: str, path: str) -> str:
        if method == "GET" and path in ("/api", "/apis"):
            return "discovery"
        parts = path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) in (5, 6) and parts[4] == "pods":
            named = len(parts) == 6
            if method == "GET":
                return "get" if named else "list"
            return "delete" if named else "deletecollection"
        return "unknown"

    def _authorize(self, verb: str, path: str) -> None:
        if self.rules is None or verb in ("discovery", "unknown"):
            return
        if any(
            "" in r.get("apiGroups", ()) and "pods" in r.get("resources", ()) and verb in r.get("verbs", ())
            for r in self.rules
        ):
            return
        namespace = path.strip("/").split("/")[3]
        raise ApiError(
            403,
            "Forbidden",
            'pods is forbidden: User "system:serviceaccount:cms:supersonic-interlink-failed-pod-cleanup" cannot '
            f'{verb} resource "pods" in API group "" in the namespace "{namespace}"',
        )

    def _answer(self, method: str, path: str, query: dict[str, list[str]], verb: str) -> tuple[int, JSONObject, str]:
        if verb == "discovery":
            resources = [{"version": "v1", "resources": [POD_RESOURCE], "freshness": "Current"}]
            items = [{"metadata": {"creationTimestamp": None}, "versions": resources}] if path == "/api" else []
            discovery = {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}}
            return 200, {**discovery, "items": items}, AGGREGATED_V2
        if verb == "unknown":
            raise ApiError(404, "NotFound", f"stand-in: {method} {path} is not modelled")
        if verb == "get":  # the package's stand-in answers a named GET
            return (*self.answer(path), "application/json")
        namespace = path.strip("/").split("/")[3]
        if verb == "delete":
            code, body = self.answer(path)
            if code == 200:
                self._resource_version += 1
                del self.objects[_key(namespace, path.rpartition("/")[2])]
            return code, body, "application/json"
        selected = self._select(namespace, query)
        if verb == "deletecollection":
            for item in selected:
                del self.objects[_key(namespace, item["metadata"]["name"])]
            if selected:
                self._resource_version += 1
            return 200, self._pod_list(selected, {}), "application/json"
        return 200, self._chunk(selected, query), "application/json"

    def _select(self, namespace: str, query: dict[str, list[str]]) -> list[JSONObject]:
        labels = parse_selector(query.get("labelSelector", [""])[0])
        fields = parse_selector(query.get("fieldSelector", [""])[0])
        for name, _, _ in fields:
            if name not in POD_FIELDS:
                raise bad_request(f"field label not supported: {name}")

        def selected(item: JSONObject) -> bool:
            have = item["metadata"].get("labels") or {}
            return all((have.get(key) == value) == equal for key, equal, value in labels) and all(
                (POD_FIELDS[key](item) == value) == equal for key, equal, value in fields
            )

        keys = sorted((key for key in self.objects if key[2] == namespace), reverse=self.order == "reverse")
        return [copy.deepcopy(self.objects[key]) for key in keys if selected(self.objects[key])]

    def _chunk(self, selected: list[JSONObject], query: dict[str, list[str]]) -> JSONObject:
        start = 0
        token = query.get("continue", [""])[0]
        if token:
            try:
                start = int(json.loads(base64.b64decode(token))["start"])
            except (ValueError, KeyError, TypeError) as error:
                raise bad_request(f"continue key is not valid: {error}") from None
        limit_text = query.get("limit", ["0"])[0]
        if not re.fullmatch(r"\d+", limit_text):
            raise bad_request(f"limit: Invalid value: {limit_text!r}")
        limit = int(limit_text)
        end = len(selected) if limit == 0 else min(len(selected), start + limit)
        metadata: JSONObject = {}
        if end < len(selected):
            metadata["continue"] = base64.b64encode(json.dumps({"start": end}).encode()).decode()
            metadata["remainingItemCount"] = len(selected) - end
        return self._pod_list(selected[start:end], metadata)

    def _pod_list(self, items: list[JSONObject], metadata: JSONObject) -> JSONObject:
        for item in items:
            item.pop("kind", None)
            item.pop("apiVersion", None)
        return {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(self._resource_version), **metadata},
            "items": items,
        }


@contextlib.contextmanager
def kube_api_standin(
    pods: Iterable[JSONObject] = (), *, rules: Sequence[Mapping[str, Any]] | None = None, order: str = "key"
) -> Iterator[KubeApiStandIn]:
    with KubeApiStandIn(rules=rules, order=order) as server:
        server.add(pods)
        yield server
