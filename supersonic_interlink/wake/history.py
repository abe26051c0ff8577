"""Recording wakes: the history file every probe appends to, and reading it back.

The history is JSON Lines: one probe's record (``ProbeResult.record()``, the object ``./supersonic probe --json``
prints) per line, appended by ``./supersonic probe <stack> --record FILE``. Several probes may share one file (a cron
job and an operator by hand), so an append never interleaves with another or leaves half a line in front of the next
record; a line that is damaged anyway (a disk that filled up, a copy cut short, a hand edit), or holds a record that
cannot be true (a wake longer than its probe, a start before 1970 or in the future), is reported with its line number
and skipped, and the rest of the history still counts. A record copied twice (same stack, endpoint and start) counts
once, so a pasted file cannot move the recommended Helm timeout.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from supersonic_interlink.config.rules import READY_TIMEOUT_MAX_SECONDS, printable
from supersonic_interlink.wake.probe import OUTCOMES

RECORD_KIND = "probe"
"""``kind`` of a probe's record; the summary objects of ``--json --repeat`` (``kind: summary``) are not wakes."""


# --------------------------------------------------------------------------------------------- writing


def encode_line(record: Mapping[str, Any]) -> bytes:
    """One record as one line of JSON: no NaN or Infinity (not JSON), no newline inside."""
    return json.dumps(record, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def open_for_append(path: Path) -> int:
    """Open (creating) ``path`` for appending and return the descriptor; OSError says why it cannot be.

    Read access too: the writer looks at the last byte to repair a line an earlier writer left unfinished.
    """
    return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)


def check_appendable(path: Path) -> None:
    """Raise OSError now if ``path`` cannot be appended to, so a long probe is not measured and then lost."""
    os.close(open_for_append(path))


def append(path: Path, record: Mapping[str, Any]) -> None:
    """Append ``record`` as one line to ``path``, safely beside other processes appending to the same file.

    The line goes out as one ``write`` on an ``O_APPEND`` descriptor while an exclusive ``flock`` is held.
    ``O_APPEND`` alone puts each write at the end of the file, and Linux's local filesystems do not interleave
    one write with another; but POSIX promises no such thing between processes for regular files, a write may
    come back short (a full disk, a signal), and NFS emulates ``O_APPEND`` non-atomically. Under the lock the
    rest of a short write follows before anyone else writes, so a line is contiguous in every case. The lock
    also makes the repair safe: if the file does not end in a newline (a writer killed mid-line), this record
    starts with one, so the torn fragment stays a damaged line of its own instead of spoiling this record.
    """
    line = encode_line(record)
    fd = open_for_append(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)  # closing the descriptor releases the lock


# --------------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Wake:
    """One probe read back from the history: the fields the report needs, checked."""

    line: int
    stack: str
    endpoint: str | None
    started_at: datetime
    outcome: str
    cold: bool | None
    """None for a record written before the probe told cold wakes from warm answers."""
    wake_seconds: float | None
    elapsed_seconds: float
    ready_timeout_seconds: int | None
    grpc_status: str | None


@dataclass(frozen=True)
class DamagedLine:
    line: int
    reason: str

    def describe(self, path: Path | str) -> str:
        return f"{printable(str(path))}:{self.line}: line skipped: {self.reason}"


@dataclass
class History:
    """What a history file holds: the probes, the lines skipped (damaged, untrue or repeated), and how many other
    records were passed over."""

    wakes: list[Wake] = field(default_factory=list)
    damaged: list[DamagedLine] = field(default_factory=list)
    other_records: int = 0
    """Valid JSON objects that are not probe records (the summaries ``--json --repeat`` prints)."""


class DamagedRecord(ValueError):
    """A line that is JSON but not a probe record this reader can use; the message says what is wrong."""


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (``2026-05-04T03:00:00.123Z``) or date (``2026-05-04``, midnight UTC), as aware UTC;
    ValueError for anything else, including a time whose UTC falls outside the years 1 to 9999."""
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is in year 0 in UTC
        raise OutOfRange(f"{text!r} is outside the years 1 to 9999 in UTC") from None


class OutOfRange(ValueError):
    """An ISO 8601 time whose UTC is no ``datetime``."""


EARLIEST_START = datetime(1970, 1, 1, tzinfo=UTC)
"""No probe ran before the Unix epoch: its clock gives seconds since then."""
CLOCK_SKEW = timedelta(days=1)
"""How far in the future a record's start may lie: the probe's host clock may run ahead of the reader's."""


def _reject_constant(name: str) -> Any:
    raise DamagedRecord(f"{name} is not a JSON number")


MAX_SECONDS = READY_TIMEOUT_MAX_SECONDS + 3600
"""Longest wake or probe a record may hold: a probe gives up after the longest readyTimeoutSeconds a stack may set
(and its margin), so a larger number is no measurement, and a recommendation from it could not be deployed."""


def _seconds(record: Mapping[str, Any], key: str) -> float:
    value = record.get(key)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= MAX_SECONDS
    ):
        raise DamagedRecord(f"{key} = {json.dumps(value)}: expected a number of seconds from 0 to {MAX_SECONDS}")
    return float(value)


def _optional_seconds(record: Mapping[str, Any], key: str) -> float | None:
    if key in record and record[key] is None:
        return None
    try:
        return _seconds(record, key)
    except DamagedRecord as error:
        raise DamagedRecord(f"{error} or null") from None


def _text(record: Mapping[str, Any], key: str, *, optional: bool) -> str | None:
    value = record.get(key)
    if value is None and optional and key in record:
        return None
    if not isinstance(value, str) or not (value or optional):
        allowed = "a string or null" if optional else "a non-empty string"
        raise DamagedRecord(f"{key} = {json.dumps(value)}: expected {allowed}")
    return value


