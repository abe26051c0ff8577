"""The mock-engine evaluation cleans up after itself: no event loop or worker thread outlives a run.

Pulumi's mock monitor answers every registration on a thread of the event loop's default executor, and
``pulumi.runtime.sync_await._ensure_event_loop`` gives each such thread an event loop of its own. Left open, those
loops are closed by their ``__del__`` at interpreter exit, in whatever order the garbage collector finalizes them
and their self-pipe sockets: when a socket goes first, Python prints ``Exception ignored ... Invalid file
descriptor: -1`` after an otherwise successful run.
"""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest
from conftest import stack_config

from supersonic_interlink.render.evaluate import evaluate, run_entry_point


def open_event_loops() -> set[int]:
    gc.collect()
    return {id(o) for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop) and not o.is_closed()}


def test_evaluations_one_after_another_and_a_failing_one_leave_no_event_loop_open_and_no_thread_running() -> None:
    loops, threads = open_event_loops(), {t.ident for t in threading.enumerate()}
    first, second = (evaluate(stack_config("hammer"), "hammer") for _ in range(2))
    assert first.resources, "the program ran and registered its resources (the checks below mean something)"
    assert sorted(r.name for r in first.resources) == sorted(r.name for r in second.resources), (
        "closing the loops of one evaluation must not break the next (the tests evaluate many times per process)"
    )

    def broken() -> None:
        run_entry_point()  # registers every resource, on the executor's threads
        raise RuntimeError("the program failed")

    with pytest.raises(RuntimeError, match="the program failed"):
        evaluate(stack_config("hammer"), "hammer", program=broken)
    left = open_event_loops() - loops
    assert left == set(), f"{len(left)} event loop(s) left open; each can print a stray exception at exit"
    running = [t.name for t in threading.enumerate() if t.ident not in threads]
    assert running == [], f"threads still running after the evaluations: {running}"


# Render in a fresh interpreter with ResourceWarning shown (what only shows at its exit):
# tests/e2e/test_render_process.py.
