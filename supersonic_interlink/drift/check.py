"""``./supersonic drift <stack>`` (docs/drift.md): Pulumi's part read from ``pulumi preview --refresh`` field by field,
the release's part (``release``), the correction, the report printed; exit 0 no drift, 1 drift, 2 could not check."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE
from supersonic_interlink.drift import release, report
from supersonic_interlink.drift.release import CannotCheck, Tools
from supersonic_interlink.drift.report import PULUMI_PART, Ignored, Report, Row, leaves, masked, rule_for
from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV
from supersonic_interlink.engine.run import ROOT, Engine, EngineError, scratch_project
from supersonic_interlink.engine.toolchain import ToolchainError
from supersonic_interlink.objdiff import ABSENT, changes

QUIET_TYPES = ("pulumi:pulumi:Stack", "pulumi:providers:", "supersonic-interlink:")
"""No cluster state of their own."""


@dataclass
class ResourceObservation:
    urn: str
    type: str
    step: str
    """The op the preview plans after the refresh."""
    state: dict[str, Any] | None
    """The outputs before the refresh, and after it (``None``: gone)."""
    live: dict[str, Any] | None
    diffs: list[str]

    @property
    def label(self) -> str:
        outputs = self.state or self.live or {}
        if "kind" in outputs and isinstance(outputs.get("metadata"), Mapping):
            return f"{outputs['kind']}/{outputs['metadata'].get('name')}"
        return f"{self.type.split(':')[-1]} {self.urn.split('::')[-1]}"

    @property
    def is_object(self) -> bool:
        """A Kubernetes object, not the Release's record."""
        return {"apiVersion", "kind"} <= set(self.state or self.live or {})


def _op(metadata: Any) -> str:
    return str(getattr(metadata.op, "value", metadata.op))


def observations(events: Iterable[Any]) -> list[ResourceObservation]:
    found: dict[str, ResourceObservation] = {}
    for event in events:
        outputs, pre = getattr(event, "res_outputs_event", None), getattr(event, "resource_pre_event", None)
        refresh = outputs is not None and _op(outputs.metadata) == "refresh"
        source = outputs if refresh else pre
        if source is None or (not refresh and _op(source.metadata) == "refresh"):
            continue
        m = source.metadata
        item = found.setdefault(m.urn, ResourceObservation(m.urn, m.type, "same", None, None, []))
        if refresh:
            item.state = dict(m.old.outputs or {}) if m.old is not None else None
            item.live = dict(m.new.outputs or {}) if m.new is not None and m.new.outputs is not None else None
        else:
            item.step, item.diffs = _op(m), list(m.diffs or [])
    return list(found.values())


def compare_resources(observed: Iterable[ResourceObservation], found: Report) -> None:
    """Pulumi's part (docs/drift.md: why field by field, not the preview's steps alone)."""
    for item in (i for i in observed if not i.type.startswith(QUIET_TYPES)):
        found.objects.append(item.label)
        if item.state is not None and item.live is None:
            found.rows.append(Row(PULUMI_PART, item.label, (), "present (in the state)", ABSENT, "deleted"))
        elif item.state is not None and item.live is not None:
            for change in changes(item.state, item.live):
                if rule := rule_for(item.state, found.release, change.path, is_object=item.is_object):
                    found.ignored.append(Ignored(PULUMI_PART, item.label, change.path, rule.name))
                else:
                    found.rows.append(Row(PULUMI_PART, item.label, change.path, change.before, change.after, "refresh"))
        if item.step != "same" and not any(row.object == item.label for row in found.rows):
            # A change of the program itself: `preview --diff` shows the values, the engine names the fields.
            for path in [(name,) if name else () for name in item.diffs or [""]]:
                found.rows.append(Row(PULUMI_PART, item.label, path, "(the program's)", "(the state's)", item.step))


@dataclass
class Observed:
    """Everything a check read: what the unit tests replay (recorded through a pydantic ``TypeAdapter``)."""

    stack: str
    release: release.ReleaseObservation
    resources: list[ResourceObservation]


def deployed_release(engine: Engine) -> tuple[str, str]:
    """(release name, namespace) from the stack's outputs."""
    outputs = engine.workspace_stack().outputs()
    if "releaseName" not in outputs or "namespace" not in outputs:
        raise CannotCheck(f"stack {engine.stack} exports no releaseName and namespace: it has not been deployed")
    return str(outputs["releaseName"].value), str(outputs["namespace"].value)


