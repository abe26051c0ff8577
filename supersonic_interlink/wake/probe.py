"""``./supersonic probe``: a client session through Envoy as CMSSW starts one (tritonclient), and how it went.

``ServerReady`` (passed through by the chart's Lua filter) tells cold from warm; ``RepositoryIndex`` wakes Triton.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import queue
import re
import statistics
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

import grpc

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.config import ConfigError, Settings
from supersonic_interlink.config.envoy import repository_index_idle_timeout_seconds
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.contract import CHART, TRITON, WAKE_TIMEOUT_STATUSES
from supersonic_interlink.wake import history
from supersonic_interlink.wake.history import (
    DEADLINE_EXCEEDED,
    EXIT_CODES,
    NOT_READY,
    OUTCOMES,
    READY,
    REJECTED,
    UNREACHABLE,
)

EXIT_RECORD_FAILED, EXIT_INTERRUPTED = 7, 130
LUA_CLOCK_SECONDS = 1
"""The Lua filter counts whole seconds (``os.time``): it gives up up to a second before readyTimeoutSeconds."""
DEFAULT_CONNECT_TIMEOUT, DEFAULT_PROGRESS_EVERY, DEFAULT_INTERVAL = 10.0, 30.0, 60.0
SERVER_READY_TIMEOUT = 30.0  # the ServerReady after an answer goes to a woken Triton
NO_HTTP2 = (
    "no gRPC connection within {:g}s: the address accepts no connection or answers without HTTP/2 "
    "(not a gRPC endpoint, or a port-forward whose pod is gone)"
)


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


def default_endpoint(settings: Settings) -> str:
    return f"{CHART.client_endpoint_host(settings.release.name, settings.namespace)}:{CHART.envoy_grpc_port}"


def parse_endpoint(text: str) -> str:
    """Check ``HOST:PORT`` (``[v6]:PORT`` for IPv6) and return it unchanged."""
    if "://" in text:
        raise ValueError(f"--endpoint {text!r}: drop the scheme, {text.split('://', 1)[1]!r}: expected HOST:PORT")
    host, sep, port = text.rpartition(":")
    if not sep or not host or host == "[]":
        raise ValueError(f"--endpoint {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8001")
    # ASCII digits only: str.isdigit and int() also take other scripts' digits.
    if not re.fullmatch(r"[0-9]{1,5}", port, re.ASCII) or not 1 <= int(port) <= 65535:
        raise ValueError(f"--endpoint {text!r}: port {port!r} is not a number from 1 to 65535")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise ValueError(f"--endpoint {text!r}: write an IPv6 address in brackets, e.g. [::1]:8001")
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

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    @property
    def model_count(self) -> int | None:
        return None if self.models is None else len(self.models)

    def record(self) -> dict[str, Any]:
        """The ``--json`` object: every field, ``null`` where the outcome has no value."""
        fields = {"kind": "probe"} | asdict(self) | {"exit_code": self.exit_code, "model_count": self.model_count}
        fields["started_at"], fields["finished_at"] = map(
            utc_timestamp, (fields.pop("started"), fields.pop("finished"))
        )
        fields["wake_seconds"] = None if self.wake_seconds is None else round(self.wake_seconds, 3)
        fields["elapsed_seconds"] = round(self.elapsed_seconds, 3)
        return fields


def summarize(results: list[ProbeResult]) -> dict[str, Any]:
    """Count, outcomes, and min/median/max wake time over the answered probes (at least one probe)."""
    wakes = [r.wake_seconds for r in results if r.wake_seconds is not None]
    worst = max((r.outcome for r in results), key=OUTCOMES.index)
    spread = (("min", min), ("median", statistics.median), ("max", max))
    return {
        "kind": "summary",
        "stack": results[0].stack,
        "endpoint": results[0].endpoint,
        "count": len(results),
        "outcomes": {outcome: sum(r.outcome == outcome for r in results) for outcome in OUTCOMES},
        "cold": sum(r.cold is True for r in results),
        "warm": sum(r.cold is False for r in results),
        "wake_seconds": {"count": len(wakes)} | {name: round(f(wakes), 3) if wakes else None for name, f in spread},
        "worst_outcome": worst,
        "exit_code": EXIT_CODES[worst],
        "started_at": utc_timestamp(results[0].started),
        "finished_at": utc_timestamp(results[-1].finished),
    }


def describe(result: ProbeResult) -> str:
    start = {True: ", cold", False: ", warm", None: ""}[result.cold]
    head = f"{result.outcome}: {result.endpoint} (stack {result.stack}{start})"
    if result.outcome in (READY, NOT_READY):
        names = ", ".join(m["name"] for m in result.models or []) or "none"
        line = (
            f"{head}: RepositoryIndex answered after {result.wake_seconds:.1f}s, ServerReady "
            f"{str(result.server_ready).lower()}, {result.model_count or 0} model(s): {names}"
        )
        return line + (f"; {result.detail}" if result.detail else "")
    if result.outcome == REJECTED:
        gave_up = lua_gave_up(result.grpc_status, result.elapsed_seconds, result.ready_timeout_seconds)
        why = " (the Lua filter found no healthy Triton within readyTimeoutSeconds)" if gave_up else ""
        return f"{head}: grpc-status {result.grpc_status} after {result.elapsed_seconds:.1f}s{why}: {result.detail}"
    if result.outcome == DEADLINE_EXCEEDED:
        return f"{head}: no answer within the {clock(result.deadline_seconds)} deadline: {result.detail}"
    host, _, port = result.endpoint.rpartition(":")
    service = re.fullmatch(r"([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local\.?", host)
    hint = (
        f"outside the cluster that name does not resolve: kubectl -n {service[2]} port-forward service/{service[1]} "
        f"{port}:{port}, then --endpoint 127.0.0.1:{port}"
        if service
        else "check the address, or give Envoy's with --endpoint HOST:PORT"
    )
    return f"{head}: {result.detail}\n  {hint}"


def describe_summary(summary: Mapping[str, Any]) -> str:
    wakes, seen = summary["wake_seconds"], ", ".join(f"{n} {o}" for o, n in summary["outcomes"].items() if n)
    wake = (
        f"wake time over {wakes['count']} answered: min {wakes['min']:.1f}s, median {wakes['median']:.1f}s, "
        f"max {wakes['max']:.1f}s"
        if wakes["count"]
        else "no probe was answered"
    )
    return (
        f"summary: {summary['count']} probe(s) ({summary['cold']} cold, {summary['warm']} warm): {seen}; {wake}; "
        f"worst: {summary['worst_outcome']}"
    )


class Progress:
    """Elapsed time against the deadline while a call waits: on a terminal one line rewritten in place, otherwise (a
    log, a CI job) a plain line every ``every`` seconds."""

    def __init__(
        self, stream: TextIO, deadline: float, every: float = DEFAULT_PROGRESS_EVERY, live: bool | None = None
    ):
        self.stream, self.deadline, self.every = stream, deadline, every
        self.live = stream.isatty() if live is None else live
        self.tick_seconds = min(0.5, every)
        self.start("")

    def start(self, label: str) -> None:
        self.label, self._next, self._last_shown = label, self.every, -1

    def tick(self, elapsed: float) -> None:
        waited = f"{clock(elapsed)} of {clock(self.deadline)}"
        if self.live and int(elapsed) != self._last_shown:
            self._last_shown = int(elapsed)
            print(f"\r\033[K{self.label}: waiting {waited}", end="", file=self.stream, flush=True)
        elif not self.live and elapsed >= self._next:
            self._next += self.every
            print(f"{self.label}: still waiting, {waited}", file=self.stream, flush=True)

    def done(self) -> None:
        if self.live and self._last_shown >= 0:
            print("\r\033[K", end="", file=self.stream, flush=True)


def connects(endpoint: str, timeout: float) -> bool | None:
    """Whether a gRPC connection comes up (True) or fails (False); None: neither within ``timeout``. READY needs the
    server's HTTP/2 settings, so a port that accepts TCP and says nothing (a dead port-forward) is not reached."""
    channel, states = grpc.insecure_channel(endpoint), queue.SimpleQueue[bool]()
    ends = {grpc.ChannelConnectivity.READY: True, grpc.ChannelConnectivity.TRANSIENT_FAILURE: False}

    def watch(state: grpc.ChannelConnectivity) -> None:
        if state in ends:
            states.put(ends[state])

    channel.subscribe(watch, try_to_connect=True)
    try:
        return states.get(timeout=timeout)
    except queue.Empty:
        return None
    finally:
        channel.unsubscribe(watch)
        channel.close()


