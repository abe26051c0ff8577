"""Run the real program against Pulumi's mock engine and record what it registers.

There is no Pulumi CLI or cluster where the program is rendered offline or tested, so the mock engine stands in
for the engine alone: the program, its settings and its components run exactly as under ``pulumi up``, with the
config map the CLI would pass. Every evaluation runs in a fresh context, so several can run in one process.
"""

from __future__ import annotations

import contextvars
import runpy
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.settings import get_root_resource
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from .settings import PROJECT


def plain(value: Any) -> Any:
    """Mock inputs carry integers as floats; give them back as integers, recursively."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
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


class EchoMocks(pulumi.runtime.Mocks):
    """Outputs echo the inputs, as the provider does for these types."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The mock engine's monitor, recording each registration before the mock SDK drops null inputs."""

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


ENTRY_POINT = Path(__file__).resolve().parent.parent / "__main__.py"


def run_entry_point() -> None:
    """Execute the project's ``__main__.py``, as the Python language host does under ``pulumi up``."""
    runpy.run_path(str(ENTRY_POINT), run_name="__main__")


def evaluate(
    config: Mapping[str, str],
    stack: str,
    program: Callable[[], None] = run_entry_point,
    secret_keys: Collection[str] = (),
) -> Evaluation:
    """Run ``program`` (the real ``__main__.py`` by default) with ``config`` as the CLI would pass it; not a preview.

    ``secret_keys`` are the keys the CLI would list in ``PULUMI_CONFIG_SECRET_KEYS`` (set with ``--secret``).
    """
    return contextvars.Context().run(_evaluate, dict(config), stack, program, list(secret_keys))


def _evaluate(config: dict[str, str], stack: str, program: Callable[[], None], secret_keys: list[str]) -> Evaluation:
    monitor = RecordingMonitor(EchoMocks())
    pulumi.runtime.set_all_config(config, secret_keys)
    # preview=False: outputs are known, so every apply callback runs and what the tests read is real.
    pulumi_mocks.set_mocks(monitor.mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    outputs: dict[str, Any] = {}

    def run() -> None:
        program()
        root = get_root_resource()
        exported = dict(getattr(root, "outputs", {}) or {})
        for key, value in exported.items():
            outputs[key] = _sync_await(pulumi.Output.from_input(value).future())

    _sync_await(run_pulumi_func(run))
    return Evaluation(resources=list(monitor.registered), outputs=outputs)
