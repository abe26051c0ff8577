"""Timing helpers the benchmarks share: run a callable N times, print the median with its spread."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


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
