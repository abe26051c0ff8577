"""The stand-ins a rehearsal runs where this machine has no real part: Prometheus, the admission sidecar, Triton.

``PrometheusStandIn``
    answers ``GET /api/v1/query`` (what KEDA's Prometheus scaler asks) with one sample of ``value``, which the
    caller sets: the release's load as the metric query would return it. Counts the queries.
``AdmissionStandIn``
    the chart's admission sidecar as the chart documents it (``/wake``, ``/sleep``, ``/health``), acting on the
    local cluster: a wake raises the ScaledObject's ``minReplicaCount`` to 1 and scales the Triton Deployment to
    at least 1, keeps both so every 2 s while the hold (``holdMinReplicasSeconds``) runs from the last wake, and
    then lowers ``minReplicaCount`` back to the stack's own. ``/sleep`` paces the filter's wait (1 s, as the
    chart's). ``/idle`` is the same pause under the name another chart generation uses.
``TritonStandIn``
    a gRPC ``GRPCInferenceService`` (``TritonServicer``, on tritonclient's servicer base) answering ``ServerLive``,
    ``ServerReady``, ``ModelReady`` and ``RepositoryIndex``; it is reached through Envoy only while the rehearsal
    publishes its DNS name, that is while a Triton pod is Ready, as a headless Service's record follows its ready
    pods.

``HttpStandIn`` and ``TritonServicer`` are also the skeletons of the tests' stand-ins (``tests/loopback.py``,
``tests/kube_api_standin.py``).
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc

from supersonic_interlink.engine.cluster import LOOPBACK
from supersonic_interlink.rehearse.loopback import STOP_TIMEOUT_SECONDS

MODEL = "standin"
HOLD_CHECK_SECONDS = 2.0
WATCH_SECONDS = 0.5


def reply(request: http.server.BaseHTTPRequestHandler, status: int, content_type: str, body: bytes) -> None:
    """Answer ``request`` with ``body`` whole (HTTP/1.1, a content-length, the connection kept)."""
    request.send_response(status)
    request.send_header("content-type", content_type)
    request.send_header("content-length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


class HttpStandIn:
    """A threading HTTP/1.1 server on a free loopback port until ``stop``, shared with the tests' stand-ins.

    Each request of ``METHODS`` goes to ``handle``, which by default answers with ``answer(path)`` (the query
    dropped); a stand-in that needs the headers or the body overrides ``handle``.
    """

    METHODS: tuple[str, ...] = ("GET",)

    def __init__(self, name: str) -> None:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def dispatch(self) -> None:
                owner.handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        for method in self.METHODS:
            setattr(Handler, f"do_{method}", Handler.dispatch)
        self._server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )
        self._thread.start()

    def handle(self, request: http.server.BaseHTTPRequestHandler) -> None:
        reply(request, *self.answer(request.path.partition("?")[0]))

    def answer(self, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a request of ``path``."""
        raise NotImplementedError

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(STOP_TIMEOUT_SECONDS)


class PrometheusStandIn(HttpStandIn):
    def __init__(self, value: float = 0.0) -> None:
        self.value = value
        self.queries = 0
        super().__init__("prometheus-standin")

    @property
    def address(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def answer(self, path: str) -> tuple[int, str, bytes]:
        if path != "/api/v1/query":
            return 404, "text/plain", b"not found\n"
        self.queries += 1
        sample = {"metric": {}, "value": [time.time(), repr(float(self.value))]}
        body = {"status": "success", "data": {"resultType": "vector", "result": [sample]}}
        return 200, "application/json", json.dumps(body).encode()


class AdmissionStandIn(HttpStandIn):
    """See the module's docstring. ``scale(replicas)`` and ``set_min(replicas)`` act on the cluster."""

    def __init__(
        self,
        *,
        hold_seconds: float,
        idle_min_replicas: int,
        scale_up: Callable[[], None],
        set_min: Callable[[int], None],
        sleep_seconds: float = 1.0,
    ) -> None:
        self.hold_seconds = hold_seconds
        self.idle_min_replicas = idle_min_replicas
        self.sleep_seconds = sleep_seconds
        self._scale_up = scale_up
        self._set_min = set_min
        self.wakes: list[float] = []
        """Monotonic times of each /wake."""
        self.released: list[float] = []
        """Monotonic times the hold ended and minReplicaCount went back down."""
        self.errors: list[str] = []
        self._held = False
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        super().__init__("admission-standin")
        self._watch = threading.Thread(target=self._watch_loop, name="admission-hold", daemon=True)
        self._watch.start()

    def answer(self, path: str) -> tuple[int, str, bytes]:
        if path == "/wake":
            with self._lock:
                self.wakes.append(time.monotonic())
            self._ensure()
        elif path in ("/sleep", "/idle"):
            time.sleep(self.sleep_seconds)
        elif path != "/health":
            return 404, "text/plain", b"not found\n"
        return 200, "text/plain", b"ok\n"

    def _demand(self) -> bool:
        with self._lock:
            return bool(self.wakes) and time.monotonic() - self.wakes[-1] < self.hold_seconds

    def _ensure(self) -> None:
        try:
            self._set_min(1)
            self._scale_up()
            self._held = True
        except Exception as error:
            self.errors.append(str(error))

    def _watch_loop(self) -> None:
        last = 0.0
        while not self._stopping.wait(WATCH_SECONDS):
            now = time.monotonic()
            if self._demand():
                if now - last >= HOLD_CHECK_SECONDS:
                    self._ensure()
                    last = now
            elif self._held:
                try:
                    self._set_min(self.idle_min_replicas)
                    self._held = False
                    self.released.append(time.monotonic())
                except Exception as error:
                    self.errors.append(str(error))

    def stop(self) -> None:
        self._stopping.set()
        self._watch.join(STOP_TIMEOUT_SECONDS)
        super().stop()


class TritonServicer(service_pb2_grpc.GRPCInferenceServiceServicer):
    """A Triton serving the one model ``MODEL``: ServerLive, ServerReady, ModelReady and RepositoryIndex. Every call
    goes through ``enter(method, context)`` first, which counts it in ``calls``; the tests' stand-in extends it."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def enter(self, method: str, context: Any) -> None:
        self.calls[method] += 1

    def ServerLive(self, request: Any, context: Any) -> Any:
        self.enter("ServerLive", context)
        return service_pb2.ServerLiveResponse(live=True)

    def ServerReady(self, request: Any, context: Any) -> Any:
        self.enter("ServerReady", context)
        return service_pb2.ServerReadyResponse(ready=True)

    def ModelReady(self, request: Any, context: Any) -> Any:
        self.enter("ModelReady", context)
        return service_pb2.ModelReadyResponse(ready=request.name == MODEL)

    def RepositoryIndex(self, request: Any, context: Any) -> Any:
        self.enter("RepositoryIndex", context)
        model = service_pb2.RepositoryIndexResponse.ModelIndex(name=MODEL, version="1", state="READY")
        return service_pb2.RepositoryIndexResponse(models=[model])


class TritonStandIn:
    def __init__(self) -> None:
        servicer = TritonServicer()
        self.calls = servicer.calls
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(servicer, self._server)
        self.port: int = self._server.add_insecure_port(f"{LOOPBACK}:0")
        self._server.start()

    def stop(self) -> None:
        self._server.stop(grace=None).wait(STOP_TIMEOUT_SECONDS)
