"""The real program under Pulumi's mock engine (``set_mocks``, ``pulumi.runtime.test``), recording what it registers,
each run in a fresh context with its own event loops."""

from __future__ import annotations

import asyncio
import contextvars
import runpy
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime.mocks import MockMonitor

from supersonic_interlink import ROOT
from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.config import PROJECT
from supersonic_interlink.config.loading import CHART_OVERRIDE

SECRET_SIGNATURE = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")
"""A secret's wire wrapper: this key and value, the secret under ``value`` (pulumi's ``rpc.py``)."""


def plain(value: Any) -> Any:
    """Mock inputs carry integers as floats; give them back as integers, recursively."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return [plain(v) for v in value] if isinstance(value, list | tuple) else value


def reveal(value: Any) -> Any:
    """Recorded inputs with each secret wrapper replaced by its value: what the provider is handed."""
    if isinstance(value, Mapping):
        if value.get(SECRET_SIGNATURE[0]) == SECRET_SIGNATURE[1]:
            return reveal(value.get("value"))
        return {k: reveal(v) for k, v in value.items()}
    return [reveal(v) for v in value] if isinstance(value, list) else value


@dataclass(frozen=True)
class Registered:
    """One registration as the engine received it, inputs with explicit nulls (Helm's "delete this default")."""

    type: str
    name: str
    inputs: dict[str, Any]
    parent: str
    custom: bool
    import_id: str = ""
    delete_before_replace: bool = False
    dependencies: frozenset[str] = frozenset()


class EchoMocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class RecordingMonitor(MockMonitor):
    """Records each registration before the mock SDK drops null inputs and the options ``Mocks`` is not given."""

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.registered: list[Registered] = []

    def RegisterResource(self, request):
        if request.type != "pulumi:pulumi:Stack":
            deps = frozenset(request.dependencies).union(*(d.urns for d in request.propertyDependencies.values()))
            inputs = plain(json_format.MessageToDict(request.object))
            custom, replace = bool(request.custom), bool(request.deleteBeforeReplace)
            self.registered.append(
                Registered(request.type, request.name, inputs, request.parent, custom, request.importId, replace, deps)
            )
        return super().RegisterResource(request)


@dataclass(frozen=True)
class Evaluation:
    resources: list[Registered]
    outputs: dict[str, Any]

    def of_type(self, type_token: str) -> list[Registered]:
        return [r for r in self.resources if r.type == type_token]

    def one(self, type_token: str) -> Registered:
        (found,) = self.of_type(type_token)
        return found


def run_entry_point() -> None:
    runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")


def evaluate(
    config: Mapping[str, str],
    stack: str,
    program: Callable[[], None] = run_entry_point,
    secret_keys: Collection[str] = (),
    *,
    offline: bool = True,
    chart_dir: Path | None = None,
) -> Evaluation:
    """Run ``program`` with ``config`` and ``secret_keys`` as the CLI would pass them; ``offline``: no chart fetched
    and an unpinned git chart rendered, as ``render`` does; ``chart_dir``: the chart to render for (``--chart``)."""
    monitor = RecordingMonitor(EchoMocks())
    outputs: dict[str, Any] = {}

    def run() -> pulumi.Output[Any]:
        program()
        exported = getattr(pulumi.runtime.get_root_resource(), "outputs", None) or {}
        return pulumi.Output.from_input(dict(exported)).apply(outputs.update)

    def in_own_context() -> None:
        chart_source.OFFLINE.set(offline)
        CHART_OVERRIDE.set(chart_dir)
        # Its own loops, the executor threads' too, closed here: left to Pulumi, they close at interpreter exit, where
        # Python prints `Exception ignored ...`. The loop is in place before set_mocks, which already uses it.
        worker_loops: list[asyncio.AbstractEventLoop] = []

        def give_worker_a_loop() -> None:
            worker_loops.append(asyncio.new_event_loop())  # list.append is atomic
            asyncio.set_event_loop(worker_loops[-1])

        loop = asyncio.new_event_loop()
        executor = ThreadPoolExecutor(thread_name_prefix="mock-engine", initializer=give_worker_a_loop)
        loop.set_default_executor(executor)
        asyncio.set_event_loop(loop)
        try:
            pulumi.runtime.set_all_config(dict(config), list(secret_keys))
            # preview=False: outputs are known, so every apply callback runs.
            pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
            pulumi.runtime.test(run)()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            executor.shutdown(wait=True)
            asyncio.set_event_loop(None)
            for each in (loop, *worker_loops):
                each.close()

    contextvars.Context().run(in_own_context)
    return Evaluation(resources=list(monitor.registered), outputs=outputs)
