"""The probe's history file (JSON Lines): appended under a lock, read back checked.

A damaged or untrue line is reported with its number and skipped; a record copied twice counts once.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, NamedTuple

from pydantic import BeforeValidator, ConfigDict, Field, ValidationError

from supersonic_interlink.config.rules import READY_TIMEOUT_MAX_SECONDS, Expect, Matches, Model, OneOf, fail

READY = "ready"
NOT_READY = "not ready"
REJECTED = "rejected"
DEADLINE_EXCEEDED = "deadline exceeded"
UNREACHABLE = "unreachable"
OUTCOMES = (READY, NOT_READY, REJECTED, DEADLINE_EXCEEDED, UNREACHABLE)
"""Every outcome, from best to worst: with --repeat, the exit code is that of the worst one seen."""
EXIT_CODES = {READY: 0, REJECTED: 3, DEADLINE_EXCEEDED: 4, UNREACHABLE: 5, NOT_READY: 6}

EARLIEST_START = datetime(1970, 1, 1, tzinfo=UTC)
CLOCK_SKEW = timedelta(days=1)
"""How far past the reader's clock a record's start may lie (the probe's host clock may run ahead)."""
MAX_SECONDS = READY_TIMEOUT_MAX_SECONDS + 3600
"""Longest wake or probe a record may hold: past the longest readyTimeoutSeconds a stack may set, and its margin."""


def encode_line(record: Mapping[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)


def check_appendable(path: Path) -> None:
    """Raise OSError now if ``path`` cannot be appended to, so a long probe is not measured and then lost."""
    os.close(_open(path))


def append(path: Path, record: Mapping[str, Any]) -> None:
    """Append ``record`` as one line under an exclusive ``flock``: POSIX promises no atomic appends between processes,
    and a short write's rest must follow before anyone else writes. After a torn last line, start a new one."""
    line = encode_line(record)
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        view = memoryview(b"\n" + line if size and os.pread(fd, 1, size - 1) != b"\n" else line)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)  # releases the lock


class DamagedLine(NamedTuple):
    line: int
    reason: str


class History(NamedTuple):
    wakes: list[Wake]
    damaged: list[DamagedLine]


class DamagedRecord(ValueError):
    """A line that is not a probe record this reader can use; the message says what is wrong."""


def parse_time(text: str) -> datetime:
    """An ISO 8601 time or date (midnight UTC) as aware UTC; ValueError for anything else."""
    value = datetime.fromisoformat(text)
    try:
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is in year 0 in UTC
        raise ValueError(f"{text!r} is not within the years 1 to 9999 in UTC") from None


def _utc(value: Any) -> datetime:
    try:
        return parse_time(value)
    except (TypeError, ValueError):
        raise fail("an ISO 8601 time within the years 1 to 9999 in UTC") from None


Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS), Expect(f"a number of seconds from 0 to {MAX_SECONDS}")]
Text = Annotated[str | None, Expect("a string or null")]


class Wake(Model):
    """One probe read back from the history: the fields the report needs, checked, in the order they are checked."""

    model_config = ConfigDict(extra="ignore")
    line: int
    stack: Annotated[str, Matches(r"[A-Za-z0-9_.-]{1,100}", "a stack name (letters, digits, '-', '_', '.')")]
    """The Pulumi CLI's stack names (sdk/go/common/tokens/stack_name.go): no escape codes or newlines."""
    started_at: Annotated[datetime, BeforeValidator(_utc)]
    endpoint: Text = None
    outcome: Annotated[str, OneOf(*OUTCOMES)]
    cold: Annotated[bool | None, Expect("true, false or null")] = None
    """None for a record written before the probe told cold wakes from warm answers."""
    ready_timeout_seconds: Annotated[
        int | None,
        Field(ge=1, le=READY_TIMEOUT_MAX_SECONDS),
        Expect(f"a whole number from 1 to {READY_TIMEOUT_MAX_SECONDS} or null"),
    ] = None
    wake_seconds: Seconds | None
    elapsed_seconds: Seconds
    grpc_status: Text


def wake_from_record(line: int, record: Mapping[str, Any], *, now: datetime | None = None) -> Wake:
    """Check a probe record; DamagedRecord names the first bad field, or the fields that cannot all be true."""
    try:
        wake = Wake.model_validate({**record, "line": line})
    except ValidationError as error:
        first = error.errors()[0]
        key = str(first["loc"][0])
        said = ": missing" if first["type"] == "missing" else f" = {json.dumps(record[key])}: expected {first['msg']}"
        raise DamagedRecord(key + said) from None
    latest = (now or datetime.now(UTC)) + CLOCK_SKEW
    if not EARLIEST_START <= wake.started_at <= latest:
        raise DamagedRecord(
            f"started_at = {json.dumps(record['started_at'])}: expected a time from {EARLIEST_START:%Y-%m-%d} to "
            f"{latest:%Y-%m-%dT%H:%M:%SZ} (a day past the reader's clock)"
        )
    if wake.wake_seconds is not None and wake.wake_seconds > wake.elapsed_seconds:
        raise DamagedRecord(
            f"wake_seconds = {json.dumps(record['wake_seconds'])} is more than elapsed_seconds = "
            f"{json.dumps(record['elapsed_seconds'])}: a wake is part of its probe"
        )
    return wake


def parse_lines(lines: Iterable[bytes], *, now: datetime | None = None) -> History:
    """Read history lines (numbered from 1, blank ones passed over); never raises for what a line holds."""
    history, now = History([], []), now or datetime.now(UTC)
    first_seen: dict[tuple[str, str | None, datetime], int] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            try:
                record = json.loads(raw.decode("utf-8"))  # NaN and Infinity, not JSON, fail the fields' checks
            except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested too deep, too many digits
                raise DamagedRecord(f"not JSON: {error}") from None
            if not isinstance(record, dict) or record.get("kind") != "probe":
                raise DamagedRecord('not a probe record (a JSON object with "kind": "probe")')
            wake = wake_from_record(number, record, now=now)
            seen = first_seen.setdefault((wake.stack, wake.endpoint, wake.started_at), number)
            if seen != number:
                raise DamagedRecord(f"a repeat of line {seen} (same stack, endpoint and started_at): counted once")
            history.wakes.append(wake)
        except DamagedRecord as error:
            history.damaged.append(DamagedLine(number, str(error)))
    return history


def read(path: Path) -> History:
    """OSError when the file cannot be read at all (missing, a directory, no permission)."""
    with open(path, "rb") as stream:
        return parse_lines(stream)