def _failure(error: Any) -> tuple[str, bool | None]:
    """A tritonclient error's gRPC status name and whether the server sent response metadata (tritonclient re-raises
    the grpc.RpcError ``from None``: it is the ``__context__``)."""
    call, answered = error.__context__, None
    with contextlib.suppress(Exception):
        answered = bool(tuple(call.initial_metadata() or ()) or tuple(call.trailing_metadata() or ()))
    return (error.status() or "UNKNOWN").rsplit(".", 1)[-1], answered if isinstance(call, grpc.Call) else None


def _wait_for(call: Callable[[], Any], progress: Progress | None) -> tuple[Any, Any, float]:
    """Run ``call`` (which carries its gRPC deadline) in a daemon thread, so Ctrl-C need not wait; (result, error,
    seconds)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = call()
        except BaseException as error:
            box["error"] = error

    worker, begin = threading.Thread(target=work, name="probe-call", daemon=True), time.monotonic()
    worker.start()
    try:
        worker.join(progress.tick_seconds if progress else None)
        while worker.is_alive() and progress:
            progress.tick(time.monotonic() - begin)
            worker.join(progress.tick_seconds)
    finally:
        if progress:
            progress.done()
    return box.get("result"), box.get("error"), time.monotonic() - begin


def probe_once(
    endpoint: str,
    deadline: float,
    *,
    stack: str,
    ready_timeout: int | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    progress: Progress | None = None,
) -> ProbeResult:
    # lazy: `--help` and config errors answer without loading the gRPC client stack
    import tritonclient.grpc as triton_grpc
    from tritonclient.utils import InferenceServerException

    started = time.time()

    def result(outcome: str, elapsed: float = 0.0, **fields: Any) -> ProbeResult:
        return ProbeResult(stack, endpoint, outcome, started, time.time(), deadline, ready_timeout, elapsed, **fields)

    reached = connects(endpoint, min(connect_timeout, deadline))
    if reached is None:
        return result(UNREACHABLE, detail=NO_HTTP2.format(min(connect_timeout, deadline)))
    client = triton_grpc.InferenceServerClient(endpoint)  # as a CMSSW session creates it: default channel options
    try:
        # any answer comes from a Triton Envoy already routes to (warm); none: the call is a wake
        try:
            cold, checked = False, f"ServerReady {str(client.is_server_ready(client_timeout=connect_timeout)).lower()}"
        except InferenceServerException as error:
            if not reached:
                return result(UNREACHABLE, detail=error.message() or "connection failed")
            cold, checked = True, f"{_failure(error)[0]}: {error.message() or ''}".rstrip(": ")
        known = {"cold": cold, "start_check": checked}
        if progress:
            progress.start(f"probe {stack} {endpoint}")
        response, failure, elapsed = _wait_for(
            lambda: client.get_model_repository_index(client_timeout=deadline), progress
        )
        if failure is not None:
            status, answered = _failure(failure)
            outcome, detail = classify_failure(status, answered), failure.message() or ""
            detail = f"connection lost before any response: {detail}" if outcome == UNREACHABLE else detail
            return result(outcome, elapsed, grpc_status=status, detail=detail, **known)
        models = [{"name": m.name, "version": m.version, "state": m.state} for m in response.models]
        why: dict[str, Any] = {"detail": "ServerReady is false (a model failed to load, or Triton is shutting down)"}
        try:
            ready = bool(client.is_server_ready(client_timeout=min(SERVER_READY_TIMEOUT, max(deadline - elapsed, 1))))
        except InferenceServerException as ready_error:
            ready = False
            why = {"grpc_status": _failure(ready_error)[0], "detail": f"ServerReady failed: {ready_error.message()}"}
        outcome = READY if ready else NOT_READY
        fields = {"wake_seconds": elapsed, "server_ready": ready, "models": models, **known, **({} if ready else why)}
        return result(outcome, elapsed, **fields)
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
        endpoint = default_endpoint(settings) if args.endpoint is None else parse_endpoint(args.endpoint)
        if args.record is not None:
            try:
                history.check_appendable(args.record)
            except OSError as error:
                raise ValueError(f"--record {str(args.record)!r}: cannot append: {error.strerror}") from None
    except ValueError as error:
        print(f"probe: {error}", file=stderr)
        return EXIT_USAGE
    deadline, results = probe_deadline_seconds(settings), list[ProbeResult]()
    progress = Progress(stderr, deadline, args.progress_every)

    def emit(document: Mapping[str, Any], text: str) -> None:
        print(json.dumps(document) if args.json else text, file=stdout, flush=True)

    def summary() -> None:
        if args.repeat > 1 and results:
            emit(done := summarize(results), describe_summary(done))

    try:
        for index in range(args.repeat):
            time.sleep(args.interval if index else 0)
            timeout, given = settings.scaleFromZero.readyTimeoutSeconds, args.connect_timeout
            result = probe_once(
                endpoint, deadline, stack=args.stack, ready_timeout=timeout, connect_timeout=given, progress=progress
            )
            results.append(result)
            emit(result.record(), describe(result))
            if args.record is not None:
                try:
                    history.append(args.record, result.record())
                except OSError as error:
                    print(f"probe: --record {str(args.record)!r}: could not append: {error}", file=stderr)
                    return EXIT_RECORD_FAILED
    except KeyboardInterrupt:
        print("probe: interrupted", file=stderr)
        summary()
        return EXIT_INTERRUPTED
    summary()
    return EXIT_CODES[max((r.outcome for r in results), key=OUTCOMES.index)]
