"""probe: the cold-start probe, from its pure parts to the real command through the real Envoy (tests/loopback.py)."""

from __future__ import annotations

import io
import json
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from unittest.mock import Mock

import grpc
import pytest
from conftest import stack_config
from loopback import OLDER_GENERATION_CHART, loopback_settings, loopback_stack
from tritonclient.grpc import service_pb2, service_pb2_grpc

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.cli import probe
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake import probe as wake_probe
from supersonic_interlink.wake import report as wake_report

R, N, X, D = wake_probe.REJECTED, wake_probe.NOT_READY, wake_probe.READY, wake_probe.DEADLINE_EXCEEDED
U, CODES = "unreachable", wake_history.EXIT_CODES


class DirectTriton(service_pb2_grpc.GRPCInferenceServiceServicer):
    """A Triton answering directly (no Envoy): the parts of a session the probe uses."""

    def __init__(self, *, ready: bool | None = True, index_delay: float = 0.0, abort: tuple | None = None):
        self.ready, self.index_delay, self.abort = ready, index_delay, abort
        self.released, self.asked = threading.Event(), 0
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))

    def RepositoryIndex(self, request, context):
        if self.abort:
            code, trailers = self.abort
            context.set_trailing_metadata(trailers)
            context.abort(code, "stand-in refuses")
        self.released.wait(self.index_delay)
        index = service_pb2.RepositoryIndexResponse.ModelIndex
        models = [index(name=name, version="1", state="READY") for name in ("particlenet_AK4_PT", "deepmet")]
        return service_pb2.RepositoryIndexResponse(models=models)

    def ServerReady(self, request, context):
        self.asked += 1
        if self.ready is None and self.asked > 1:  # answers the check before the call, then goes away
            context.abort(grpc.StatusCode.UNAVAILABLE, "shutting down")
        return service_pb2.ServerReadyResponse(ready=self.ready is not False)


@pytest.fixture
def direct_triton() -> Iterator[Callable[[DirectTriton], str]]:
    """Start a DirectTriton on a free loopback port; returns its endpoint. Stopped after the test."""
    started: list[DirectTriton] = []

    def start(servicer: DirectTriton) -> str:
        service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(servicer, servicer.server)
        port = servicer.server.add_insecure_port("127.0.0.1:0")
        servicer.server.start()
        started.append(servicer)
        return f"127.0.0.1:{port}"

    yield start
    for servicer in started:
        servicer.released.set()
        servicer.server.stop(0).wait(5)


def run_main(*args: str, **overrides) -> tuple[int, str, str]:
    """Run probe.main in-process with captured output; ``overrides`` replace stack config keys."""
    out, err = io.StringIO(), io.StringIO()
    config = stack_config(args[0], **overrides) if overrides else None
    code = probe.main(list(args), config=config, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("text", "kept"),
    [(t, True) for t in ["127.0.0.1:8001", "[::1]:8001", "svc.ns.svc.cluster.local:1"]]
    + [(t, False) for t in ["localhost", ":8001", "host:0", "host:http", "::1:8001", "host:70000", "http://h:80"]],
)
def test_well_formed_endpoints_are_kept_and_malformed_ones_refused_with_the_expected_form(text: str, kept: bool):
    if kept:
        assert wake_probe.parse_endpoint(text) == text
    else:
        with pytest.raises(ValueError, match=f"^--endpoint '{text}': expected HOST:PORT, a port from 1 to 65535"):
            wake_probe.parse_endpoint(text)


def test_grpc_failures_are_classified_by_whether_the_endpoint_answered_and_each_outcome_has_its_own_exit_code():
    # an Envoy whose Triton is down answers UNAVAILABLE with its own headers, a dead endpoint with none
    expected = {("CANCELLED", True): R, ("CANCELLED", None): R, ("DEADLINE_EXCEEDED", False): D}
    expected |= {("DEADLINE_EXCEEDED", True): D, ("UNAVAILABLE", False): U, ("UNAVAILABLE", True): R}
    expected |= {("UNAVAILABLE", None): R, ("RESOURCE_EXHAUSTED", True): R}
    assert {key: wake_probe.classify_failure(*key) for key in expected} == expected
    codes = [CODES[outcome] for outcome in wake_history.OUTCOMES]
    assert len(set(codes)) == len(codes) and EXIT_USAGE not in codes and 1 not in codes and CODES[X] == 0


