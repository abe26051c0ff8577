"""probe report: histories of known wake times, every expected number written out by nearest rank (k = ceil(q * n)).
The current settings are the stack files': hammer 900 s (idle_timeout 1020 s, Helm 1200 s), geddes-gpu 300 s."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import stack_config
from PIL import Image
from wake_records import HOUR, T0, cold_wake, cut_off_wake, probe_record, warm_answer, write_history

from supersonic_interlink.cli import probe
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake import probe as wake_probe
from supersonic_interlink.wake import report as wake_report

STATS = ("min", "median", "p90", "p99", "max")


def run_report(*args: str | Path, stack_configs: Mapping | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = probe.main(["report", *map(str, args)], stack_configs=stack_configs, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def json_reports(*args: str | Path, stack_configs: Mapping | None = None) -> dict[str, dict]:
    code, out, err = run_report(*args, "--json", stack_configs=stack_configs)
    assert code == 0, f"the report must succeed: {err}"
    return {r["stack"]: r for r in map(json.loads, out.splitlines())}


def shuffled(records: list) -> list:
    random.Random(7).shuffle(records)
    return records


def figure_of(history: Path):
    (ax,) = wake_report.figure([wake_report.build_report("hammer", wake_history.read(history).wakes)]).axes
    return ax, {line.get_label(): np.asarray(line.get_xdata())[0] for line in ax.get_lines()}


def test_nearest_rank_uses_exact_arithmetic_and_the_minimum_samples_follow_from_it() -> None:
    times = [wake_report.WakeTime(float(i)) for i in range(1, 101)]
    assert wake_report.percentile(times, 99) == times[98], "0.99 * 100 in floating point is 99.00000000000001"
    assert wake_report.percentile(times[:10], 90) == times[8] and wake_report.percentile(times[:9], 90) is None
    assert wake_report.percentile(times[:99], 99) is None and wake_report.percentile(times[:1], 50) == times[0]
    assert [wake_report.min_sample_for(p) for p in (0, 50, 90, 99, 100)] == [1, 1, 10, 100, 1]


def test_a_hundred_cold_wakes_give_a_p99_and_a_timeout_in_whole_minutes_with_what_moves_with_it(tmp_path) -> None:
    # hammer: 100 cold wakes of 5, 10, ..., 500 s in random order, warm answers, an older record and a damaged line
    older = probe_record(cold=None, wake=0.05)  # from before the probe told cold from warm: not counted either
    records: list = shuffled([cold_wake(5.0 * i) for i in range(1, 101)] + [warm_answer() for _ in range(6)] + [older])
    records.insert(40, b'{"kind": "probe", "stack": "hammer", "outc\n')
    history = write_history(tmp_path / "wakes.jsonl", records)
    report = json_reports(history)["hammer"]
    assert (report["probes"], report["cold"], report["warm"]) == (107, 100, 6), "warm answers are probes, not wakes"
    # nearest rank over 5..500 s: the 50th, 90th and 99th smallest; warm answers (0.02 s) must not be the min
    assert [report["wake_seconds"][k] for k in STATS] == [5.0, 250.0, 450.0, 495.0, 500.0]
    assert report["current"] == {
        "source": "stacks/Pulumi.hammer.yaml",
        "covered": 100,
        "ready_timeout_seconds": 900,
        "hold_min_replicas_seconds": 900,
        "idle_timeout_seconds": 1020,
        "helm_timeout_seconds": 1200,
    }, "the current values are the stack file's, with the idle_timeout and Helm timeout the program derives"
    recommended = report["recommended"]
    assert (recommended["basis"], recommended["provisional"], recommended["covered"]) == ("p99", False, 100)
    # 495 s + 20% = 594 s -> 600 s; the hold stays equal; idle_timeout +120 s, Helm +300 s
    timeouts = ("ready_timeout_seconds", "hold_min_replicas_seconds", "idle_timeout_seconds", "helm_timeout_seconds")
    assert [recommended[key] for key in timeouts] == [600, 600, 720, 900]
    code, out, err = run_report(history)
    assert code == 0 and err.startswith(f"{history}:41: line skipped: not JSON: "), f"once, with number and why: {err}"
    text, skipped = out.rsplit("\n\n", 1)
    assert yaml.safe_load(text) == report, "the text is the --json record, as YAML"
    assert skipped == f"1 line(s) of {history} skipped (listed on stderr)\n", "the report itself says so"
    ax, lines = figure_of(history)
    assert ax.get_title().startswith("stack hammer: 100 cold wakes") and ax.get_xlim()[1] > 900, ax.get_title()
    assert sum(patch.get_height() for patch in ax.patches) == 100, "the histogram holds every cold wake, no warm one"
    assert lines == {
        "p99 495.0 s": 495.0,
        "current readyTimeoutSeconds 900: covers 100 of 100": 900,
        "recommended readyTimeoutSeconds 600: covers 100 of 100": 600,
    }, f"the picture must mark p99, the current and the recommended timeout where they are: {lines}"


def test_too_few_cold_wakes_for_a_p99_or_a_p90_are_null_and_the_recommendation_is_provisional(tmp_path) -> None:
    report = json_reports(write_history(tmp_path / "w.jsonl", shuffled([cold_wake(100.0 + 10 * i) for i in range(23)])))
    stats, recommended = report["hammer"]["wake_seconds"], report["hammer"]["recommended"]
    assert stats["p99"] is None and stats["p99_needs"] == 100, "23 wakes cannot give a p99; it must not be faked"
    assert stats["p90"] == 300.0, "23 wakes (100..320 s) do give a p90: the 21st smallest (ceil(0.9 * 23) = 21)"
    assert (recommended["basis"], recommended["provisional"], recommended["ready_timeout_seconds"]) == (
        "max",
        True,
        420,
    )
    assert recommended["max_above_p99_probability"] == pytest.approx(1 - 0.99**23), "max 320 s + 20% = 384 s -> 420 s"
    five = json_reports(write_history(tmp_path / "five.jsonl", [cold_wake(s) for s in (50, 70, 60, 90, 80)]))
    assert [five["hammer"]["wake_seconds"][k] for k in STATS] == [50, 70, None, None, 90]


def test_two_stacks_are_reported_apart_each_against_its_own_settings_and_drawn_one_panel_each(tmp_path) -> None:
    records = []
    for i in range(12):
        records += [cold_wake(300.0 + 20 * i, "hammer"), cold_wake(20.0 + i, "geddes-gpu", ready_timeout=300)]
    history = write_history(tmp_path / "wakes.jsonl", records)
    reports = json_reports(history)
    assert list(reports) == ["hammer", "geddes-gpu"]
    hammer, gpu = reports["hammer"], reports["geddes-gpu"]
    assert hammer["wake_seconds"]["max"] == 520.0 and gpu["wake_seconds"]["max"] == 31.0, "no mixing of stacks"
    assert gpu["recommended"]["ready_timeout_seconds"] == 60, "31 s + 20% = 37.2 s -> one minute"
    assert gpu["recommended"]["idle_timeout_seconds"] == 180 and gpu["current"]["idle_timeout_seconds"] == 420
    assert hammer["recommended"]["ready_timeout_seconds"] == 660, "520 s + 20% = 624 s -> 660 s"
    assert list(json_reports(history, "--stack", "geddes-gpu")) == ["geddes-gpu"]
    out = tmp_path / "wakes.png"
    code, _, err = run_report(history, "--png", out)
    assert code == 0 and f"wrote {out}" in err
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size == (800, 900), "8 x 4.5 inches per stack at 100 dpi: two panels"
        assert len(image.getcolors(1 << 16) or ()) > 20, "a drawn chart, not a blank canvas"
    code, _, err = run_report(history, "--png", tmp_path)
    assert code == 2 and err == f"probe report: --png {str(tmp_path)!r}: cannot write: Is a directory\n", err


def test_cut_off_wakes_rank_above_every_measured_one_and_stop_a_recommendation_they_decide(tmp_path: Path) -> None:
    records = [cold_wake(5.0 * i) for i in range(1, 98)] + [cut_off_wake(899.6) for _ in range(3)]
    records += [
        cut_off_wake(2.0),  # UNAVAILABLE long before the timeout: the wake itself failed
        probe_record(outcome=wake_probe.UNREACHABLE, wake=None, elapsed=300.0, detail="connection lost"),
        probe_record(outcome=wake_probe.REJECTED, wake=None, elapsed=1.0, grpc_status="UNAVAILABLE"),
    ]
    history = write_history(tmp_path / "wakes.jsonl", shuffled(records))
    report = json_reports(history)["hammer"]
    stats = report["wake_seconds"]
    assert (stats["samples"], stats["cut_off"], stats["failed"]) == (100, 3, 3), "cut-off wakes are samples"
    # the 99th of 100 is a wake that was cut off: the p99 is only known to be above 899.6 s
    assert stats["p99"] == {"above": 899.6} == stats["max"] and stats["p90"] == 450.0, stats
    assert report["cold_outcomes"][wake_probe.REJECTED] == 5 and report["cold_outcomes"][wake_probe.UNREACHABLE] == 1
    assert report["current"]["covered"] == 97, "cut-off wakes were not covered by the timeout that cut them off"
    # a timeout must not be recommended from a tail the history never saw the end of
    assert report["recommended"] is None and "raise readyTimeoutSeconds" in report["no_recommendation"]
    ax, lines = figure_of(history)
    hatched = [patch for patch in ax.patches if patch.get_hatch() and patch.get_height()]
    # the three cut-off wakes are one hatched bar at their bound
    assert [(bar.get_x() <= 899.6 < bar.get_x() + bar.get_width(), bar.get_height()) for bar in hatched] == [(True, 3)]
    assert ax.get_title().endswith("; no recommendation")
    assert set(lines) == {"p99 >899.6 s", "current readyTimeoutSeconds 900: covers 97 of 100"}, lines


def test_since_and_stack_keep_only_the_probes_chosen(tmp_path: Path) -> None:
    history = write_history(tmp_path / "wakes.jsonl", [cold_wake(10.0 * (i + 1)) for i in range(10)])
    report = json_reports(history, "--since", wake_probe.utc_timestamp(T0 + 6 * HOUR))["hammer"]
    assert report["cold"] == 4 and report["wake_seconds"]["min"] == 70.0, "probes 7..10 start at or after --since"
    code, _, err = run_report(history, "--since", "2099-01-01")
    assert code == 1 and "no probe records since 2099-01-01" in err and len(err.splitlines()) == 1
    code, out, err = run_report(history, "--stack", "geddes-gpu")
    assert (code, out, err) == (1, "", f"probe report: no probe records of stack geddes-gpu in {str(history)!r}\n")


def test_each_stack_is_reported_against_the_settings_it_has_or_without_them_says_why(tmp_path: Path) -> None:
    records = [cold_wake(100.0, "retired", ready_timeout=600), cold_wake(100.0), warm_answer("geddes-gpu")]
    history = write_history(tmp_path / "wakes.jsonl", records)
    configs = {
        "hammer": stack_config("hammer", scaleFromZero={"readyTimeoutSeconds": 900, "holdMinReplicasSeconds": 1500}),
        "geddes-gpu": stack_config("geddes-gpu", scaleFromZero={"readyTimeoutSeconds": 0}),
    }
    reports = json_reports(history, stack_configs=configs)
    retired, hammer, gpu = reports["retired"], reports["hammer"]["recommended"], reports["geddes-gpu"]
    assert retired["current"] is None and "no file stacks/Pulumi.retired.yaml" in retired["config_problem"]
    assert retired["recommended"] == {
        "basis": "max",
        "basis_seconds": 100.0,
        "margin": 0.2,
        "provisional": True,
        "max_above_p99_probability": pytest.approx(0.01),
        "covered": 1,
        "ready_timeout_seconds": 120,
    }, "nothing is derived without the stack's settings"
    # the hold counts from the wake's start: what it gives beyond the slowest allowed wake (600 s) is kept
    assert (hammer["ready_timeout_seconds"], hammer["hold_min_replicas_seconds"]) == (120, 720)
    assert (gpu["recommended"], gpu["no_recommendation"]) == (None, "no cold wakes to recommend from")
    assert "scaleFromZero.readyTimeoutSeconds" in gpu["config_problem"], gpu


@pytest.mark.parametrize(
    ("file", "args", "says"),
    [
        ("wakes.jsonl", ["--since", "yesterday"], "argument --since: expected a date (2026-05-01) or an ISO 8601 time"),
        ("wakes.jsonl", ["--bogus"], "unrecognized arguments: --bogus"),
        ("none.jsonl", [], "cannot read '{tmp}/none.jsonl': No such file or directory"),
        ("", [], "cannot read '{tmp}': Is a directory"),
    ],
)
def test_bad_options_or_an_unreadable_history_are_one_line_errors_with_exit_code_2(tmp_path, file, args, says) -> None:
    write_history(tmp_path / "wakes.jsonl", [cold_wake(100.0)])
    code, out, err = run_report(tmp_path / file, *args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and says.format(tmp=tmp_path) in err, err


@pytest.mark.parametrize(
    ("status", "elapsed", "ready_timeout", "cut_off"),
    [
        ("UNAVAILABLE", 900.2, 900, True),  # the inferenceServer generation's filter at the timeout
        ("UNAVAILABLE", 899.1, 900, True),  # its clock counts whole seconds: up to a second early
        ("UNAVAILABLE", 12.0, 900, False),  # Envoy's own UNAVAILABLE, or a wake that failed: not a timeout
        ("CANCELLED", 900.2, 900, True),  # the triton generation's filter at the timeout
        ("CANCELLED", 12.0, 900, False),
        ("INTERNAL", 900.2, 900, False),
        ("CANCELLED", 5.0, None, True),  # without a known timeout, only the triton generation's own status counts
        ("UNAVAILABLE", 900.2, None, False),  # Envoy answers UNAVAILABLE too when it reaches no Triton
    ],
)
def test_a_rejection_at_the_ready_timeout_is_a_cut_off_wake_in_either_chart_generation(
    status: str, elapsed: float, ready_timeout: int | None, cut_off: bool
) -> None:
    record = probe_record(outcome=wake_probe.REJECTED, wake=None, elapsed=elapsed, grpc_status=status)
    wake = wake_history.wake_from_record(1, record | {"ready_timeout_seconds": ready_timeout})
    # a timed-out wake dropped from the sample would overstate how many wakes the timeout covers; a rejection that
    # is not the filter's timeout says nothing about how long a wake takes
    assert wake_report.wake_time(wake) == (wake_report.WakeTime(elapsed, cut_off=True) if cut_off else None)
