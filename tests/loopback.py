"""The deployed Envoy configuration, run by the real Envoy on loopback against scriptable stand-ins for Triton and the
admission sidecar, and a DNS that publishes a Triton's name while it is up (the Lua filter's healthy-host signal).
Everything binds 127.0.0.1, every wait is bounded, every context stops what it started."""

from __future__ import annotations

import contextlib
import json
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import tritonclient.grpc as triton_grpc
from tritonclient.grpc import service_pb2

from supersonic_interlink.config import PROJECT, Settings, deep_merge, load_settings
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.cluster import free_port, wait_until
from supersonic_interlink.rehearse.loopback import (
    MODEL,
    DnsStandIn,
    EnvoyProcess,
    HttpStandIn,
    TritonServicer,
    envoy_running,
)

ROOT = Path(__file__).resolve().parent.parent

# The chart's scale-from-zero Lua filter as the protocol the chart documents, for either generation.
STANDIN_LUA = ROOT / "tests" / "fixtures" / "wake-filter.lua"

# A chart of the triton generation (the tests' own); the stacks' own unpinned charts are of the newest.
OLDER_GENERATION_CHART = {"path": str(ROOT / "tests" / "charts" / "conforming")}


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
    """The stack's settings with sub-keys of ``scaleFromZero`` and ``envoy`` changed and ``release.chart`` replaced."""
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
    return triton_grpc.InferenceServerClient(url=target)


def infer(client, size_bytes: int = 16, timeout: float | None = 10.0):
    """One ModelInfer of ``size_bytes`` bytes of input to the stand-in model; returns the bytes Triton saw."""
    data = np.zeros(size_bytes, dtype=np.uint8)
    tensor = triton_grpc.InferInput("INPUT0", [size_bytes], "UINT8")
    tensor.set_data_from_numpy(data)
    result = client.infer(MODEL, [tensor], client_timeout=timeout)
    return int(result.as_numpy("RECEIVED_BYTES")[0])


class _Servicer(TritonServicer):
    """The package's stand-in Triton with metadata and ModelInfer, its calls counted and scripted by the owner."""

    def __init__(self, owner: TritonStandIn):
        super().__init__()
        self.owner = owner

    def enter(self, method: str, context) -> None:
        with self.owner._lock:
            self.owner.calls[method] += 1
            failures = self.owner._failures if method == "ModelInfer" else []
            failure = failures.pop(0) if failures else None
        if failure is not None:
            context.abort(failure, f"stand-in Triton scripted failure ({failure.name})")

    def ServerMetadata(self, request, context):
        self.enter("ServerMetadata", context)
        return service_pb2.ServerMetadataResponse(name="triton-standin", version="0")

    def ModelMetadata(self, request, context):
        self.enter("ModelMetadata", context)
        tensor = service_pb2.ModelMetadataResponse.TensorMetadata
        inputs = [tensor(name="INPUT0", datatype="UINT8", shape=[-1])]
        outputs = [tensor(name="RECEIVED_BYTES", datatype="INT64", shape=[1])]
        return service_pb2.ModelMetadataResponse(name=MODEL, versions=["1"], inputs=inputs, outputs=outputs)

    def ModelInfer(self, request, context):
        size = sum(len(raw) for raw in request.raw_input_contents)
        with self.owner._lock:
            self.owner.infer_sizes.append(size)
        self.enter("ModelInfer", context)
        time.sleep(self.owner.infer_delay_seconds)
        output = service_pb2.ModelInferResponse.InferOutputTensor(name="RECEIVED_BYTES", datatype="INT64", shape=[1])
        raw = [struct.pack("<q", size)]
        return service_pb2.ModelInferResponse(
            model_name=MODEL, model_version="1", id=request.id, outputs=[output], raw_output_contents=raw
        )


