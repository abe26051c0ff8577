"""Adopting the live release: what release.adopt registers, the URNs the steps print, and the steps' order."""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_runner import run_cli
from conftest import ROOT, stack_config, stack_settings

from supersonic_interlink.cli.verbs import TAKEOVER as takeover
from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.render.evaluate import Evaluation, Registered, evaluate
from supersonic_interlink.takeover import run
from supersonic_interlink.takeover.steps import DOCS, DOCS_BEGIN, docs_text, format_steps, names

PINNED_CHART = {
    "git": "https://github.com/fastmachinelearning/SuperSONIC",
    "path": "helm/supersonic",
    "commit": "0123456789abcdef0123456789abcdef01234567",
}
HAMMER_RELEASE = {"name": "supersonic-interlink", "chart": PINNED_CHART}
ADOPTING = {**HAMMER_RELEASE, "adopt": True}
RELEASE_URN = (
    "urn:pulumi:hammer::supersonic-interlink::"
    "supersonic-interlink:index:SupersonicRelease$kubernetes:helm.sh/v3:Release::supersonic-helm"
)
COMPONENT_URN = "urn:pulumi:hammer::supersonic-interlink::supersonic-interlink:index:SupersonicRelease::supersonic"


@pytest.fixture(scope="module")
def both_modes() -> dict[bool, Evaluation]:
    return {
        adopt: evaluate(stack_config("hammer", release={**HAMMER_RELEASE, "adopt": adopt}), "hammer")
        for adopt in (False, True)
    }


def _ancestry(evaluation: Evaluation, resource: Registered) -> list[Registered]:
    chain = [resource]
    while True:
        *_, qualified_type, name = chain[0].parent.split("::")
        parent_type = qualified_type.split("$")[-1]
        if parent_type == "pulumi:pulumi:Stack":
            return chain
        (parent,) = [r for r in evaluation.resources if r.type == parent_type and r.name == name]
        chain.insert(0, parent)


def test_the_urns_and_object_names_the_steps_print_are_the_ones_the_program_registers(both_modes) -> None:
    evaluation = both_modes[False]
    release = evaluation.one(HELM_RELEASE_TYPE)
    chain = _ancestry(evaluation, release)
    registered_chain = "$".join(r.type for r in chain)
    assert [r.type for r in chain] == ["supersonic-interlink:index:SupersonicRelease", HELM_RELEASE_TYPE]
    assert f"urn:pulumi:hammer::supersonic-interlink::{registered_chain}::{release.name}" == RELEASE_URN, (
        "the URN the engine gives what the program registers, or the undo's `pulumi state delete` names nothing"
    )
    given = names("hammer", stack_settings("hammer"))
    assert given["release_urn"] == RELEASE_URN
    assert given["component_urn"] == COMPONENT_URN
    assert given["import_id"] == "cms/supersonic-interlink", "pulumi-kubernetes reads a Release by <namespace>/<name>"
    custom = [r.inputs for r in both_modes[True].resources if r.custom and r.type != HELM_RELEASE_TYPE]
    registered = {obj["kind"]: obj["metadata"]["name"] for obj in custom}
    assert given["new_envoy_config_map"] == registered["ConfigMap"]
    assert given["cleanup_cronjob"] == registered["CronJob"]


def test_with_adopt_only_the_release_is_imported_and_nothing_it_is_upgraded_to_changes(both_modes) -> None:
    assert {r.import_id for r in both_modes[False].resources} == {""}, "without adopt the engine reads nothing"
    imported = {(r.type, r.name): r.import_id for r in both_modes[True].resources if r.import_id}
    assert imported == {(HELM_RELEASE_TYPE, "supersonic-helm"): "cms/supersonic-interlink"}, (
        "the live release is read into the state; the Envoy ConfigMap and the cleanup objects are created"
    )
    assert both_modes[True].one(HELM_RELEASE_TYPE).inputs == both_modes[False].one(HELM_RELEASE_TYPE).inputs, (
        "adoption only decides install versus import; the upgrade must be the same release either way"
    )
    assert sorted((r.type, r.name) for r in both_modes[True].resources) == sorted(
        (r.type, r.name) for r in both_modes[False].resources
    )


def test_adopting_with_an_unpinned_git_chart_is_a_config_error() -> None:
    unpinned = {key: value for key, value in PINNED_CHART.items() if key != "commit"}
    with pytest.raises(ConfigError) as caught:
        settings_from_config(stack_config("hammer", release={**ADOPTING, "chart": unpinned}))
    assert caught.value.problems[0].startswith("supersonic-interlink:release.adopt = true: expected a pinned chart")
    assert settings_from_config(stack_config("hammer", release=ADOPTING)).release.adopt, "the same chart, pinned"


@dataclass(frozen=True)
class Step:
    actions: list[str]
    undo: list[str]


