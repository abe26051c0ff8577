"""The computed Envoy configuration, run by the real Envoy on loopback with shrunk timeouts, does what the release
relies on: holding a wake, retrying, buffering, ejecting a failing Triton."""

from __future__ import annotations

import time
from concurrent import futures

import grpc
import pytest
from chart_fixtures import fixture_chart
from loopback import OLDER_GENERATION_CHART, infer, loopback_settings, loopback_stack, triton_client, wait_until
from tritonclient.utils import InferenceServerException

from supersonic_interlink.contract import NEWEST
from supersonic_interlink.engine.cluster import LOOPBACK
from supersonic_interlink.rehearse.run import chart_parts

MIB = 1024 * 1024
CLUSTER = f"cluster.{NEWEST.inference_cluster}"

FAST = {
    # A DNS refresh every 50 ms instead of 1 s, and back-offs a tenth as long: same policy, shorter waits.
    "dnsRefreshMs": 50,
    "inferenceRetry": {"backOffBaseMs": 20, "backOffMaxMs": 200},
    "repositoryIndexRetry": {"backOffBaseMs": 20, "backOffMaxMs": 100},
}


def fast_settings(ready_timeout_seconds: int = 5, chart=None, **envoy):
    return loopback_settings(
        "hammer", scale_from_zero={"readyTimeoutSeconds": ready_timeout_seconds}, envoy={**FAST, **envoy}, chart=chart
    )


@pytest.fixture(scope="module")
def warm():
    with loopback_stack(fast_settings()) as stack:
        yield stack


@pytest.fixture
def triton(warm):
    warm.triton.reset_counts()
    yield warm.triton
    warm.triton.reset_counts()


def chart_filter(settings, tmp_path) -> str:
    return chart_parts(settings, fixture_chart("inference-server", tmp_path), 9)[1]


@pytest.mark.parametrize(("own_filter", "wakes"), [(False, 1), (True, 2)], ids=["stand-in filter", "chart's filter"])
def test_a_repository_index_sent_while_triton_is_down_is_held_until_it_comes_up(own_filter, wakes, tmp_path):
    settings = fast_settings()
    lua = chart_filter(settings, tmp_path) if own_filter else None
    with loopback_stack(settings, ready=False, wake_delay_seconds=0.8, lua=lua) as stack:
        client = triton_client(stack.envoy.target)
        started = time.monotonic()
        index = client.get_model_repository_index(client_timeout=10)
        held = time.monotonic() - started
        assert [m.name for m in index.models] == ["standin"], "the held call must be answered by Triton itself"
        assert held >= 0.8, f"answered after {held:.2f} s, before the stand-in Triton was up: nothing was held"
        assert stack.admission.wakes == wakes, "woken; the chart's filter renews the hold once Triton is there"
        assert stack.admission.sleeps >= 1, "the wait is paced by the sidecar's /sleep"
        assert stack.triton.calls["RepositoryIndex"] == 1, "held, not failed and retried by the client"


@pytest.mark.parametrize(
    ("chart", "own_filter", "status", "message"),
    [
        (None, False, "StatusCode.UNAVAILABLE", "no healthy upstream"),
        (OLDER_GENERATION_CHART, False, "StatusCode.CANCELLED", ""),
        (None, True, "StatusCode.UNAVAILABLE", "no healthy upstream"),
    ],
    ids=["inferenceServer-generation", "triton-generation", "chart's filter"],
)
def test_a_repository_index_is_refused_when_no_triton_comes_up_in_time(chart, own_filter, status, message, tmp_path):
    settings = fast_settings(ready_timeout_seconds=1, chart=chart)
    lua = chart_filter(settings, tmp_path) if own_filter else None
    with loopback_stack(settings, ready=False, lua=lua) as stack:
        client = triton_client(stack.envoy.target)
        started = time.monotonic()
        with pytest.raises(InferenceServerException) as failure:
            client.get_model_repository_index(client_timeout=10)
        waited = time.monotonic() - started
        answer = (failure.value.status(), failure.value.message())
        assert answer == (status, message), f"the {settings.generation.name} generation's answer to a timed-out wake"
        assert waited < 4, f"held {waited:.1f} s, well past readyTimeoutSeconds (1 s)"
        assert stack.admission.wakes == 1


@pytest.mark.parametrize(
    "status", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.RESOURCE_EXHAUSTED]
)
def test_an_inference_call_survives_triton_failing_with(status, triton, warm):
    triton.fail_next(3, status)
    wakes = warm.admission.wakes
    assert infer(triton_client(warm.envoy.target), 64) == 64, f"three {status.name} answers must be retried"
    assert triton.calls["ModelInfer"] == 4, "three failed attempts and the one that succeeded"
    assert warm.admission.wakes == wakes, "only RepositoryIndex starts a wake; inference goes straight through"


