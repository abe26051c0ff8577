"""How long `./supersonic test` takes: wall time, CPU time, the test count, the slowest test files and tests.

    python benchmarks/unit_suite.py [pytest args ...]

The suite runs once in a fresh process tree, as CI runs it, after `./supersonic test --version` has made sure .venv
and the pinned binaries are in place (so installing them is not counted). CPU time is user + system of every process
the run started (pytest, its xdist workers and whatever they ran), which a busy machine inflates far less than it
inflates wall time; the load average at the start is printed so a wall time can be read against it, and whether
Python may cache bytecode (PYTHONDONTWRITEBYTECODE), which changes the CPU time by several seconds.
UNIT_SUITE_REPORT=FILE keeps pytest's whole report (every test's durations) in FILE.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DURATION = re.compile(r"^([0-9.]+)s (?:setup|call|teardown)\s+(([^:\s]+)::.*)$")
SUMMARY = re.compile(r"(\d+) passed")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summed(report: str, group: int) -> dict[str, float]:
    """Seconds per test (group 2) or per test file (group 3), summed over setup, call and teardown: the sum across
    workers, not wall time."""
    totals: dict[str, float] = {}
    for line in report.splitlines():
        match = DURATION.match(line)
        if match:
            totals[match.group(group)] = totals.get(match.group(group), 0.0) + float(match.group(1))
    return totals


def slowest(totals: dict[str, float], count: int = 10) -> list[tuple[str, float]]:
    return sorted(totals.items(), key=lambda item: -item[1])[:count]


def main(argv: list[str]) -> int:
    front_door = str(ROOT / "supersonic")
    subprocess.run([front_door, "test", "--version"], cwd=ROOT, check=True, capture_output=True)
    load = os.getloadavg()[0]
    cpu_before = children_cpu()
    with tempfile.TemporaryFile(mode="w+") as out:
        started = time.monotonic()
        done = subprocess.run(
            [front_door, "test", "-q", "-p", "no:cacheprovider", "--durations=0", "--durations-min=0", *argv],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        wall = time.monotonic() - started
        cpu = children_cpu() - cpu_before
        out.seek(0)
        report = out.read()
    passed = SUMMARY.findall(report)
    print(f"exit code      {done.returncode}")
    print(f"tests passed   {passed[-1] if passed else 0}")
    print(f"wall time      {wall:.1f} s   (load average {load:.1f} at the start, {os.cpu_count()} CPUs)")
    print(f"CPU time       {cpu:.1f} s   (user + system of pytest and everything it ran)")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # pytest then keeps no rewritten test modules either: each worker compiles and rewrites every test file
        # anew (about 2 s of CPU per worker here), so compare runs made with the same setting.
        print("bytecode       not cached (PYTHONDONTWRITEBYTECODE is set): every process compiles what it imports")
    tests = sum(summed(report, 3).values())
    print(f"test time      {tests:.1f} s   (setup, call and teardown of every test, summed across workers)")
    print("slowest files  (seconds summed over their tests, across workers)")
    for name, seconds in slowest(summed(report, 3)):
        print(f"  {seconds:7.1f}  {name}")
    print("slowest tests")
    for name, seconds in slowest(summed(report, 2)):
        print(f"  {seconds:7.1f}  {name[:150]}")
    if os.environ.get("UNIT_SUITE_REPORT"):
        Path(os.environ["UNIT_SUITE_REPORT"]).write_text(report)
    if done.returncode != 0:
        print(report[-4000:], file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