@pytest.fixture(scope="module")
def hammer_steps() -> list[Step]:
    printed = format_steps("hammer", stack_settings("hammer")).split("\n### ")[1:]
    return [
        Step(
            step.split("```sh\n")[1].split("\n```")[0].splitlines(),
            [line[2:] for line in step.split("Undo:\n\n")[1].splitlines() if line.startswith("- ")],
        )
        for step in printed
    ]


def _index(hammer_steps, needle: str) -> int:
    found = [i for i, s in enumerate(hammer_steps) if any(needle in a for a in s.actions)]
    assert len(found) == 1, f"{needle!r} should be done in exactly one step, found {found}"
    return found[0]


def test_save_and_compare_the_live_objects_then_suspend_flux_then_upgrade_then_delete_the_helmrelease(hammer_steps):
    saved = [a for a in hammer_steps[1].actions if a.endswith(("> live-objects.yaml", "> live-manifest.yaml"))]
    assert saved == [
        "kubectl -n cms get scaledobject/supersonic-interlink-keda-so -o yaml > live-objects.yaml",
        "helm -n cms get manifest supersonic-interlink > live-manifest.yaml",
    ], "the chart's lookup reads the live ScaledObject; the stored manifest is what the upgrade compares against"
    suspend = _index(hammer_steps, "spec.suspend: true")
    upgrade = _index(hammer_steps, "./supersonic pulumi up hammer --yes")
    delete = _index(hammer_steps, "delete helmrelease supersonic-interlink")
    compare = _index(hammer_steps, "./supersonic takeover objects hammer")
    (command,) = [a for a in hammer_steps[compare].actions if "takeover objects" in a]
    assert "--live live-values.yaml --live-object live-objects.yaml --live-manifest live-manifest.yaml" in command
    assert compare < _index(hammer_steps, "./supersonic pulumi up hammer"), "read before the upgrade"
    assert compare < suspend < upgrade < delete, (
        "compare first; Flux must stop before Pulumi upgrades (or it upgrades back), and the HelmRelease may go only "
        "once it is suspended and the release is Pulumi's"
    )
    assert "kustomize.toolkit.fluxcd.io/prune: disabled" in hammer_steps[suspend].actions[0], (
        "removing the HelmRelease from git must not let kustomize-controller delete it"
    )
    old_pruner = _index(hammer_steps, "RoleBinding supersonic-interlink-pod-pruner")
    ran = _index(hammer_steps, "get cronjob supersonic-interlink-failed-pod-cleanup")
    assert ran == old_pruner > upgrade, "the old pruner goes in the step that first checks the new CronJob ran"
    acceptance = hammer_steps[-1].actions
    assert acceptance[-1].startswith("./supersonic probe hammer "), "the acceptance test ends the takeover"
    assert '{"spec":{"minReplicaCount":0}}' in acceptance[0], (
        "the chart keeps the live ScaledObject's minReplicaCount, so the probe would find Triton awake, not cold"
    )


def test_no_step_uninstalls_or_skips_the_gate_and_the_undo_forgets_the_release_before_any_destroy(hammer_steps) -> None:
    actions = [a for s in hammer_steps for a in s.actions]
    assert not [a for a in actions if "uninstall" in a or "pulumi destroy" in a or "helm delete" in a]
    shell = [(i, a) for i, s in enumerate(hammer_steps) for a in s.actions if not a.startswith("# ")]
    assert [text for _, text in shell if re.match(r"pulumi (up|preview|destroy|refresh)\b", text)] == [], (
        "a bare pulumi up or preview skips the project's gate"
    )
    login = next(i for i, text in shell if text.startswith("pulumi login "))
    init = next(i for i, text in shell if text.startswith("pulumi stack init hammer "))
    first_engine = next(i for i, text in shell if text.startswith("./supersonic pulumi "))
    assert login == init == 0 < first_engine, "the stack exists in the logged-in backend before any preview"
    (upgrade_undo,) = [s.undo for s in hammer_steps if any("pulumi up" in a for a in s.actions)]
    forget = next(i for i, u in enumerate(upgrade_undo) if u.startswith("pulumi state delete"))
    destroy = next(i for i, u in enumerate(upgrade_undo) if u.startswith("pulumi destroy"))
    assert forget < destroy, "with the release still in the state, destroy would run helm uninstall"
    assert shlex.split(upgrade_undo[forget].split("   (")[0]) == [
        *("pulumi", "state", "delete", "--force", RELEASE_URN, "--stack", "hammer", "--yes")
    ], "--force: the Release is protected"
    assert f"--force '{RELEASE_URN}' " in upgrade_undo[forget], "the URN holds a $: unquoted, the shell expands it"