@pytest.mark.parametrize("outcome", wake_history.OUTCOMES)
def test_the_json_record_has_every_field_whatever_the_outcome(outcome: str) -> None:
    answered = outcome in (X, N)
    result = wake_probe.ProbeResult(
        "hammer", "127.0.0.1:8001", outcome, 1_700_000_000.0, 1_700_000_010.5, 1020, 900, 2.5 if answered else 3.0
    )
    if answered:
        result.wake_seconds, result.models = 2.5, [{"name": "m", "version": "1", "state": "READY"}]
    record = json.loads(json.dumps(result.record()))
    assert set(record) == {
        *("kind", "stack", "endpoint", "outcome", "exit_code", "started_at", "finished_at", "cold", "start_check"),
        *("wake_seconds", "elapsed_seconds", "deadline_seconds", "ready_timeout_seconds", "grpc_status", "detail"),
        *("server_ready", "model_count", "models"),
    }, "a cron consumer must be able to read every field of every record"
    model_count = 1 if answered else None
    assert (record["outcome"], record["exit_code"], record["model_count"]) == (outcome, CODES[outcome], model_count)
    assert record["started_at"] == "2023-11-14T22:13:20.000Z", "timestamps are UTC ISO 8601, sortable as text"


@pytest.mark.timeout(60)  # a hang guard: the connection check is bounded by --connect-timeout, not the 1020 s deadline
def test_a_closed_port_and_a_silent_one_are_unreachable() -> None:
    with socket.socket() as closed, socket.socket() as silent:
        closed.bind(("127.0.0.1", 0))
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # accepts TCP and never says a word, like a port-forward to a vanished pod
        for sock, says in ((closed, "refused"), (silent, "")):
            endpoint = f"127.0.0.1:{sock.getsockname()[1]}"
            code, out, _ = run_main("hammer", "--endpoint", endpoint, "--json", "--connect-timeout", "0.5")
            record = json.loads(out)
            assert (code, record["outcome"], record["cold"]) == (5, U, None), record
            assert says in record["detail"].lower(), "the operator must see why"


@pytest.mark.parametrize(
    ("servicer", "outcome", "status", "detail"),
    [
        # a Triton that answers at all is behind Envoy already, ready or not: a warm answer, never passed as ready
        ({"ready": False}, N, None, "ServerReady false: a model failed to load"),
        # the wake was measured: it is kept, and the session is not called ready
        ({"ready": None}, N, "UNAVAILABLE", "ServerReady failed: shutting down"),
        # UNAVAILABLE sent with response headers (Envoy with no upstream) is the proxy answering, not a dead address
        ({"abort": (grpc.StatusCode.UNAVAILABLE, (("server", "envoy"),))}, R, "UNAVAILABLE", "stand-in refuses"),
        # without response metadata it reads as unreachable (tritonclient keeps the grpc.RpcError as __context__)
        ({"abort": (grpc.StatusCode.UNAVAILABLE, ())}, U, "UNAVAILABLE", "connection lost before any response: "),
    ],
    ids=["not-ready", "server-ready-fails", "proxy-answers", "no-response-metadata"],
)
def test_a_direct_tritons_failures_are_told_apart(direct_triton, servicer, outcome, status, detail) -> None:
    result = wake_probe.probe_once(direct_triton(DirectTriton(**servicer)), 5, stack="hammer")
    assert (result.outcome, result.grpc_status, result.cold) == (outcome, status, False), result
    assert result.detail.startswith(detail), result
    assert (result.wake_seconds is not None, len(result.models or [])) == ((True, 2) if outcome == N else (False, 0))


