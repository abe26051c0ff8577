"""The wake history under load: concurrent appends, whole or torn, and how long a report over years of probes takes.

    .venv/bin/python benchmarks/wake_history.py [--records N] [--history N]

Appends: two processes append N records of about 9 KiB each (a probe record listing many models is a few KiB;
9 KiB is past the 4 KiB PIPE_BUF on purpose) to one file at the same time, first with ``wake_history.append``
(one write on an O_APPEND descriptor under flock), then with a writer that sends each line in two writes and no
lock, the way a line can reach the file in pieces when a write comes back short. Prints appends per second and
how many lines came out damaged. Report: reads a history of N probes (default 17,520: one probe every 30 minutes
for a year) and builds the report, as `./supersonic probe report` does without the picture; prints seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from wake_records import cold_wake, start_writers, warm_answer, write_history

from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake import report as wake_report


def appends(records: int, careful: bool) -> tuple[float, int, int]:
    """(appends per second, damaged lines, lines) for two processes appending ``records`` each at once."""
    with tempfile.TemporaryDirectory() as work:
        path, go = Path(work) / "wakes.jsonl", Path(work) / "go"
        writers = start_writers(path, records, go, careful=careful)
        time.sleep(0.5)  # both interpreters up and waiting
        start = time.perf_counter()
        go.touch()
        for writer in writers:
            writer.wait(300)
        took = time.perf_counter() - start
        damaged = 0
        lines = path.read_bytes().split(b"\n")[:-1]
        for line in lines:
            try:
                json.loads(line)
            except ValueError:
                damaged += 1
        return 2 * records / took, damaged, len(lines)


def report_seconds(probes: int) -> float:
    with tempfile.TemporaryDirectory() as work:
        records = [
            cold_wake(60.0 + (i * 37) % 600, at=1_780_000_000.0 + 1800 * i)
            if i % 10
            else warm_answer(at=1_780_000_000.0 + 1800 * i)
            for i in range(probes)
        ]
        path = write_history(Path(work) / "wakes.jsonl", records)
        config = load_stack_config("hammer")
        first = wake_history.parse_lines(path.read_bytes().splitlines(keepends=True)[:10]).wakes
        wake_report.build_report("hammer", first, config)  # the imports and the settings' first load, untimed
        start = time.perf_counter()
        wakes = [wake for wake in wake_history.read(path).wakes if wake.stack == "hammer"]
        wake_report.describe(wake_report.build_report("hammer", wakes, config))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000, help="records per writer process")
    parser.add_argument("--history", type=int, default=17_520, help="probes in the history the report reads")
    args = parser.parse_args()
    for careful, label in ((True, "wake_history.append (O_APPEND, flock)"), (False, "two writes, no lock")):
        rate, damaged, lines = appends(args.records, careful)
        print(f"{label:<40} {rate:8.0f} appends/s   damaged lines: {damaged} of {lines}")
    print(f"report over {args.history} probes: {report_seconds(args.history):.3f} s")


if __name__ == "__main__":
    main()
