"""The pull-request gate on ``pulumi preview --json`` recorded from the real engine (tests/fixtures/previews/, by
``SUPERSONIC_RECORD_PREVIEWS=tests/fixtures/previews ./supersonic e2e -k production_safety``, all but the update with
``release.removable`` set so the engine would plan them)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.automation import OpType

from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.engine import gate
from supersonic_interlink.engine.gate import Step, blocked, main, steps_from_events, steps_from_json

PREVIEWS = Path(__file__).resolve().parent / "fixtures" / "previews"


def recorded(name: str) -> list[Step]:
    return steps_from_json(json.loads((PREVIEWS / f"{name}.json").read_text()))


def test_a_stack_edit_that_replaces_the_envoy_config_map_and_updates_the_release_passes() -> None:
    steps = recorded("update")
    changed = {(s.op, s.name) for s in steps if s.op != "same"}
    assert changed == {("replace", "envoy-configmap"), ("update", "supersonic-helm")}
    assert blocked(steps, removable=False) == []


@pytest.mark.parametrize("name", ["rename-release", "rename-component", "remove-everything"])
def test_a_plan_that_uninstalls_or_replaces_the_release_fails_naming_it_unless_removable(name: str) -> None:
    problems = blocked(recorded(name), removable=False)
    assert problems, f"{name}: the release goes, so the gate must fail"
    assert all("supersonic-helm" in line and "release.removable: true" in line for line in problems), problems
    assert blocked(recorded(name), removable=True) == [], "release.removable is the deliberate way through"


def test_deleting_the_envoy_config_map_without_a_successor_fails_even_when_removable() -> None:
    steps = [Step("delete", s.urn) if s.name == "envoy-configmap" else s for s in recorded("update")]
    for removable in (False, True):
        problems = blocked(steps, removable=removable)
        assert len(problems) == 1 and "Envoy ConfigMap envoy-configmap" in problems[0], problems


def test_a_file_that_is_not_a_preview_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('["not", "a", "preview"]')
    assert main(["hammer", str(bad)]) == 2
    assert "not the output of `pulumi preview --json`" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------- fails closed
RELEASE_URN = recorded("update")[2].urn
ENVOY_MAP_URN = recorded("update")[1].urn
UNREADABLE = {
    "unknown-op": {"op": "obliterate", "urn": RELEASE_URN},
    "no-op": {"urn": RELEASE_URN},
    "op-list": {"op": ["delete"], "urn": RELEASE_URN},
    "op-case": {"op": "Delete", "urn": RELEASE_URN},
    "urn-no-colons": {"op": "delete", "urn": ENVOY_MAP_URN.replace("::", ":")},
    "urn-no-name": {"op": "delete", "urn": RELEASE_URN.rsplit("::", 1)[0]},
    "urn-other-scheme": {"op": "delete", "urn": RELEASE_URN.replace("urn:pulumi:", "x:")},
    "urn-number": {"op": "delete", "urn": 7},
    "string": "delete",
}


@pytest.mark.parametrize("step", UNREADABLE.values(), ids=UNREADABLE)
def test_a_step_the_gate_cannot_classify_refuses_the_plan_naming_it(
    tmp_path: Path, step: object, capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.loads((PREVIEWS / "update.json").read_text())
    document["steps"].append(step)
    preview = tmp_path / "preview.json"
    preview.write_text(json.dumps(document))
    assert blocked(steps_from_json(document), removable=True), f"{step!r} must refuse the plan even when removable"
    assert main(["hammer", str(preview)]) == 1, "an unreadable step is a refused plan, exit 1"
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, f"one line naming the step: {err}"
    said = f"gate: stack hammer: step 3: {json.dumps(step)[:117]}"
    assert err.startswith(said) and "is not an object with an op the engine plans (create, " in err, err
    assert "and a urn urn:pulumi:<stack>::<project>::<type>::<name>; the gate cannot tell what it does" in err, err


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
OPS = st.sampled_from([*sorted(gate.ENGINE_OPS), "Delete", "obliterate", " delete"]) | JSON_VALUES
URNS = st.sampled_from([RELEASE_URN, ENVOY_MAP_URN, RELEASE_URN.replace("::", ":", 1)]) | JSON_VALUES
STEPS = st.fixed_dictionaries({}, optional={"op": OPS, "urn": URNS}) | JSON_VALUES


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(STEPS, max_size=6), removable=st.booleans())
def test_no_generated_plan_raises_and_none_with_an_unreadable_step_passes(steps: list[object], removable: bool) -> None:
    read = steps_from_json({"steps": steps})
    assert len(read) == len(steps), "every entry of the plan is a step the gate looks at"
    problems = blocked(read, removable=removable)
    unreadable = [step for step in read if not step.readable]
    if unreadable:
        assert len(problems) >= len(unreadable), "every unreadable step is named"
    touching = [s for s in read if s.readable and s.op in gate.REMOVING_OPS and s.type == HELM_RELEASE_TYPE]
    if touching and not removable:
        assert problems, "a readable step that uninstalls the release is refused too"
    assert all("\n" not in line and "\x1b" not in line for line in problems), "one printable line per problem"


def test_an_engine_event_the_gate_cannot_read_refuses_the_plan_too() -> None:
    metadata = SimpleNamespace(op=OpType.UPDATE, urn=RELEASE_URN)
    good = SimpleNamespace(resource_pre_event=SimpleNamespace(metadata=metadata))
    no_metadata = SimpleNamespace(resource_pre_event=SimpleNamespace())
    other = SimpleNamespace(resource_pre_event=None, diagnostic_event=object())
    steps = steps_from_events([good, other, no_metadata])
    assert [(s.op, s.urn) for s in steps] == [("update", RELEASE_URN), (None, None)], "the op as the JSON spells it"
    assert blocked(steps[:1], removable=False) == [], "a readable update passes"
    (problem,) = blocked(steps, removable=False)
    assert problem.startswith('step 1: {"op": null, "urn": null} is not an object with an op'), problem
