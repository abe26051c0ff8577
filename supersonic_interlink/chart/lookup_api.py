"""The one stand-in Kubernetes API: on loopback, it answers Helm's ``lookup`` as a cluster holding given objects would.

``helm template --dry-run=server`` renders client-side but resolves the chart's ``lookup`` calls against the API
server of its kubeconfig: it reads the discovery document of the group-version (``/api/v1``, ``/apis/<group>/<v>``)
to find the resource, then GETs the named object or LISTs the namespace; it asks nothing else (``tests/test_helm.py``
records what it asks). This server answers exactly those, read-only, for the kinds in ``RESOURCES``. A missing object
is a 404 ``Status``, which ``lookup`` turns into an empty result, as on a cluster. Anything else is refused (405 for
writes, 404 for other paths), so a chart that needs more of the API fails loudly instead of rendering from a guess.
The tests' pod API for kubectl (``tests/kube_api_standin.py``) extends this class by overriding ``handle``.

Plain HTTP on 127.0.0.1, a free port, until closed; requests are answered concurrently (several Helm processes).
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple, Self


class ApiResource(NamedTuple):
    group_version: str
    kind: str
    plural: str
    namespaced: bool = True


RESOURCES: tuple[ApiResource, ...] = tuple(
    ApiResource(gv, kind, f"{kind.lower()}s" if kind != "Ingress" else "ingresses", kind != "Namespace")
    for gv, kinds in (
        ("v1", "ConfigMap Secret Service ServiceAccount Pod PersistentVolumeClaim Namespace"),
        ("apps/v1", "Deployment"),
        ("batch/v1", "CronJob"),
        ("networking.k8s.io/v1", "Ingress"),
        ("rbac.authorization.k8s.io/v1", "Role RoleBinding"),
        ("keda.sh/v1alpha1", "ScaledObject"),
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
    )
    for kind in kinds.split()
)
"""Kinds with discovery: what the chart generations that can be read look up (ConfigMap, Deployment, Service,
Ingress, Role, PersistentVolumeClaim, ScaledObject) or render, plus the objects this program deploys itself."""

_PATH = re.compile(
    r"/(?:api|apis/(?P<group>[^/]+))/(?P<version>[^/]+)(?:/namespaces/(?P<ns>[^/]+)(?=/))?(?P<rest>/.*)?"
)


def write_loopback_kubeconfig(
    path: Path,
    url: str,
    namespace: str = "default",
    *,
    user: Mapping[str, str] | None = None,
    certificate_authority: Path | None = None,
) -> Path:
    """A kubeconfig (JSON, which kubectl and Helm read as YAML) whose only context is the API server at ``url`` (the
    stand-in needs no credentials, the local control plane a token), readable by its owner alone (Helm warns about
    a group- or world-readable one)."""
    cluster = {"server": url} | ({"certificate-authority": str(certificate_authority)} if certificate_authority else {})
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "loopback", "cluster": cluster}],
        "users": [{"name": "loopback", "user": dict(user or {})}],
        "contexts": [
            {"name": "loopback", "context": {"cluster": "loopback", "user": "loopback", "namespace": namespace}}
        ],
        "current-context": "loopback",
    }
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


class LookupApiError(ValueError):
    """An object given to serve is not one the stand-in can serve (unknown kind, missing name or namespace)."""


def status_object(code: int, reason: str, message: str) -> dict[str, Any]:
    """A Kubernetes API ``Status`` failure body, as the API server answers an error."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def reply(request: BaseHTTPRequestHandler, code: int, body: Any, content_type: str = "application/json") -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    request.send_response(code)
    request.send_header("Content-Type", content_type)
    request.send_header("Content-Length", str(len(data)))
    request.end_headers()
    request.wfile.write(data)


class LookupApi:
    """The stand-in API, serving ``objects``; a context manager (``with LookupApi(objs) as api: api.url``)."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()):
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        """(group-version, plural, namespace or "", name) -> the object as served."""
        self.requests: list[Any] = []
        """Every request as (method, path with query), in arrival order: what the client asked of the API."""
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        for obj in objects:
            self.add(obj)

    def add(self, obj: Mapping[str, Any]) -> None:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        name, namespace = (obj.get("metadata") or {}).get("name"), (obj.get("metadata") or {}).get("namespace")
        ident = f"{api_version} {kind} {namespace}/{name}"
        resource = next((r for r in RESOURCES if (r.group_version, r.kind) == (api_version, kind)), None)
        if resource is None:
            known = ", ".join(f"{r.group_version} {r.kind}" for r in RESOURCES)
            raise LookupApiError(f"{ident}: no discovery for this kind in the stand-in API (serves {known})")
        if not name:
            raise LookupApiError(f"{ident}: an object to serve needs metadata.name")
        if resource.namespaced and not namespace:
            raise LookupApiError(f"{ident}: a namespaced object to serve needs metadata.namespace")
        key = (resource.group_version, resource.plural, str(namespace) if resource.namespaced else "", str(name))
        self.objects[key] = copy.deepcopy(dict(obj))

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stand-in API is not running (use it as a context manager)")
        return f"http://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> Self:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes; with Nagle's algorithm the body waits for the client's
            # delayed ACK of the headers (~40 ms), on each of the few requests a render makes.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def dispatch(self) -> None:
                if length := int(self.headers.get("Content-Length") or 0):
                    self.rfile.read(length)  # keep the connection usable after a refused write
                api.handle(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = dispatch

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = None

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        """Answer one request (its body already read)."""
        with self.lock:
            self.requests.append((request.command, request.path))
        if request.command != "GET":
            message = f"{request.command}: the stand-in API is read-only"
            return reply(request, 405, status_object(405, "MethodNotAllowed", message))
        reply(request, *self.answer(request.path.split("?", 1)[0]))

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        """The status code and JSON body for a GET of ``path``."""
        match = _PATH.fullmatch(path)
        group_version = "/".join(filter(None, (match["group"], match["version"]))) if match else ""
        served = [r for r in RESOURCES if r.group_version == group_version]
        if match is None or not served:
            return 404, status_object(404, "NotFound", f"the stand-in API does not serve {path}")
        if not match["ns"] and (match["rest"] or "/") == "/":
            resources = [
                {
                    "name": r.plural,
                    "singularName": r.kind.lower(),
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "list"],
                }
                for r in served
            ]
            return 200, {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": group_version,
                "resources": resources,
            }
        namespace, parts = match["ns"] or "", match["rest"].strip("/").split("/")
        resource = next((r for r in served if r.plural == parts[0]), None)
        if resource is None or len(parts) > 2 or (namespace and not resource.namespaced):
            return 404, status_object(404, "NotFound", f"the server could not find the requested resource ({path})")
        if len(parts) == 2:
            obj = self.objects.get((group_version, resource.plural, namespace, parts[1]))
            if obj is None:
                group = group_version.rpartition("/")[0]
                qualified = f"{resource.plural}.{group}" if group else resource.plural
                return 404, status_object(404, "NotFound", f'{qualified} "{parts[1]}" not found')
            return 200, copy.deepcopy(obj)
        items = [
            copy.deepcopy(obj)
            for (gv, plural, ns, _), obj in sorted(self.objects.items())
            if (gv, plural) == (group_version, resource.plural) and (not namespace or ns == namespace)
        ]
        return 200, {
            "kind": f"{resource.kind}List",
            "apiVersion": group_version,
            "metadata": {"resourceVersion": "1"},
            "items": items,
        }
