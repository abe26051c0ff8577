"""The wake history: appends from several processes at once, and reading back what a file holds, damage and all."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path

import pytest
import wake_records
from hypothesis import given, settings
from hypothesis import strategies as st

from supersonic_interlink.wake import history as wake_history


def probe_record(stack: str = "hammer", **fields) -> dict:
    """A record exactly as the probe writes it, with some fields replaced as they are (even by bad values)."""
    return {**wake_records.probe_record(stack), **fields}


def test_two_processes_appending_at_once_leave_every_line_whole_and_in_order(tmp_path: Path) -> None:
    history, go = tmp_path / "wakes.jsonl", tmp_path / "go"
    count = 300
    writers = wake_records.start_writers(history, count, go)
    go.touch()
    for writer in writers:
        assert writer.wait(60) == 0, "a writer process failed"
    lines = history.read_bytes().split(b"\n")
    assert lines[-1] == b"", "the file must end with a complete line"
    records = [json.loads(line) for line in lines[:-1]]  # a torn or interleaved line fails to parse here
    assert len(records) == 2 * count, f"{len(records)} lines for {2 * count} appends: lines were merged or lost"
    assert all(len(line) > 4096 for line in lines[:-1]), "the test must write lines longer than PIPE_BUF"
    for name in ("a", "b"):
        seqs = [r["seq"] for r in records if r["writer"] == name]
        assert seqs == list(range(count)), f"writer {name}'s records must each appear once, in its own order"
    interleaved = sum(records[i]["writer"] != records[i + 1]["writer"] for i in range(len(records) - 1))
    assert interleaved > 0, "the writers never alternated: the test did not exercise concurrent appends"


def test_an_append_waits_for_the_lock_another_writer_holds(tmp_path: Path) -> None:
    history = tmp_path / "wakes.jsonl"
    holder = os.open(history, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    writer = threading.Thread(target=wake_history.append, args=(history, probe_record()))
    writer.start()
    try:
        writer.join(0.3)
        assert writer.is_alive(), "an append must not write while another writer holds the file's lock"
        assert history.read_bytes() == b""
    finally:
        os.close(holder)  # releases the lock
    writer.join(5)
    assert not writer.is_alive(), "the append must go ahead once the lock is released"
    assert len(wake_history.read(history).wakes) == 1


def test_a_line_left_unfinished_by_a_killed_writer_does_not_spoil_the_next_record(tmp_path: Path) -> None:
    history = tmp_path / "wakes.jsonl"
    whole = wake_history.encode_line(probe_record())
    history.write_bytes(whole + whole[:57])  # the second writer died mid-line
    wake_history.append(history, probe_record(stack="geddes-gpu"))
    read = wake_history.read(history)
    # the record appended after a torn line must start on a line of its own and read back whole
    assert [w.stack for w in read.wakes] == ["hammer", "geddes-gpu"]
    assert [(d.line, d.reason[:9]) for d in read.damaged] == [(2, "not JSON:")], "the torn fragment is line 2"


def test_each_kind_of_damage_is_reported_with_its_line_number_and_the_rest_still_reads(tmp_path: Path) -> None:
    good = wake_history.encode_line(probe_record())
    lines = [
        good,  # 1
        b"{not json\n",  # 2
        b"\xff\xfe garbage\n",  # 3
        b"[1, 2]\n",  # 4
        wake_history.encode_line(probe_record(outcome="woke up")),  # 5
        wake_history.encode_line(probe_record(wake_seconds="fast")),  # 6
        good.replace(b'"wake_seconds":400.0', b'"wake_seconds":NaN'),  # 7
        wake_history.encode_line(probe_record(started_at="yesterday")),  # 8
        wake_history.encode_line(probe_record(cold="yes")),  # 9
        b"\n",  # 10: blank, ignored
        wake_history.encode_line({"kind": "summary", "count": 3}),  # 11
        wake_history.encode_line(probe_record(kind="other")),  # 12
        wake_history.encode_line(probe_record(wake_seconds=-1)),  # 13
        wake_history.encode_line(wake_records.probe_record(at=wake_records.T0 + wake_records.HOUR)),  # 14
    ]
    history = tmp_path / "wakes.jsonl"
    history.write_bytes(b"".join(lines))
    read = wake_history.read(history)
    assert [w.line for w in read.wakes] == [1, 14], "the good lines around the damage must still count"
    damaged = {d.line: d.reason for d in read.damaged}
    assert sorted(damaged) == [2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13], f"every damaged line, by number: {damaged}"
    assert damaged[2].startswith("not JSON") and "can't decode byte 0xff" in damaged[3]
    assert damaged[4] == damaged[11] == damaged[12] == 'not a probe record (a JSON object with "kind": "probe")'
    assert "outcome" in damaged[5] and "ready" in damaged[5], "the reason names the field and what is allowed"
    assert "wake_seconds" in damaged[6] and "wake_seconds" in damaged[13] and "NaN" in damaged[7]
    assert "started_at" in damaged[8] and "cold" in damaged[9]


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("2026-05-04", "2026-05-04T00:00:00+00:00"),
        ("2026-05-04T03:00:00.123Z", "2026-05-04T03:00:00.123000+00:00"),
        ("2026-05-04T05:00:00+02:00", "2026-05-04T03:00:00+00:00"),
    ],
)
def test_times_are_read_as_utc(text: str, iso: str) -> None:
    assert wake_history.parse_time(text).isoformat() == iso, "a date alone is midnight UTC; offsets convert to UTC"


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"started_at": "0001-01-01T00:00:00+01:00"}, "expected an ISO 8601 time within the years 1 to 9999 in UTC"),
        ({"started_at": "1969-12-31T23:59:59Z"}, "expected a time from 1970-01-01 to"),
        ({"started_at": "9999-12-31T00:00:00Z"}, "a day past the reader's clock"),
        ({"wake_seconds": 500.0, "elapsed_seconds": 400.0}, "is more than elapsed_seconds = 400.0"),
        ({"ready_timeout_seconds": -5}, "ready_timeout_seconds = -5: expected a whole number from 1 to"),
        ({"ready_timeout_seconds": 0}, "ready_timeout_seconds = 0: expected a whole number from 1 to"),
        ({"endpoint": ["127.0.0.1:8001"]}, 'endpoint = ["127.0.0.1:8001"]: expected a string or null'),
    ],
)
def test_a_record_that_cannot_be_true_is_skipped_naming_why_and_never_counted(
    tmp_path: Path, fields: dict[str, object], why: str
) -> None:
    history = wake_records.write_history(
        tmp_path / "wakes.jsonl", [probe_record(), {**wake_records.probe_record(at=wake_records.T0 + 60), **fields}]
    )
    read = wake_history.read(history)
    assert [w.line for w in read.wakes] == [1], "the untrue record is not counted"
    assert [d.line for d in read.damaged] == [2] and why in read.damaged[0].reason, read.damaged


def test_a_record_repeated_fifty_times_counts_once_and_each_repeat_names_the_first(tmp_path: Path) -> None:
    repeated = wake_records.probe_record(at=wake_records.T0 + 60, wake=900.0)
    other_endpoint = {**repeated, "endpoint": "10.0.0.1:8001"}
    history = wake_records.write_history(tmp_path / "wakes.jsonl", [probe_record(), *[repeated] * 50, other_endpoint])
    read = wake_history.read(history)
    assert [w.line for w in read.wakes] == [1, 2, 52], "a repeat is counted once; another endpoint is another wake"
    assert [d.line for d in read.damaged] == list(range(3, 52))
    assert all(d.reason.startswith("a repeat of line 2 (same stack, endpoint and started_at)") for d in read.damaged)


RECORD_FIELDS = {
    "started_at": st.sampled_from(["0001-01-01T00:00:00+01:00", "1969-12-31T23:59:59Z", "9999-12-31T23:59:59-01:00"])
    | st.datetimes(timezones=st.timezones() | st.none()).map(lambda t: t.isoformat())
    | st.text(max_size=30),
    "wake_seconds": st.none() | st.floats() | st.integers() | st.text(max_size=3),
    "elapsed_seconds": st.floats() | st.integers() | st.booleans(),
    "ready_timeout_seconds": st.none() | st.integers() | st.floats(),
    "endpoint": st.none() | st.sampled_from(["127.0.0.1:8001", "10.0.0.1:8001"]) | st.integers(),
    "stack": st.sampled_from(["hammer", "geddes"]) | st.text(max_size=8),
    "cold": st.none() | st.booleans() | st.integers(),
}


@settings(max_examples=200, deadline=None)
@given(
    records=st.lists(
        st.fixed_dictionaries({}, optional=RECORD_FIELDS).map(lambda fields: {**probe_record(), **fields}), max_size=8
    ).flatmap(lambda records: st.permutations(records + records[:2]))
)
def test_no_generated_history_raises_and_every_wake_counted_could_be_true(records: list[dict[str, object]]) -> None:
    now = wake_history.datetime.now(wake_history.UTC)
    read = wake_history.parse_lines([wake_history.encode_line(r) if _finite(r) else b"{}\n" for r in records], now=now)
    assert len(read.wakes) + len(read.damaged) == len(records), "each line is counted or skipped, never both"
    keys = [(w.stack, w.endpoint, w.started_at) for w in read.wakes]
    assert len(keys) == len(set(keys)), "no wake is counted twice"
    for wake in read.wakes:
        assert wake_history.EARLIEST_START <= wake.started_at <= now + wake_history.CLOCK_SKEW
        assert wake.wake_seconds is None or 0 <= wake.wake_seconds <= wake.elapsed_seconds
        assert wake.ready_timeout_seconds is None or wake.ready_timeout_seconds >= 1
    assert all("\n" not in d.reason for d in read.damaged)


def _finite(record: dict[str, object]) -> bool:
    """Whether the probe's own encoder writes the record (it refuses NaN and Infinity, which are not JSON)."""
    try:
        wake_history.encode_line(record)
    except ValueError:
        return False
    return True
