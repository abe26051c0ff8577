"""The pull-request gate on previews recorded from the real engine (tests/fixtures/previews/).

The recordings are ``pulumi preview --json`` of the Pulumi CLI 3.274.1 with the Kubernetes provider 4.25.0 on the
local control plane, written by ``SUPERSONIC_RECORD_PREVIEWS=tests/fixtures/previews ./supersonic e2e -k
production_safety``: a stack edit (update), a release rename, a component rename, and everything removed from the
program. The last three were recorded with ``release.removable`` set, which is why the engine let them be planned.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from supersonic_interlink.engine.gate import Step, blocked, main, steps_from_json

PREVIEWS = Path(__file__).resolve().parent / "fixtures" / "previews"


def recorded(name: str) -> list[Step]:
    return steps_from_json(json.loads((PREVIEWS / f"{name}.json").read_text()))


def test_a_stack_edit_that_replaces_the_envoy_config_map_and_updates_the_release_passes() -> None:
    steps = recorded("update")
    assert {(s.op, s.name) for s in steps if s.op != "same"} == {
        ("replace", "envoy-configmap"),
        ("update", "supersonic-helm"),
    }
    assert blocked(steps, removable=False) == []


@pytest.mark.parametrize("name", ["rename-release", "rename-component", "remove-everything"])
def test_a_plan_that_uninstalls_or_replaces_the_release_fails_naming_it(name: str) -> None:
    problems = blocked(recorded(name), removable=False)
    assert problems, f"{name}: the release goes, so the gate must fail"
    assert all("supersonic-helm" in line and "release.removable: true" in line for line in problems), problems


@pytest.mark.parametrize("name", ["rename-release", "rename-component", "remove-everything"])
def test_release_removable_is_the_deliberate_way_through(name: str) -> None:
    assert blocked(recorded(name), removable=True) == []


def test_deleting_the_envoy_config_map_without_a_successor_fails_even_when_removable() -> None:
    # Derived from the recorded update: its ConfigMap replacement turned into a plain delete, the Release kept.
    steps = [Step("delete", s.urn) if s.name == "envoy-configmap" else s for s in recorded("update")]
    for removable in (False, True):
        problems = blocked(steps, removable=removable)
        assert len(problems) == 1 and "Envoy ConfigMap envoy-configmap" in problems[0], problems


def test_the_command_reads_a_preview_file_and_exits_1_on_a_blocked_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hammer", str(PREVIEWS / "update.json")]) == 0
    assert main(["hammer", str(PREVIEWS / "rename-component.json")]) == 1
    assert "gate: stack hammer: delete of Helm release supersonic-helm" in capsys.readouterr().err


def test_a_file_that_is_not_a_preview_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('["not", "a", "preview"]')
    assert main(["hammer", str(bad)]) == 2
    assert "not the output of `pulumi preview --json`" in capsys.readouterr().err
