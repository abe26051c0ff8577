"""A stand-in Kubernetes API server on loopback, for running the real kubectl against pods without a cluster.

It serves plain HTTP on 127.0.0.1 (a free port) and does what the API server does for the calls kubectl makes on
pods in a namespace:

- discovery: ``GET /api`` and ``GET /apis`` (aggregated discovery, ``apidiscovery.k8s.io/v2``, when asked for it,
  as kubectl 1.34 does; the legacy ``APIVersions``/``APIGroupList`` otherwise), ``GET /api/v1``, ``GET /version``;
- ``GET /api/v1/namespaces/NS/pods``: list, with ``labelSelector`` (equality requirements: ``=``, ``==``, ``!=``;
  the set-based ones are refused, as the cleanup never sends them), ``fieldSelector`` (``metadata.name``,
  ``metadata.namespace``, ``status.phase`` with ``=``, ``==``, ``!=``) and ``limit``/``continue`` chunking, items in
  key (name) order;
- ``GET .../pods/NAME``, ``DELETE .../pods/NAME``;
- ``DELETE /api/v1/namespaces/NS/pods``: deletecollection with the same selectors, answering the deleted pods as a
  ``PodList``. Every pod here is terminal or unscheduled, which the API server deletes at once (grace period 0).

Responses are JSON shaped as the API server's (list items without ``kind``/``apiVersion``, a ``resourceVersion``
that moves on every change); every error is a ``Status`` object with the API server's reason and code. Given RBAC
rules (a Role's ``rules``), it authorizes each request as the API server's RBAC does for a namespaced Role:
discovery is open, everything else needs the verb (``list``, ``get``, ``delete``, ``deletecollection``) on the
resource, or it answers 403 Forbidden. Anything it does not model is a 400/404/405 ``Status``, never a guess.

Every request is recorded (method, path, decoded query, the verb it was authorized as, the status answered), so a
test can count a run's API requests. ``inject`` stores a pod as given, even one the API server would refuse (a
name that is not a DNS subdomain), to show what a client does with input the API never sends; ``fail`` makes
the next requests of a verb fail with a chosen code.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import http.server
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from supersonic_interlink.chart.lookup_api import status_object, write_loopback_kubeconfig

LOOPBACK = "127.0.0.1"
STOP_TIMEOUT_SECONDS = 5.0

JSONObject = dict[str, Any]

# The media type kubectl 1.34's discovery client asks for first, and the server answers with when it can.
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
DISCOVERY_PATHS = frozenset({"/api", "/apis", "/api/v1", "/version"})

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
DNS_SUBDOMAIN_MAX = 253
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
LABEL_NAME_MAX = 63

# Pod field labels this stand-in evaluates. The API server supports a few more, which the stand-in refuses rather
# than ignores; any other it answers with "field label not supported".
POD_FIELDS: dict[str, Callable[[JSONObject], str]] = {
    "metadata.name": lambda p: str(p["metadata"]["name"]),
    "metadata.namespace": lambda p: str(p["metadata"].get("namespace", "")),
    "status.phase": lambda p: str((p.get("status") or {}).get("phase", "")),
}

UNMODELLED_POD_FIELDS = frozenset(
    {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "spec.host",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    }
)

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


# ------------------------------------------------------------------------------------------------ pods


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
    return len(name) <= DNS_SUBDOMAIN_MAX and DNS_SUBDOMAIN.fullmatch(name) is not None


# ------------------------------------------------------------------------------------------------ label selectors


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str
    """``=`` or ``!=`` (``==`` is read as ``=``)."""
    value: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        return (labels.get(self.key) == self.value) == (self.operator == "=")


def _check_key(key: str) -> str:
    prefix, slash, name = key.rpartition("/")
    if slash and not (prefix and is_dns_subdomain(prefix)):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r}: prefix must be a DNS subdomain")
    if len(name) > LABEL_NAME_MAX or not _LABEL_NAME.fullmatch(name):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r}: name part must be a label name")
    return key


def _check_value(value: str) -> str:
    if len(value) > LABEL_NAME_MAX or not _LABEL_VALUE.fullmatch(value):
        raise bad_request(f"unable to parse requirement: invalid label value: {value!r}")
    return value


_EQUALITY = re.compile(r"\s*([^\s!=]+)\s*(!=|==|=)\s*([^\s!=]*)\s*")


def parse_label_selector(text: str) -> list[LabelRequirement]:
    """Equality requirements (``k=v``, ``k==v``, ``k!=v``, comma-separated) as the API server reads them; an error is
    a 400. The cleanup sends only these (its script refuses any other SELECTOR), so set-based requirements (``in``,
    ``notin``, ``!k``, ``k``, ``>``, ``<``) are not modelled: they are refused with a 400 too, never guessed."""
    requirements: list[LabelRequirement] = []
    for term in text.split(",") if text.strip() else []:
        match = _EQUALITY.fullmatch(term)
        if match is None:
            raise bad_request(f"unable to parse requirement: {term!r} (the stand-in models key=value and key!=value)")
        key, operator, value = match.groups()
        requirements.append(LabelRequirement(_check_key(key), "!=" if operator == "!=" else "=", _check_value(value)))
    return requirements


# ------------------------------------------------------------------------------------------------ field selectors


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: str
    """``=`` or ``!=`` (``==`` is read as ``=``)."""
    value: str

    def matches(self, pod_object: JSONObject) -> bool:
        return (POD_FIELDS[self.field](pod_object) == self.value) == (self.operator == "=")


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        current.append("\\")
    parts.append("".join(current))
    return parts


def _unescape_field_value(value: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(value):
        char = value[index]
        if char == "\\":
            if index + 1 >= len(value) or value[index + 1] not in "\\,=":
                raise bad_request(f"invalid field selector: invalid escape sequence in {value!r}")
            out.append(value[index + 1])
            index += 2
            continue
        if char in ",=":
            raise bad_request(f"invalid field selector: unescaped {char!r} in value {value!r}")
        out.append(char)
        index += 1
    return "".join(out)


def _split_field_term(term: str) -> tuple[str, str, str]:
    """``field``, operator, raw value at the first unescaped ``!=``, ``==`` or ``=`` (apimachinery's splitTerm)."""
    index = 0
    while index < len(term):
        if term[index] == "\\":
            index += 2
            continue
        for operator in ("!=", "==", "="):
            if term.startswith(operator, index):
                return term[:index], operator, term[index + len(operator) :]
        index += 1
    raise bad_request(f"invalid selector: '{term}'; can't understand '{term}'")


def parse_field_selector(text: str) -> list[FieldRequirement]:
    """The API server's field selector grammar (apimachinery's fields.ParseSelector) and the pod field labels."""
    if text == "":
        return []
    requirements: list[FieldRequirement] = []
    for term in _split_unescaped(text, ","):
        if term == "":
            continue
        name, operator, raw = _split_field_term(term)
        if name in UNMODELLED_POD_FIELDS:
            raise bad_request(f"stand-in: field label {name} is supported by the API server but not modelled here")
        if name not in POD_FIELDS:
            raise bad_request(f"field label not supported: {name}")
        requirements.append(FieldRequirement(name, "!=" if operator == "!=" else "=", _unescape_field_value(raw)))
    return requirements


# ------------------------------------------------------------------------------------------------ the server


@dataclass(frozen=True)
class Recorded:
    """One request as the stand-in saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    verb: str
    """``discovery``, ``list``, ``get``, ``delete``, ``deletecollection`` or ``unknown``."""
    status: int
    raw_query: str
    seconds: float
    """Time the stand-in took to read the request and compute and encode its answer."""

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


@dataclass
class _Fault:
    code: int
    reason: str
    message: str
    times: int
    truncate: bool


@dataclass
class KubeApiStandIn:
    """The pods of a cluster, served on loopback until ``stop``. Use ``kube_api_standin()`` for a managed one."""

    rules: Sequence[Mapping[str, Any]] | None = None
    """A Role's rules to authorize requests against; None authorizes everything."""
    user: str = "system:serviceaccount:cms:supersonic-interlink-failed-pod-cleanup"
    order: str = "key"
    """``key``: list in the API server's (namespace, name) order; ``reverse``: the opposite, to show a client does
    not depend on the order."""
    requests: list[Recorded] = field(default_factory=list)
    _pods: dict[tuple[str, str], JSONObject] = field(default_factory=dict)
    _faults: dict[str, _Fault] = field(default_factory=dict)
    _hooks: dict[str, list[Callable[[], None]]] = field(default_factory=dict)
    _resource_version: int = 1000
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                owner._handle(self, "GET")

            def do_DELETE(self) -> None:
                owner._handle(self, "DELETE")

            def do_POST(self) -> None:
                owner._handle(self, "POST")

            def do_PUT(self) -> None:
                owner._handle(self, "PUT")

            def do_PATCH(self) -> None:
                owner._handle(self, "PATCH")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="kube-api-standin", daemon=True
        )
        self._thread.start()

    # -------------------------------------------------------------------------------------------- fixtures

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def add(self, pods: Iterable[JSONObject]) -> None:
        """Store pods as the API server would accept them: a DNS-subdomain name, unique in its namespace."""
        for item in pods:
            name = item["metadata"]["name"]
            if not is_dns_subdomain(name):
                raise ValueError(f"the API server refuses pod name {name!r}: use inject() to store it anyway")
            self.inject([item])

    def inject(self, pods: Iterable[JSONObject]) -> None:
        """Store pods as given, even ones the API server would never hold."""
        with self._lock:
            for item in pods:
                stored = copy.deepcopy(item)
                stored.setdefault("kind", "Pod")
                stored.setdefault("apiVersion", "v1")
                metadata = stored["metadata"]
                key = (str(metadata.get("namespace", "")), str(metadata["name"]))
                if key in self._pods:
                    raise ValueError(f"pod {key} already exists")
                self._resource_version += 1
                metadata.setdefault("uid", f"00000000-0000-4000-8000-{self._resource_version:012d}")
                metadata["resourceVersion"] = str(self._resource_version)
                self._pods[key] = stored

    def names(self, namespace: str | None = None) -> set[str]:
        with self._lock:
            return {name for (ns, name) in self._pods if namespace is None or ns == namespace}

    def fail(
        self,
        verb: str,
        *,
        code: int = 500,
        reason: str = "InternalError",
        message: str = "",
        times: int = 1,
        truncate: bool = False,
    ) -> None:
        """The next ``times`` requests authorized as ``verb`` get a ``Status`` with ``code`` and nothing changes; with
        ``truncate``, they get the first half of the real answer (nothing changes either) and the connection drops,
        as when the API server goes away mid-answer."""
        with self._lock:
            message = message or f"stand-in: injected failure of {verb}"
            self._faults[verb] = _Fault(code, reason, message, times, truncate)

    def after(self, verb: str, action: Callable[[], None]) -> None:
        """Run ``action`` once, after the next request of ``verb`` is answered and before the client reads the answer
        (what another client may do between a list and the delete that follows it)."""
        with self._lock:
            self._hooks.setdefault(verb, []).append(action)

    def set_phase(self, name: str, phase: str, namespace: str = "cms") -> None:
        with self._lock:
            self._resource_version += 1
            stored = self._pods[(namespace, name)]
            stored.setdefault("status", {})["phase"] = phase
            stored["metadata"]["resourceVersion"] = str(self._resource_version)

    def kubeconfig(self, path: Path, namespace: str = "cms") -> Path:
        """A kubeconfig whose current context is this server."""
        return write_loopback_kubeconfig(path, self.url, namespace)

    def requests_since(self, start: int) -> list[Recorded]:
        with self._lock:
            return list(self.requests[start:])

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(STOP_TIMEOUT_SECONDS)

    # -------------------------------------------------------------------------------------------- serving

    def _handle(self, handler: http.server.BaseHTTPRequestHandler, method: str) -> None:
        started = time.perf_counter()
        parsed = urllib.parse.urlsplit(handler.path)
        length = int(handler.headers.get("content-length") or 0)
        if length:
            handler.rfile.read(length)
        path = parsed.path.rstrip("/") or "/"
        try:
            query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True, strict_parsing=False)
        except ValueError:
            query = {}
        verb = self._verb(method, path)
        content_type = "application/json"
        truncate = False
        try:
            with self._lock:
                self._authorize(verb, path)
                fault = self._faults.get(verb)
                if fault is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        del self._faults[verb]
                    if not fault.truncate:
                        raise ApiError(fault.code, fault.reason, fault.message)
                    truncate = True
                    # The answer a list would get, computed without changing anything.
                    code, body, content_type = self._answer("GET", path, query, "list", "")
                else:
                    code, body, content_type = self._answer(
                        method, path, query, verb, handler.headers.get("accept", "")
                    )
        except ApiError as error:
            code, body = error.code, status_object(error.code, error.reason, error.message)
        data = json.dumps(body, separators=(",", ":")).encode()
        # Recorded before the answer goes out, so it is there by the time the client has read it.
        recorded = Recorded(method, path, query, verb, code, parsed.query, time.perf_counter() - started)
        with self._lock:
            self.requests.append(recorded)
            hooks = self._hooks.pop(verb, []) if code < 300 and not truncate else []
        for action in hooks:
            action()
        handler.send_response(code)
        handler.send_header("content-type", content_type)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        if truncate:
            handler.wfile.write(data[: len(data) // 2])
            handler.close_connection = True
        else:
            handler.wfile.write(data)

    @staticmethod
    def _verb(method: str, path: str) -> str:
        if method == "GET" and path in DISCOVERY_PATHS:
            return "discovery"
        parts = path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) in (5, 6) and parts[4] == "pods":
            named = len(parts) == 6
            if method == "GET":
                return "get" if named else "list"
            if method == "DELETE":
                return "delete" if named else "deletecollection"
        return "unknown"

    def _authorize(self, verb: str, path: str) -> None:
        if self.rules is None or verb in ("discovery", "unknown"):
            return
        namespace = path.strip("/").split("/")[3]
        for rule in self.rules:
            if (
                "" in rule.get("apiGroups", ())
                and "pods" in rule.get("resources", ())
                and verb in rule.get("verbs", ())
            ):
                return
        raise ApiError(
            403,
            "Forbidden",
            f'pods is forbidden: User "{self.user}" cannot {verb} resource "pods" in API group "" '
            f'in the namespace "{namespace}"',
        )

    def _answer(
        self, method: str, path: str, query: dict[str, list[str]], verb: str, accept: str
    ) -> tuple[int, JSONObject, str]:
        if verb == "discovery":
            return self._discovery(path, accept)
        if verb == "unknown":
            if method not in ("GET", "DELETE"):
                raise ApiError(405, "MethodNotAllowed", f"stand-in: {method} is not modelled")
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        parts = path.strip("/").split("/")
        namespace = parts[3]
        if verb in ("get", "delete"):
            key = (namespace, parts[5])
            if key not in self._pods:
                raise ApiError(404, "NotFound", f'pods "{parts[5]}" not found')
            found = copy.deepcopy(self._pods[key])
            if verb == "delete":
                del self._pods[key]
                self._resource_version += 1
            return 200, found, "application/json"
        selected = self._select(namespace, query)
        if verb == "deletecollection":
            for item in selected:
                del self._pods[(namespace, item["metadata"]["name"])]
            if selected:
                self._resource_version += 1
            return 200, self._pod_list(selected, {}), "application/json"
        return 200, *self._chunk(selected, query)

    def _select(self, namespace: str, query: dict[str, list[str]]) -> list[JSONObject]:
        labels = parse_label_selector(query.get("labelSelector", [""])[0])
        fields = parse_field_selector(query.get("fieldSelector", [""])[0])
        keys = sorted(key for key in self._pods if key[0] == namespace)
        if self.order == "reverse":
            keys.reverse()
        found = []
        for key in keys:
            item = self._pods[key]
            if all(r.matches(item["metadata"].get("labels") or {}) for r in labels) and all(
                r.matches(item) for r in fields
            ):
                found.append(copy.deepcopy(item))
        return found

    def _chunk(self, selected: list[JSONObject], query: dict[str, list[str]]) -> tuple[JSONObject, str]:
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
        return self._pod_list(selected[start:end], metadata), "application/json"

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

    @staticmethod
    def _discovery(path: str, accept: str) -> tuple[int, JSONObject, str]:
        aggregated = "apidiscovery.k8s.io" in accept and "v=v2;" in accept.replace(" ", "") + ";"
        if path == "/version":
            return (
                200,
                {"major": "1", "minor": "34", "gitVersion": "v1.34.0-standin", "platform": "linux/amd64"},
                "application/json",
            )
        if path == "/api/v1":
            return (
                200,
                {
                    "kind": "APIResourceList",
                    "groupVersion": "v1",
                    "resources": [
                        {
                            "name": "pods",
                            "singularName": "pod",
                            "namespaced": True,
                            "kind": "Pod",
                            "verbs": POD_RESOURCE["verbs"],
                            "shortNames": ["po"],
                            "categories": ["all"],
                        }
                    ],
                },
                "application/json",
            )
        if aggregated:
            items: list[JSONObject] = []
            if path == "/api":
                items = [
                    {
                        "metadata": {"creationTimestamp": None},
                        "versions": [{"version": "v1", "resources": [POD_RESOURCE], "freshness": "Current"}],
                    }
                ]
            return (
                200,
                {
                    "kind": "APIGroupDiscoveryList",
                    "apiVersion": "apidiscovery.k8s.io/v2",
                    "metadata": {},
                    "items": items,
                },
                AGGREGATED_V2,
            )
        if path == "/api":
            return (
                200,
                {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
                "application/json",
            )
        return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}, "application/json"


@contextlib.contextmanager
def kube_api_standin(
    pods: Iterable[JSONObject] = (), *, rules: Sequence[Mapping[str, Any]] | None = None, order: str = "key"
) -> Iterator[KubeApiStandIn]:
    server = KubeApiStandIn(rules=rules, order=order)
    try:
        server.add(pods)
        yield server
    finally:
        server.stop()
