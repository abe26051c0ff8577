"""``./supersonic drift <stack>`` (docs/drift.md): both parts of the check, the correction, and the report printed.
Exit 0 no drift, 1 drift (or a correction that left some), 2 could not check."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE
from supersonic_interlink.drift import managed, rbac, release, report
from supersonic_interlink.drift.release import CannotCheck, Tools
from supersonic_interlink.drift.report import PULUMI_PART, Report, leaves, masked
from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV
from supersonic_interlink.engine.run import ROOT, Engine, EngineError, scratch_project
from supersonic_interlink.engine.toolchain import ToolchainError

SECRET_MIN_LENGTH = 4
"""Shorter secret values are not masked (every "1" would be)."""


@dataclass
class Observed:
    """Everything a check read: what the unit tests replay (recorded through a pydantic ``TypeAdapter``)."""

    stack: str
    release: release.ReleaseObservation
    resources: list[managed.ResourceObservation]


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
        return Observed(engine.stack, release_part.result(), managed.observations(events))


def compare(observed: Observed) -> Report:
    rel = observed.release
    found = Report(observed.stack, rel.release, rel.namespace, rel.revision)
    for rows, ignored, objects in (managed.compare(observed.resources, rel.release), release.compare(rel)):
        found.rows, found.ignored, found.objects = found.rows + rows, found.ignored + ignored, found.objects + objects
    return found


def correct(engine: Engine, tools: Tools, observed: Observed, found: Report, log: Callable[[str], None]) -> None:
    """The release's objects put back object by object (docs/drift.md: not a Helm upgrade); Pulumi's edited objects
    applied again from the inputs the provider last sent; ``pulumi up --refresh`` for what was deleted."""
    for line in release.correct(observed.release, found.rows, tools):
        log(f"drift: {line}")
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


def stack_secrets(engine: Engine) -> frozenset[str]:
    """Every text a secret config value of the stack holds (an object's leaves too)."""
    found: set[str] = set()
    for config in (c for c in engine.workspace_stack().get_all_config().values() if c.secret):
        found.add(config.value)
        with contextlib.suppress(ValueError):
            found.update(str(leaf) for leaf in leaves(json.loads(config.value)) if leaf is not None)
    return frozenset(s for s in found if len(s) >= SECRET_MIN_LENGTH)


def check(
    engine: Engine, tools: Tools, *, fix: bool = False, log: Callable[[str], None] = print
) -> tuple[Report, Report | None]:
    """The check, and with ``fix`` the correction and the same check again, masked."""
    secrets = stack_secrets(engine)
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
        engine = Engine(
            stack, work_dir=scratch_project(Path(scratch)) if scratch else ROOT, log=_log, create=False, cli=cli
        )
        first, second = check(engine, Tools(), fix=correct, log=_log)
    except (CannotCheck, EngineError, ToolchainError, subprocess.TimeoutExpired) as error:
        print(f"supersonic drift: could not check {stack}: {rbac.missing_right(str(error)) or error}", file=sys.stderr)
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