class TritonStandIn:
    """A scriptable stand-in Triton on ``port``, in ``dns`` under ``hostname`` while it is up."""

    def __init__(self, *, dns: DnsStandIn, hostname: str):
        self.port: int = free_port()
        self.dns, self.hostname = dns, hostname
        self.infer_delay_seconds: float = 0.0
        self.infer_sizes: list[int] = []
        self._failures: list[grpc.StatusCode] = []
        self._lock = threading.Lock()
        self._servicer = _Servicer(self)
        self.calls = self._servicer.calls
        self._server: grpc.Server | None = None

    def come_up(self) -> None:
        """Start serving, then publish the DNS record (a pod becomes ready after its server is listening)."""
        if self._server is None:
            self._server, _ = self._servicer.serve(self.port, options=MESSAGE_LIMITS)
        self.dns.publish(self.hostname)

    def go_down(self) -> None:
        """Unpublish the DNS record, then stop serving (a scale-down: the pod leaves the Service first)."""
        self.dns.unpublish(self.hostname)
        self.crash()

    def crash(self) -> None:
        """Stop serving at once, connections cut, but stay in DNS (readiness has not noticed yet)."""
        server, self._server = self._server, None
        if server is not None:
            server.stop(grace=None).wait(5)

    def fail_next(self, count: int, status: grpc.StatusCode) -> None:
        """Fail the next ``count`` ModelInfer calls with a gRPC ``status``."""
        with self._lock:
            self._failures.extend([status] * count)

    def reset_counts(self) -> None:
        with self._lock:
            self.calls.clear()
            self.infer_sizes.clear()


# Above Envoy's 32 MiB buffer, so Envoy is what refuses; and no port reuse, so a stale server cannot answer.
MESSAGE_LIMITS = [
    ("grpc.max_receive_message_length", 64 << 20),
    ("grpc.max_send_message_length", 64 << 20),
    ("grpc.so_reuseport", 0),
]


class AdmissionStandIn(HttpStandIn):
    """The chart's admission sidecar: ``/wake`` (counted, runs ``on_wake`` in a thread), ``/sleep``, ``/health``."""

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


@dataclass
class LoopbackStack:
    envoy: EnvoyProcess
    tritons: list[TritonStandIn]
    admission: AdmissionStandIn
    dns: DnsStandIn
    settings: Settings

    @property
    def triton(self) -> TritonStandIn:
        return self.tritons[0]


@contextlib.contextmanager
def loopback_stack(
    settings: Settings,
    *,
    tritons: int = 1,
    ready: bool = True,
    wake_delay_seconds: float | None = None,
    sleep_seconds: float = 0.05,
    config: Mapping[str, Any] | None = None,
    lua: str | None = None,
) -> Iterator[LoopbackStack]:
    """Envoy plus ``tritons`` stand-in Tritons (up, and resolved by Envoy, when ``ready``), the admission sidecar and
    DNS; the first Triton is the Service's FQDN, the others pod names under it. ``lua``: default ``standin_lua``'s."""
    with contextlib.ExitStack() as stack:
        dns = stack.enter_context(DnsStandIn())
        service = settings.generation.inference_service_fqdn(settings.release.name, settings.namespace)
        names = [service] + [f"pod-{i}.{service}" for i in range(1, tritons)]
        standins = [TritonStandIn(dns=dns, hostname=name) for name in names]
        for triton in standins:
            stack.callback(triton.crash)
            if ready:
                triton.come_up()
        closing = threading.Event()

        def wake() -> None:
            if not closing.wait(wake_delay_seconds or 0.0):
                for triton in standins:
                    triton.come_up()

        admission = AdmissionStandIn(
            on_wake=wake if wake_delay_seconds is not None else None, sleep_seconds=sleep_seconds
        )
        stack.callback(admission.stop)
        envoy = stack.enter_context(
            envoy_running(
                settings,
                tritons=[(t.hostname, t.port) for t in standins],
                admission_port=admission.port,
                dns_port=dns.port,
                lua=standin_lua(settings) if lua is None else lua,
                config=config,
            )
        )
        # Registered last, so it runs first on exit: a pending wake must not start a server after teardown.
        stack.callback(closing.set)
        if ready:
            name = f"cluster.{settings.generation.inference_cluster}.membership_healthy"
            wait_until(lambda: envoy.stat(name) == tritons, 5.0, f"{name} == {tritons}", interval=0.02)
        yield LoopbackStack(envoy, standins, admission, dns, settings)
