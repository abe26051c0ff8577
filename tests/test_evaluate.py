"""The mock-engine evaluation cleans up after itself: no event loop or worker thread outlives a run. Pulumi gives each
executor thread answering a registration an event loop; one left open can print ``Exception ignored ... Invalid file
descriptor: -1`` at exit. In a fresh interpreter with ResourceWarning shown: tests/e2e/test_render_process.py."""

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
    # closing the loops of one evaluation must not break the next (the tests evaluate many times per process)
    assert sorted(r.name for r in first.resources) == sorted(r.name for r in second.resources)

    def broken() -> None:
        run_entry_point()  # registers every resource, on the executor's threads
        raise RuntimeError("the program failed")

    with pytest.raises(RuntimeError, match="the program failed"):
        evaluate(stack_config("hammer"), "hammer", program=broken)
    left = open_event_loops() - loops
    assert left == set(), f"{len(left)} event loop(s) left open; each can print a stray exception at exit"
    running = [t.name for t in threading.enumerate() if t.ident not in threads]
    assert running == [], f"threads still running after the evaluations: {running}"