def _run_printed(command: str, tmp_path: Path, suspended: str) -> list[str]:
    """Run a printed command with a kubectl that answers ``suspended`` and records every call."""
    calls = tmp_path / "calls"
    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.parent.mkdir(exist_ok=True)
    kubectl.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\ncase "$*" in *jsonpath*) printf %s {shlex.quote(suspended)};; esac\n'
    )
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
    subprocess.run(
        ["/bin/sh", "-c", command], check=False, env={**os.environ, "PATH": f"{kubectl.parent}:/usr/bin:/bin"}
    )
    return calls.read_text().splitlines() if calls.exists() else []


@pytest.mark.parametrize(("suspended", "deletes"), [("false", False), ("", False), ("true", True)])
def test_the_printed_helmrelease_delete_runs_only_once_it_is_suspended(hammer_steps, tmp_path, suspended, deletes):
    (command,) = [a for s in hammer_steps for a in s.actions if "delete helmrelease" in a]
    calls = _run_printed(command, tmp_path, suspended)
    assert calls and [c for c in calls if c.startswith("-n cms delete")] == (
        ["-n cms delete helmrelease supersonic-interlink"] if deletes else []
    ), "deleting a HelmRelease that is not suspended makes helm-controller uninstall the release"


def test_the_steps_command_and_docs_print_the_steps_and_what_is_still_to_do_and_name_an_unknown_stack() -> None:
    done = run_cli("takeover", "steps", "hammer", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert f"release URN:   {RELEASE_URN}\n" in done.stdout
    assert "release.adopt is off (step 2 turns it on)" in done.stdout
    assert done.stdout == format_steps("hammer", stack_settings("hammer"))
    unknown = run_cli("takeover", "steps", "nosuch", cwd=ROOT)
    assert unknown.returncode == 2
    assert "Traceback" not in unknown.stderr and "stack 'nosuch': no file stacks/Pulumi.nosuch.yaml" in unknown.stderr
    assert DOCS.read_text() == docs_text(DOCS.read_text()), (
        "docs/takeover.md and `takeover steps` must agree: run .venv/bin/python -m supersonic_interlink.takeover.steps"
    )
    section = DOCS.read_text().split(DOCS_BEGIN)[1]
    assert "pulumi state delete --force " in section and "envoy-external-<hash>" in section


def test_steps_live_prints_the_steps_only_once_the_live_release_passes(monkeypatch, capsys) -> None:
    refusal = ["suspend: HelmRelease cms/supersonic-interlink is not suspended"]
    monkeypatch.setattr(run, "live_findings", lambda settings: refusal)
    assert takeover.main(["steps", "hammer", "--live"]) == 1
    refused = capsys.readouterr()
    assert refused.out == "", "the import step must not be printed while Flux still acts on the release"
    assert "stack hammer: suspend: HelmRelease cms/supersonic-interlink is not suspended\n" in refused.err
    monkeypatch.setattr(run, "live_findings", lambda settings: [])
    assert takeover.main(["steps", "hammer", "--live"]) == 0
    assert capsys.readouterr().out == format_steps("hammer", stack_settings("hammer"))


def helm_release(name: str = "supersonic-interlink", namespace: str = "cms", **spec: object) -> dict:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"suspend": True, **spec}}


DEPLOYED = {"info": {"status": "deployed"}, "version": 12}


def test_the_live_check_wants_one_suspended_helm_release_and_a_deployed_release() -> None:
    hammer = stack_settings("hammer")
    assert run.check_live([helm_release()], DEPLOYED, hammer) == []
    assert run.check_live([helm_release(suspend=False)], DEPLOYED, hammer) == [
        "suspend: HelmRelease cms/supersonic-interlink is not suspended (spec.suspend: False); step 3 first"
    ], "deleted unsuspended, a HelmRelease uninstalls the release"
    assert run.check_live([], DEPLOYED, hammer) == [
        "HelmRelease: expected exactly one HelmRelease managing cms/supersonic-interlink, found none"
    ]
    twin = helm_release(namespace="other", targetNamespace="cms", releaseName="supersonic-interlink")
    (found, *_) = run.check_live([helm_release(), twin], DEPLOYED, hammer)
    assert "found cms/supersonic-interlink, other/supersonic-interlink" in found
    (pending,) = run.check_live([helm_release()], {"info": {"status": "pending-upgrade"}, "version": 13}, hammer)
    assert pending.startswith("helm status: release cms/supersonic-interlink is pending-upgrade (revision 13): a Helm")


def test_the_helm_release_name_follows_helm_controller() -> None:
    hr = helm_release()
    assert run.release_of(hr) == ("supersonic-interlink", "cms")
    hr["spec"]["targetNamespace"] = "cms2"
    assert run.release_of(hr) == ("cms2-supersonic-interlink", "cms2")
    hr["spec"]["releaseName"] = "given"
    assert run.release_of(hr) == ("given", "cms2")
