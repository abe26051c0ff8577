"""Timing helpers the benchmarks share: run a callable N times, print the median with its spread."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def timed(what: Callable[[], object], runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        what()
        seconds.append(time.perf_counter() - started)
    return seconds


def show(name: str, seconds: list[float]) -> float:
    median = statistics.median(seconds)
    print(f"{name}: median {median:.2f} s (min {min(seconds):.2f}, max {max(seconds):.2f}, n={len(seconds)})")
    return median


def command_series(command: list[str], cwd: Path, runs: int, timeout: float = 600) -> list[float]:
    """Wall seconds of ``command`` run ``runs`` times in fresh processes, after one run that warms the bytecode and
    page caches."""

    def once() -> None:
        subprocess.run(command, cwd=cwd, check=True, capture_output=True, timeout=timeout)

    once()
    return timed(once, runs)


def describe(label: str, samples: list[float], width: int = 38, digits: int = 3) -> str:
    """One line: the label, then median, min and max of ``samples`` in seconds."""
    return (
        f"{label:<{width}} median {statistics.median(samples):.{digits}f} s   min {min(samples):.{digits}f}   "
        f"max {max(samples):.{digits}f}   (n={len(samples)})"
    )