_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}", re.ASCII)
"""The Pulumi CLI's stack names (sdk/go/common/tokens/stack_name.go)."""


def wake_from_record(line: int, record: Mapping[str, Any], *, now: datetime | None = None) -> Wake:
    """Check a probe record and keep what the report uses; DamagedRecord names the first bad field, or the
    fields that cannot all be true. ``now``: the reader's clock (a start after it, beyond the skew, is refused)."""
    stack = _text(record, "stack", optional=False)
    if not _STACK_NAME.fullmatch(stack or ""):
        # The report prints the stack on every line: a name with escape codes or a newline could forge output.
        raise DamagedRecord(f"stack = {json.dumps(stack)}: expected a stack name (letters, digits, '-', '_', '.')")
    started = _text(record, "started_at", optional=False)
    try:
        started_at = parse_time(started or "")
    except OutOfRange:
        raise DamagedRecord(f"started_at = {json.dumps(started)}: outside the years 1 to 9999 in UTC") from None
    except ValueError:
        raise DamagedRecord(f"started_at = {json.dumps(started)}: expected an ISO 8601 time") from None
    latest = (now or datetime.now(UTC)) + CLOCK_SKEW
    if not EARLIEST_START <= started_at <= latest:
        raise DamagedRecord(
            f"started_at = {json.dumps(started)}: expected a time from {EARLIEST_START:%Y-%m-%d} to "
            f"{latest:%Y-%m-%dT%H:%M:%SZ} (a day past the reader's clock)"
        )
    endpoint = record.get("endpoint")
    if endpoint is not None and not isinstance(endpoint, str):
        raise DamagedRecord(f"endpoint = {json.dumps(endpoint)}: expected a string or null")
    outcome = record.get("outcome")
    if outcome not in OUTCOMES:
        raise DamagedRecord(f"outcome = {json.dumps(outcome)}: expected one of {', '.join(OUTCOMES)}")
    cold = record.get("cold")
    if cold is not None and not isinstance(cold, bool):
        raise DamagedRecord(f"cold = {json.dumps(cold)}: expected true, false or null")
    ready_timeout = record.get("ready_timeout_seconds")
    if ready_timeout is not None and (
        isinstance(ready_timeout, bool)
        or not isinstance(ready_timeout, int)
        or not 1 <= ready_timeout <= READY_TIMEOUT_MAX_SECONDS
    ):
        # The bounds of scaleFromZero.readyTimeoutSeconds: the probe records the stack's own value.
        raise DamagedRecord(
            f"ready_timeout_seconds = {json.dumps(ready_timeout)}: expected a whole number from 1 to "
            f"{READY_TIMEOUT_MAX_SECONDS} or null"
        )
    wake_seconds = _optional_seconds(record, "wake_seconds")
    elapsed_seconds = _seconds(record, "elapsed_seconds")
    if wake_seconds is not None and wake_seconds > elapsed_seconds:
        raise DamagedRecord(
            f"wake_seconds = {json.dumps(wake_seconds)} is more than elapsed_seconds = {json.dumps(elapsed_seconds)}: "
            "a wake is part of its probe"
        )
    return Wake(
        line=line,
        stack=stack or "",
        endpoint=endpoint,
        started_at=started_at,
        outcome=str(outcome),
        cold=cold,
        wake_seconds=wake_seconds,
        elapsed_seconds=elapsed_seconds,
        ready_timeout_seconds=ready_timeout,
        grpc_status=_text(record, "grpc_status", optional=True),
    )


def _json_object(raw: bytes) -> dict[str, Any]:
    """One history line as a JSON object; DamagedRecord says why it is not one."""
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise DamagedRecord("not UTF-8 text") from None
    try:
        record = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise DamagedRecord("not JSON this reader takes: nested too deep") from None
    except json.JSONDecodeError as error:
        if error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string"):
            raise DamagedRecord(f"cut short: the record ends mid-way, after {len(text.rstrip())} characters") from None
        raise DamagedRecord(f"not JSON: {error.msg} at column {error.colno}") from None
    except DamagedRecord:
        raise
    except ValueError:  # Python's limit on integer digits (4,300): no probe writes such a number
        raise DamagedRecord("not JSON this reader takes: an integer of more than 4,300 digits") from None
    if not isinstance(record, dict):
        raise DamagedRecord(f"a JSON {type(record).__name__}, not an object")
    return record


def parse_lines(lines: Iterable[bytes], *, now: datetime | None = None) -> History:
    """Read history lines (numbered from 1); never raises for what a line holds."""
    history = History()
    now = now or datetime.now(UTC)
    first_seen: dict[tuple[str, str | None, datetime], int] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = _json_object(raw)
            if record.get("kind") == "summary":
                history.other_records += 1
            elif record.get("kind") != RECORD_KIND:
                raise DamagedRecord(f"kind = {json.dumps(record.get('kind'))}: not a probe")
            else:
                wake = wake_from_record(number, record, now=now)
                seen = first_seen.setdefault((wake.stack, wake.endpoint, wake.started_at), number)
                if seen != number:
                    raise DamagedRecord(f"a repeat of line {seen} (same stack, endpoint and started_at): counted once")
                history.wakes.append(wake)
        except DamagedRecord as error:
            history.damaged.append(DamagedLine(number, str(error)))
    return history


def read(path: Path) -> History:
    """Read a history file; OSError when it cannot be read at all (missing, a directory, no permission)."""
    with open(path, "rb") as stream:
        return parse_lines(stream)