def test_a_hung_call_ends_at_the_deadline_and_a_connection_lost_while_waiting_is_unreachable(direct_triton) -> None:
    result = wake_probe.probe_once(direct_triton(DirectTriton(index_delay=5)), 0.5, stack="hammer")
    assert result.outcome == D and 0.45 <= result.elapsed_seconds < 1.5, f"the deadline ends the wait: {result}"
    assert "no answer within the 0s deadline" in wake_probe.describe(result)
    servicer = DirectTriton(index_delay=5)
    endpoint = direct_triton(servicer)
    stopper = threading.Timer(0.5, lambda: servicer.server.stop(0))
    stopper.start()
    try:
        result = wake_probe.probe_once(endpoint, 5, stack="hammer")
    finally:
        stopper.cancel()
    # an Envoy restarting mid-wait gave no answer; it must not count as a proxy rejection
    assert result.outcome == U and "lost" in result.detail, result


def test_repeat_prints_and_records_every_attempt_and_exits_with_the_worst_outcome(direct_triton, tmp_path) -> None:
    endpoint = direct_triton(DirectTriton())
    history = tmp_path / "wakes.jsonl"
    history.write_text(json.dumps({"kind": "probe", "earlier": True}) + "\n")
    args = ("hammer", "--endpoint", endpoint, "--json", "--repeat", "3", "--interval", "0", "--record", str(history))
    code, out, _ = run_main(*args)
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [(r["outcome"], r["cold"]) for r in records] == [(X, False)] * 3, "one record per probe"
    kept = [json.loads(line) for line in history.read_text().splitlines()]
    assert kept == [{"kind": "probe", "earlier": True}, *records], "--record appends exactly what --json prints"


def test_the_worst_outcome_decides_the_exit_code_ctrl_c_is_130_and_a_lost_record_7(tmp_path, monkeypatch) -> None:
    outcomes = [wake_probe.ProbeResult("h", "e", outcome, 0, 0, 1, 1, 0) for outcome in (X, N, U, R)]
    monkeypatch.setattr(wake_probe, "probe_once", Mock(side_effect=outcomes))
    code, out, _ = run_main("hammer", "--repeat", "4", "--interval", "0")
    assert code == CODES[U] and len(out.splitlines()) == 4, "ready < not ready < rejected < unreachable: worst wins"
    monkeypatch.setattr(wake_probe, "probe_once", Mock(side_effect=KeyboardInterrupt))
    assert run_main("hammer") == (130, "", "probe: interrupted\n"), "Ctrl-C is exit 130, said in one line"
    monkeypatch.setattr(wake_probe, "probe_once", Mock(return_value=outcomes[0]))
    monkeypatch.setattr(wake_history, "append", Mock(side_effect=OSError(28, "No space left on device")))
    code, _, err = run_main("hammer", "--record", str(tmp_path / "wakes.jsonl"))
    assert code == 7 and "--record" in err and "could not append" in err and "No space left" in err, err


SECONDS = "expected a finite number of seconds"
BAD_OPTIONS = [
    *[(["--interval", bad], f"argument --interval: {SECONDS} >= 0, got {bad!r}") for bad in ("nan", "inf", "-1")],
    *[(["--connect-timeout", bad], f"--connect-timeout: {SECONDS} > 0, got {bad!r}") for bad in ("nan", "0")],
    (["--progress-every", "soon"], f"argument --progress-every: {SECONDS} > 0"),
    *[(["--repeat", bad], f"argument --repeat: expected a whole number >= 1, got {bad!r}") for bad in ("0", "2.5")],
    (["--endpoint", ""], "--endpoint '': expected HOST:PORT, a port from 1 to 65535, e.g. 127.0.0.1:8001"),
    (["--record", ""], "argument --record: is empty: expected a path"),
    # checked before the probe: a wake measured for 15 minutes and then lost is worse than no probe
    (["--record", "/no/such/dir/f"], "--record '/no/such/dir/f': cannot append: No such file or directory"),
    (["--bogus"], "unrecognized arguments: --bogus"),
]
NO_DEADLINE = {"scaleFromZero": {"readyTimeoutSeconds": 0}}  # a stack the program would refuse: no deadline to use


