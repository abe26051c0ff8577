"""probe report: histories of known wake times, every expected number written out by nearest rank (k = ceil(q * n)).

The current settings are the stack files': hammer 900 s (idle_timeout 1020 s, Helm 1200 s), geddes-gpu 300 s."""

from __future__ import annotations

import io
import json
import random
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from conftest import stack_config
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle
from PIL import Image
from wake_records import HOUR, T0, cold_wake, cut_off_wake, probe_record, warm_answer, write_history

from supersonic_interlink.cli import probe
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake import probe as wake_probe
from supersonic_interlink.wake import report as wake_report

StackConfigs = Mapping[str, Mapping[str, str]]


def run_report(*args: str | Path, stack_configs: StackConfigs | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = probe.main(["report", *map(str, args)], stack_configs=stack_configs, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def json_reports(*args: str | Path, stack_configs: StackConfigs | None = None) -> dict[str, dict]:
    code, out, err = run_report(*args, "--json", stack_configs=stack_configs)
    assert code == 0, f"the report must succeed: {err}"
    return {r["stack"]: r for r in map(json.loads, out.splitlines())}


def shuffled(records: list) -> list:
    random.Random(7).shuffle(records)
    return records


def test_nearest_rank_uses_exact_arithmetic_and_the_minimum_samples_follow_from_it() -> None:
    assert wake_report.nearest_rank(100, 99) == 99, "0.99 * 100 in floating point is 99.00000000000001, not 100"
    assert wake_report.nearest_rank(99, 99) == 99 and wake_report.nearest_rank(10, 90) == 9
    assert wake_report.nearest_rank(9, 90) == 9, "below 10 values the nearest-rank p90 is the maximum"
    assert (wake_report.min_sample_for(90), wake_report.min_sample_for(99)) == (10, 100)


@pytest.mark.parametrize(("seconds", "minute"), [(594.0, 600), (600.0, 600), (600.1, 660), (0.4, 60), (61, 120)])
def test_the_recommendation_is_rounded_up_to_a_whole_minute(seconds: float, minute: int) -> None:
    assert wake_report.round_up_to_minute(seconds) == minute


def test_a_hundred_cold_wakes_give_a_p99_and_a_timeout_in_whole_minutes_with_what_moves_with_it(
    tmp_path: Path,
) -> None:
    """Hammer: 100 cold wakes of 5, 10, ..., 500 s in random order, 7 warm answers and a damaged line among them."""
    records: list = shuffled([cold_wake(5.0 * i) for i in range(1, 101)] + [warm_answer() for _ in range(7)])
    records.insert(40, b'{"kind": "probe", "stack": "hammer", "outc\n')
    hundred_wakes = write_history(tmp_path / "wakes.jsonl", records)
    report = json_reports(hundred_wakes)["hammer"]
    assert (report["probes"], report["cold"], report["warm"]) == (107, 100, 7), (
        "warm answers are probes but not wakes: they must be counted apart"
    )
    stats = report["wake_seconds"]
    assert [stats[k] for k in ("min", "median", "p90", "p99", "max")] == [5.0, 250.0, 450.0, 495.0, 500.0], (
        "nearest rank over 5..500 s: the 50th, 90th and 99th smallest; warm answers (0.02 s) must not be the min"
    )
    assert report["current"] == {
        "source": "stacks/Pulumi.hammer.yaml",
        "config_problem": None,
        "ready_timeout_seconds": 900,
        "covered": 100,
        "hold_min_replicas_seconds": 900,
        "idle_timeout_seconds": 1020,
        "helm_timeout_seconds": 1200,
    }, "the current values are the stack file's, with the idle_timeout and Helm timeout the program derives"
    recommended = report["recommended"]
    assert recommended["basis"] == "p99" and recommended["provisional"] is False
    assert recommended["ready_timeout_seconds"] == 600, "495 s + 20% = 594 s, and the next whole minute is 600 s"
    assert (
        recommended["hold_min_replicas_seconds"],
        recommended["idle_timeout_seconds"],
        recommended["helm_timeout_seconds"],
    ) == (600, 720, 900), "the hold stays equal to the timeout on Hammer; idle_timeout +120 s, Helm +300 s follow"
    assert recommended["covered"] == 100
    code, out, err = run_report(hundred_wakes)
    assert code == 0
    (damaged,) = err.splitlines()
    assert damaged.startswith(f"{hundred_wakes}:41: line skipped: cut short: the record ends mid-way"), (
        f"the damaged line is reported once, with its number and why: {err}"
    )
    assert "stack hammer: 107 probe(s)" in out and "100 cold, 7 warm" in out
    assert "min 5.0 s, median 250.0 s, p90 450.0 s, p99 495.0 s, max 500.0 s" in out
    assert "current readyTimeoutSeconds 900 (stacks/Pulumi.hammer.yaml) covered 100 of 100 (100.0%)" in out
    assert "recommended readyTimeoutSeconds 600: the smallest whole minute >= p99 495.0 s + 20% margin (594.0 s)" in out
    for row in (
        "scaleFromZero.readyTimeoutSeconds       900 -> 600",
        "scaleFromZero.holdMinReplicasSeconds    900 -> 600",
        "RepositoryIndex idle_timeout (derived)  1020 s -> 720 s",
        "Helm timeout (derived)                  1200 s -> 900 s",
    ):
        assert row in out, f"the operator sees every value that moves with the timeout: {row!r} in\n{out}"
    assert "1 line(s) of" in out, "the report itself says lines were skipped"
    wakes = wake_report.select(wake_history.read(hundred_wakes).wakes)["hammer"]
    (ax,) = wake_report.figure([wake_report.build_report("hammer", wakes)]).axes
    assert ax.get_title().startswith("stack hammer: 100 cold wakes"), ax.get_title()
    assert sum(patch.get_height() for patch in bars(ax)) == 100, "the histogram holds every cold wake, no warm one"
    lines = {line.get_label(): np.asarray(line.get_xdata())[0] for line in ax.get_lines()}
    assert lines == {
        "p99 495.0 s": 495.0,
        "current readyTimeoutSeconds 900 (covered 100 of 100 (100.0%))": 900,
        "recommended 600: p99 495.0 s + 20%, to the minute": 600,
    }, f"the picture must mark p99, the current and the recommended timeout where they are: {lines}"
    legend = ax.get_legend()
    assert legend is not None and "measured cold wakes (100)" in [t.get_text() for t in legend.get_texts()]
    assert ax.get_xlim()[1] > 900, "the current timeout must be inside the picture"


def test_too_few_cold_wakes_for_a_p99_or_a_p90_is_said_plainly_and_the_recommendation_is_provisional(
    tmp_path: Path,
) -> None:
    history = write_history(tmp_path / "wakes.jsonl", shuffled([cold_wake(100.0 + 10 * i) for i in range(23)]))
    report = json_reports(history)["hammer"]
    stats = report["wake_seconds"]
    assert stats["p99"] is None and stats["p99_needs"] == 100, "23 wakes cannot give a p99; it must not be faked"
    assert stats["p90"] == 300.0, "23 wakes (100..320 s) do give a p90: the 21st smallest (ceil(0.9 * 23) = 21)"
    recommended = report["recommended"]
    assert recommended["basis"] == "max" and recommended["provisional"] is True
    assert recommended["ready_timeout_seconds"] == 420, "max 320 s + 20% = 384 s -> 420 s"
    assert recommended["max_above_p99_probability"] == pytest.approx(1 - 0.99**23)
    _, out, _ = run_report(history)
    assert "p99 n/a (needs 100 cold wakes, have 23)" in out
    assert "recommended readyTimeoutSeconds 420 (provisional)" in out
    assert (
        "only 23 cold wake(s): a p99 needs 100; the largest of 23 lies above the true p99 with probability 21%" in out
    )
    history = write_history(tmp_path / "five.jsonl", [cold_wake(s) for s in (50, 70, 60, 90, 80)])
    stats = json_reports(history)["hammer"]["wake_seconds"]
    assert (stats["min"], stats["median"], stats["p90"], stats["p99"], stats["max"]) == (50.0, 70.0, None, None, 90.0)


def test_two_stacks_are_reported_apart_each_against_its_own_settings(tmp_path: Path) -> None:
    records = []
    for i in range(12):
        records.append(cold_wake(300.0 + 20 * i, "hammer"))
        records.append(cold_wake(20.0 + i, "geddes-gpu", ready_timeout=300))
    history = write_history(tmp_path / "wakes.jsonl", records)
    reports = json_reports(history)
    assert list(reports) == ["hammer", "geddes-gpu"]
    hammer, gpu = reports["hammer"], reports["geddes-gpu"]
    assert hammer["wake_seconds"]["max"] == 520.0 and gpu["wake_seconds"]["max"] == 31.0, "no mixing of stacks"
    assert hammer["current"]["ready_timeout_seconds"] == 900 and gpu["current"]["ready_timeout_seconds"] == 300
    assert gpu["recommended"]["ready_timeout_seconds"] == 60, "31 s + 20% = 37.2 s -> one minute"
    assert gpu["recommended"]["idle_timeout_seconds"] == 180 and gpu["current"]["idle_timeout_seconds"] == 420
    assert hammer["recommended"]["ready_timeout_seconds"] == 660, "520 s + 20% = 624 s -> 660 s"
    only = json_reports(history, "--stack", "geddes-gpu")
    assert list(only) == ["geddes-gpu"] and only["geddes-gpu"]["cold"] == 12
    out = tmp_path / "wakes.png"
    code, _, err = run_report(history, "--png", out)
    assert code == 0 and f"wrote {out}" in err
    data = out.read_bytes()
    assert png_size(data) == (800, 900), "8 x 4.5 inches per stack at 100 dpi: two panels"
    assert 10_000 < len(data) < 1_000_000, f"a PNG of {len(data)} bytes is not a drawn chart"
    with Image.open(out) as image:
        image.verify()
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
    assert (stats["samples"], stats["cut_off"], stats["failed"]) == (100, 3, 3), (
        "cut-off wakes are samples (longer than the wait), failures are not"
    )
    assert stats["p99"] == {"above": 899.6} and stats["max"] == {"above": 899.6}, (
        "the 99th of 100 is a wake that was cut off: the p99 is only known to be above 899.6 s"
    )
    assert stats["p90"] == 450.0
    assert report["cold_outcomes"][wake_probe.REJECTED] == 5 and report["cold_outcomes"][wake_probe.UNREACHABLE] == 1
    assert report["current"]["covered"] == 97, "cut-off wakes were not covered by the timeout that cut them off"
    assert report["recommended"] is None and "raise readyTimeoutSeconds" in report["no_recommendation"], (
        "a timeout must not be recommended from a tail the history never saw the end of"
    )
    _, out, _ = run_report(history)
    assert "p99 > 899.6 s (cut off)" in out and "recommended readyTimeoutSeconds: none: the p99 cold wake" in out
    (ax,) = wake_report.figure([wake_report.build_report("hammer", wake_history.read(history).wakes)]).axes
    hatched = [patch for patch in bars(ax) if patch.get_hatch()]
    assert [(patch.get_x(), patch.get_height()) for patch in hatched] == [(899.6, 3)], (
        "the three cut-off wakes are one bar starting where they were given up: they took longer than that"
    )
    assert ax.get_title().endswith("; no recommendation")
    labels = {line.get_label() for line in ax.get_lines()}
    assert labels == {"p99 > 899.6 s (cut off)", "current readyTimeoutSeconds 900 (covered 97 of 100 (97.0%))"}, (
        "no recommended line may be drawn when the report recommends nothing"
    )


def test_one_cut_off_wake_in_a_hundred_leaves_the_p99_measured(tmp_path: Path) -> None:
    records = [cold_wake(5.0 * i) for i in range(1, 100)] + [cut_off_wake(899.6)]
    report = json_reports(write_history(tmp_path / "wakes.jsonl", shuffled(records)))["hammer"]
    assert report["wake_seconds"]["p99"] == 495.0, "the 99th of 100 is the largest measured wake, 495 s"
    assert report["wake_seconds"]["max"] == {"above": 899.6}
    assert report["recommended"]["ready_timeout_seconds"] == 600
    assert report["recommended"]["covered"] == 99, "the recommendation says it covers 99 of the 100, not all"


def test_since_keeps_only_the_probes_started_from_then_on(tmp_path: Path) -> None:
    history = write_history(tmp_path / "wakes.jsonl", [cold_wake(10.0 * (i + 1)) for i in range(10)])
    since = wake_probe.utc_timestamp(T0 + 6 * HOUR)
    report = json_reports(history, "--since", since)["hammer"]
    assert report["cold"] == 4 and report["wake_seconds"]["min"] == 70.0, "probes 7..10 start at or after --since"
    code, _, err = run_report(history, "--since", "2099-01-01")
    assert code == 1 and "no probe records since 2099-01-01" in err and len(err.splitlines()) == 1
    code, out, err = run_report(history, "--stack", "geddes-gpu")
    assert (code, out, err) == (1, "", f"probe report: no probe records of stack geddes-gpu in {str(history)!r}\n")


def test_older_records_and_probes_that_never_reached_envoy_are_counted_apart_and_not_ranked(tmp_path: Path) -> None:
    # What the probe writes when Envoy does not answer: "cold": null, as no start check could run.
    unreachable = {
        **probe_record(outcome=wake_probe.UNREACHABLE, wake=None, cold=False, start_check=None),
        "cold": None,
    }
    older = probe_record(cold=None, wake=0.05)
    history = write_history(tmp_path / "wakes.jsonl", [cold_wake(100.0), unreachable, older])
    report = json_reports(history)["hammer"]
    assert (report["cold"], report["unreached"], report["untold"], report["wake_seconds"]["min"]) == (1, 1, 1, 100.0)
    text = run_report(history)[1]
    assert "1 unreachable (never reached Envoy: not counted), 1 not told cold or warm (older records" in text


def test_each_stack_is_reported_against_the_settings_it_has_or_without_them_says_why(tmp_path: Path) -> None:
    records = [cold_wake(100.0, "retired", ready_timeout=600), cold_wake(100.0), warm_answer("geddes-gpu")]
    history = write_history(tmp_path / "wakes.jsonl", records)
    configs = {
        "hammer": stack_config("hammer", scaleFromZero={"readyTimeoutSeconds": 900, "holdMinReplicasSeconds": 1500}),
        "geddes-gpu": stack_config("geddes-gpu", scaleFromZero={"readyTimeoutSeconds": 0}),
    }
    reports = json_reports(history, stack_configs=configs)
    retired, hammer, gpu = reports["retired"], reports["hammer"]["recommended"], reports["geddes-gpu"]
    assert retired["current"]["ready_timeout_seconds"] == 600 and "line 1" in retired["current"]["source"], (
        "without a stack file the timeout in force is the one the newest record was probed with"
    )
    assert "no file stacks/Pulumi.retired.yaml" in retired["current"]["config_problem"]
    assert retired["recommended"]["ready_timeout_seconds"] == 120
    assert "hold_min_replicas_seconds" not in retired["recommended"], "nothing is derived without the stack's settings"
    assert (hammer["ready_timeout_seconds"], hammer["hold_min_replicas_seconds"]) == (120, 720), (
        "the hold counts from the wake's start: what it gives beyond the slowest allowed wake (600 s) is kept"
    )
    assert (gpu["recommended"], gpu["no_recommendation"]) == (None, "no cold wakes to recommend from")
    assert "scaleFromZero.readyTimeoutSeconds" in gpu["current"]["config_problem"], gpu["current"]
    texts = run_report(history, stack_configs=configs)[1].split("\n\n")
    assert "no current settings: stack 'retired': no file stacks/Pulumi.retired.yaml" in texts[0]
    assert "no cold wake with a wake time" in texts[2] and "no current settings: " in texts[2]


@pytest.mark.parametrize(
    ("file", "args", "says"),
    [
        ("wakes.jsonl", ["--since", "yesterday"], "argument --since: expected a date (2026-05-01) or an ISO 8601 time"),
        ("wakes.jsonl", ["--png", "/no/such/dir/x.png"], "--png '/no/such/dir/x.png': no directory '/no/such/dir'"),
        ("wakes.jsonl", ["--bogus"], "unrecognized arguments: --bogus"),
        ("none.jsonl", [], "cannot read '{tmp}/none.jsonl': No such file or directory"),
        ("", [], "cannot read '{tmp}': Is a directory"),
    ],
)
def test_bad_options_or_an_unreadable_history_are_one_line_errors_with_exit_code_2(
    tmp_path: Path, file: str, args: list, says: str
) -> None:
    write_history(tmp_path / "wakes.jsonl", [cold_wake(100.0)])
    code, out, err = run_report(tmp_path / file, *args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and says.format(tmp=tmp_path) in err, err


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


def bars(ax: Axes) -> list[Rectangle]:
    """The histogram's bars: every patch on the axes, each a Rectangle."""
    patches = list(ax.patches)
    assert all(isinstance(patch, Rectangle) for patch in patches), f"the histogram draws only rectangles: {patches}"
    return [patch for patch in patches if isinstance(patch, Rectangle)]


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
    expected = wake_report.WakeTime(elapsed, cut_off=True) if cut_off else None
    assert wake_report.wake_time(wake) == expected, (
        "a timed-out wake dropped from the sample would overstate how many wakes the timeout covers"
        if cut_off
        else "a rejection that is not the filter's timeout says nothing about how long a wake takes"
    )