def observe(engine: Engine, tools: Tools) -> Observed:
    """Both parts, the release's objects read while the engine previews."""
    name, namespace = deployed_release(engine)
    events: list[Any] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        release_part = pool.submit(release.observe, name, namespace, tools)
        engine.run("preview", refresh=True, on_event=events.append)
        return Observed(engine.stack, release_part.result(), observations(events))


def compare(observed: Observed) -> Report:
    rel = observed.release
    found = Report(observed.stack, rel.release, rel.namespace, rel.revision)
    compare_resources(observed.resources, found)
    release.compare(rel, found)
    return found


def correct(engine: Engine, tools: Tools, observed: Observed, found: Report, log: Callable[[str], None]) -> None:
    """The release's objects put back object by object (docs/drift.md: not a Helm upgrade); Pulumi's edited objects
    applied again from the inputs the provider last sent; ``pulumi up --refresh`` for what was deleted."""
    release.correct(observed.release, found.rows, tools, log)
    pulumi_rows = [row for row in found.rows if row.part == PULUMI_PART]
    edited = {row.object for row in pulumi_rows if row.note == "refresh"}
    for item in (i for i in observed.resources if i.label in edited and i.is_object and i.live is not None):
        inputs, manager = (item.state or {}).get("__inputs"), (item.state or {}).get("__fieldManager")
        if report.SECRET_SHOWN in leaves(inputs):  # how the engine's events show a secret value
            raise CannotCheck(f"{item.label}: its inputs hold a secret the events never show: delete it, correct again")
        flags = ("--server-side", "--force-conflicts", f"--field-manager={manager}", "-n", observed.release.namespace)
        tools.read("kubectl", "apply", *flags, "-f", "-", input_text=json.dumps(inputs))
        log(f"drift: {item.label}: applied again from the inputs Pulumi last sent (field manager {manager})")
    deleted = {row.object for row in pulumi_rows if row.note == "deleted"}
    planned = [item for item in observed.resources if item.step != "same"]
    if any(item.label not in deleted or item.step != "create" for item in planned):
        # A change of the program not yet applied: a reviewed `up`, not a correction.
        log(
            f"drift: the preview plans changes of the program itself; review `./supersonic pulumi preview "
            f"{engine.stack} --diff` and apply them with `./supersonic pulumi up {engine.stack} --yes`"
        )
    elif deleted:  # every step planned creates what was deleted: nothing for a gate to refuse
        engine.run("up", refresh=True)
        log(f"drift: pulumi up --refresh of {engine.stack} done")


def check(
    engine: Engine, tools: Tools, *, fix: bool = False, log: Callable[[str], None] = print
) -> tuple[Report, Report | None]:
    """The check, and with ``fix`` the correction and the same check again, masked."""
    secrets = [c.value for c in engine.workspace_stack().get_all_config().values() if c.secret]
    observed = observe(engine, tools)
    found = compare(observed)
    if not fix or not found.drift:
        return masked(found, secrets), None
    correct(engine, tools, observed, found, log)
    return masked(found, secrets), masked(compare(observe(engine, tools)), secrets)


_log = functools.partial(print, file=sys.stderr, flush=True)


def run(stack: str, *, output: str = "text", correct: bool = False, cli: str | None = None) -> int:
    """``output``: ``text``, ``json`` or ``markdown``; ``cli``: the Pulumi CLI ``--pulumi`` names."""
    scratch = os.environ.get(SCRATCH_PROJECT_ENV)
    try:
        work_dir = scratch_project(Path(scratch)) if scratch else ROOT
        engine = Engine(stack, work_dir=work_dir, log=_log, create=False, cli=cli)
        first, second = check(engine, Tools(), fix=correct, log=_log)
    except (CannotCheck, EngineError, ToolchainError, subprocess.TimeoutExpired) as error:
        print(f"supersonic drift: could not check {stack}: {error}", file=sys.stderr)
        return EXIT_USAGE
    final = second or first
    if output == "json":
        print(json.dumps({**final.as_json(), **({"corrected": first.as_json()} if second else {})}, indent=2))
    elif output == "markdown":
        print(report.markdown(final, correct_command=f"./supersonic drift {stack} --correct"), end="")
    else:
        if second is not None:
            print("before the correction:\n" + report.text(first) + "\nafter it:")
        print(report.text(final), end="")
        if final.drift and not correct:
            print(f"to bring it back: ./supersonic drift {stack} --correct")
    return EXIT_FINDING if final.drift else EXIT_OK
