"""Wakes of a seeded uniform distribution through the real Envoy, recorded by the real `probe --repeat --record`
command, recovered by `probe report` within TOLERANCE; ten wakes are too few for a p99, so it recommends from the
largest."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
import threading
from pathlib import Path

from conftest import ROOT
from loopback import loopback_settings, loopback_stack, wait_until

from supersonic_interlink.cli import probe

SEED = 20260501
WAKES = 10
DELAY_SECONDS = (0.05, 0.35)  # the known distribution: uniform on this range
READY_TIMEOUT = 2  # the Lua filter gives up 1 to 2 s after the wake (it counts whole seconds): above every delay
INTERVAL = 0.1  # with the next probe's connection check (0.2 s), time for the 50 ms DNS refresh to drop the stand-in
# A recorded wake ends after Envoy's next DNS refresh and the Lua filter's next look: 0.06-0.13 s over the delay on
# loopback (docs/probe.md). A statistic of values each within [0, TOLERANCE] of the truth is as close to its own.
TOLERANCE = 0.4


def test_the_report_recovers_a_known_wake_distribution_recorded_through_the_real_envoy(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    delays = [round(rng.uniform(*DELAY_SECONDS), 3) for _ in range(WAKES)]
    short = {"readyTimeoutSeconds": READY_TIMEOUT, "holdMinReplicasSeconds": READY_TIMEOUT}
    history = tmp_path / "wakes.jsonl"
    settings = loopback_settings("hammer", scale_from_zero=short, envoy={"dnsRefreshMs": 50})
    with loopback_stack(settings, ready=False) as stack:
        triton, pending, stopping = stack.triton, list(delays), threading.Event()

        def recorded() -> int:
            return history.read_bytes().count(b"\n") if history.exists() else 0

        def wake() -> None:
            delay = pending.pop(0)
            number = WAKES - len(pending)
            if stopping.wait(delay):
                return
            triton.come_up()
            # Back to zero once the probe has recorded this wake (KEDA's scale-down, sped up); not earlier, since
            # stopping the stand-in cuts off any call it is still answering.
            wait_until(lambda: recorded() >= number or stopping.is_set(), 10, f"probe {number} to be recorded")
            triton.go_down()

        stack.admission.on_wake = wake
        args = ["--endpoint", stack.envoy.target, "--repeat", str(WAKES), "--interval", str(INTERVAL)]
        args += ["--record", str(history), "--json", "--progress-every", "0.1"]
        command = [sys.executable, "-m", "supersonic_interlink", "probe", "hammer", *args]
        try:
            finished = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60, cwd=ROOT)
        finally:
            stopping.set()
        woken = stack.admission.wakes
    assert finished.returncode == 0, f"every wake came inside the timeout:\n{finished.stdout}{finished.stderr}"
    assert woken == WAKES, "one wake per probe: the ServerReady before each call must not wake Triton"
    records = [json.loads(line) for line in history.read_text().splitlines()]
    assert records == [json.loads(line) for line in finished.stdout.splitlines()], "--record keeps what --json prints"
    assert {(r["outcome"], r["deadline_seconds"], r["ready_timeout_seconds"]) for r in records} == {
        ("ready", 1020, 900)
    }, "the deadline comes from the stack file: 900 s plus the 120 s route margin"
    assert all(r["models"] == [{"name": "standin", "version": "1", "state": "READY"}] for r in records), records[0]
    # a progress line every --progress-every seconds shows a log the wait is alive
    assert "probe hammer 127.0.0.1:" in finished.stderr and "still waiting, 0s of 17m00s" in finished.stderr
    # every probe found Triton at zero and must be recorded as a cold wake
    assert len(records) == WAKES and all(r["cold"] and "no healthy upstream" in r["start_check"] for r in records)
    for record, delay in zip(records, delays, strict=True):
        assert 0 <= record["wake_seconds"] - delay <= TOLERANCE, f"{record['wake_seconds']} s for a {delay} s wake"

    report_out, report_err = io.StringIO(), io.StringIO()
    code = probe.main(["report", str(history), "--json"], stdout=report_out, stderr=report_err)
    assert code == 0, report_err.getvalue()
    (report,) = map(json.loads, report_out.getvalue().splitlines())
    truth = sorted(delays)
    stats = report["wake_seconds"]
    assert (report["cold"], report["warm"], stats["samples"], stats["cut_off"]) == (WAKES, 0, WAKES, 0)
    for name, rank in (("min", 1), ("median", 5), ("p90", 9), ("max", 10)):
        assert 0 <= stats[name] - truth[rank - 1] <= TOLERANCE, f"{name}: {stats[name]} s, drawn {truth[rank - 1]} s"
    assert stats["p99"] is None, "ten wakes are too few for a p99, and the report must say so rather than guess"
    assert report["current"]["ready_timeout_seconds"] == 900 and report["current"]["covered"] == WAKES
    recommended = report["recommended"]
    assert (recommended["basis"], recommended["provisional"], recommended["ready_timeout_seconds"]) == ("max", True, 60)
    # the hold follows the timeout; idle_timeout is +120 s, the Helm timeout +300 s
    derived = ("hold_min_replicas_seconds", "idle_timeout_seconds", "helm_timeout_seconds")
    assert [recommended[key] for key in derived] == [60, 180, 360]
