"""Stand-ins where this machine has no real part: Prometheus (what KEDA's scaler asks) and Triton (reached only
while a Triton pod is Ready); ``tests/loopback.py`` extends both skeletons."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections import Counter
from concurrent import futures
from typing import Any

import grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc

from supersonic_interlink.engine.cluster import LOOPBACK
from supersonic_interlink.rehearse.loopback import STOP_TIMEOUT_SECONDS

MODEL = "standin"


class HttpStandIn:
    """A threading HTTP/1.1 server on a free loopback port until ``stop``; ``answer(path)`` answers each GET."""

    def __init__(self, name: str) -> None:
        answer = self.answer

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                status, content_type, body = answer(self.path.partition("?")[0])
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        serve = {"poll_interval": 0.05}
        threading.Thread(target=self._server.serve_forever, kwargs=serve, name=name, daemon=True).start()

    def answer(self, path: str) -> tuple[int, str, bytes]:
        raise NotImplementedError

    def stop(self) -> None:
        self._server.shutdown()  # returns once serve_forever has
        self._server.server_close()


class PrometheusStandIn(HttpStandIn):
    """Every GET (KEDA asks ``/api/v1/query``) answered with one sample of ``value``, the release's load; counted."""

    def __init__(self, value: float = 0.0) -> None:
        self.value, self.queries = value, 0
        super().__init__("prometheus-standin")

    def answer(self, path: str) -> tuple[int, str, bytes]:
        self.queries += 1
        sample = {"metric": {}, "value": [time.time(), repr(float(self.value))]}
        body = {"status": "success", "data": {"resultType": "vector", "result": [sample]}}
        return 200, "application/json", json.dumps(body).encode()


class TritonServicer(service_pb2_grpc.GRPCInferenceServiceServicer):
    """A Triton serving the one model ``MODEL``; every call goes through ``enter(method, context)``, which counts it."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def enter(self, method: str, context: Any) -> None:
        self.calls[method] += 1

    def ServerReady(self, request: Any, context: Any) -> Any:
        self.enter("ServerReady", context)
        return service_pb2.ServerReadyResponse(ready=True)

    def RepositoryIndex(self, request: Any, context: Any) -> Any:
        self.enter("RepositoryIndex", context)
        model = service_pb2.RepositoryIndexResponse.ModelIndex(name=MODEL, version="1", state="READY")
        return service_pb2.RepositoryIndexResponse(models=[model])


class TritonStandIn:
    """``servicer`` served by gRPC on loopback at ``port`` (0: a free one) until ``stop``."""

    def __init__(self, servicer: TritonServicer | None = None, port: int = 0, options: list[Any] | None = None) -> None:
        self.servicer = servicer or TritonServicer()
        self.calls = self.servicer.calls
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=64), options=options)
        service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(self.servicer, self._server)
        self.port: int = self._server.add_insecure_port(f"{LOOPBACK}:{port}")
        if port and self.port != port:
            raise OSError(f"stand-in Triton could not bind {LOOPBACK}:{port}")
        self._server.start()

    def stop(self) -> None:
        self._server.stop(grace=None).wait(STOP_TIMEOUT_SECONDS)
