"""``./supersonic probe``: a client session through Envoy as CMSSW starts one (tritonclient), and how it went.

``ServerReady`` (passed through by the chart's Lua filter) tells cold from warm; ``RepositoryIndex`` wakes Triton.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import queue
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, TextIO

import grpc

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.envoy import repository_index_idle_timeout_seconds
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.contract import CHART, TRITON, WAKE_TIMEOUT_STATUSES
from supersonic_interlink.wake import history
from supersonic_interlink.wake.history import DEADLINE_EXCEEDED, EXIT_CODES, NOT_READY, READY, REJECTED, UNREACHABLE

EXIT_RECORD_FAILED, EXIT_INTERRUPTED = 7, 130
LUA_CLOCK_SECONDS = 1
"""The Lua filter counts whole seconds (``os.time``): it gives up up to a second before readyTimeoutSeconds."""
DEFAULT_CONNECT_TIMEOUT, DEFAULT_PROGRESS_EVERY, DEFAULT_INTERVAL = 10.0, 30.0, 60.0
SERVER_READY_TIMEOUT = 30.0  # the ServerReady after an answer goes to a woken Triton


def lua_gave_up(status: str | None, elapsed_seconds: float, ready_timeout_seconds: int | None) -> bool:
    """Whether a rejected RepositoryIndex is the Lua filter giving up at ``readyTimeoutSeconds`` (CANCELLED, or
    UNAVAILABLE from the ``inferenceServer`` generation on). Envoy answers UNAVAILABLE too when it reaches no Triton,
    so that counts only when the timeout is known and reached."""
    if status not in WAKE_TIMEOUT_STATUSES:
        return False
    if ready_timeout_seconds is None:
        return status == TRITON.wake_timeout_status
    return elapsed_seconds >= ready_timeout_seconds - LUA_CLOCK_SECONDS


probe_deadline_seconds = repository_index_idle_timeout_seconds  # past the route's idle_timeout Envoy closes the stream


def parse_endpoint(text: str) -> str:
    """Check ``HOST:PORT`` (``[v6]:PORT`` for IPv6) and return it unchanged."""
    # ASCII digits only: int() also takes other scripts' digits
    found = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):([0-9]{1,5})", text, re.ASCII)
    if not found or not 1 <= int(found[2]) <= 65535:
        raise ValueError(
            f"--endpoint {text!r}: expected HOST:PORT, a port from 1 to 65535, e.g. 127.0.0.1:8001 or [::1]:8001"
        )
    return text


def classify_failure(status: str, answered: bool | None) -> str:
    """``answered``: whether any response metadata arrived. gRPC reports a lost connection as UNAVAILABLE, as Envoy
    answers when it reaches no upstream; only Envoy's carries metadata (``server``, ``date``)."""
    if status == "DEADLINE_EXCEEDED":
        return DEADLINE_EXCEEDED
    return UNREACHABLE if status == "UNAVAILABLE" and answered is False else REJECTED


def utc_timestamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m{whole % 60:02d}s"


@dataclass
class ProbeResult:
    """One probe. ``elapsed_seconds``: RepositoryIndex sent to answered or failed; ``cold``: no Triton answered
    ServerReady before it (None: never reached)."""

    stack: str
    endpoint: str
    outcome: str
    started: float
    finished: float
    deadline_seconds: float
    ready_timeout_seconds: int | None
    elapsed_seconds: float
    wake_seconds: float | None = None
    cold: bool | None = None
    start_check: str | None = None
    grpc_status: str | None = None
    detail: str = ""
    server_ready: bool | None = None
    models: list[dict[str, str]] | None = None

    def record(self) -> dict[str, Any]:
        """The ``--json`` object: every field, ``null`` where the outcome has no value."""
        fields = {"kind": "probe"} | asdict(self) | {"exit_code": EXIT_CODES[self.outcome]}
        fields |= {f"{key}_at": utc_timestamp(fields.pop(key)) for key in ("started", "finished")}
        fields |= {key: round(fields[key], 3) for key in ("wake_seconds", "elapsed_seconds") if fields[key] is not None}
        return fields | {"model_count": None if self.models is None else len(self.models)}


