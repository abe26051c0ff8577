"""probe: the cold-start probe, from its pure parts to the real command through the real Envoy (tests/loopback.py)."""

from __future__ import annotations

import io
import json
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import replace

import grpc
import pytest
from conftest import stack_config, stack_settings
from loopback import OLDER_GENERATION_CHART, loopback_settings, loopback_stack
from tritonclient.grpc import service_pb2, service_pb2_grpc

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.cli import probe
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake import probe as wake_probe
from supersonic_interlink.wake import report as wake_report

# fmt: off
PROBE_RECORD_FIELDS = {
    "kind", "stack", "endpoint", "outcome", "exit_code", "started_at", "finished_at", "cold", "start_check",
    "wake_seconds", "elapsed_seconds", "deadline_seconds", "ready_timeout_seconds", "grpc_status", "detail",
    "server_ready", "model_count", "models",
}
# fmt: on


R, N, X, D, U = (
    wake_probe.REJECTED,
    wake_probe.NOT_READY,
    wake_probe.READY,
    wake_probe.DEADLINE_EXCEEDED,
    wake_probe.UNREACHABLE,
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class DirectTriton(service_pb2_grpc.GRPCInferenceServiceServicer):
    """A Triton answering directly (no Envoy): the parts of a session the probe uses."""

    def __init__(
        self,
        *,
        ready: bool = True,
        index_delay: float = 0.0,
        abort: tuple[grpc.StatusCode, tuple[tuple[str, str], ...]] | None = None,
    ):
        self.ready = ready
        self.index_delay = index_delay
        self.abort = abort
        self.models = ("particlenet_AK4_PT", "deepmet")
        self.released = threading.Event()
        self.server: grpc.Server | None = None

    def RepositoryIndex(self, request, context):
        if self.abort:
            code, trailers = self.abort
            context.set_trailing_metadata(trailers)
            context.abort(code, "stand-in refuses")
        self.released.wait(self.index_delay)
        return service_pb2.RepositoryIndexResponse(
            models=[
                service_pb2.RepositoryIndexResponse.ModelIndex(name=name, version="1", state="READY")
                for name in self.models
            ]
        )

    def ServerReady(self, request, context):
        return service_pb2.ServerReadyResponse(ready=self.ready)

    def ServerLive(self, request, context):
        return service_pb2.ServerLiveResponse(live=True)


@pytest.fixture
def direct_triton() -> Iterator[Callable[[DirectTriton], str]]:
    """Start a DirectTriton on a free loopback port; returns its endpoint. Stopped after the test."""
    servers: list[grpc.Server] = []
    servicers: list[DirectTriton] = []

    def start(servicer: DirectTriton) -> str:
        servicers.append(servicer)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        servicer.server = server
        return f"127.0.0.1:{port}"

    yield start
    for servicer in servicers:
        servicer.released.set()
    for server in servers:
        server.stop(0).wait(5)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word, like a port-forward to a vanished pod."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    yield listener.getsockname()[1]
    listener.close()


def run_main(*args: str, **overrides) -> tuple[int, str, str]:
    """Run probe.main in-process with captured output; ``overrides`` replace stack config keys."""
    out, err = io.StringIO(), io.StringIO()
    config = stack_config(args[0], **overrides) if overrides else None
    code = probe.main(list(args), config=config, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_deadline_is_ready_timeout_plus_the_route_margin_and_the_endpoint_the_in_cluster_envoy() -> None:
    assert wake_probe.probe_deadline_seconds(stack_settings("hammer")) == 900 + 120, (
        "Hammer's clients may wait readyTimeoutSeconds plus the route margin: the RepositoryIndex idle_timeout"
    )
    short = stack_settings("hammer", scaleFromZero={"readyTimeoutSeconds": 3, "holdMinReplicasSeconds": 3})
    assert wake_probe.probe_deadline_seconds(short) == 123, "the deadline must follow the stack's readyTimeoutSeconds"
    assert wake_probe.default_endpoint(stack_settings("hammer")) == "supersonic-interlink.cms.svc.cluster.local:8001", (
        "without --endpoint the probe must reach Envoy where CMSSW clients in the cluster do"
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        *[(text, None) for text in ["127.0.0.1:8001", "[::1]:8001", "svc.ns.svc.cluster.local:1"]],
        *[(text, "--endpoint") for text in ["localhost", ":8001", "host:0", "host:http", "::1:8001", "host:70000"]],
        (
            "http://127.0.0.1:8001",
            "^--endpoint 'http://127.0.0.1:8001': drop the scheme, '127.0.0.1:8001': expected HOST:PORT$",
        ),
    ],
)
def test_well_formed_endpoints_are_kept_and_malformed_ones_refused_with_the_expected_form(
    text: str, says: str | None
) -> None:
    if says is None:
        assert wake_probe.parse_endpoint(text) == text
    else:
        with pytest.raises(ValueError, match=says):
            wake_probe.parse_endpoint(text)


def test_an_unreachable_in_cluster_name_says_how_to_port_forward_and_point_endpoint_at_it() -> None:
    unreachable = replace(
        _result(wake_probe.UNREACHABLE, None), endpoint="supersonic-interlink.cms.svc.cluster.local:8001"
    )
    assert wake_probe.describe(unreachable).splitlines()[1] == (
        "  outside the cluster that name does not resolve: kubectl -n cms port-forward service/supersonic-interlink "
        "8001:8001, then --endpoint 127.0.0.1:8001"
    )
    elsewhere = replace(unreachable, endpoint="10.0.0.7:8001")
    assert (
        wake_probe.describe(elsewhere).splitlines()[1]
        == "  check the address, or give Envoy's with --endpoint HOST:PORT"
    )


@pytest.mark.parametrize(
    ("status", "answered", "outcome"),
    [
        *[
            ("CANCELLED", True, R),
            ("CANCELLED", None, R),
            ("DEADLINE_EXCEEDED", False, D),
            ("DEADLINE_EXCEEDED", True, D),
        ],
        *[("UNAVAILABLE", False, U), ("UNAVAILABLE", True, R), ("UNAVAILABLE", None, R), ("UNIMPLEMENTED", True, R)],
        ("RESOURCE_EXHAUSTED", True, R),
    ],
)
def test_grpc_failures_are_classified_by_status_and_whether_the_endpoint_answered(
    status: str, answered: bool | None, outcome: str
) -> None:
    assert wake_probe.classify_failure(status, answered) == outcome, (
        f"{status} (answered={answered}) must be {outcome}: an Envoy whose Triton is down answers UNAVAILABLE "
        f"with its own headers, a dead endpoint gives UNAVAILABLE with none"
    )


def test_every_outcome_has_its_own_exit_code_apart_from_the_config_error_code() -> None:
    codes = [wake_probe.EXIT_CODES[outcome] for outcome in wake_probe.OUTCOMES]
    assert len(set(codes)) == len(codes), "cron and CI tell outcomes apart by exit code alone"
    assert EXIT_USAGE not in codes and 1 not in codes, (
        "2 is a usage/config error (as in render) and 1 a crash; no outcome may share them"
    )
    assert wake_probe.EXIT_CODES[wake_probe.READY] == 0


def _result(outcome: str, wake: float | None, **fields) -> wake_probe.ProbeResult:
    return wake_probe.ProbeResult(
        stack="hammer",
        endpoint="127.0.0.1:8001",
        outcome=outcome,
        started=1_700_000_000.0,
        finished=1_700_000_010.5,
        deadline_seconds=1020,
        ready_timeout_seconds=900,
        elapsed_seconds=wake or 3.0,
        wake_seconds=wake,
        **fields,
    )


@pytest.mark.parametrize(
    ("probes", "wakes", "worst", "code", "says"),
    [
        # one rejection in a run must fail a cron job even if the others woke; a rejection has no wake time
        ([(X, 4.0), (X, 12.0), (R, None), (X, 5.0)], (3, 4.0, 5.0, 12.0), R, 3, "median 5.0s"),
        # unreachable is worse than a timeout, which is worse than not ready
        ([(N, 2.0), (U, None), (D, None)], (1, 2.0, 2.0, 2.0), U, 5, "min 2.0s"),
        # no answered probe means no wake time, not a wake time of zero
        ([(U, None), (U, None)], (0, None, None, None), U, 5, "no probe was answered"),
    ],
)
def test_a_runs_summary_gives_the_answered_wake_times_the_outcomes_and_the_worst_as_exit_code(
    probes: list[tuple[str, float | None]], wakes: tuple, worst: str, code: int, says: str
) -> None:
    summary = wake_probe.summarize([_result(outcome, wake) for outcome, wake in probes])
    assert summary["count"] == len(probes)
    assert summary["wake_seconds"] == dict(zip(("count", "min", "median", "max"), wakes, strict=True))
    assert summary["outcomes"] == {o: sum(o == p for p, _ in probes) for o in wake_probe.OUTCOMES}
    assert (summary["worst_outcome"], summary["exit_code"]) == (worst, code)
    assert says in wake_probe.describe_summary(summary)


@pytest.mark.parametrize("outcome", wake_probe.OUTCOMES)
def test_the_json_record_has_every_field_whatever_the_outcome(outcome: str) -> None:
    answered = outcome in (wake_probe.READY, wake_probe.NOT_READY)
    result = _result(
        outcome,
        2.5 if answered else None,
        models=[{"name": "m", "version": "1", "state": "READY"}] if answered else None,
    )
    record = json.loads(json.dumps(result.record()))
    assert set(record) == PROBE_RECORD_FIELDS, "a cron consumer must be able to read every field of every record"
    assert record["outcome"] == outcome and record["exit_code"] == wake_probe.EXIT_CODES[outcome]
    assert record["started_at"] == "2023-11-14T22:13:20.000Z", "timestamps are UTC ISO 8601, sortable as text"
    assert record["model_count"] == (1 if answered else None)


def test_progress_prints_a_plain_line_every_interval_on_a_log_and_rewrites_one_line_on_a_terminal() -> None:
    stream = io.StringIO()
    progress = wake_probe.Progress(stream, deadline=1020, every=30, live=False)
    progress.start("probe hammer")
    for elapsed in (0.5, 29.9, 30.1, 31.0, 60.2, 95.0):
        progress.tick(elapsed)
    progress.done()
    lines = stream.getvalue().splitlines()
    assert lines == [
        "probe hammer: still waiting, 30s of 17m00s",
        "probe hammer: still waiting, 1m00s of 17m00s",
        "probe hammer: still waiting, 1m35s of 17m00s",
    ], "a log must show the wait is alive without a line per second and without carriage returns"
    stream = io.StringIO()
    progress = wake_probe.Progress(stream, deadline=123, every=30, live=True)
    progress.start("probe hammer")
    for elapsed in (0.1, 0.6, 1.2, 2.5):
        progress.tick(elapsed)
    progress.done()
    text = stream.getvalue()
    assert "\n" not in text, "the live display must stay on one line"
    assert text.count("waiting") == 3, "one update per elapsed second, not per tick"
    assert "waiting 2s of 2m03s" in text and text.endswith("\r\033[K"), "the line is cleared before the result"


@pytest.mark.timeout(60)  # a hang guard: the connection check is bounded by --connect-timeout, not the 1020 s deadline
def test_a_closed_port_is_unreachable_at_once_and_a_silent_one_after_the_connect_timeout(silent_port: int) -> None:
    code, out, _ = run_main("hammer", "--endpoint", f"127.0.0.1:{free_port()}", "--json")
    record = json.loads(out)
    assert code == 5 and record["outcome"] == wake_probe.UNREACHABLE, f"nothing listens there: {record}"
    assert "refused" in record["detail"].lower(), "the operator must see why: the connection was refused"
    code, out, _ = run_main("hammer", "--endpoint", f"127.0.0.1:{silent_port}", "--json", "--connect-timeout", "0.5")
    record = json.loads(out)
    assert code == 5 and record["outcome"] == wake_probe.UNREACHABLE, (
        f"a TCP accept without an HTTP/2 answer is no endpoint (a dead port-forward looks like this): {record}"
    )


def test_a_direct_triton_answers_ready_with_its_models_and_its_wake_time(direct_triton) -> None:
    endpoint = direct_triton(DirectTriton(index_delay=0.3))
    result = wake_probe.probe_once(endpoint, 10, stack="hammer", ready_timeout=900)
    assert result.outcome == wake_probe.READY and result.server_ready is True, result
    assert result.models is not None and result.wake_seconds is not None, (
        f"a ready answer has models and a wake time: {result}"
    )
    assert [m["name"] for m in result.models] == ["particlenet_AK4_PT", "deepmet"], (
        "the models the server reports must be listed"
    )
    assert 0.3 <= result.wake_seconds < 1.3, f"wake time is the RepositoryIndex round trip: {result.wake_seconds}"
    assert result.cold is False and result.start_check == "ServerReady true", (
        "a Triton that answered ServerReady before the call was already serving: a warm answer, not a wake"
    )


class ReadyOnlyBefore(DirectTriton):
    """Answers the ServerReady before the call, then refuses it: a Triton going away right after it answered."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def ServerReady(self, request, context):
        self.asked += 1
        if self.asked > 1:
            context.abort(grpc.StatusCode.UNAVAILABLE, "shutting down")
        return service_pb2.ServerReadyResponse(ready=True)


ENVOY_UNAVAILABLE, SILENT_UNAVAILABLE = (
    (grpc.StatusCode.UNAVAILABLE, (("server", "envoy"),)),
    (grpc.StatusCode.UNAVAILABLE, ()),
)


@pytest.mark.parametrize(
    ("servicer", "outcome", "status", "detail"),
    [
        # a Triton that answers at all is behind Envoy already, ready or not: a warm answer, never passed as ready
        (lambda: DirectTriton(ready=False), N, None, "ServerReady is false (a model failed to load, or Triton is "),
        # the wake was measured: it is kept, and the session is not called ready
        (ReadyOnlyBefore, N, "UNAVAILABLE", "ServerReady failed: shutting down"),
        # UNAVAILABLE sent with response headers (Envoy with no upstream) is the proxy answering, not a dead address
        (lambda: DirectTriton(abort=ENVOY_UNAVAILABLE), R, "UNAVAILABLE", "stand-in refuses"),
        # without any response metadata it reads as unreachable; if this fails, tritonclient no longer keeps the
        # grpc.RpcError as the exception's __context__
        (lambda: DirectTriton(abort=SILENT_UNAVAILABLE), U, "UNAVAILABLE", "connection lost before any response: "),
    ],
    ids=["not-ready", "server-ready-fails", "proxy-answers", "no-response-metadata"],
)
def test_a_direct_tritons_failures_are_told_apart(direct_triton, servicer, outcome, status, detail) -> None:
    result = wake_probe.probe_once(direct_triton(servicer()), 5, stack="hammer")
    assert (result.outcome, result.exit_code, result.grpc_status) == (outcome, wake_probe.EXIT_CODES[outcome], status)
    assert result.detail.startswith(detail) and result.cold is False, result
    assert (result.wake_seconds is not None, result.model_count) == ((True, 2) if outcome == N else (False, None))


def test_a_hung_call_ends_as_deadline_exceeded_at_the_deadline(direct_triton) -> None:
    endpoint = direct_triton(DirectTriton(index_delay=5))
    result = wake_probe.probe_once(endpoint, 0.5, stack="hammer")
    assert result.outcome == wake_probe.DEADLINE_EXCEEDED and result.exit_code == 4, result
    assert 0.45 <= result.elapsed_seconds < 1.5, f"the client's deadline must end the wait: {result.elapsed_seconds}"
    assert "no answer within the 0s deadline" in wake_probe.describe(result)


def test_a_connection_lost_while_waiting_is_unreachable(direct_triton) -> None:
    servicer = DirectTriton(index_delay=5)
    endpoint = direct_triton(servicer)
    stopper = threading.Timer(0.5, lambda: servicer.server and servicer.server.stop(0))
    stopper.start()
    try:
        result = wake_probe.probe_once(endpoint, 5, stack="hammer")
    finally:
        stopper.cancel()
    assert result.outcome == wake_probe.UNREACHABLE and "lost" in result.detail, (
        f"an Envoy restarting mid-wait gave no answer; it must not count as a proxy rejection: {result}"
    )


def test_an_invalid_setting_is_a_one_line_config_error_with_exit_code_2() -> None:
    code, _, err = run_main("hammer", scaleFromZero={"readyTimeoutSeconds": 0})
    assert code == 2, "a stack the program would refuse gives no deadline to probe with"
    assert "scaleFromZero.readyTimeoutSeconds" in err, f"the problem must name the key: {err}"
    assert err.startswith("probe: stack hammer: ") and len(err.splitlines()) == 1, err


def test_repeat_prints_each_probe_and_a_summary_and_record_appends_every_attempt_as_printed(
    direct_triton, tmp_path
) -> None:
    endpoint = direct_triton(DirectTriton())
    history = tmp_path / "history" / "wakes.jsonl"
    history.parent.mkdir()
    history.write_text(json.dumps({"kind": "probe", "earlier": True}) + "\n")
    args = ("hammer", "--endpoint", endpoint, "--json", "--repeat", "3", "--interval", "0", "--record", str(history))
    code, out, _ = run_main(*args)
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["kind"] for r in records] == ["probe", "probe", "probe", "summary"], (
        "--json with --repeat is JSON Lines: one record per probe, then the summary"
    )
    summary = records[-1]
    assert summary["count"] == 3 and summary["outcomes"][wake_probe.READY] == 3 and code == 0
    assert summary["wake_seconds"]["min"] <= summary["wake_seconds"]["median"] <= summary["wake_seconds"]["max"]
    assert (summary["cold"], summary["warm"]) == (0, 3), "the summary counts cold wakes and warm answers apart"
    kept = [json.loads(line) for line in history.read_text().splitlines()]
    assert kept[0] == {"kind": "probe", "earlier": True}, "--record appends; it never truncates"
    assert kept[1:] == records[:-1], (
        "every attempt of a repeat is recorded, exactly as --json prints it, not the summary"
    )


def test_an_interrupted_repeat_prints_its_summary_and_a_lost_record_exits_7(direct_triton, tmp_path, monkeypatch):
    endpoint, real, calls = direct_triton(DirectTriton()), wake_probe.probe_once, []

    def once_then_interrupted(*args, **kwargs) -> wake_probe.ProbeResult:
        calls.append(args)
        if len(calls) > 1:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(wake_probe, "probe_once", once_then_interrupted)
    code, out, err = run_main("hammer", "--endpoint", endpoint, "--repeat", "3", "--interval", "0")
    assert code == 130 and err.endswith("probe: interrupted\n"), "Ctrl-C is exit 130, said in one line"
    assert out.splitlines()[-1].startswith("summary: 1 probe(s)"), "the probes done before Ctrl-C are summarized"
    monkeypatch.setattr(wake_probe, "probe_once", real)

    def full_disk(*args) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(wake_history, "append", full_disk)
    code, _, err = run_main("hammer", "--endpoint", endpoint, "--record", str(tmp_path / "wakes.jsonl"))
    assert code == 7 and "--record" in err and "could not append" in err and "No space left" in err, err


SECONDS = "expected a finite number of seconds"


BAD_OPTIONS = [
    *[(["--interval", bad], f"argument --interval: {SECONDS} >= 0, got {bad!r}") for bad in ("nan", "inf", "-1")],
    *[(["--connect-timeout", bad], f"--connect-timeout: {SECONDS} > 0, got {bad!r}") for bad in ("nan", "inf", "0")],
    (["--progress-every", "soon"], f"argument --progress-every: {SECONDS} > 0"),
    *[(["--repeat", bad], f"argument --repeat: expected a whole number >= 1, got {bad!r}") for bad in ("0", "2.5")],
    (["--endpoint", ""], "--endpoint '': expected HOST:PORT, e.g. 127.0.0.1:8001"),
    (["--endpoint", "host:99999"], "--endpoint 'host:99999': port '99999' is not a number from 1 to 65535"),
    (["--record", ""], "argument --record: is empty: expected a path"),
    # checked before the probe: a wake measured for 15 minutes and then lost is worse than no probe
    (["--record", "/no/such/dir/f"], "--record '/no/such/dir/f': cannot append: No such file or directory"),
    (["--bogus"], "unrecognized arguments: --bogus"),
]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        *[(["hammer", *args], says) for args, says in BAD_OPTIONS],
        ([], "probe: the following arguments are required: stack (see `./supersonic probe --help`)"),
        # config problems exit 2 like render: one line naming the stack and the ones there are
        (
            ["no-such-stack"],
            "stack 'no-such-stack': no file stacks/Pulumi.no-such-stack.yaml (stacks: geddes-gpu, hammer)",
        ),
    ],
)
def test_bad_probe_options_or_stacks_are_one_line_usage_errors_with_exit_code_2(args: list[str], says: str) -> None:
    code, out, err = run_main(*args)
    assert code == 2 and out == "", f"{args}: exit 2 before any probe"
    assert len(err.splitlines()) == 1 and says in err and err.startswith("probe: "), (
        f"{args}: one line naming the option, the value and what is allowed, not a usage dump: {err!r}"
    )


# DNS refreshes every 50 ms instead of 1 s, so a Triton that comes up is seen within the Lua filter's next round.
FAST_DNS = {"dnsRefreshMs": 50}


def short_wake(seconds: int) -> dict[str, int]:
    return {"readyTimeoutSeconds": seconds, "holdMinReplicasSeconds": seconds}


@pytest.mark.parametrize(
    ("chart", "status", "message"),
    [
        (None, "UNAVAILABLE", "no healthy upstream"),
        (OLDER_GENERATION_CHART, "CANCELLED", ""),
    ],
    ids=["inferenceServer-generation", "triton-generation"],
)
def test_a_triton_that_never_comes_up_is_rejected_by_the_lua_filter_at_the_ready_timeout(chart, status, message):
    settings = loopback_settings("hammer", scale_from_zero=short_wake(2), envoy=FAST_DNS, chart=chart)
    with loopback_stack(settings, ready=False) as stack:
        code, out, err = run_main("hammer", "--endpoint", stack.envoy.target, "--json", scaleFromZero=short_wake(2))
        wakes = stack.admission.wakes
    record = json.loads(out)
    assert code == 3 and record["outcome"] == wake_probe.REJECTED, f"no Triton within the timeout: {record}\n{err}"
    assert record["grpc_status"] == status, f"the {settings.generation.name} generation's Lua filter gives up so"
    assert record["detail"] == message, "the client sees the filter's own message (none from the older filter)"
    assert record["deadline_seconds"] == 122, "a short stack timeout must shorten the probe's deadline too"
    # The Lua filter counts whole seconds (os.time), so it gives up between 1 and 2 s after the wake.
    assert 1.0 <= record["elapsed_seconds"] < 4.0, (
        f"the rejection comes at readyTimeoutSeconds (2 s), not at the deadline: {record['elapsed_seconds']}"
    )
    assert record["wake_seconds"] is None and wakes == 1, (
        "the probe's RepositoryIndex asked for one wake; its ServerReady before the call asked for none"
    )
    assert record["cold"] is True
    (wake,) = wake_history.parse_lines([wake_history.encode_line(record)]).wakes
    assert wake_report.wake_time(wake) == wake_report.WakeTime(record["elapsed_seconds"], cut_off=True), (
        "the Lua filter's answer at the timeout is a wake cut off by it, for the report"
    )


def test_a_warm_release_is_ready_at_once_and_an_envoy_whose_triton_is_gone_rejects() -> None:
    settings = loopback_settings(
        "hammer",
        envoy={
            **FAST_DNS,
            "repositoryIndexRetry": {"numRetries": 1, "perTryTimeoutMs": 500, "backOffBaseMs": 10, "backOffMaxMs": 20},
        },
    )
    with loopback_stack(settings, ready=True) as stack:
        warm = wake_probe.probe_once(stack.envoy.target, 1020, stack="hammer", ready_timeout=900)
        stack.triton.crash()  # still in DNS, so the Lua filter lets the call through to a dead upstream
        result = wake_probe.probe_once(stack.envoy.target, 10, stack="hammer", connect_timeout=2)
    assert warm.outcome == wake_probe.READY and warm.wake_seconds is not None and warm.wake_seconds < 1.0, (
        f"a Triton already up answers on the Lua filter's first look: {warm}"
    )
    assert warm.cold is False and warm.start_check == "ServerReady true", (
        "through Envoy, a Triton already up answers the ServerReady before the call: a warm answer"
    )
    assert result.outcome == wake_probe.REJECTED and result.grpc_status == "UNAVAILABLE", (
        f"Envoy answered (UNAVAILABLE from the proxy); calling that unreachable would send the operator "
        f"to check the wrong thing: {result}"
    )
