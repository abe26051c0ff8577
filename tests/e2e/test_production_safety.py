"""No road to ``helm uninstall`` of a release short of ``release.removable`` in a reviewed stack change: each road is
taken on the local control plane, and Helm's record afterwards (the same revisions) is the verdict.
``SUPERSONIC_RECORD_PREVIEWS=DIR`` also writes the previews the gate's unit tests read (tests/fixtures/previews/)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Project, hammer_like, helm_revisions, kubectl_json

from supersonic_interlink import program as program_module
from supersonic_interlink.engine import run as run_module
from supersonic_interlink.engine.run import EngineError, Refused, gated

pytestmark = pytest.mark.timeout(900)

STACK = "safety-e2e"
RELEASE = "supersonic-interlink"
NAMESPACE = "e2e-safety"


def record(project: Project, name: str, **kwargs: Any) -> None:
    """Write ``pulumi preview --json`` of the stack as it now stands, when recording is asked for."""
    directory = os.environ.get("SUPERSONIC_RECORD_PREVIEWS")
    if not directory:
        return
    result = project.engine(STACK).run("preview", json=True, **kwargs)
    Path(directory, f"{name}.json").write_text(json.dumps(json.loads(result.stdout), indent=1) + "\n")


def revisions(project: Project) -> list[tuple[int, str]]:
    return helm_revisions(project.cluster, RELEASE, NAMESPACE)


def test_destroy_removal_and_renames_never_uninstall_the_release(
    project: Project, chart: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = project.cluster
    cluster.kubectl("create", "namespace", NAMESPACE)
    stack = hammer_like(NAMESPACE, RELEASE, chart)
    project.write_stack(STACK, stack)
    gated(project.engine(STACK), "up")
    installed = revisions(project)
    assert installed == [(1, "deployed")]

    # A plain update passes the gate (and is what the gate's unit tests call a plain update).
    raised = {"enabled": True, "readyTimeoutSeconds": 1200, "holdMinReplicasSeconds": 1200}
    project.write_stack(STACK, hammer_like(NAMESPACE, RELEASE, chart, scaleFromZero=raised))
    gated(project.engine(STACK), "preview")
    record(project, "update")
    project.write_stack(STACK, stack)

    # Road 1: ./supersonic pulumi destroy is refused before the engine runs, naming the deliberate path.
    with pytest.raises(Refused, match=r"release\.removable: true in stacks/Pulumi\.safety-e2e\.yaml"):
        gated(project.engine(STACK), "destroy")
    assert revisions(project) == installed

    # Road 2: renaming the release (release.name) replaces it: the engine refuses, already in the preview.
    renamed = hammer_like(NAMESPACE, "supersonic-renamed", chart)
    project.write_stack(STACK, renamed)
    with pytest.raises(EngineError, match="marked for protection"):
        gated(project.engine(STACK), "preview")
    # The engine allows lifting the protection and replacing in one change (docs/engine.md: "Removing or renaming a
    # release"): the gate lets that through only with release.removable (the recorded preview has its steps).
    renamed["supersonic-interlink:release"]["removable"] = True
    project.write_stack(STACK, renamed)
    gated(project.engine(STACK), "preview")
    record(project, "rename-release")
    assert revisions(project) == installed
    project.write_stack(STACK, stack)

    # Road 3: a component renamed without an alias (a new URN): the preview fails, the protected Release kept.
    monkeypatch.setattr(program_module, "RELEASE_COMPONENT", "release")
    with pytest.raises(EngineError, match=r"cannot be deleted\s+because it is protected"):
        gated(project.engine(STACK), "preview")
    # With the old name as an alias the engine moves the state and changes nothing.
    monkeypatch.setattr(program_module, "RELEASE_COMPONENT_ALIASES", ("supersonic",))
    gated(project.engine(STACK), "up")
    assert not [c for c in project.changes() if "delete" in c[0] or "replace" in c[0]], project.changes()
    assert revisions(project) == installed, "no Helm operation at all: the same revision history"
    monkeypatch.undo()
    # (The state now names the Release under the "release" component; the alias moves it back.)
    monkeypatch.setattr(program_module, "RELEASE_COMPONENT_ALIASES", ("release",))
    gated(project.engine(STACK), "up")
    monkeypatch.undo()

    # Road 4: the Release removed from the program (one that registers nothing), and a plain `pulumi destroy`
    # without this project's guard: the engine refuses to delete the protected Release.
    monkeypatch.setattr(run_module, "program", lambda: None)
    with pytest.raises(EngineError, match=r"cannot be deleted\s+because it is protected"):
        gated(project.engine(STACK), "preview")
    with pytest.raises(EngineError, match="protected"):
        project.run(STACK, "destroy")
    assert revisions(project) == installed, "the release was not uninstalled"
    monkeypatch.undo()
    gated(project.engine(STACK), "up")  # the next up restores whatever the refused destroy removed
    assert kubectl_json(cluster, "get", "cronjobs", "-n", NAMESPACE)["items"], "the cleanup CronJob is there"

    # The deliberate path: release.removable lifts the protection (one up); then only the gate, because of that
    # setting, lets these previews and the uninstall through.
    release = {**stack["supersonic-interlink:release"], "removable": True}
    project.write_stack(STACK, {**stack, "supersonic-interlink:release": release})
    gated(project.engine(STACK), "up")
    monkeypatch.setattr(program_module, "RELEASE_COMPONENT", "release")
    gated(project.engine(STACK), "preview")
    record(project, "rename-component")
    monkeypatch.setattr(run_module, "program", lambda: None)
    gated(project.engine(STACK), "preview")
    record(project, "remove-everything")
    monkeypatch.undo()
    assert revisions(project) == installed
    gated(project.engine(STACK), "destroy")
    done = cluster.kubectl("get", "secrets", "-n", NAMESPACE, "-l", "owner=helm", "-o", "name", check=False)
    assert done.stdout.strip() == "", "destroy with release.removable uninstalls the release"
