"""Run the real program against Pulumi's mock engine and record what it registers.

There is no Pulumi CLI or cluster where the program is rendered offline or tested, so the mock engine stands in
for the engine alone: the program, its settings and its components run exactly as under ``pulumi up``, with the
config map the CLI would pass. Every evaluation runs in a fresh context, so several can run in one process.

Each evaluation also brings its own event loop and worker threads and closes them when it ends. The mock monitor
answers registrations on threads of the loop's default executor, and Pulumi's ``_ensure_event_loop`` gives each
such thread a loop of its own; left open, those loops are closed by ``__del__`` at interpreter exit, in whatever
order the garbage collector finalizes them and their self-pipe sockets, and a socket finalized first makes Python
print ``Exception ignored ... Invalid file descriptor: -1`` after a successful run.
"""

from __future__ import annotations

import asyncio
import contextvars
import runpy
import threading
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import pulumi
from google.protobuf import json_format
from pulumi.runtime.mocks import MockMonitor

from supersonic_interlink import ROOT
from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.config import PROJECT, generation


def plain(value: Any) -> Any:
    """Mock inputs carry integers as floats; give them back as integers, recursively."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


SECRET_SIGNATURE = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")
"""How a secret value travels to the engine: an object with this special key and value, the secret under
``value`` (pulumi's ``rpc.py``, ``_special_sig_key`` and ``_special_secret_sig``)."""


def reveal(value: Any) -> Any:
    """Recorded inputs with each secret wrapper replaced by the value it carries, recursively: what the provider is
    handed once the engine decrypts them."""
    if isinstance(value, Mapping):
        if value.get(SECRET_SIGNATURE[0]) == SECRET_SIGNATURE[1]:
            return reveal(value.get("value"))
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [reveal(v) for v in value]
    return value


@dataclass(frozen=True)
class Registered:
    """One resource registration as the engine received it."""

    type: str
    name: str
    inputs: dict[str, Any]
    """Inputs as sent on the wire, explicit nulls included (Helm reads a null value as "delete this default")."""
    parent: str
    """URN of the parent resource."""
    custom: bool
    """False for component resources."""
    import_id: str = ""
    """The ``import`` resource option: the id of a live resource the engine reads into the state ("" for none)."""
    delete_before_replace: bool = False
    """The resource option: on a replacement, the old resource goes before the new one is created."""
    dependencies: frozenset[str] = frozenset()
    """URNs this resource depends on, through its inputs or ``depends_on``: the engine creates them first."""


class EchoMocks(pulumi.runtime.Mocks):
    """Outputs echo the inputs, as the provider does for these types."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class RecordingMonitor(MockMonitor):
    """The mock engine's monitor (``set_mocks(monitor=...)``), recording each registration as sent, before the mock
    SDK drops null inputs and the options ``Mocks.new_resource`` is not given (parent, dependencies, replacement)."""

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.registered: list[Registered] = []

    def RegisterResource(self, request):
        if request.type != "pulumi:pulumi:Stack":
            inputs = plain(json_format.MessageToDict(request.object))
            self.registered.append(
                Registered(
                    request.type,
                    request.name,
                    inputs,
                    request.parent,
                    bool(request.custom),
                    request.importId,
                    bool(request.deleteBeforeReplace),
                    frozenset(request.dependencies).union(
                        *(deps.urns for deps in request.propertyDependencies.values())
                    ),
                )
            )
        return super().RegisterResource(request)


@dataclass(frozen=True)
class Evaluation:
    resources: list[Registered]
    outputs: dict[str, Any]

    def of_type(self, type_token: str) -> list[Registered]:
        return [r for r in self.resources if r.type == type_token]

    def one(self, type_token: str) -> Registered:
        found = self.of_type(type_token)
        if len(found) != 1:
            raise AssertionError(f"expected one {type_token}, found {len(found)}: {[r.name for r in found]}")
        return found[0]


ENTRY_POINT = ROOT / "__main__.py"


def run_entry_point() -> None:
    """Execute the project's ``__main__.py``, as the Python language host does under ``pulumi up``."""
    runpy.run_path(str(ENTRY_POINT), run_name="__main__")


def evaluate(
    config: Mapping[str, str],
    stack: str,
    program: Callable[[], None] = run_entry_point,
    secret_keys: Collection[str] = (),
    *,
    offline: bool = True,
    chart_dir: Path | None = None,
) -> Evaluation:
    """Run ``program`` (the real ``__main__.py`` by default) with ``config`` as the CLI would pass it; not a preview.

    ``secret_keys`` are the keys the CLI would list in ``PULUMI_CONFIG_SECRET_KEYS`` (set with ``--secret``).
    ``offline`` (the default) evaluates as ``./supersonic render`` does: no chart is fetched, and an unpinned git chart
    is rendered instead of refused. ``offline=False`` is what ``pulumi preview``/``up`` do before registering.
    ``chart_dir``: the chart the stack is rendered for instead of its own (``render --chart DIR``).
    """
    return contextvars.Context().run(
        _evaluate, dict(config), stack, program, list(secret_keys), offline=offline, chart_dir=chart_dir
    )


def _evaluate(
    config: dict[str, str],
    stack: str,
    program: Callable[[], None],
    secret_keys: list[str],
    *,
    offline: bool,
    chart_dir: Path | None,
) -> Evaluation:
    chart_source.OFFLINE.set(offline)
    generation.CHART_OVERRIDE.set(chart_dir)
    monitor = RecordingMonitor(EchoMocks())
    outputs: dict[str, Any] = {}

    def run() -> pulumi.Output[Any]:
        program()
        exported = getattr(pulumi.runtime.get_root_resource(), "outputs", None) or {}
        return pulumi.Output.from_input(dict(exported)).apply(outputs.update)

    # The loop is in place before set_mocks, which already creates the root stack's futures on it.
    with _OwnEventLoops():
        pulumi.runtime.set_all_config(config, secret_keys)
        # preview=False: outputs are known, so every apply callback runs and what the tests read is real.
        pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
        pulumi.runtime.test(run)()
    return Evaluation(resources=list(monitor.registered), outputs=outputs)


class _OwnEventLoops:
    """A fresh event loop for this thread and a default executor whose threads get theirs up front, all closed on
    exit, so nothing of the evaluation is left for the garbage collector to finalize at interpreter exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._worker_loops: list[asyncio.AbstractEventLoop] = []
        self.loop = asyncio.new_event_loop()
        self._executor = ThreadPoolExecutor(thread_name_prefix="mock-engine", initializer=self._give_worker_a_loop)
        self.loop.set_default_executor(self._executor)

    def _give_worker_a_loop(self) -> None:
        # What _ensure_event_loop would create in this thread, but made here so it can be closed.
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        with self._lock:
            self._worker_loops.append(loop)

    def __enter__(self) -> Self:
        asyncio.set_event_loop(self.loop)
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            pending = [task for task in asyncio.all_tasks(self.loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self._executor.shutdown(wait=True)
            asyncio.set_event_loop(None)
            self.loop.close()
            for loop in self._worker_loops:
                loop.close()