def describe(result: ProbeResult) -> str:
    start = {True: ", cold", False: ", warm", None: ""}[result.cold]
    line = f"{result.outcome}: {result.endpoint} (stack {result.stack}{start}): "
    if result.wake_seconds is not None:
        names = ", ".join(m["name"] for m in result.models or []) or "none"
        line += f"RepositoryIndex answered after {result.wake_seconds:.1f}s, ServerReady "
        line += f"{str(result.server_ready).lower()}, {len(result.models or [])} model(s): {names}; "
    elif result.outcome == REJECTED:
        gave_up = lua_gave_up(result.grpc_status, result.elapsed_seconds, result.ready_timeout_seconds)
        line += f"grpc-status {result.grpc_status} after {result.elapsed_seconds:.1f}s"
        line += " (the Lua filter found no healthy Triton within readyTimeoutSeconds): " if gave_up else ": "
    elif result.outcome == DEADLINE_EXCEEDED:
        line += f"no answer within the {clock(result.deadline_seconds)} deadline: "
    return (line + result.detail).rstrip(":; ")


def connects(endpoint: str, timeout: float) -> bool:
    """Whether a gRPC connection comes up: READY needs the server's HTTP/2 settings, so a port that accepts TCP and
    says nothing (a dead port-forward) never gets there; False after ``timeout`` without a change of state."""
    states = queue.SimpleQueue[grpc.ChannelConnectivity]()
    with grpc.insecure_channel(endpoint) as channel, contextlib.suppress(queue.Empty):
        channel.subscribe(states.put, try_to_connect=True)
        state = states.get(timeout=timeout)
        while state not in (grpc.ChannelConnectivity.READY, grpc.ChannelConnectivity.TRANSIENT_FAILURE):
            state = states.get(timeout=timeout)
        return state == grpc.ChannelConnectivity.READY
    return False


def _failure(error: Any) -> tuple[str, bool | None]:
    """A tritonclient error's gRPC status name and whether the server sent response metadata (tritonclient re-raises
    the grpc.RpcError ``from None``: it is the ``__context__``)."""
    call, answered = error.__context__, None
    with contextlib.suppress(Exception):
        answered = bool(tuple(call.initial_metadata() or ()) or tuple(call.trailing_metadata() or ()))
    return (error.status() or "UNKNOWN").rsplit(".", 1)[-1], answered if isinstance(call, grpc.Call) else None


