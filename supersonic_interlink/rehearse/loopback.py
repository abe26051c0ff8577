"""The real Envoy on loopback with the program's computed configuration, and stand-ins for DNS (dnslib's server),
Prometheus and Triton; ``tests/loopback.py`` extends them."""

from __future__ import annotations

import contextlib
import copy
import http.server
import json
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent import futures
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import grpc
from dnslib import QTYPE, RR, A
from dnslib.server import DNSLogger, DNSServer
from tritonclient.grpc import service_pb2, service_pb2_grpc

from supersonic_interlink.config import Settings
from supersonic_interlink.config.envoy import build_envoy_config
from supersonic_interlink.contract import CHART, Generation
from supersonic_interlink.engine.cluster import LOOPBACK, free_port, start_process, stop_process, wait_until
from supersonic_interlink.render.checks import envoy_binary

START_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0


def answers(url: str) -> bool:
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as response:
        return bool(response.status == 200)
    return False


class DnsStandIn:
    """dnslib's server: A records with TTL 0 for the names published, NODATA for the rest, as cluster DNS answers for a
    headless Service whose pods are not ready."""

    def __init__(self) -> None:
        self._records: set[str] = set()
        self._server = DNSServer(self, address=LOOPBACK, port=0, logger=DNSLogger(logf=lambda _line: None))
        self.port: int = self._server.server.server_address[1]
        serve = self._server.server.serve_forever
        self._thread = threading.Thread(target=serve, kwargs={"poll_interval": 0.05}, name="dns-standin", daemon=True)
        self._thread.start()

    def publish(self, name: str) -> None:
        self._records.add(name.rstrip(".").lower())

    def unpublish(self, name: str) -> None:
        self._records.discard(name.rstrip(".").lower())

    def resolve(self, request: Any, handler: Any) -> Any:
        reply = request.reply()
        if str(request.q.qname).rstrip(".").lower() in self._records and request.q.qtype == QTYPE.A:
            reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(LOOPBACK), ttl=0))
        return reply

    def __enter__(self) -> DnsStandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.server.shutdown()
        self._server.server.server_close()
        self._thread.join(STOP_TIMEOUT_SECONDS)


def loopback_config(
    config: Mapping[str, Any],
    generation: Generation,
    ports: Mapping[str, int],
    tritons: list[tuple[str, int]],
    work: Path,
) -> dict[str, Any]:
    """The deployed configuration with only its surroundings changed (addresses, ``ports``, Triton endpoints, the DNS
    resolver, files in ``work``); each rewrite finds its target or raises, so a moved shape fails here."""
    rewritten = copy.deepcopy(dict(config))
    admin = rewritten["admin"]
    admin["address"]["socket_address"].update(address=LOOPBACK, port_value=ports["admin"])
    for log in admin["access_log"]:
        log["typed_config"]["path"] = str(work / "admin_access.log")
    (listener,) = rewritten["static_resources"]["listeners"]
    listener["address"]["socket_address"].update(address=LOOPBACK, port_value=ports["grpc"])
    (hcm,) = [f["typed_config"] for chain in listener["filter_chains"] for f in chain["filters"]]
    (lua,) = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.lua"]
    lua["typed_config"]["default_source_code"]["filename"] = str(work / "envoy-filter.lua")
    clusters = {c["name"]: c for c in rewritten["static_resources"]["clusters"]}
    inference = clusters[generation.inference_cluster]
    endpoints = [{"endpoint": {"address": {"socket_address": {"address": h, "port_value": p}}}} for h, p in tritons]
    inference["load_assignment"]["endpoints"] = [{"lb_endpoints": endpoints}]
    inference["typed_dns_resolver_config"] = {
        "name": "envoy.network.dns_resolver.cares",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig",
            "resolvers": [{"socket_address": {"address": LOOPBACK, "port_value": ports["dns"]}}],
            "dns_resolver_options": {"no_default_search_domain": True},
        },
    }
    for name, port in ((generation.admission_cluster, ports["admission"]), (CHART.admin_cluster, ports["admin"])):
        (group,) = clusters[name]["load_assignment"]["endpoints"]
        (endpoint,) = group["lb_endpoints"]
        endpoint["endpoint"]["address"]["socket_address"].update(address=LOOPBACK, port_value=port)
    return rewritten


@dataclass
class EnvoyProcess:
    grpc_port: int
    admin_port: int

    @property
    def target(self) -> str:
        return f"{LOOPBACK}:{self.grpc_port}"

    def admin(self, path: str) -> str:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.admin_port}{path}", timeout=2) as response:
            return response.read().decode()

    def stat(self, name: str) -> int:
        return int(self.admin(f"/stats?filter=^{name.replace('.', '[.]')}$").partition(": ")[2])


@contextlib.contextmanager
def envoy_running(
    settings: Settings,
    *,
    tritons: list[tuple[str, int]],
    admission_port: int,
    dns_port: int,
    lua: str,
    config: Mapping[str, Any] | None = None,
) -> Iterator[EnvoyProcess]:
    """Envoy with ``build_envoy_config(settings)`` (or ``config``) rewritten for loopback, running ``lua``."""
    with tempfile.TemporaryDirectory(prefix="envoy-loopback-", ignore_cleanup_errors=True) as name:
        work = Path(name)
        (work / "envoy-filter.lua").write_text(lua)
        ports = {"grpc": free_port(), "admin": free_port(), "admission": admission_port, "dns": dns_port}
        deployed = build_envoy_config(settings) if config is None else config
        rewritten = loopback_config(deployed, settings.generation, ports, tritons, work)
        (work / "envoy.json").write_text(json.dumps(rewritten, indent=1))
        argv = [envoy_binary(), "-c", str(work / "envoy.json"), "--disable-hot-restart", "--concurrency", "2"]
        log_file = work / "envoy.log"
        process = start_process(argv, log_file)
        try:
            ready = partial(answers, f"http://{LOOPBACK}:{ports['admin']}/ready")  # 200 once LIVE
            wait_until(ready, START_TIMEOUT_SECONDS, "Envoy to report LIVE", log_file=log_file, process=process)
            yield EnvoyProcess(ports["grpc"], ports["admin"])
        finally:
            stop_process(process, STOP_TIMEOUT_SECONDS)


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

        self._server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)  # daemon threads by default
        self.port: int = self._server.server_address[1]
        threading.Thread(target=partial(self._server.serve_forever, 0.05), name=name, daemon=True).start()

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

    def serve(self, port: int = 0, options: list[Any] | None = None) -> tuple[grpc.Server, int]:
        """Served by gRPC on loopback at ``port`` (0: a free one): the started server and its port."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=64), options=options)
        service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(self, server)
        port = server.add_insecure_port(f"{LOOPBACK}:{port}")
        server.start()
        return server, port

    def enter(self, method: str, context: Any) -> None:
        self.calls[method] += 1

    def ServerReady(self, request: Any, context: Any) -> Any:
        self.enter("ServerReady", context)
        return service_pb2.ServerReadyResponse(ready=True)

    def RepositoryIndex(self, request: Any, context: Any) -> Any:
        self.enter("RepositoryIndex", context)
        model = service_pb2.RepositoryIndexResponse.ModelIndex(name=MODEL, version="1", state="READY")
        return service_pb2.RepositoryIndexResponse(models=[model])
