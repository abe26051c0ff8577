#!/usr/bin/env python3
"""The test chart's admission sidecar, to the interface of SuperSONIC's cfg/admission-server.py (c292baf1, db73925).

``GET /wake`` raises the ScaledObject's minReplicaCount to max(1, IDLE_MIN_REPLICAS) and scales the GPU_DEPLOYMENT up to
that, asserts both every 2 s for HOLD_MIN_REPLICAS_SECONDS from the last wake, then puts minReplicaCount back.
``GET /sleep`` answers after 1 s (the Lua filter's only way to wait), ``GET /health`` at once. The API server is
reached at KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT with the ServiceAccount's token, CA and namespace files.
"""

import json
import os
import ssl
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
DEPLOYMENT = os.environ.get("GPU_DEPLOYMENT", "")
SCALED_OBJECT = os.environ.get("SCALEDOBJECT_NAME", "")
IDLE = int(os.environ.get("IDLE_MIN_REPLICAS", "0"))
AWAKE = max(1, IDLE)
HOLD_SECONDS = int(os.environ.get("HOLD_MIN_REPLICAS_SECONDS", "300"))
PORT = int(os.environ.get("LISTEN_PORT", "8080"))

_lock = threading.Lock()
_state: dict = {"last_wake": None, "held": False}  # monotonic time of the last wake; whether the floor is held up


def _read(name):
    with open(f"{ACCOUNT}/{name}", encoding="utf-8") as handle:
        return handle.read().strip()


NAMESPACE = _read("namespace")
_TLS = ssl.create_default_context(cafile=f"{ACCOUNT}/ca.crt")


def _api(method, path, patch=None):
    """One API request; the object answered, or an OSError (HTTPError included) raised."""
    url = f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}{path}"
    headers = {"Authorization": f"Bearer {_read('token')}"}
    data = None
    if patch is not None:
        data = json.dumps(patch).encode()
        headers["Content-Type"] = "application/merge-patch+json"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    with urllib.request.urlopen(request, context=_TLS, timeout=3) as response:
        return json.loads(response.read() or b"{}")


def _at_least(path, field, wanted, exactly=False):
    """Patch ``spec.<field>`` of ``path`` to ``wanted`` when it is below it (or, ``exactly``, when it differs)."""
    current = int((_api("GET", path).get("spec") or {}).get(field) or 0)
    if current < wanted or (exactly and current != wanted):
        _api("PATCH", path, {"spec": {field: wanted}})
        print(f"admission: {path} {field} {current} -> {wanted}", flush=True)


SCALED_OBJECT_PATH = f"/apis/keda.sh/v1alpha1/namespaces/{NAMESPACE}/scaledobjects/{SCALED_OBJECT}"
SCALE_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{DEPLOYMENT}/scale"


def _awake():
    """Hold the floor and the replicas up; whether both calls went through."""
    try:
        _at_least(SCALED_OBJECT_PATH, "minReplicaCount", AWAKE, exactly=True)
        _state["held"] = True
        _at_least(SCALE_PATH, "replicas", AWAKE)
        return True
    except OSError as error:
        print(f"admission: {error}", flush=True)
        return False


def _holding():
    last = _state["last_wake"]
    return last is not None and time.monotonic() - last < HOLD_SECONDS


def _watch():
    asserted = 0.0
    while True:
        time.sleep(0.5)
        with _lock:
            if _holding():
                if time.monotonic() - asserted >= 2:
                    _awake()
                    asserted = time.monotonic()
            elif _state["held"]:
                try:
                    _at_least(SCALED_OBJECT_PATH, "minReplicaCount", IDLE, exactly=True)
                    _state["held"] = False
                except OSError as error:
                    print(f"admission: release: {error}", flush=True)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.partition("?")[0]
        status = 200
        if path == "/wake":
            with _lock:
                _state["last_wake"] = time.monotonic()
                status = 200 if _awake() else 503
        elif path == "/sleep":
            time.sleep(1)
        elif path != "/health":
            status = 404
        body = b"ok\n" if status == 200 else b"no\n"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        print(f"admission: {format % args}", flush=True)


if __name__ == "__main__":
    if not DEPLOYMENT or not SCALED_OBJECT:
        raise SystemExit("admission: GPU_DEPLOYMENT and SCALEDOBJECT_NAME must be set")
    threading.Thread(target=_watch, name="hold", daemon=True).start()
    print(f"admission: listening on 127.0.0.1:{PORT} for {DEPLOYMENT}", flush=True)
    ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
