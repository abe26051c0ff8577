"""Probe records for the history and report tests, made by the probe's own ``ProbeResult.record``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from supersonic_interlink import contract
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake import probe as wake_probe

T0 = 1_780_000_000.0  # 2026-05-28T20:26:40Z: when the made-up histories start
HOUR = 3600.0


def probe_record(
    stack: str = "hammer",
    *,
    at: float = T0,
    outcome: str = wake_probe.READY,
    wake: float | None = 400.0,
    elapsed: float | None = None,
    cold: bool | None = True,
    ready_timeout: int = 900,
    grpc_status: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A record exactly as the probe writes it, started at epoch ``at``; ``fields`` override record keys."""
    answered, took = outcome in (wake_probe.READY, wake_probe.NOT_READY), (wake or 0.0) if elapsed is None else elapsed
    result = wake_probe.ProbeResult(
        stack, "127.0.0.1:8001", outcome, at, at + took, ready_timeout + 120, ready_timeout, took
    )
    result.cold, result.grpc_status, result.wake_seconds = cold, grpc_status, wake if answered else None
    result.start_check = {True: "UNAVAILABLE: no healthy upstream", False: "ServerReady true", None: None}[cold]
    if answered:
        result.server_ready = outcome == wake_probe.READY
        result.models = [{"name": "m", "version": "1", "state": "READY"}]
    record = result.record()
    if cold is None:
        del record["cold"], record["start_check"]  # as a probe wrote them before it told cold from warm
    return {**record, **fields}


def cold_wake(seconds: float, stack: str = "hammer", **fields: Any) -> dict[str, Any]:
    return probe_record(stack, wake=seconds, **fields)


def warm_answer(stack: str = "hammer", **fields: Any) -> dict[str, Any]:
    return probe_record(stack, wake=0.02, cold=False, **fields)


def cut_off_wake(elapsed: float, *, ready_timeout: int = 900) -> dict[str, Any]:
    """A cold wake the newest chart's Lua filter gave up on after about readyTimeoutSeconds."""
    status = contract.NEWEST.wake_timeout_status
    return probe_record(
        outcome=wake_probe.REJECTED, wake=None, elapsed=elapsed, ready_timeout=ready_timeout, grpc_status=status
    )


def write_history(path: Path, records: Iterable[dict[str, Any] | bytes]) -> Path:
    """Write records (dicts as probe lines, bytes as they are) in order, one hour apart unless ``at`` is given."""
    chunks, at = list[bytes](), wake_probe.utc_timestamp
    for index, record in enumerate(records):
        if isinstance(record, dict) and record["started_at"] == at(T0):
            chunks.append(wake_history.encode_line(record | {"started_at": at(T0 + index * HOUR)}))
        else:
            chunks.append(record if isinstance(record, bytes) else wake_history.encode_line(record))
    path.write_bytes(b"".join(chunks))
    return path


# A writer process: after the go file appears, appends COUNT numbered records of about 9 KiB (past PIPE_BUF, 4 KiB, so
# no pipe-like atomicity keeps them whole), by ``wake_history.append`` or, not careful, in two writes without a lock.
WRITER = """
import os, sys, time
sys.path.insert(0, {root!r})
from supersonic_interlink.wake import history as wake_history
path, name, count, go, careful = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
while not os.path.exists(go):
    time.sleep(0.001)
models = [{{"name": "model-%03d" % i, "version": "1", "state": "READY"}} for i in range(180)]
for seq in range(count):
    record = {{"kind": "probe", "writer": name, "seq": seq, "models": models}}
    if careful:
        wake_history.append(path, record)
    else:
        line = wake_history.encode_line(record)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, line[: len(line) // 2])
        os.write(fd, line[len(line) // 2 :])
        os.close(fd)
"""


def start_writers(path: Path, count: int, go: Path, *, careful: bool = True) -> list[subprocess.Popen[bytes]]:
    """Writers ``a`` and ``b``, each to append ``count`` records to ``path`` once ``go`` exists."""
    script = WRITER.format(root=str(Path(__file__).resolve().parent.parent))
    argv = [sys.executable, "-c", script, str(path)]
    return [subprocess.Popen([*argv, name, str(count), str(go), str(int(careful))]) for name in ("a", "b")]
