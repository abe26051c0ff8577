"""A whole cold start rehearsed on the local control plane (``supersonic_interlink.rehearse``), hammer's settings with
timeouts scaled: the probe's RepositoryIndex through the real Envoy with the computed configuration, the tests'
inferenceServer chart rendered by Helm (its Lua filter, its admission sidecar as a process, its Triton Deployment and
ScaledObject), the real KEDA operator, and kwok holding each Triton pod Pending for a scripted Slurm queue delay."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chart_fixtures import fixture_chart
from e2e_harness import REHEARSAL_NAMESPACE, kubectl_json

from supersonic_interlink.config import PROJECT, Settings, load_settings
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.cluster import LocalCluster, wait_until
from supersonic_interlink.rehearse.run import Rehearsal, rehearsal
from supersonic_interlink.wake.probe import READY, REJECTED, describe

pytestmark = pytest.mark.timeout(900)

READY_TIMEOUT = 20
HOLD = 35
MARGIN = 3
SCALE_DOWN_WAIT = HOLD + 60  # the hold, then at most two of KEDA's 30 s polls


def rehearsal_settings() -> Settings:
    """The hammer stack in the rehearsal's namespace, its load metric selecting that namespace, timeouts scaled."""
    config = load_stack_config("hammer")
    config[f"{PROJECT}:namespace"] = REHEARSAL_NAMESPACE
    load = json.loads(config[f"{PROJECT}:serverLoad"])
    load["metric"] = load["metric"].replace('namespace=~"cms"', f'namespace=~"{REHEARSAL_NAMESPACE}"')
    config[f"{PROJECT}:serverLoad"] = json.dumps(load)
    sfz = json.loads(config[f"{PROJECT}:scaleFromZero"])
    sfz.update(readyTimeoutSeconds=READY_TIMEOUT, holdMinReplicasSeconds=HOLD)
    config[f"{PROJECT}:scaleFromZero"] = json.dumps(sfz)
    return load_settings(config)


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> float:
    """The monotonic time ``condition`` was first seen to hold."""
    return float(wait_until(lambda: condition() and time.monotonic(), timeout, what, interval=0.2))


def replicas(run: Rehearsal) -> int:
    name = run.settings.generation.inference_object_name(run.settings.release.name)
    return int(kubectl_json(run.cluster, "get", "deployment", name, "-n", run.settings.namespace)["spec"]["replicas"])


def scaled_to_zero(run: Rehearsal) -> bool:
    """No replica, no DNS record, and Envoy's view caught up (its next DNS refresh, up to dnsRefreshMs later): the
    one Triton stand-in outlives the pods, so a wake in that window would otherwise find it warm."""
    members = f"cluster.{run.settings.generation.inference_cluster}.membership_total"
    return replicas(run) == 0 and not run.published and run.envoy.stat(members) == 0


def test_a_cold_start_from_zero_under_the_real_keda_operator(cluster: LocalCluster, tmp_path: Path) -> None:
    settings = rehearsal_settings()
    numbers: dict[str, float | str] = {}
    started = time.monotonic()
    chart = fixture_chart("inference-server", tmp_path / "chart")
    with rehearsal(cluster, settings, tmp_path / "rehearsal", stack="hammer", chart=chart) as run:
        numbers["keda_start_s"] = time.monotonic() - started
        assert replicas(run) == 0, "scale from zero starts at zero"

        # 1. A wake with no queue delay: served; what it took is the overhead around the queue.
        run.scripted.append(0.0)
        calibration = run.wake()
        assert calibration.outcome == READY, describe(calibration)
        assert calibration.cold is True, "no Triton answered before the call: this was a wake"
        assert calibration.wake_seconds is not None
        overhead = calibration.wake_seconds
        numbers["overhead_s"] = overhead
        assert overhead < READY_TIMEOUT - 1 - MARGIN, "the overhead alone leaves no room for a queue"
        assert run.triton.calls.get("RepositoryIndex") == 1, "answered by Triton itself, once"
        (first,) = run.pods.values()

        # 2. No load: the hold ends, and KEDA scales to zero without a cooldown.
        gone = wait_for(lambda: scaled_to_zero(run), SCALE_DOWN_WAIT, "KEDA scaling Triton to zero after the hold")
        (raised,), (released,) = run.floor_raised, run.floor_lowered
        assert released - raised >= HOLD - 1, "the chart's sidecar held the floor up for its hold (seen once a poll)"
        numbers["zero_after_hold_end_s"] = gone - released
        numbers["triton_ready_for_s"] = gone - (first.ready or gone)
        scaled = kubectl_json(
            cluster, "get", "scaledobject", CHART.scaled_object_name(settings.release.name), "-n", REHEARSAL_NAMESPACE
        )
        assert scaled.get("status", {}).get("lastActiveTime") is None, (
            "a wake from outside KEDA and no load: KEDA never saw the trigger active"
        )
        assert run.prometheus.queries > 0, "KEDA's Prometheus scaler asked the stand-in"
        assert gone - released < 30 + 5, "no 300 s cooldown: zero at KEDA's next poll (every 30 s) or sooner"

        # 3. A wake of readyTimeoutSeconds - 3 s (queue delay + the overhead): served.
        run.scripted.append(READY_TIMEOUT - MARGIN - overhead)
        served = run.wake()
        assert served.outcome == READY, describe(served)
        numbers["served_wake_s"] = served.wake_seconds or 0.0
        wait_for(lambda: scaled_to_zero(run), SCALE_DOWN_WAIT, "KEDA scaling Triton to zero after the second hold")

        # 4. A queue of readyTimeoutSeconds + 3 s, so a wake longer than that: refused; the late Triton lives for
        # what is left of the hold.
        run.scripted.append(READY_TIMEOUT + MARGIN)
        refused = run.wake()
        assert refused.outcome == REJECTED, describe(refused)
        numbers["refused_status"] = str(refused.grpc_status)
        numbers["refused_message"] = refused.detail
        numbers["refused_after_s"] = refused.elapsed_seconds
        assert refused.grpc_status == run.settings.generation.wake_timeout_status, describe(refused)
        assert "no healthy upstream" in refused.detail, "the chart's filter answers with Envoy's or its own reason"
        assert READY_TIMEOUT - 1 - 0.5 <= refused.elapsed_seconds <= READY_TIMEOUT + 1.5, describe(refused)
        late = next(p for p in run.pods.values() if p.queue_delay == READY_TIMEOUT + MARGIN)
        wait_for(lambda: late.ready is not None, 2 * MARGIN + 10, "the late Triton pod to become Ready")
        gone = wait_for(lambda: scaled_to_zero(run), SCALE_DOWN_WAIT, "KEDA scaling the late Triton to zero")
        assert late.ready is not None
        wake_to_ready, ready_for = late.ready - run.floor_raised[-1], gone - late.ready
        numbers["late_wake_to_ready_s"], numbers["late_triton_ready_for_s"] = wake_to_ready, ready_for
        assert gone - run.floor_raised[-1] < HOLD + 30 + 5, "the late Triton goes when the hold ends"
        assert 0 < ready_for <= HOLD - wake_to_ready + 30 + 5, "kept for what was left of the hold, a poll at most"

        assert run.errors == [], run.errors
        assert "Traceback" not in run.admission_log(), run.admission_log()
    numbers["total_s"] = time.monotonic() - started
    print(
        "rehearsal numbers: " + json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in numbers.items()})
    )
