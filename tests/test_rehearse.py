"""The rehearsal's pure parts: delays, prediction, the chart's rendered parts, the verb's refusals, process start and
stop. The rehearsal runs in tests/e2e/test_cold_start_rehearsal.py, kwok's Stages in test_rehearse_stages.py."""

from __future__ import annotations

import contextlib
import math
from collections import deque
from dataclasses import replace
from pathlib import Path
from unittest.mock import Mock

import pytest
import yaml
from chart_fixtures import fixture_chart
from cli_runner import run_cli
from loopback import loopback_settings
from wake_records import cold_wake, probe_record, warm_answer, write_history

from supersonic_interlink.chart.helm import ChartRenderError
from supersonic_interlink.config import stack_config
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.cluster import ClusterError, start_process, stop_process, wait_until
from supersonic_interlink.rehearse import measure
from supersonic_interlink.rehearse.delays import DelaySpecError, parse, served_share
from supersonic_interlink.rehearse.run import ACCOUNT_DIR, APPLIED, LUA_KEY, chart_parts
from supersonic_interlink.wake.probe import DEADLINE_EXCEEDED, READY, REJECTED, ProbeResult


def test_a_fixed_delay_is_served_only_within_the_timeout() -> None:
    delay = parse("fixed:30")
    assert served_share(delay, 40, overhead_seconds=9.9) == 1.0
    assert served_share(delay, 40, overhead_seconds=10.1) == 0.0


def test_a_uniform_delays_share_is_the_covered_fraction() -> None:
    delay = parse("uniform:60:300")
    # 900 s timeout, 20 s overhead: everything; 200 s timeout, 20 s overhead: (180 - 60) / 240.
    assert served_share(delay, 900, 20) == 1.0
    assert served_share(delay, 200, 20) == pytest.approx(0.5)
    assert served_share(delay, 70, 20) == 0.0


def test_a_history_gives_its_cold_wakes_of_the_stack_and_a_cut_off_one_is_never_served(tmp_path: Path) -> None:
    gave_up = probe_record(outcome=DEADLINE_EXCEEDED, wake=None, elapsed=1020.0, grpc_status="DEADLINE_EXCEEDED")
    lines = [cold_wake(100.0), cold_wake(300.0), gave_up, warm_answer(), cold_wake(5.0, stack="other")]
    history = write_history(tmp_path / "wakes.jsonl", lines)  # an hour apart: five probes, none a repeat
    delay = parse(f"history:{history}", stack="hammer")
    assert sorted(delay.samples) == [100.0, 300.0, math.inf]
    assert served_share(delay, 10_000, 0) == pytest.approx(2 / 3), "a wake given up on stays unserved"
    assert served_share(delay, 200, 50) == pytest.approx(1 / 3)
    assert "3 cold wakes" in delay.describe() and "1 cut off" in delay.describe()
    with pytest.raises(DelaySpecError, match="no cold wake of stack 'geddes-gpu'"):
        parse(f"history:{history}", stack="geddes-gpu")
    with pytest.raises(DelaySpecError, match="no file"):
        parse(f"history:{tmp_path}/none.jsonl")


@pytest.mark.parametrize("spec", ["", "normal:3", "fixed:", "fixed:-1", "fixed:nan", "uniform:5", "uniform:9:3"])
def test_a_bad_queue_delay_is_refused_naming_it_and_the_forms(spec: str) -> None:
    with pytest.raises(DelaySpecError, match=rf"^--queue-delay '{spec}': expected fixed:S \| uniform:A:B \| history"):
        parse(spec)