@pytest.mark.parametrize(
    ("args", "overrides", "says"),
    [
        *[(["hammer", *args], {}, says) for args, says in BAD_OPTIONS],
        ([], {}, "probe: the following arguments are required: stack (see `./supersonic probe --help`)"),
        (["no-such-stack"], {}, "stack 'no-such-stack': no file stacks/Pulumi.no-such-stack.yaml (stacks: geddes-gpu"),
        (["hammer"], NO_DEADLINE, "readyTimeoutSeconds = 0: expected a whole number from 1"),
    ],
)
def test_bad_probe_options_or_stacks_are_one_line_usage_errors_with_exit_code_2(args, overrides, says) -> None:
    code, out, err = run_main(*args, **overrides)
    assert code == 2 and out == "", f"{args}: exit 2 before any probe"
    # one line naming the option or key, the value and what is allowed, not a usage dump
    assert len(err.splitlines()) == 1 and says in err and err.startswith("probe: "), err


@pytest.mark.parametrize(
    ("chart", "status", "message"),
    [(None, "UNAVAILABLE", "no healthy upstream"), (OLDER_GENERATION_CHART, "CANCELLED", "")],
    ids=["inferenceServer-generation", "triton-generation"],
)
def test_a_triton_that_never_comes_up_is_rejected_by_the_lua_filter_at_the_ready_timeout(chart, status, message):
    # DNS refreshes every 50 ms instead of 1 s, so a Triton that comes up is seen within the Lua filter's next round.
    short = {"readyTimeoutSeconds": 2, "holdMinReplicasSeconds": 2}
    settings = loopback_settings("hammer", scale_from_zero=short, envoy={"dnsRefreshMs": 50}, chart=chart)
    with loopback_stack(settings, ready=False) as stack:
        code, out, err = run_main("hammer", "--endpoint", stack.envoy.target, "--json", scaleFromZero=short)
        wakes = stack.admission.wakes
    record = json.loads(out)
    assert code == 3 and record["outcome"] == R, f"no Triton within the timeout: {record}\n{err}"
    assert (record["grpc_status"], record["detail"]) == (status, message), "the generation's Lua filter gives up so"
    assert record["deadline_seconds"] == 122, "a short stack timeout must shorten the probe's deadline too"
    # The Lua filter counts whole seconds (os.time), so it gives up between 1 and 2 s after the wake.
    assert 1.0 <= record["elapsed_seconds"] < 4.0, "the rejection comes at readyTimeoutSeconds, not at the deadline"
    # the probe's RepositoryIndex asked for one wake; its ServerReady before the call asked for none
    assert record["wake_seconds"] is None and record["cold"] is True and wakes == 1, record
    (wake,) = wake_history.parse_lines([wake_history.encode_line(record)]).wakes
    # for the report, the Lua filter's answer at the timeout is a wake it cut off
    assert wake_report.wake_time(wake) == wake_report.WakeTime(record["elapsed_seconds"], cut_off=True)


def test_a_warm_release_is_ready_at_once_and_an_envoy_whose_triton_is_gone_rejects() -> None:
    retry = {"numRetries": 1, "perTryTimeoutMs": 500, "backOffBaseMs": 10, "backOffMaxMs": 20}
    settings = loopback_settings("hammer", envoy={"dnsRefreshMs": 50, "repositoryIndexRetry": retry})
    with loopback_stack(settings, ready=True) as stack:
        warm = wake_probe.probe_once(stack.envoy.target, 1020, stack="hammer", ready_timeout=900)
        stack.triton.crash()  # still in DNS, so the Lua filter lets the call through to a dead upstream
        result = wake_probe.probe_once(stack.envoy.target, 10, stack="hammer", connect_timeout=2)
    assert warm.outcome == X and warm.wake_seconds is not None and warm.wake_seconds < 1.0, warm
    assert warm.cold is False and warm.start_check == "ServerReady true", "through Envoy: a warm answer"
    # Envoy answered (UNAVAILABLE from the proxy): calling that unreachable sends the operator to the wrong thing
    assert result.outcome == R and result.grpc_status == "UNAVAILABLE", result
