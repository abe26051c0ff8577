"""Cold-start probe: does a wake complete inside readyTimeoutSeconds, measured against a live endpoint?

    python probe.py <stack> [--endpoint HOST:PORT] [--json] [--repeat N --interval S]

Starts a session the way a CMSSW client does: a gRPC RepositoryIndex through the Triton client, which on a
release scaled to zero makes Envoy's Lua filter wake Triton and hold the call until a Triton is healthy. The
call's deadline is the stack's readyTimeoutSeconds plus the chart's route margin (the RepositoryIndex route's
idle_timeout). A woken server is also asked ServerReady, and the models it reports are listed. While the call
waits, elapsed time against the deadline is shown on stderr. The result goes to stdout, as text or, with
--json, as one JSON object per probe (and a summary object after several).

Outcomes and exit codes:
  0  ready              RepositoryIndex answered and ServerReady is true; wake time and models reported
  3  rejected           the endpoint answered the call with an error status; grpc-status 1 (CANCELLED) is the
                        Lua filter's "no healthy Triton within readyTimeoutSeconds"
  4  deadline exceeded  no answer before the deadline (readyTimeoutSeconds + route margin)
  5  unreachable        no gRPC connection to the endpoint (DNS failure, connection refused, no HTTP/2 answer),
                        or the connection was lost before any response
  6  not ready          RepositoryIndex answered but ServerReady is false or failed
  2  usage or invalid stack config (one line per problem); 130 when interrupted
With --repeat the exit code is that of the worst outcome, in the order: ready, not ready, rejected,
deadline exceeded, unreachable.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

import grpc

from supersonic_interlink.contract import CHART
from supersonic_interlink.envoy import repository_index_idle_timeout_seconds
from supersonic_interlink.settings import ConfigError, Settings
from supersonic_interlink.stack_config import load_stack_config, stack_names

READY = "ready"
NOT_READY = "not ready"
REJECTED = "rejected"
DEADLINE_EXCEEDED = "deadline exceeded"
UNREACHABLE = "unreachable"

OUTCOMES = (READY, NOT_READY, REJECTED, DEADLINE_EXCEEDED, UNREACHABLE)
"""Every outcome, from best to worst: with --repeat, the exit code is that of the worst one seen."""

EXIT_CODES = {READY: 0, REJECTED: 3, DEADLINE_EXCEEDED: 4, UNREACHABLE: 5, NOT_READY: 6}
EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130

LUA_REJECT_STATUS = "CANCELLED"
"""grpc-status 1: what the chart's Lua filter answers when no healthy Triton appeared within readyTimeoutSeconds."""

CONNECTION_FAILED = "connection failed"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_PROGRESS_EVERY = 30.0
DEFAULT_INTERVAL = 60.0
SERVER_READY_TIMEOUT = 30.0
"""ServerReady goes to an already woken Triton; it needs no wake allowance."""
DEADLINE_GRACE = 5.0
"""How long past the gRPC deadline the probe waits for the client to report it before giving up on its own."""


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
    host, sep, port = text.rpartition(":")
    if not sep or not host or host in ("[]",):
        raise ValueError(f"--endpoint {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8001")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
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
    """Count, outcomes, and min/median/max wake time over the probes that got an answer."""
    wakes = [r.wake_seconds for r in results if r.wake_seconds is not None]
    worst = worst_outcome(r.outcome for r in results) if results else None
    return {
        "kind": "summary",
        "stack": results[0].stack if results else None,
        "endpoint": results[0].endpoint if results else None,
        "count": len(results),
        "outcomes": {outcome: sum(r.outcome == outcome for r in results) for outcome in OUTCOMES},
        "wake_seconds": {
            "count": len(wakes),
            "min": round(min(wakes), 3) if wakes else None,
            "median": round(statistics.median(wakes), 3) if wakes else None,
            "max": round(max(wakes), 3) if wakes else None,
        },
        "worst_outcome": worst,
        "exit_code": EXIT_CODES[worst] if worst else EXIT_CODES[READY],
        "started_at": utc_timestamp(results[0].started) if results else None,
        "finished_at": utc_timestamp(results[-1].finished) if results else None,
    }


def describe(result: ProbeResult) -> str:
    """One human line per probe."""
    head = f"{result.outcome}: {result.endpoint} (stack {result.stack})"
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
            if result.grpc_status == LUA_REJECT_STATUS
            else ""
        )
        return f"{head}: grpc-status {result.grpc_status} after {result.elapsed_seconds:.1f}s{why}: {result.detail}"
    if result.outcome == DEADLINE_EXCEEDED:
        return f"{head}: no answer within the {clock(result.deadline_seconds)} deadline: {result.detail}"
    return f"{head}: {result.detail}"


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
    return f"summary: {summary['count']} probe(s): {seen}; {wake}; worst: {summary['worst_outcome']}"


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
    except Exception:  # noqa: BLE001 - metadata only refines the classification
        return None


def _status_name(error: Any) -> str:
    """``StatusCode.CANCELLED`` (tritonclient's form) -> ``CANCELLED``."""
    status = error.status() or "UNKNOWN"
    return status.rsplit(".", 1)[-1]