def test_the_chart_renders_the_objects_applied_its_lua_filter_and_sidecar_for_the_stack(tmp_path: Path) -> None:
    settings = loopback_settings(scale_from_zero={"readyTimeoutSeconds": 37})
    chart = fixture_chart("inference-server", tmp_path)
    objects, lua, admission = chart_parts(settings, chart, 9)
    found = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    release = settings.release.name
    assert {kind for kind, _ in found} == {"Deployment", "ScaledObject", "PersistentVolumeClaim", *APPLIED}
    deployment = found["Deployment", settings.generation.inference_object_name(release)]
    assert deployment["spec"]["replicas"] == 0, "from zero, as KEDA leaves it"
    assert deployment["spec"]["template"]["metadata"]["labels"] == settings.generation.inference_pod_labels(release)
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == dict(settings.triton.nodeSelector)
    trigger = found["ScaledObject", CHART.scaled_object_name(release)]["spec"]["triggers"][0]["metadata"]
    assert (trigger["serverAddress"], trigger["query"]) == ("http://127.0.0.1:9", settings.serverLoad.metric)
    assert 'local WAIT_SECONDS = tonumber("37")' in lua and 'local ENABLED = ("true" == "true")' in lua
    assert ACCOUNT_DIR in admission, "the rehearsal replaces exactly this path"
    (chart / "cfg" / LUA_KEY).unlink()
    with pytest.raises(ChartRenderError, match=r"renders no envoy-filter\.lua or admission-server\.py"):
        chart_parts(settings, chart, 9)


def test_the_prediction_names_the_timeout_the_share_and_the_guaranteed_time_after_a_late_wake() -> None:
    settings = loopback_settings("hammer")
    sfz = settings.scaleFromZero
    lines = "\n".join(measure.prediction(settings, parse("fixed:600"), 4.0))
    assert f"readyTimeoutSeconds {sfz.readyTimeoutSeconds}" in lines
    assert "predicted share of cold sessions served: 100.0%" in lines
    assert f"at least {sfz.holdMinReplicasSeconds - (sfz.readyTimeoutSeconds - 1)} s" in lines
    late = "\n".join(measure.prediction(settings, parse(f"fixed:{sfz.readyTimeoutSeconds}"), 4.0))
    assert "predicted share of cold sessions served: 0.0%" in late


@pytest.mark.parametrize(
    "args, says",
    [
        (["no-such-stack", "--queue-delay", "fixed:1"], "no stack 'no-such-stack'"),
        (["hammer", "--queue-delay", "gauss:1"], "hammer: --queue-delay 'gauss:1': expected fixed:S"),
        (["hammer", "--queue-delay", "fixed:1"], "fetch the pinned chart: `./supersonic render hammer --fetch-chart`"),
        (["hammer", "--queue-delay", "fixed:1", "--chart", "/no/such/chart"], "--chart /no/such/chart: no chart dir"),
        (["hammer", "--queue-delay", "fixed:1", "--chart", "tests/charts/default-one"], "Chart.yaml file is missing"),
    ],
)
def test_the_verb_refuses_a_wrong_stack_delay_or_chart_before_starting_anything(args: list[str], says: str) -> None:
    done = run_cli("rehearse", *args)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr


@pytest.mark.parametrize(
    "changes, says",
    [
        ({"enabled": False}, ["hammer: scaleFromZero.enabled false: nothing wakes; the rehearsal needs true"]),
        ({"readyTimeoutSeconds": 0}, ["hammer: ", "scaleFromZero.readyTimeoutSeconds"]),
    ],
)
def test_a_stack_that_cannot_wake_or_measure_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changes: dict, says: list[str]
) -> None:
    stacks_dir = tmp_path / "stacks"
    stacks_dir.mkdir()
    document = yaml.safe_load((stack_config.STACKS_DIR / "Pulumi.hammer.yaml").read_text())
    document["config"]["supersonic-interlink:scaleFromZero"].update(changes)
    document["config"]["supersonic-interlink:keda"]["minReplicaCount"] = 0 if changes.get("enabled", True) else 1
    (stacks_dir / "Pulumi.hammer.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    monkeypatch.setattr(stack_config, "STACKS_DIR", stacks_dir)
    ensure, cluster = Mock(), Mock(side_effect=ClusterError("the test starts no control plane"))
    monkeypatch.setattr(measure.toolchain, "ensure", ensure)
    monkeypatch.setattr(measure, "LocalCluster", cluster)
    chart = fixture_chart("inference-server", tmp_path / "chart")
    done = run_cli("rehearse", "hammer", "--queue-delay", "fixed:1", "--chart", str(chart))
    assert done.returncode == 2, done.stderr
    assert all(said in done.stderr for said in says) and len(done.stderr.splitlines()) == 1, done.stderr
    assert (ensure.call_count, cluster.call_count) == (0, 0), "nothing is built or started"


class _Rehearsed:
    """What the verb reads of a rehearsal: its scripted delays, one wake, the sidecar's log and the watcher's errors."""

    def __init__(self, result: ProbeResult) -> None:
        self.scripted: deque[float] = deque()
        self.result, self.errors = result, ["pod watcher: a look failed"]

    def wake(self) -> ProbeResult:
        assert list(self.scripted) == [0.0], "the measuring wake has no queue delay"
        return self.result

    def admission_log(self) -> str:
        return "listening\nwoke the Deployment\n"


def test_the_verb_predicts_from_its_measuring_wake_or_says_it_was_not_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = Mock()
    served = ProbeResult("hammer", "127.0.0.1:1", READY, 0.0, 4.0, 1020, 900, 4.0, wake_seconds=4.0, cold=True)
    monkeypatch.setattr(measure.toolchain, "ensure", lambda *a, **k: None)
    monkeypatch.setattr(measure, "rehearsal_stages", lambda *a: [])
    monkeypatch.setattr(measure, "LocalCluster", cluster)
    chart = fixture_chart("inference-server", tmp_path / "chart")
    outs = []
    for result, code in ((served, 0), (replace(served, outcome=REJECTED, wake_seconds=None, detail="no upstream"), 1)):
        monkeypatch.setattr(measure, "rehearsal", lambda *a, r=result, **k: contextlib.nullcontext(_Rehearsed(r)))
        assert measure.run("hammer", "fixed:600", tmp_path, chart) == code
        outs.append(out := capsys.readouterr().out)
    assert "measured overhead of a wake (everything but the queue): 4.0 s" in outs[0]
    assert "predicted share of cold sessions served: 100.0%" in outs[0], "600 s + 4 s is within 899 s"
    assert "the measuring wake was not served (rejected: no upstream); no prediction" in out
    # an unserved wake shows what went wrong: the watcher's errors and the sidecar's last lines
    assert "  pod watcher: a look failed" in out and "  admission sidecar: woke the Deployment" in out
    assert [built.args[0] for built in cluster.call_args_list] == [tmp_path, tmp_path]
    assert cluster.return_value.stop.call_count == 2, "the control plane is stopped each time"


def test_a_process_that_exits_before_it_is_ready_fails_the_wait_at_once_with_its_log(tmp_path: Path) -> None:
    log_file = tmp_path / "operator.log"
    process = start_process(["sh", "-c", "echo 'cannot load tls.crt'; exit 3"], log_file)
    with pytest.raises(ClusterError) as raised:
        wait_until(lambda: False, 10, "the operator to report ready", log_file=log_file, process=process)
    assert str(raised.value).startswith("exited with 3 while waiting for the operator to report ready; ")
    assert "cannot load tls.crt" in str(raised.value), "the log says why, so the error must carry it"


def test_stopping_a_process_stops_its_children_and_kills_one_that_ignores_sigterm(tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    parent = start_process(["sh", "-c", f"sleep 60 & echo $! > {child}; wait"], tmp_path / "parent.log")
    trapped = tmp_path / "trapped"
    stubborn = start_process(["sh", "-c", f"trap '' TERM; touch {trapped}; exec sleep 60"], tmp_path / "stubborn.log")
    pid = int(wait_until(lambda: child.is_file() and child.read_text().strip(), 10, "the child's pid"))
    # A TERM that arrived before the trap was set would end the shell (-15): wait until it is ignoring TERM.
    wait_until(trapped.is_file, 10, "the stubborn shell to ignore TERM")
    stop_process(parent, timeout=5)
    stop_process(stubborn, timeout=0.3)
    assert parent.returncode is not None and stubborn.returncode == -9, "SIGKILL after the timeout"
    wait_until(lambda: not Path(f"/proc/{pid}/exe").exists(), 5, "the orphaned sleep to end")
