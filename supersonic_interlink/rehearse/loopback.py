"""The real Envoy on loopback with the program's computed configuration, and the DNS stand-in it resolves Triton by;
shared with the tests (``tests/loopback.py``). Everything binds 127.0.0.1 on a free port and stops what it started.

The DNS stand-in (dnslib's server) answers A queries for the names published and NODATA for the rest, as cluster DNS
does for a headless Service whose pods are not ready: so ``membership_healthy`` follows Triton as in the cluster.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import subprocess
import tempfile
import threading
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnslib import QTYPE, RR, A
from dnslib.server import DNSLogger, DNSServer

from supersonic_interlink.config import Settings
from supersonic_interlink.config.envoy import build_envoy_config
from supersonic_interlink.contract import CHART, Generation
from supersonic_interlink.engine.cluster import LOOPBACK, free_port, start_process, stop_process, wait_until
from supersonic_interlink.render.checks import envoy_binary

START_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0


def answers(url: str) -> bool:
    """Whether ``url`` answers 200 now: a process's health or readiness endpoint, for ``wait_until``."""
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as response:
        return bool(response.status == 200)
    return False


class DnsStandIn:
    """``publish(name)`` / ``unpublish(name)``; answers with TTL 0, so Envoy's next refresh sees the change."""

    def __init__(self) -> None:
        self._records: set[str] = set()
        self._server = DNSServer(self, address=LOOPBACK, port=0, logger=DNSLogger(logf=lambda _line: None))
        self.port: int = self._server.server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.server.serve_forever, kwargs={"poll_interval": 0.05}, name="dns-standin", daemon=True
        )
        self._thread.start()

    def publish(self, name: str) -> None:
        self._records.add(name.rstrip(".").lower())

    def unpublish(self, name: str) -> None:
        self._records.discard(name.rstrip(".").lower())

    def resolve(self, request: Any, handler: Any) -> Any:
        """dnslib's resolver interface: the reply to one query (every published name is at 127.0.0.1)."""
        reply = request.reply()
        if str(request.q.qname).rstrip(".").lower() in self._records and request.q.qtype == QTYPE.A:
            reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(LOOPBACK), ttl=0))
        return reply

    def stop(self) -> None:
        self._server.server.shutdown()
        self._server.server.server_close()
        self._thread.join(STOP_TIMEOUT_SECONDS)


@contextlib.contextmanager
def dns_standin() -> Iterator[DnsStandIn]:
    server = DnsStandIn()
    try:
        yield server
    finally:
        server.stop()


def loopback_config(
    config: Mapping[str, Any],
    *,
    generation: Generation,
    ports: Mapping[str, int],
    tritons: list[tuple[str, int]],
    lua_path: str,
    admin_access_log: str,
) -> dict[str, Any]:
    """The deployed configuration with only its surroundings changed: loopback addresses and the free ``ports``
    (``grpc``, ``admin``, ``admission``, ``dns``), the Triton endpoints (one per ``(hostname, port)``), the DNS
    cluster's resolver, the Lua path, the admin log. Each rewrite finds its target or raises, so a config whose shape
    moved fails here instead of testing less."""
    rewritten = copy.deepcopy(dict(config))
    admin = rewritten["admin"]
    admin["address"]["socket_address"].update(address=LOOPBACK, port_value=ports["admin"])
    for log in admin["access_log"]:
        log["typed_config"]["path"] = admin_access_log
    (listener,) = rewritten["static_resources"]["listeners"]
    listener["address"]["socket_address"].update(address=LOOPBACK, port_value=ports["grpc"])
    (hcm,) = [f["typed_config"] for chain in listener["filter_chains"] for f in chain["filters"]]
    (lua,) = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.lua"]
    lua["typed_config"]["default_source_code"]["filename"] = lua_path
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
    process: subprocess.Popen[bytes]
    grpc_port: int
    admin_port: int

    @property
    def target(self) -> str:
        return f"{LOOPBACK}:{self.grpc_port}"

    def admin(self, path: str, timeout: float = 2.0) -> str:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.admin_port}{path}", timeout=timeout) as response:
            return response.read().decode()

    def stat(self, name: str) -> int:
        """One counter or gauge by its full name; 0 when Envoy has not created it yet."""
        for line in self.admin(f"/stats?filter=^{name.replace('.', '[.]')}$").splitlines():
            found, _, value = line.partition(": ")
            if found == name and value.strip().lstrip("-").isdigit():
                return int(value)
        return 0


@contextlib.contextmanager
def envoy_running(
    settings: Settings,
    *,
    tritons: list[tuple[str, int]],
    admission_port: int,
    dns_port: int,
    lua: str,
    config: Mapping[str, Any] | None = None,
    concurrency: int = 2,
) -> Iterator[EnvoyProcess]:
    """Envoy with ``build_envoy_config(settings)`` (or ``config``) rewritten for loopback, running the Lua filter
    ``lua``; ``tritons`` are resolved through the DNS stand-in on ``dns_port``."""
    workdir = Path(tempfile.mkdtemp(prefix="envoy-loopback-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        (workdir / "envoy-filter.lua").write_text(lua)
        ports = {"grpc": free_port(), "admin": free_port(), "admission": admission_port, "dns": dns_port}
        rewritten = loopback_config(
            build_envoy_config(settings) if config is None else config,
            generation=settings.generation,
            ports=ports,
            tritons=tritons,
            lua_path=str(workdir / "envoy-filter.lua"),
            admin_access_log=str(workdir / "admin_access.log"),
        )
        (workdir / "envoy.json").write_text(json.dumps(rewritten, indent=1))
        argv = [envoy_binary(), "-c", str(workdir / "envoy.json"), "--disable-hot-restart", "--log-level", "warn"]
        log_file = workdir / "envoy.log"
        process = start_process([*argv, "--concurrency", str(concurrency)], log_file)
        ready = f"http://{LOOPBACK}:{ports['admin']}/ready"  # 200 once LIVE
        wait_until(
            lambda: answers(ready), START_TIMEOUT_SECONDS, "Envoy to report LIVE", log_file=log_file, process=process
        )
        yield EnvoyProcess(process, ports["grpc"], ports["admin"])
    finally:
        if process is not None:
            stop_process(process, STOP_TIMEOUT_SECONDS)
        shutil.rmtree(workdir, ignore_errors=True)
