"""A stand-in Kubernetes API on loopback that answers Helm's ``lookup`` as a cluster holding given objects would.

``helm template --dry-run=server`` renders client-side but resolves the chart's ``lookup`` calls against the API
server of its kubeconfig: for each one it reads the discovery document of the group-version (``/api/v1``,
``/apis/<group>/<version>``) to find the resource, then GETs the named object or LISTs the namespace; it asks
nothing else (``tests/test_helm.py`` records what it asks). This server answers exactly those requests, read-only:
discovery for the kinds in ``RESOURCES`` (the kinds the SuperSONIC chart looks up or renders, and KEDA's
ScaledObject, installed on every cluster this program deploys to), and GET/LIST of the objects it is given. A
missing object is a 404 ``Status``, which ``lookup`` turns into an empty result, as on a cluster. Anything else is
refused (405 for writes, 404 for other paths), so a chart that needs more of the API fails loudly instead of
rendering from a guess.

It listens on 127.0.0.1 on a free port, over plain HTTP, and serves until closed; requests are answered
concurrently, so several Helm processes can render against one server.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self


@dataclass(frozen=True)
class ApiResource:
    """One kind the stand-in serves discovery and objects for."""

    group_version: str
    kind: str
    plural: str
    namespaced: bool = True


RESOURCES: tuple[ApiResource, ...] = (
    ApiResource("v1", "ConfigMap", "configmaps"),
    ApiResource("v1", "Secret", "secrets"),
    ApiResource("v1", "Service", "services"),
    ApiResource("v1", "ServiceAccount", "serviceaccounts"),
    ApiResource("v1", "Pod", "pods"),
    ApiResource("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ApiResource("v1", "Namespace", "namespaces", namespaced=False),
    ApiResource("apps/v1", "Deployment", "deployments"),
    ApiResource("batch/v1", "CronJob", "cronjobs"),
    ApiResource("networking.k8s.io/v1", "Ingress", "ingresses"),
    ApiResource("rbac.authorization.k8s.io/v1", "Role", "roles"),
    ApiResource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
    ApiResource("keda.sh/v1alpha1", "ScaledObject", "scaledobjects"),
    ApiResource("monitoring.coreos.com/v1", "ServiceMonitor", "servicemonitors"),
)
"""Kinds with discovery: what the chart generations that can be read look up (ConfigMap, Deployment, Service,
Ingress, Role, PersistentVolumeClaim, ScaledObject) or render, plus the objects this program deploys itself."""

_READ_VERBS = ["get", "list"]


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
    cluster: dict[str, str] = {"server": url}
    if certificate_authority is not None:
        cluster["certificate-authority"] = str(certificate_authority)
    context = {"cluster": "loopback", "user": "loopback", "namespace": namespace}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "loopback", "cluster": cluster}],
        "users": [{"name": "loopback", "user": dict(user or {})}],
        "contexts": [{"name": "loopback", "context": context}],
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


class LookupApi:
    """The stand-in API, serving ``objects``; a context manager (``with LookupApi(objs) as api: api.url``)."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()):
        self._by_kind = {(r.group_version, r.kind): r for r in RESOURCES}
        self._by_plural = {(r.group_version, r.plural): r for r in RESOURCES}
        self._objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        for obj in objects:
            self._add(obj)
        self.requests: list[tuple[str, str]] = []
        """Every request as (method, path with query), in arrival order: what the client asked of the API."""
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _add(self, obj: Mapping[str, Any]) -> None:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        metadata = obj.get("metadata") or {}
        name, namespace = metadata.get("name"), metadata.get("namespace")
        resource = self._by_kind.get((str(api_version), str(kind)))
        ident = f"{api_version} {kind} {namespace}/{name}"
        if resource is None:
            known = ", ".join(f"{r.group_version} {r.kind}" for r in RESOURCES)
            raise LookupApiError(f"{ident}: no discovery for this kind in the stand-in API (serves {known})")
        if not name:
            raise LookupApiError(f"{ident}: an object to serve needs metadata.name")
        if resource.namespaced and not namespace:
            raise LookupApiError(f"{ident}: a namespaced object to serve needs metadata.namespace")
        key = (resource.group_version, resource.plural, str(namespace) if resource.namespaced else "", str(name))
        self._objects[key] = copy.deepcopy(dict(obj))

    # ----------------------------------------------------------------------------------------- serving

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

            def _answer(self) -> None:
                with api._lock:
                    api.requests.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)  # keep the connection usable after a refused write
                if self.command != "GET":
                    code, body = (
                        405,
                        status_object(405, "MethodNotAllowed", f"{self.command}: the stand-in API is read-only"),
                    )
                else:
                    code, body = api.answer(self.path.split("?", 1)[0])
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="lookup-api", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    # ----------------------------------------------------------------------------------------- answers

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        """The status code and JSON body for a GET of ``path``."""
        match = re.fullmatch(r"/(?:api|apis/(?P<group>[^/]+))/(?P<version>[^/]+)(?P<rest>/.*)?", path)
        group_version = "/".join(filter(None, (match["group"], match["version"]))) if match else ""
        served = [r for r in RESOURCES if r.group_version == group_version]
        if match is None or not served:
            return 404, status_object(404, "NotFound", f"the stand-in API does not serve {path}")
        if (match["rest"] or "/") == "/":
            return 200, self._resource_list(group_version, served)
        return self._objects_answer(group_version, match["rest"])

    @staticmethod
    def _resource_list(group_version: str, served: list[ApiResource]) -> dict[str, Any]:
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": [
                {
                    "name": r.plural,
                    "singularName": r.kind.lower(),
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": _READ_VERBS,
                }
                for r in served
            ],
        }

    def _objects_answer(self, group_version: str, rest: str) -> tuple[int, dict[str, Any]]:
        parts = rest.strip("/").split("/")
        namespace = ""
        if len(parts) >= 3 and parts[0] == "namespaces":
            namespace, parts = parts[1], parts[2:]
        resource = self._by_plural.get((group_version, parts[0]))
        if resource is None or len(parts) > 2 or (namespace and not resource.namespaced):
            return 404, status_object(404, "NotFound", f"the server could not find the requested resource ({rest})")
        if len(parts) == 2:
            obj = self._objects.get((group_version, resource.plural, namespace, parts[1]))
            if obj is None:
                group = resource.group_version.rpartition("/")[0]
                qualified = f"{resource.plural}.{group}" if group else resource.plural
                return 404, status_object(404, "NotFound", f'{qualified} "{parts[1]}" not found')
            return 200, copy.deepcopy(obj)
        items = [
            copy.deepcopy(obj)
            for (gv, plural, ns, _), obj in sorted(self._objects.items())
            if gv == group_version and plural == resource.plural and (not namespace or ns == namespace)
        ]
        return 200, {
            "kind": f"{resource.kind}List",
            "apiVersion": group_version,
            "metadata": {"resourceVersion": "1"},
            "items": items,
        }