def _wait_for(call: Callable[[], Any], progress: TextIO | None, every: float, waiting: str) -> tuple[Any, Any, float]:
    """Run ``call`` (which carries its gRPC deadline) in a daemon thread, so Ctrl-C need not wait; every ``every``
    seconds, ``waiting`` filled with the time waited goes to ``progress``. (result, error, seconds)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = call()
        except Exception as error:
            box["error"] = error

    worker, begin = threading.Thread(target=work, name="probe-call", daemon=True), time.monotonic()
    worker.start()
    worker.join(every if progress else None)
    while progress is not None and worker.is_alive():
        print(waiting.format(clock(time.monotonic() - begin)), file=progress, flush=True)
        worker.join(every)
    return box.get("result"), box.get("error"), time.monotonic() - begin


def probe_once(
    endpoint: str,
    deadline: float,
    *,
    stack: str,
    ready_timeout: int | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    progress: TextIO | None = None,
    progress_every: float = DEFAULT_PROGRESS_EVERY,
) -> ProbeResult:
    """One session; ``progress`` (stderr) gets a line every ``progress_every`` seconds while the call waits."""
    # lazy: `--help` and config errors answer without loading the gRPC client stack
    import tritonclient.grpc as triton_grpc
    from tritonclient.utils import InferenceServerException

    started, found = time.time(), dict[str, Any]()

    def result(outcome: str, elapsed: float = 0.0) -> ProbeResult:
        return ProbeResult(stack, endpoint, outcome, started, time.time(), deadline, ready_timeout, elapsed, **found)

    client = triton_grpc.InferenceServerClient(endpoint)  # as a CMSSW session creates it: default channel options
    try:
        # an answer comes from a Triton Envoy already routes to (warm); Envoy's own refusal: the call is a wake
        try:
            ready = client.is_server_ready(client_timeout=connect_timeout)
            found |= {"cold": False, "start_check": f"ServerReady {str(ready).lower()}"}
        except InferenceServerException as error:
            status, answered = _failure(error)
            # no response, and no connection (an Envoy holding the call has one): nothing speaks gRPC there
            if classify_failure(status, answered) != REJECTED and not connects(endpoint, connect_timeout):
                found["detail"] = f"no gRPC connection within {connect_timeout:g}s: {error.message()}"
                return result(UNREACHABLE)
            found |= {"cold": True, "start_check": f"{status}: {error.message() or ''}".rstrip(": ")}
        call = partial(client.get_model_repository_index, client_timeout=deadline)
        waiting = f"probe {stack} {endpoint}: still waiting, {{}} of {clock(deadline)}"
        response, failure, elapsed = _wait_for(call, progress, progress_every, waiting)
        if failure is not None:
            status, answered = _failure(failure)
            outcome = classify_failure(status, answered)
            lost = "connection lost before any response: " if outcome == UNREACHABLE else ""
            found |= {"grpc_status": status, "detail": lost + (failure.message() or "")}
            return result(outcome, elapsed)
        found["models"] = [{"name": m.name, "version": m.version, "state": m.state} for m in response.models]
        found["wake_seconds"] = elapsed
        try:
            ready = bool(client.is_server_ready(client_timeout=min(SERVER_READY_TIMEOUT, max(deadline - elapsed, 1))))
            found["detail"] = "" if ready else "ServerReady false: a model failed to load, or Triton is stopping"
        except InferenceServerException as error:
            ready = False
            found |= {"grpc_status": _failure(error)[0], "detail": f"ServerReady failed: {error.message()}"}
        found["server_ready"] = ready
        return result(READY if ready else NOT_READY, elapsed)
    finally:
        client.close()


def run_probes(args: argparse.Namespace, config: Mapping[str, Any] | None, stdout: TextIO, stderr: TextIO) -> int:
    try:
        settings = settings_from_config(load_stack_config(args.stack) if config is None else config)
    except ConfigError as error:
        named = (p if p.startswith(f"stack {args.stack!r}") else f"stack {args.stack}: {p}" for p in error.problems)
        print(*(f"probe: {problem}" for problem in named), sep="\n", file=stderr)
        return EXIT_USAGE
    try:
        host = CHART.client_endpoint_host(settings.release.name, settings.namespace)  # where CMSSW clients go
        endpoint = f"{host}:{CHART.envoy_grpc_port}" if args.endpoint is None else parse_endpoint(args.endpoint)
        if args.record is not None:
            history.check_appendable(args.record)
    except (ValueError, OSError) as error:
        why = f"--record {str(args.record)!r}: cannot append: {error.strerror}" if isinstance(error, OSError) else error
        print(f"probe: {why}", file=stderr)
        return EXIT_USAGE
    deadline, ready_timeout = probe_deadline_seconds(settings), settings.scaleFromZero.readyTimeoutSeconds
    probe = partial(probe_once, endpoint, deadline, stack=args.stack, ready_timeout=ready_timeout, progress=stderr)
    results = list[str]()
    try:
        for index in range(args.repeat):
            time.sleep(args.interval if index else 0)
            result = probe(connect_timeout=args.connect_timeout, progress_every=args.progress_every)
            results.append(result.outcome)
            print(json.dumps(result.record()) if args.json else describe(result), file=stdout, flush=True)
            if args.record is not None:
                try:
                    history.append(args.record, result.record())
                except OSError as error:
                    print(f"probe: --record {str(args.record)!r}: could not append: {error}", file=stderr)
                    return EXIT_RECORD_FAILED
    except KeyboardInterrupt:
        print("probe: interrupted", file=stderr)
        return EXIT_INTERRUPTED
    return EXIT_CODES[max(results, key=history.OUTCOMES.index)]