def _wait_for_call(
    call: Callable[[], Any], limit: float, progress: Progress | None
) -> tuple[Any, BaseException | None, float, bool]:
    """Run ``call`` in a worker thread, showing progress; return (result, error, seconds, finished)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["result"] = call()
        except BaseException as error:  # noqa: BLE001 - handed back to the caller's thread
            box["error"] = error
        finally:
            done.set()

    worker = threading.Thread(target=work, name="probe-call", daemon=True)
    begin = time.monotonic()
    worker.start()
    tick = progress.tick_seconds if progress else 0.5
    try:
        while not done.wait(tick):
            elapsed = time.monotonic() - begin
            if elapsed > limit:
                break
            if progress:
                progress.tick(elapsed)
    finally:
        if progress:
            progress.done()
    elapsed = time.monotonic() - begin
    return box.get("result"), box.get("error"), elapsed, done.is_set()


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
            _, error, _, _ = _wait_for_call(
                lambda: client.is_server_live(client_timeout=connect_timeout), connect_timeout + DEADLINE_GRACE, None
            )
            if isinstance(error, InferenceServerException) and error.message():
                problem = error.message()
        if problem is not None:
            return result(UNREACHABLE, detail=problem)

        if progress:
            progress.start(f"probe {stack} {endpoint}")
        response, error, elapsed, finished = _wait_for_call(
            lambda: client.get_model_repository_index(client_timeout=deadline), deadline + DEADLINE_GRACE, progress
        )
        if not finished:
            return result(
                DEADLINE_EXCEEDED,
                elapsed,
                grpc_status="DEADLINE_EXCEEDED",
                detail=f"the client did not report its {deadline:g}s deadline; gave up waiting",
            )
        if error is not None:
            if not isinstance(error, InferenceServerException):
                raise error
            status = _status_name(error)
            outcome = classify_failure(status, _response_metadata(error))
            detail = error.message() or ""
            if outcome == UNREACHABLE:
                detail = f"connection lost before any response: {detail}"
            return result(outcome, elapsed, grpc_status=status, detail=detail)

        models = [{"name": m.name, "version": m.version, "state": m.state} for m in response.models]
        remaining = max(deadline - elapsed, 1.0)
        try:
            ready = bool(client.is_server_ready(client_timeout=min(SERVER_READY_TIMEOUT, remaining)))
        except InferenceServerException as ready_error:
            return result(
                NOT_READY,
                elapsed,
                wake_seconds=elapsed,
                server_ready=False,
                models=models,
                grpc_status=_status_name(ready_error),
                detail=f"ServerReady failed: {ready_error.message()}",
            )
        if not ready:
            return result(
                NOT_READY,
                elapsed,
                wake_seconds=elapsed,
                server_ready=False,
                models=models,
                detail="ServerReady is false (a model failed to load, or Triton is shutting down)",
            )
        return result(READY, elapsed, wake_seconds=elapsed, server_ready=True, models=models)
    finally:
        client.close()


# --------------------------------------------------------------------------------------------- the command


def _settings(stack: str, config: Mapping[str, Any] | None) -> Settings:
    from supersonic_interlink.program import settings_from_config

    return settings_from_config(load_stack_config(stack) if config is None else config)


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def _at_least_zero(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    summary, _, outcomes = __doc__.partition("Outcomes and exit codes:")
    parser = argparse.ArgumentParser(
        description=summary.split("\n\n", 1)[0],
        epilog="outcomes and exit codes:" + outcomes.rstrip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "stack", help=f"stack name ({', '.join(stack_names())}): gives the deadline and the default endpoint"
    )
    parser.add_argument(
        "--endpoint",
        metavar="HOST:PORT",
        help="Envoy's gRPC endpoint; default the stack's in-cluster Service "
        "(<release>.<namespace>.svc.cluster.local:8001)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object per probe (and a summary object after several) to stdout",
    )
    parser.add_argument("--repeat", type=_count, default=1, metavar="N", help="probe N times (default 1)")
    parser.add_argument(
        "--interval",
        type=_at_least_zero,
        default=DEFAULT_INTERVAL,
        metavar="S",
        help=f"seconds between the end of one probe and the start of the next (default {DEFAULT_INTERVAL:g})",
    )
    parser.add_argument(
        "--connect-timeout",
        type=_positive,
        default=DEFAULT_CONNECT_TIMEOUT,
        metavar="S",
        help=f"seconds allowed to establish the gRPC connection (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--progress-every",
        type=_positive,
        default=DEFAULT_PROGRESS_EVERY,
        metavar="S",
        help=f"when stderr is not a terminal, a progress line every S seconds (default {DEFAULT_PROGRESS_EVERY:g})",
    )
    return parser


def main(
    argv: list[str] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the command; ``config`` replaces the stack file's config map (the tests shorten timeouts with it)."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args.stack, config)
    except ConfigError as error:
        print(f"stack {args.stack}: invalid config:", file=stderr)
        for problem in error.problems:
            print(f"  {problem}", file=stderr)
        return EXIT_CONFIG
    try:
        endpoint = parse_endpoint(args.endpoint) if args.endpoint else default_endpoint(settings)
    except ValueError as error:
        print(f"probe: {error}", file=stderr)
        return EXIT_CONFIG

    deadline = probe_deadline_seconds(settings)
    progress = Progress(stderr, deadline, args.progress_every)
    results: list[ProbeResult] = []

    def emit(document: Mapping[str, Any], text: str) -> None:
        print(json.dumps(document) if args.json else text, file=stdout, flush=True)

    try:
        for index in range(args.repeat):
            if index:
                time.sleep(args.interval)
            result = probe_once(
                endpoint,
                deadline,
                stack=args.stack,
                ready_timeout=settings.scaleFromZero.readyTimeoutSeconds,
                connect_timeout=args.connect_timeout,
                progress=progress,
            )
            results.append(result)
            emit(result.record(), describe(result))
    except KeyboardInterrupt:
        print("probe: interrupted", file=stderr)
        if args.repeat > 1 and results:
            summary = summarize(results)
            emit(summary, describe_summary(summary))
        return EXIT_INTERRUPTED
    if args.repeat > 1:
        summary = summarize(results)
        emit(summary, describe_summary(summary))
        return summary["exit_code"]
    return results[0].exit_code


if __name__ == "__main__":
    sys.exit(main())
