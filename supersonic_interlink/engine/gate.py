"""The gate on a ``pulumi preview``: no uninstall or replace of a release unless ``release.removable`` says so, no
Envoy ConfigMap deleted without a successor, and a step it cannot classify refused (docs/engine.md says why)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi.automation import OpType

from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config import PROJECT, ConfigError
from supersonic_interlink.config.rules import printable
from supersonic_interlink.config.stack_config import read_stack_document, stack_file

CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap"
ENVOY_CONFIG_TYPE = "supersonic-interlink:index:EnvoyConfig"

ENGINE_OPS = frozenset(op.value for op in OpType)
"""Every op the engine plans: the Automation API's own list (pulumi/pulumi ``StepOps``)."""
REMOVING_OPS = frozenset(
    {"delete", "delete-replaced", "replace", "create-replacement", "import-replacement", "discard", "discard-replaced"}
)
"""Ops that uninstall (or re-install) what a URN names; a discard forgets it, and the next up re-creates it."""
CREATING_OPS = frozenset({"create", "create-replacement", "replace"})
"""Ops that bring a new Envoy ConfigMap (create-before-delete is the engine's default)."""


ALLOWED = (
    f"an object with an op the engine plans ({', '.join(sorted(ENGINE_OPS))}) and a urn "
    "urn:pulumi:<stack>::<project>::<type>::<name>"
)


@dataclass(frozen=True)
class Step:
    """One planned step: its op and urn, and the plan's entry as it said it (to name it if it is unreadable)."""

    op: Any
    urn: Any
    entry: Any = None

    @property
    def readable(self) -> bool:
        """An op the engine plans and a URN of four parts."""
        parts = self.urn.split("::", 3) if isinstance(self.urn, str) else []
        planned = isinstance(self.op, str) and self.op in ENGINE_OPS
        return planned and len(parts) == 4 and parts[0].startswith("urn:pulumi:") and all(parts[1:])

    @property
    def types(self) -> list[str]:
        """Its parents' types, then its own."""
        return str(self.urn).split("::", 3)[2].split("$")

    @property
    def type(self) -> str:
        return self.types[-1]

    @property
    def name(self) -> str:
        """Everything after the type: a name may hold ``::``."""
        return str(self.urn).split("::", 3)[3]


def _show(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, default=repr)
    return printable(text if len(text) <= limit else text[: limit - 3] + "...")


def steps_from_json(document: Any) -> list[Step]:
    """The steps of ``pulumi preview --json``; an entry without an op and urn is kept, unreadable, to be refused."""
    steps = document.get("steps", []) if isinstance(document, dict) else None
    if not isinstance(steps, list):
        raise ValueError("not the output of `pulumi preview --json` (expected an object with a 'steps' list)")
    return [Step(*((s.get("op"), s.get("urn")) if isinstance(s, dict) else (s, None)), s) for s in steps]


def steps_from_events(events: Iterable[Any]) -> list[Step]:
    """The steps of the Automation API's engine events, read as loosely as the JSON."""
    pres = [pre for event in events if (pre := getattr(event, "resource_pre_event", None)) is not None]
    metadata = [getattr(pre, "metadata", None) for pre in pres]
    ops_urns = [(getattr(op := getattr(m, "op", None), "value", op), getattr(m, "urn", None)) for m in metadata]
    return [Step(op, urn, {"op": op, "urn": urn}) for op, urn in ops_urns]


def blocked(steps: Iterable[Step], *, removable: bool) -> list[str]:
    steps = list(steps)
    problems = [
        f"step {index}: {_show(step.entry)} is not {ALLOWED}; the gate cannot tell what it does, so it refuses the plan"
        for index, step in enumerate(steps)
        if not step.readable
    ]
    steps = [step for step in steps if step.readable]
    release_goes = [s for s in steps if s.type == HELM_RELEASE_TYPE and s.op in REMOVING_OPS]
    problems += [
        f"{step.op} of Helm release {step.name} ({step.urn}): this uninstalls or re-installs the release. "
        "If that is the intent, set release.removable: true in the stack file in a reviewed change"
        for step in ([] if removable else release_goes)
    ]
    envoy_maps = [s for s in steps if s.type == CONFIG_MAP_TYPE and ENVOY_CONFIG_TYPE in s.types[:-1]]
    if not release_goes and not any(s.op in CREATING_OPS for s in envoy_maps):
        problems += [
            f"{step.op} of Envoy ConfigMap {step.name}: the running release reads it (the chart copies it at "
            "every upgrade) and no new Envoy ConfigMap is created in this change"
            for step in envoy_maps
            if step.op in ("delete", "delete-replaced", "discard")
        ]
    return [printable(line) for line in problems]


def main(argv: list[str]) -> int:
    """``./supersonic pulumi gate STACK FILE``: exit 1 with a line per blocked step, 2 on a file it cannot read."""
    stack, preview = argv
    try:
        removable = stack_removable(stack)
        steps = steps_from_json(json.loads(Path(preview).read_text()))
    except (ConfigError, OSError, ValueError) as error:
        print(error if isinstance(error, ConfigError) else f"gate: {preview}: {error}", file=sys.stderr)
        return 2
    problems = blocked(steps, removable=removable)
    for line in problems:
        print(f"gate: stack {stack}: {line}", file=sys.stderr)
    if not problems:
        print(f"gate: stack {stack}: {len(steps)} steps, none uninstalls a release or its Envoy ConfigMap")
    return 1 if problems else 0


def stack_removable(stack: str, root: Path | None = None) -> bool:
    """``release.removable``: true only when it says ``removable: true`` in the clear; nothing is decrypted."""
    path = stack_file(stack) if root is None else root / "stacks" / f"Pulumi.{stack}.yaml"
    release = read_stack_document(path).get(f"{PROJECT}:release")
    return isinstance(release, dict) and release.get("removable") is True
