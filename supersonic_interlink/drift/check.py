"""``./supersonic drift <stack>``: both parts of the check, and the correction (docs/drift.md).

Exit codes: 0 no drift, 1 drift (or a correction that left some), 2 could not check (the line says why).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from supersonic_interlink.drift import managed, release
from supersonic_interlink.drift.release import CannotCheck, Tools
from supersonic_interlink.drift.report import PULUMI_PART, Report, leaves, masked
from supersonic_interlink.engine import gate
from supersonic_interlink.engine.run import Engine

SECRET_MIN_LENGTH = 4
"""Shorter secret values are not searched for in the report (every "1" would be masked)."""


@dataclass
class Observed:
    """Everything a check read, before any comparison: what the unit tests record and replay."""

    stack: str
    release: release.ReleaseObservation
    resources: list[managed.ResourceObservation]
    events: list[Any] = field(default_factory=list)
    """The preview's engine events (for the correction's gate); not recorded."""

    def as_json(self) -> dict[str, Any]:
        resources = [asdict(item) for item in self.resources]
        return {"stack": self.stack, "release": self.release.as_json(), "resources": resources}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Observed:
        resources = [managed.ResourceObservation(**item) for item in document["resources"]]
        return cls(document["stack"], release.ReleaseObservation.from_json(document["release"]), resources)


def deployed_release(engine: Engine) -> tuple[str, str]:
    """(release name, namespace) of the release the stack's last ``up`` deployed: its exported outputs."""
    outputs = engine.workspace_stack().outputs()
    name, namespace = outputs.get("releaseName"), outputs.get("namespace")
    if name is None or namespace is None:
        raise CannotCheck(
            f"stack {engine.stack} exports no releaseName and namespace: it has not been deployed (nothing to compare)"
        )
    return str(name.value), str(namespace.value)


def observe(engine: Engine, tools: Tools) -> Observed:
    """Read both parts, the release's objects in a thread while the engine previews. Raises ``CannotCheck`` or
    ``EngineError``."""
    name, namespace = deployed_release(engine)
    events: list[Any] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        release_part = pool.submit(release.observe, name, namespace, tools)
        engine.run("preview", refresh=True, on_event=events.append)
        return Observed(engine.stack, release_part.result(), managed.observations(events), events)


def compare(observed: Observed) -> Report:
    rel = observed.release
    report = Report(observed.stack, rel.release, rel.namespace, rel.revision)
    for rows, ignored, objects in (managed.compare(observed.resources, rel.release), release.compare(rel)):
        report.rows += rows
        report.ignored += ignored
        report.objects += objects
    return report


def correct(engine: Engine, tools: Tools, observed: Observed, report: Report, log: Callable[[str], None]) -> None:
    """Bring the cluster back to the release's manifest and to the state Pulumi recorded: the release's objects
    patched back object by object (not a Helm upgrade: docs/drift.md says why); Pulumi's objects edited in place
    applied again from the inputs the provider last sent, under its field manager (after a refresh the engine calls
    them ``same``); then ``pulumi up --refresh``, gated like ``./supersonic pulumi up``, for what was deleted."""
    for line in release.correct(observed.release, report.rows, tools):
        log(f"drift: {line}")
    pulumi_rows = [row for row in report.rows if row.part == PULUMI_PART]
    edited = {row.object for row in pulumi_rows if row.note == "refresh"}
    for item in observed.resources:
        if item.label in edited and item.is_object and item.live is not None:
            log(f"drift: {_reapply(item, observed.release.namespace, tools)}")
    deleted = {row.object for row in pulumi_rows if row.note == "deleted"}
    planned = [item for item in observed.resources if item.step != "same"]
    if any(item.label not in deleted or item.step != "create" for item in planned):
        # The program differs from the state (a change not yet applied): that is a reviewed `up`, not a correction.
        log(
            f"drift: the preview plans changes of the program itself; review `./supersonic pulumi preview "
            f"{engine.stack} --diff` and apply them with `./supersonic pulumi up {engine.stack} --yes`"
        )
    elif deleted:
        steps = gate.steps_from_events(observed.events)
        problems = gate.blocked(steps, removable=gate.stack_removable(engine.stack, root=engine.work_dir))
        if problems:
            raise CannotCheck("the correction's up was refused by the gate:\n  " + "\n  ".join(problems))
        engine.run("up", refresh=True)
        log(f"drift: pulumi up --refresh of {engine.stack} done")


def _reapply(item: managed.ResourceObservation, namespace: str, tools: Tools) -> str:
    state = item.state or {}
    inputs, manager = state.get("__inputs"), state.get("__fieldManager")
    if not isinstance(inputs, Mapping) or not manager:
        raise CannotCheck(f"{item.label}: the state holds no inputs to apply again")
    if "[secret]" in leaves(inputs):  # how the engine's events show a secret value
        raise CannotCheck(
            f"{item.label}: its inputs hold a secret, which the engine's events never show, so they cannot be "
            "applied again from here; delete the object and run the correction again (a deleted object is recreated "
            "by pulumi up --refresh)"
        )
    flags = ("--server-side", "--force-conflicts", f"--field-manager={manager}", "-n", namespace, "-f", "-")
    tools.read("kubectl", "apply", *flags, input_text=json.dumps(inputs))
    return f"{item.label}: applied again from the inputs Pulumi last sent (field manager {manager})"


def stack_secrets(engine: Engine) -> frozenset[str]:
    """Every text a secret config value of the stack holds (an object's leaves too), for masking the report."""
    found: set[str] = set()
    for config in engine.workspace_stack().get_all_config().values():
        if config.secret:
            found.add(config.value)
            with contextlib.suppress(ValueError):
                found.update(str(leaf) for leaf in leaves(json.loads(config.value)) if leaf is not None)
    return frozenset(s for s in found if len(s) >= SECRET_MIN_LENGTH)


def run(
    engine: Engine, tools: Tools, *, fix: bool = False, log: Callable[[str], None] = print
) -> tuple[Report, Report | None]:
    """The check, and with ``fix`` the correction and the same check again, masked (``report.masked``). Raises
    ``CannotCheck``/``EngineError``."""
    secrets = stack_secrets(engine)
    observed = observe(engine, tools)
    report = compare(observed)
    if not fix or not report.drift:
        return masked(report, secrets), None
    correct(engine, tools, observed, report, log)
    return masked(report, secrets), masked(compare(observe(engine, tools)), secrets)