def test_a_31_mib_request_is_replayed_whole_on_retry_and_a_33_mib_one_stops_at_envoy(triton, warm):
    size = 31 * MIB
    triton.fail_next(1, grpc.StatusCode.UNAVAILABLE)
    assert infer(triton_client(warm.envoy.target), size, timeout=30) == size
    assert triton.infer_sizes == [size, size], "the buffer holds the whole body: the retry sends all of it again"
    triton.reset_counts()
    too_large = warm.envoy.stat("http.ingress_grpc.downstream_rq_too_large")
    with pytest.raises(InferenceServerException, match="Payload Too Large"):
        infer(triton_client(warm.envoy.target), 33 * MIB, timeout=30)
    assert triton.infer_sizes == [], "an over-limit request must stop at Envoy's buffer"
    assert warm.envoy.stat("http.ingress_grpc.downstream_rq_too_large") == too_large + 1


def test_a_failing_triton_among_two_is_ejected_and_every_call_is_served_by_the_healthy_one():
    with loopback_stack(fast_settings(), tritons=2) as stack:
        good, bad = stack.tritons
        bad.fail_next(1000, grpc.StatusCode.UNAVAILABLE)
        client = triton_client(stack.envoy.target)
        for _ in range(12):
            assert infer(client, 8) == 8, "every call must succeed, retried onto the healthy Triton"
        assert good.calls["ModelInfer"] == 12, "each call completed exactly once, on the healthy Triton"
        assert bad.calls["ModelInfer"] >= 5, "the failing Triton was tried (consecutive5xx needs five failures)"
        # UNAVAILABLE is a 503: both the 5xx and the gateway-failure rule count it; whichever reaches 5 ejects.
        ejected = f"{CLUSTER}.outlier_detection.ejections_enforced_total"
        wait_until(lambda: stack.envoy.stat(ejected), 2.0, "the failing host to be ejected")
        assert stack.envoy.stat(f"{CLUSTER}.outlier_detection.ejections_active") == 1, (
            "one host of two may be ejected under maxEjectionPercent 50"
        )
        flags = {
            line.rsplit("::", 1)[-1]
            for line in stack.envoy.admin("/clusters").splitlines()
            if line.startswith(f"{NEWEST.inference_cluster}::{LOOPBACK}:{bad.port}::health_flags")
        }
        assert flags == {"/failed_outlier_check"}, "the failing host, and only it, is marked ejected"
        assert stack.envoy.stat(f"{CLUSTER}.membership_healthy") == 1


@pytest.mark.parametrize("max_retries, all_survive", [(1024, True), (3, False)])
def test_concurrent_calls_during_a_triton_restart_survive_only_when_retries_are_not_capped(max_retries, all_survive):
    clients = 24
    settings = fast_settings(circuitBreakers={"maxRetries": max_retries})
    with loopback_stack(settings) as stack:
        stack.triton.infer_delay_seconds = 0.05
        channels = [triton_client(stack.envoy.target) for _ in range(clients)]
        stack.triton.crash()

        def call(client):
            try:
                return infer(client, 8, timeout=15) == 8
            except InferenceServerException:
                return False

        with futures.ThreadPoolExecutor(clients) as pool:
            results = [pool.submit(call, client) for client in channels]
            # Triton comes back only once every call has reached Envoy and met the crash (a retry or an overflowed
            # one each); a fixed pause would let a loaded machine start some calls after the restart.
            wait_until(
                lambda: (
                    stack.envoy.stat("http.ingress_grpc.downstream_rq_total") >= clients
                    and stack.envoy.stat(f"{CLUSTER}.upstream_rq_retry")
                    + stack.envoy.stat(f"{CLUSTER}.upstream_rq_retry_overflow")
                    >= clients
                ),
                10,
                "every call to meet the crashed Triton",
            )
            stack.triton.come_up()
            survived = sum(r.result(timeout=20) for r in results)
        overflow = stack.envoy.stat(f"{CLUSTER}.upstream_rq_retry_overflow")
        if all_survive:
            assert (survived, overflow) == (clients, 0), (
                f"with maxRetries {max_retries}, {clients - survived} clients failed and {overflow} retries overflowed"
            )
        else:
            assert overflow > 0 and survived < clients, (
                "Envoy's default of 3 concurrent retries must show here as overflowing retries and failed clients"
            )
