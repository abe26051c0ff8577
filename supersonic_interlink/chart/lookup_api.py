"""The one stand-in Kubernetes API, read-only on loopback: the discovery and GET Helm's ``lookup`` asks
(``tests/test_helm.py`` records them), answered as a cluster holding the given objects would; tests extend it."""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

KINDS = {
    "v1": "ConfigMap Secret Service ServiceAccount Pod PersistentVolumeClaim Namespace",
    "apps/v1": "Deployment",
    "batch/v1": "CronJob",
    "networking.k8s.io/v1": "Ingress",
    "rbac.authorization.k8s.io/v1": "Role RoleBinding",
    "keda.sh/v1alpha1": "ScaledObject",
    "monitoring.coreos.com/v1": "ServiceMonitor",
}
"""By group-version, what the readable chart generations look up or render, and what this program deploys."""

PLURALS = {
    gv: {kind.lower() + ("es" if kind.endswith("s") else "s"): kind for kind in kinds.split()}
    for gv, kinds in KINDS.items()
}
"""By group-version, plural -> kind (every kind here but Namespace is namespaced)."""
_PATH = re.compile(
    r"/(?:api|apis/(?P<group>[^/]+))/(?P<version>[^/]+)(?:/namespaces/(?P<ns>[^/]+)(?=/))?(?P<rest>/.*)?"
)


def write_loopback_kubeconfig(path: Path, url: str, namespace: str) -> Path:
    """A kubeconfig (JSON is YAML) whose one context is ``url``, private to its owner: Helm warns otherwise."""
    context = {"cluster": "loopback", "user": "loopback", "namespace": namespace}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "loopback", "cluster": {"server": url}}],
        "users": [{"name": "loopback", "user": {}}],
        "contexts": [{"name": "loopback", "context": context}],
        "current-context": "loopback",
    }
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


class LookupApiError(ValueError):
    """An object given to serve is not one the stand-in can serve."""


def status_object(code: int, reason: str, message: str) -> dict[str, Any]:
    failure = {"kind": "Status", "apiVersion": "v1", "status": "Failure"}
    return {**failure, "message": message, "reason": reason, "code": code}


def reply(request: BaseHTTPRequestHandler, code: int, body: Any, content_type: str = "application/json") -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    request.send_response(code)
    request.send_header("Content-Type", content_type)
    request.send_header("Content-Length", str(len(data)))
    request.end_headers()
    request.wfile.write(data)


class LookupApi:
    """The stand-in API serving ``objects`` while entered (``with LookupApi(objs) as api: api.url``)."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()):
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        """(group-version, plural, namespace or "", name) -> the object as served."""
        self.requests: list[Any] = []
        """(method, path with query) of every request, in arrival order."""
        self.lock = threading.Lock()
        for obj in objects:
            self.add(obj)

    def add(self, obj: Mapping[str, Any]) -> None:
        api_version, kind, metadata = str(obj.get("apiVersion")), obj.get("kind"), obj.get("metadata") or {}
        name, namespace = metadata.get("name"), metadata.get("namespace")
        plural = next((p for p, k in PLURALS.get(api_version, {}).items() if k == kind), None)
        namespaced = kind != "Namespace"
        if plural is None or not name or (namespaced and not namespace):
            known = "; ".join(f"{gv} {kinds}" for gv, kinds in KINDS.items())
            raise LookupApiError(
                f"{api_version} {kind} {namespace}/{name}: no discovery for this kind, or no metadata.name or "
                f"metadata.namespace (only a Namespace has none): the stand-in API serves a named {known}"
            )
        self.objects[(api_version, plural, str(namespace) if namespaced else "", str(name))] = copy.deepcopy(dict(obj))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> Self:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body are two writes: with Nagle the body waits ~40 ms for the client's delayed ACK.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def dispatch(self) -> None:
                if length := int(self.headers.get("Content-Length") or 0):
                    self.rfile.read(length)  # keep the connection usable after a refused write
                api.handle(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = dispatch

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        """Answer one request (its body already read)."""
        with self.lock:
            self.requests.append((request.command, request.path))
        if request.command != "GET":
            message = f"{request.command}: the stand-in API is read-only"
            return reply(request, 405, status_object(405, "MethodNotAllowed", message))
        reply(request, *self.answer(request.path.split("?", 1)[0]))

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        """The status code and JSON body for a GET of ``path``: discovery, or one object by name."""
        match = _PATH.fullmatch(path)
        group_version = "/".join(filter(None, (match["group"], match["version"]))) if match else ""
        served = PLURALS.get(group_version)
        if match is None or not served:
            return 404, status_object(404, "NotFound", f"the stand-in API does not serve {path}")
        namespace, parts = match["ns"] or "", (match["rest"] or "/").strip("/").split("/")
        if not namespace and parts == [""]:
            verbs = ["get", "list"]
            resources = [
                {"name": p, "singularName": k.lower(), "namespaced": k != "Namespace", "kind": k, "verbs": verbs}
                for p, k in served.items()
            ]
            return 200, {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}
        obj = self.objects.get((group_version, parts[0], namespace, parts[-1])) if len(parts) == 2 else None
        if obj is None:  # Helm's lookup turns exactly a NotFound into an empty result
            return 404, status_object(404, "NotFound", f'{parts[0]} "{parts[-1]}" not found')
        return 200, copy.deepcopy(obj)
