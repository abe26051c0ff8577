"""Measuring one wake: start a client session through Envoy and report how it went.

A probe opens a gRPC connection to the endpoint, asks ``ServerReady`` to learn whether a Triton is already
serving behind Envoy (a warm answer) or not (a cold wake), then sends ``RepositoryIndex`` as a CMSSW client
starts its session: on a release at zero, Envoy's Lua filter wakes Triton on that call and holds it until a
Triton is healthy or ``readyTimeoutSeconds`` has passed. ``./supersonic probe`` is the command around it;
``wake_history`` keeps the results and ``wake_report`` turns them into a recommended timeout.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

import grpc

from supersonic_interlink.config import Settings
from supersonic_interlink.config.envoy import repository_index_idle_timeout_seconds
from supersonic_interlink.contract import CHART, TRITON, WAKE_TIMEOUT_STATUSES

READY = "ready"
NOT_READY = "not ready"
REJECTED = "rejected"
DEADLINE_EXCEEDED = "deadline exceeded"
UNREACHABLE = "unreachable"

OUTCOMES = (READY, NOT_READY, REJECTED, DEADLINE_EXCEEDED, UNREACHABLE)
"""Every outcome, from best to worst: with --repeat, the exit code is that of the worst one seen."""

EXIT_CODES = {READY: 0, REJECTED: 3, DEADLINE_EXCEEDED: 4, UNREACHABLE: 5, NOT_READY: 6}
EXIT_CONFIG = 2
EXIT_RECORD_FAILED = 7
"""A result could not be appended to the ``--record`` file (checked writable before the first probe)."""
EXIT_INTERRUPTED = 130

LUA_CLOCK_SECONDS = 1
"""The Lua filter counts its wait in whole seconds (``os.time``): it gives up between readyTimeoutSeconds - 1
and readyTimeoutSeconds after the wake started."""


def lua_gave_up(status: str | None, elapsed_seconds: float, ready_timeout_seconds: int | None) -> bool:
    """Whether a rejected RepositoryIndex is the Lua filter giving up at ``readyTimeoutSeconds``: the status a chart
    generation answers a timed-out wake with (CANCELLED, or UNAVAILABLE from the ``inferenceServer`` generation on),
    at or after the timeout. UNAVAILABLE is also Envoy's own answer when it reaches no Triton, so it counts only
    when the timeout is known and reached; an earlier answer of either is the wake failing, not a timeout."""
    if status not in WAKE_TIMEOUT_STATUSES:
        return False
    if ready_timeout_seconds is None:
        return status == TRITON.wake_timeout_status  # only the older filter's status is unambiguous
    return elapsed_seconds >= ready_timeout_seconds - LUA_CLOCK_SECONDS


CONNECTION_FAILED = "connection failed"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_PROGRESS_EVERY = 30.0
DEFAULT_INTERVAL = 60.0
SERVER_READY_TIMEOUT = 30.0
"""ServerReady goes to an already woken Triton; it needs no wake allowance."""
START_CHECK_TIMEOUT = 10.0
"""Upper bound of the ServerReady asked before the call. Envoy answers it at once either way: a Triton behind it
answers, and with no host Envoy replies ``no healthy upstream`` without retrying (no host, nothing to retry)."""


# --------------------------------------------------------------------------------------------- pure parts


def probe_deadline_seconds(settings: Settings) -> int:
    """The RepositoryIndex deadline: readyTimeoutSeconds plus the margin the chart gives the route's idle_timeout.

    A client with a shorter deadline would give up on wakes the release is configured to allow; past this
    one, Envoy itself has closed the stream.
    """
    return repository_index_idle_timeout_seconds(settings)


def default_endpoint(settings: Settings) -> str:
    """Where clients inside the cluster reach Envoy: ``<release>.<namespace>.svc.cluster.local:8001``."""
    return f"{CHART.client_endpoint_host(settings.release.name, settings.namespace)}:{CHART.envoy_grpc_port}"


def parse_endpoint(text: str) -> str:
    """Check ``HOST:PORT`` (``[v6]:PORT`` for IPv6) and return it unchanged; ValueError says what is wrong."""
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
    """The outcome of a RepositoryIndex that ended in a gRPC error.

    ``status`` is the gRPC status name (``CANCELLED``, ``UNAVAILABLE``, ...). ``answered`` says whether any
    response headers or trailers arrived (None: not known). UNAVAILABLE is ambiguous: gRPC reports a refused
    or lost connection with it, and Envoy answers it too when its upstream cannot be reached. Only the
    second carries response metadata (Envoy's ``server`` and ``date``), so UNAVAILABLE without any is the
    endpoint being unreachable, and with some it is the proxy rejecting the call.
    """
    if status == "DEADLINE_EXCEEDED":
        return DEADLINE_EXCEEDED
    if status == "UNAVAILABLE" and answered is False:
        return UNREACHABLE
    return REJECTED


def worst_outcome(outcomes: Iterable[str]) -> str:
    return max(outcomes, key=OUTCOMES.index)


def utc_timestamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def clock(seconds: float) -> str:
    """``4s``, ``2m05s``: short enough for a live line, exact enough for a 15-minute wait."""
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m{whole % 60:02d}s"


@dataclass
class ProbeResult:
    """One probe. Every field is always present; the ones an outcome has no value for are None."""

    stack: str
    endpoint: str
    outcome: str
    started: float
    """Wall-clock epoch seconds when the probe started (before the connection check)."""
    finished: float
    deadline_seconds: float
    ready_timeout_seconds: int | None
    elapsed_seconds: float
    """From sending RepositoryIndex to its answer or failure (0 when the endpoint was never reached)."""
    wake_seconds: float | None = None
    """RepositoryIndex round trip, set whenever it answered: how long a client waited for its session."""
    cold: bool | None = None
    """True when no Triton answered ServerReady before the call (the call had to wake one), False when one did
    (a warm answer, not a wake), None when the endpoint was never reached."""
    start_check: str | None = None
    """What that ServerReady got: ``ServerReady true``/``false``, or the gRPC status and message of its failure."""
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
        """The ``--json`` record of this probe."""
        return {
            "kind": "probe",
            "stack": self.stack,
            "endpoint": self.endpoint,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "started_at": utc_timestamp(self.started),
            "finished_at": utc_timestamp(self.finished),
            "cold": self.cold,
            "start_check": self.start_check,
            "wake_seconds": None if self.wake_seconds is None else round(self.wake_seconds, 3),
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "deadline_seconds": self.deadline_seconds,
            "ready_timeout_seconds": self.ready_timeout_seconds,
            "grpc_status": self.grpc_status,
            "detail": self.detail,
            "server_ready": self.server_ready,
            "model_count": self.model_count,
            "models": self.models,
        }


def summarize(results: list[ProbeResult]) -> dict[str, Any]:
    """Count, outcomes, and min/median/max wake time over the probes that got an answer (at least one probe)."""
    wakes = [r.wake_seconds for r in results if r.wake_seconds is not None]
    worst = worst_outcome(r.outcome for r in results)
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
    """One human line per probe."""
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
        why = (
            " (the Lua filter found no healthy Triton within readyTimeoutSeconds)"
            if lua_gave_up(result.grpc_status, result.elapsed_seconds, result.ready_timeout_seconds)
            else ""
        )
        return f"{head}: grpc-status {result.grpc_status} after {result.elapsed_seconds:.1f}s{why}: {result.detail}"
    if result.outcome == DEADLINE_EXCEEDED:
        return f"{head}: no answer within the {clock(result.deadline_seconds)} deadline: {result.detail}"
    if result.outcome == UNREACHABLE:
        return f"{head}: {result.detail}\n  {reach_hint(result.endpoint)}"
    return f"{head}: {result.detail}"


def reach_hint(endpoint: str) -> str:
    """The next step after an unreachable endpoint: for the in-cluster Service name, a port-forward to it."""
    host, _, port = endpoint.rpartition(":")
    in_cluster = re.fullmatch(r"([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local\.?", host)
    if in_cluster is None:
        return "check the address, or give Envoy's with --endpoint HOST:PORT"
    service, namespace = in_cluster.groups()
    return (
        f"outside the cluster that name does not resolve: kubectl -n {namespace} port-forward service/{service} "
        f"{port}:{port}, then --endpoint 127.0.0.1:{port}"
    )


def describe_summary(summary: Mapping[str, Any]) -> str:
    wakes = summary["wake_seconds"]
    seen = ", ".join(f"{n} {o}" for o, n in summary["outcomes"].items() if n)
    if wakes["count"]:
        wake = (
            f"wake time over {wakes['count']} answered: min {wakes['min']:.1f}s, median "
            f"{wakes['median']:.1f}s, max {wakes['max']:.1f}s"
        )
    else:
        wake = "no probe was answered"
    return (
        f"summary: {summary['count']} probe(s) ({summary['cold']} cold, {summary['warm']} warm): {seen}; {wake}; "
        f"worst: {summary['worst_outcome']}"
    )


# --------------------------------------------------------------------------------------------- progress


class Progress:
    """Elapsed time against the deadline on stderr while a call waits, so a 15-minute wake is seen to be alive.

    On a terminal one line is rewritten in place; otherwise (a log, a CI job) a plain line every ``every``
    seconds.
    """

    def __init__(
        self, stream: TextIO, deadline: float, every: float = DEFAULT_PROGRESS_EVERY, live: bool | None = None
    ):
        self.stream = stream
        self.deadline = deadline
        self.every = every
        self.live = stream.isatty() if live is None else live
        self.label = ""
        self._next = every
        self._last_shown = -1

    @property
    def tick_seconds(self) -> float:
        """How often ``tick`` needs calling to keep the display current."""
        return min(0.5, self.every)

    def start(self, label: str) -> None:
        self.label = label
        self._next = self.every
        self._last_shown = -1

    def tick(self, elapsed: float) -> None:
        if self.live:
            if int(elapsed) != self._last_shown:
                self._last_shown = int(elapsed)
                self.stream.write(f"\r\033[K{self.label}: waiting {clock(elapsed)} of {clock(self.deadline)}")
                self.stream.flush()
        elif elapsed >= self._next:
            self._next += self.every
            self.stream.write(f"{self.label}: still waiting, {clock(elapsed)} of {clock(self.deadline)}\n")
            self.stream.flush()

    def done(self) -> None:
        if self.live and self._last_shown >= 0:
            self.stream.write("\r\033[K")
            self.stream.flush()


# --------------------------------------------------------------------------------------------- the probe


def grpc_connection_problem(endpoint: str, timeout: float) -> str | None:
    """None when a gRPC (HTTP/2) connection to the endpoint comes up within ``timeout``; otherwise why not.

    This separates "nothing answers at that address" from "the proxy is up but has no Triton behind it",
    which the call itself reports with the same UNAVAILABLE status. gRPC's channel is READY only after the
    server's HTTP/2 settings arrive, so a port that accepts TCP and says nothing (a port-forward to a pod
    that is gone, a non-gRPC service) counts as unreachable too.
    """
    channel = grpc.insecure_channel(endpoint)
    settled = threading.Event()
    final: list[grpc.ChannelConnectivity] = []
    ends = (
        grpc.ChannelConnectivity.READY,
        grpc.ChannelConnectivity.TRANSIENT_FAILURE,
        grpc.ChannelConnectivity.SHUTDOWN,
    )

    def watch(state: grpc.ChannelConnectivity) -> None:
        if state in ends and not settled.is_set():
            final.append(state)
            settled.set()

    channel.subscribe(watch, try_to_connect=True)
    try:
        if not settled.wait(timeout):
            return (
                f"no gRPC connection within {timeout:g}s: the address accepts no connection or "
                f"answers without HTTP/2 (not a gRPC endpoint, or a port-forward whose pod is gone)"
            )
        if final[0] == grpc.ChannelConnectivity.READY:
            return None
        return CONNECTION_FAILED
    finally:
        channel.unsubscribe(watch)
        channel.close()


def _response_metadata(error: BaseException) -> bool | None:
    """Whether the failed call received any response headers or trailers; None when that cannot be known.

    tritonclient re-raises the grpc.RpcError as its own exception ``from None``: the original stays reachable
    as ``__context__``, and it is a grpc.Call carrying what the server sent.
    """
    call = error.__context__
    if not isinstance(call, grpc.Call):
        return None
    try:
        return bool(tuple(call.initial_metadata() or ()) or tuple(call.trailing_metadata() or ()))
    except Exception:
        return None


def _status_name(error: Any) -> str:
    """``StatusCode.CANCELLED`` (tritonclient's form) -> ``CANCELLED``."""
    status = error.status() or "UNKNOWN"
    return status.rsplit(".", 1)[-1]


def start_check(client: Any, timeout: float) -> tuple[bool, str]:
    """Whether the call about to be sent is a cold wake: (cold, what ServerReady answered).

    ServerReady is a call the chart's Lua filter passes through untouched (it wakes only on RepositoryIndex), so
    asking it wakes nothing. Any answer comes from a Triton Envoy already routes to, and then the Lua filter
    lets RepositoryIndex through at once: warm, whether the answer is true or false. No answer (``no healthy
    upstream``, or the older filter's CANCELLED rewrite of it) means no Triton is behind Envoy: the call is a cold
    wake. A wake another client started a moment earlier also reads as cold; its measured time is then shorter
    than a whole wake.
    """
    from tritonclient.utils import InferenceServerException

    try:
        ready = bool(client.is_server_ready(client_timeout=timeout))
    except InferenceServerException as error:
        return True, f"{_status_name(error)}: {error.message() or ''}".rstrip(": ")
    return False, f"ServerReady {str(ready).lower()}"


def _wait_for_call(call: Callable[[], Any], progress: Progress | None) -> tuple[Any, BaseException | None, float]:
    """Run ``call`` in a worker thread, showing progress; return (result, error, seconds).

    The call carries its gRPC deadline (tritonclient's ``client_timeout``), which gRPC enforces: it ends by then.
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["result"] = call()
        except BaseException as error:
            box["error"] = error
        finally:
            done.set()

    worker = threading.Thread(target=work, name="probe-call", daemon=True)
    begin = time.monotonic()
    worker.start()
    try:
        while not done.wait(progress.tick_seconds if progress else 0.5):
            if progress:
                progress.tick(time.monotonic() - begin)
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
    """Start one client session against ``endpoint`` and report how it went."""
    # Imported here so `--help` and config errors answer without loading the gRPC client stack.
    import tritonclient.grpc as triton_grpc
    from tritonclient.utils import InferenceServerException

    started = time.time()

    def result(outcome: str, elapsed: float = 0.0, **fields: Any) -> ProbeResult:
        return ProbeResult(
            stack=stack,
            endpoint=endpoint,
            outcome=outcome,
            started=started,
            finished=time.time(),
            deadline_seconds=deadline,
            ready_timeout_seconds=ready_timeout,
            elapsed_seconds=elapsed,
            **fields,
        )

    problem = grpc_connection_problem(endpoint, min(connect_timeout, deadline))
    # The client as a CMSSW session creates it: default channel options, no keepalive pings, plain gRPC.
    client = triton_grpc.InferenceServerClient(endpoint)
    try:
        if problem == CONNECTION_FAILED:
            # gRPC's own wording (refused, name not found, socket closed) says more than the channel state.
            # ServerLive, not RepositoryIndex: should the endpoint have just come up, this must not wake Triton.
            try:
                client.is_server_live(client_timeout=connect_timeout)
            except InferenceServerException as live_error:
                problem = live_error.message() or problem
        if problem is not None:
            return result(UNREACHABLE, detail=problem)

        cold, checked = start_check(client, min(START_CHECK_TIMEOUT, connect_timeout))
        known = {"cold": cold, "start_check": checked}
        if progress:
            progress.start(f"probe {stack} {endpoint}")
        response, error, elapsed = _wait_for_call(
            lambda: client.get_model_repository_index(client_timeout=deadline), progress
        )
        if error is not None:
            if not isinstance(error, InferenceServerException):
                raise error
            status = _status_name(error)
            outcome = classify_failure(status, _response_metadata(error))
            detail = error.message() or ""
            if outcome == UNREACHABLE:
                detail = f"connection lost before any response: {detail}"
            return result(outcome, elapsed, grpc_status=status, detail=detail, **known)

        models = [{"name": m.name, "version": m.version, "state": m.state} for m in response.models]
        remaining = max(deadline - elapsed, 1.0)
        why: dict[str, Any] = {}
        try:
            ready = bool(client.is_server_ready(client_timeout=min(SERVER_READY_TIMEOUT, remaining)))
        except InferenceServerException as ready_error:
            ready = False
            why = {"grpc_status": _status_name(ready_error), "detail": f"ServerReady failed: {ready_error.message()}"}
        if not ready and not why:
            why = {"detail": "ServerReady is false (a model failed to load, or Triton is shutting down)"}
        outcome = READY if ready else NOT_READY
        return result(outcome, elapsed, wake_seconds=elapsed, server_ready=ready, models=models, **why, **known)
    finally:
        client.close()
