"""One line when a long step starts and one with its elapsed time when it ends, on standard error (standard output
stays the verb's result): a chart fetch, a side of a diff, the takeover's Helm renders, render's checks."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def step(what: str) -> Iterator[None]:
    started, outcome = time.monotonic(), "stopped after"
    print(f"{what} ...", file=sys.stderr, flush=True)
    try:
        yield
        outcome = "done in"
    finally:
        print(f"{what}: {outcome} {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
