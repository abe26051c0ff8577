"""The drift check on what it read from a real API server and ``pulumi preview --refresh`` (tests/fixtures/drift/,
recorded by tests/e2e/test_drift.py: ``clean`` right after ``pulumi up``, ``drifted`` after its kubectl edits)."""

from __future__ import annotations

import copy
import json
import subprocess
from types import SimpleNamespace
from typing import Any, cast

import pytest
import yaml
from conftest import ROOT
from pydantic import TypeAdapter

from supersonic_interlink import contract
from supersonic_interlink.cli.verbs import DRIFT as drift_cli
from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.contract import CHART
from supersonic_interlink.drift import check
from supersonic_interlink.drift import release as release_part
from supersonic_interlink.drift.check import Observed, compare
from supersonic_interlink.drift.report import (
    PULUMI_PART,
    RELEASE_PART,
    RULES,
    Report,
    Row,
    markdown,
    masked,
    rule_for,
    text,
)
from supersonic_interlink.engine.run import Engine
from supersonic_interlink.objdiff import ABSENT, format_path

FIXTURES = ROOT / "tests" / "fixtures" / "drift"
RELEASE = "supersonic-interlink"
ENVOY = CHART.envoy_object_name(RELEASE)
TRITON = contract.TRITON.inference_object_name(RELEASE)
SCALED_OBJECT = CHART.scaled_object_name(RELEASE)


RECORDING = TypeAdapter(Observed)


def recorded(name: str) -> Observed:
    return RECORDING.validate_json((FIXTURES / f"{name}.json").read_bytes())


def release_object(observed: Observed, key: str) -> release_part.ObjectObservation:
    return next(o for o in observed.release.objects if o.key == key)


def live(observed: Observed, key: str) -> dict[str, Any]:
    item = release_object(observed, key)
    assert item.live is not None, key
    return item.live


def test_right_after_pulumi_up_nothing_drifts() -> None:
    report = compare(recorded("clean"))
    assert not report.drift, [(r.object, r.field, r.expected, r.live) for r in report.rows]
    manifest = {o.key for o in recorded("clean").release.objects}
    assert manifest <= set(report.objects), "every object of the release's manifest is compared"
    assert f"Deployment/{ENVOY}" in manifest and f"ScaledObject/{SCALED_OBJECT}" in manifest
    assert any(name.startswith("CronJob/") for name in report.objects), "and Pulumi's own objects"


def test_each_kubectl_drift_is_one_row_of_expected_from_the_manifest_and_live_from_the_cluster() -> None:
    report = compare(recorded("drifted"))
    cron_job = next(o for o in report.objects if o.startswith("CronJob/"))
    assert {(row.part, row.object, row.field) for row in report.rows} == {
        (RELEASE_PART, f"Deployment/{ENVOY}", "spec.template.spec.containers[name=envoy].image"),
        (RELEASE_PART, f"Deployment/{ENVOY}", "spec.replicas"),
        (RELEASE_PART, f"ConfigMap/{CHART.envoy_config_map_name(RELEASE)}", 'data["envoy.yaml"]'),
        (RELEASE_PART, f"Service/{CHART.envoy_service_name(RELEASE)}", "spec.ports[name=grpc].port"),
        (PULUMI_PART, cron_job, "(the object)"),
    }, "each kubectl edit is one row naming object and field, and nothing else is"
    rows = {(r.object, r.field): r for r in report.rows}
    replicas = rows[(f"Deployment/{ENVOY}", "spec.replicas")]
    assert (replicas.expected, replicas.live) == (1, 3)
    image = rows[(f"Deployment/{ENVOY}", "spec.template.spec.containers[name=envoy].image")]
    assert image.live == "envoyproxy/envoy:v1.40.0" and image.expected != image.live
    deleted = next(r for r in rows.values() if r.object.startswith("CronJob/"))
    assert deleted.live is ABSENT and deleted.note == "deleted"
    # The Service's port changed in place: the API server refuses the dry-run apply, the row still names it.
    port = rows[(f"Service/{CHART.envoy_service_name(RELEASE)}", "spec.ports[name=grpc].port")]
    assert (port.expected, port.live) == (CHART.envoy_grpc_port, 8002)
    assert "dry-run apply refused" in port.note and "Duplicate value" in port.note, "nodePort, clusterIP: no drift"
    # The admission sidecar's patch of the ScaledObject: ignored by its declared rule, and counted.
    ignored = [(i.object, format_path(i.path), i.rule) for i in report.ignored]
    assert (f"ScaledObject/{SCALED_OBJECT}", "spec.minReplicaCount", "admission-min-replicas") in ignored
    assert report.ignored_counts()["admission-min-replicas"] == 1


def scaled(observed: Observed, deployment: str) -> Observed:
    """``deployment`` at 4 replicas where the manifest sets 1, as SuperSONIC renders it without scale from zero."""
    changed = copy.deepcopy(observed)
    item = release_object(changed, f"Deployment/{deployment}")
    assert item.dry_run is not None
    item.dry_run["spec"]["replicas"], live(changed, item.key)["spec"]["replicas"] = 1, 4
    return changed


@pytest.mark.parametrize(("deployment", "ignored"), [(TRITON, 1), (ENVOY, 0)], ids=["triton", "envoy"])
def test_triton_scaled_by_keda_is_ignored_by_its_rule_even_where_the_manifest_sets_replicas_envoy_is_drift(
    deployment: str, ignored: int
) -> None:
    report = compare(scaled(recorded("clean"), deployment))
    rows = [(r.object, r.field, r.expected, r.live) for r in report.rows]
    assert rows == ([] if ignored else [(f"Deployment/{ENVOY}", "spec.replicas", 1, 4)])
    assert report.ignored_counts()["triton-replicas"] == ignored


def test_a_resource_without_metadata_is_matched_by_no_named_rule_and_fails_nothing() -> None:
    outputs = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 2}}
    assert rule_for(outputs, "sonic", ("spec", "replicas"), is_object=True) is None


def test_any_other_scaled_object_field_is_drift() -> None:
    changed = recorded("clean")
    live(changed, f"ScaledObject/{SCALED_OBJECT}")["spec"]["maxReplicaCount"] = 3
    rows = compare(changed).rows
    assert [(r.field, r.expected, r.live) for r in rows] == [("spec.maxReplicaCount", 10, 3)], (
        "the sidecar patches minReplicaCount only; the rule must not hide the rest of the object"
    )


def test_status_and_server_metadata_are_ignored_by_rule_labels_and_annotations_are_not() -> None:
    changed = recorded("clean")
    envoy = live(changed, f"Deployment/{ENVOY}")
    envoy["status"]["readyReplicas"] = 0
    envoy["metadata"]["resourceVersion"] = "1"
    del envoy["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    report = compare(changed)
    assert [(r.field, r.expected, r.live) for r in report.rows] == [
        ('metadata.labels["app.kubernetes.io/managed-by"]', "Helm", ABSENT)
    ], "Helm's ownership label, which helm upgrade needs, removed: drift"
    counts = report.ignored_counts()
    assert counts["status"] >= 1 and counts["server-metadata"] >= 1


def test_the_refresh_shows_an_edit_the_preview_calls_same_and_ignores_the_providers_bookkeeping() -> None:
    changed = recorded("clean")
    role = next(r for r in changed.resources if r.type.endswith(":Role"))
    assert role.step == "same" and role.live is not None
    edited_role(changed)
    role.live["__inputs"] = {"changed": True}
    report = compare(changed)
    assert [(r.part, r.field, r.note) for r in report.rows] == [(PULUMI_PART, "rules", "refresh")]
    assert "provider-bookkeeping" in {i.rule for i in report.ignored}, "ignored by its rule, and said so"


def test_the_release_record_changed_by_helm_outside_pulumi_is_drift_status_included() -> None:
    changed = recorded("clean")
    record = next(r for r in changed.resources if r.type == HELM_RELEASE_TYPE)
    assert record.live is not None
    record.live["status"] = {**record.live["status"], "revision": 2, "status": "failed"}
    found = {(r.field, r.expected, r.live) for r in compare(changed).rows}
    assert found == {("status.revision", 1, 2), ("status.status", "deployed", "failed")}, (
        "the Release's status is Helm's record, not a controller's status: the status rule must not hide it"
    )


def test_a_program_change_the_preview_plans_is_reported_by_the_fields_the_engine_names() -> None:
    changed = recorded("clean")
    record = next(r for r in changed.resources if r.type == HELM_RELEASE_TYPE)
    record.step, record.diffs = "update", ["values"]
    assert [(r.object, r.field, r.note) for r in compare(changed).rows] == [
        ("Release supersonic-helm", "values", "update")
    ]


def test_the_drifted_report_as_a_table_as_json_with_whole_values_and_as_markdown_with_every_rule() -> None:
    report, clean = compare(recorded("drifted")), compare(recorded("clean"))
    printed = text(report)
    header = printed.splitlines()[1].split()
    assert header == ["part", "object", "field", "expected", "live"]
    assert "spec.replicas" in printed and "envoyproxy/envoy:v1.40.0" in printed
    assert "…" in printed, "the Envoy config is cut to the column; --json carries it whole"
    assert "ignored by rule: " in printed and "admission-min-replicas 1" in printed
    assert text(clean).splitlines()[0].endswith(": no drift")
    document = json.loads(json.dumps(report.as_json()))
    assert document["drift"] is True
    deleted = next(r for r in document["rows"] if r["object"].startswith("CronJob/"))
    assert deleted["liveSet"] is False and deleted["live"] is None and deleted["expectedSet"] is True
    config = next(r for r in document["rows"] if r["field"] == 'data["envoy.yaml"]')
    assert config["live"] == "edited\n" and len(config["expected"]) > 1000
    assert {r["name"] for r in document["rules"]} == {r.name for r in RULES}
    assert len({r.name for r in RULES}) == len(RULES)
    assert all(len(rule.reason) > 40 and rule.paths for rule in RULES), "every rule has a reason and paths"
    body = markdown(report, correct_command="./supersonic drift hammer --correct")
    rows = [line for line in body.splitlines() if line.startswith("| ")]
    assert rows[0] == "| part | object | field | expected | live |" and len(rows) == 1 + 5
    assert all(f"`{rule.name}`" in body for rule in RULES)
    assert "`./supersonic drift hammer --correct`" in body
    assert "No drift." in markdown(clean)


def test_a_pipe_in_a_value_stays_inside_its_cell() -> None:
    changed = recorded("clean")
    live(changed, f"ConfigMap/{CHART.envoy_config_map_name(RELEASE)}")["data"]["envoy.yaml"] = "a | b"
    line = next(x for x in markdown(compare(changed)).splitlines() if "a \\| b" in x)
    assert line.count(" | ") == 4 and line.startswith("| ") and line.endswith(" |"), "five cells, the pipe escaped"


def recorded_writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """What the correction sends kubectl (arguments, object), with kubectl answering success."""
    writes: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def run(self: release_part.Tools, tool: str, *args: str, input_text: str | None = None) -> Any:
        writes.append((args, json.loads(input_text or "{}")))
        return subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setattr(release_part.Tools, "run", run)
    return writes


def test_correction_puts_each_drifted_field_back_and_keeps_what_rules_ignore(monkeypatch: pytest.MonkeyPatch) -> None:
    observed = scaled(recorded("drifted"), TRITON)
    report = compare(observed)
    writes = recorded_writes(monkeypatch)
    release_part.correct(observed.release, report.rows, release_part.Tools())
    by_name = {(args[0], body["kind"], body["metadata"]["name"]): body for args, body in writes}
    envoy = by_name[("replace", "Deployment", ENVOY)]
    assert envoy["spec"]["replicas"] == 1 and envoy["metadata"]["resourceVersion"], "a PUT guarded by the version"
    assert envoy["spec"]["template"]["spec"]["containers"][0]["image"] != "envoyproxy/envoy:v1.40.0"
    service = by_name[("replace", "Service", CHART.envoy_service_name(RELEASE))]
    assert [p["port"] for p in service["spec"]["ports"]] == [CHART.envoy_grpc_port, CHART.envoy_admin_port]
    assert all(p.get("nodePort") for p in service["spec"]["ports"]), "what the API server filled is kept"
    assert ("replace", "Deployment", TRITON) not in by_name, "Triton's replicas are KEDA's: nothing to put back"
    assert ("replace", "ScaledObject", SCALED_OBJECT) not in by_name
    assert "managedFields" not in envoy["metadata"]


def test_an_unknown_stack_is_a_usage_error_before_anything_runs(capsys: pytest.CaptureFixture) -> None:
    for argv, says in (
        (["no-such-stack"], "no stack 'no-such-stack'"),
        (["hammer", "--json", "--markdown"], "not allowed"),
    ):
        with pytest.raises(SystemExit) as usage:
            drift_cli.main(argv)
        assert usage.value.code == 2 and says in capsys.readouterr().err


class StandInEngine:
    """The stack's name, outputs and config (one secret, an object) the check asks for; ``run`` recorded, not run."""

    def __init__(self, outputs: dict[str, Any] | None = None) -> None:
        self.stack, self.values = "hammer", outputs or {}
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def run(self, action: str, **kwargs: Any) -> None:
        self.runs.append((action, kwargs))

    def workspace_stack(self) -> Any:
        return self

    def outputs(self) -> dict[str, Any]:
        return {key: SimpleNamespace(value=value) for key, value in self.values.items()}

    def get_all_config(self) -> dict[str, Any]:
        secret = SimpleNamespace(value=json.dumps({"tag": "v1.40.0", "n": 1}), secret=True)
        return {"supersonic-interlink:pull": secret, "a": SimpleNamespace(value="v1.40.0-plain", secret=False)}


def pulumi_side(observed: Observed) -> Observed:
    """Only Pulumi's side of a recording drifts (the release's objects as recorded clean)."""
    observed.release = recorded("clean").release
    return observed


def test_a_deleted_pulumi_object_is_recreated_by_an_up_with_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    observed = pulumi_side(recorded("drifted"))
    engine = StandInEngine()
    writes = recorded_writes(monkeypatch)
    check.correct(cast(Engine, engine), release_part.Tools(), observed, compare(observed), log=lambda _line: None)
    assert engine.runs == [("up", {"refresh": True})]
    assert writes == [], "nothing of the release's drifted"


def edited_role(observed: Observed) -> dict[str, Any]:
    """The recording with its Role given one more verb by hand; returns the Role's state."""
    role = next(r for r in observed.resources if r.type.endswith(":Role"))
    assert role.live is not None and role.state is not None
    role.live["rules"][0]["verbs"].append("update")
    return role.state


def test_an_edited_pulumi_object_is_applied_again_from_the_inputs_under_the_providers_field_manager(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    observed = recorded("clean")
    state = edited_role(observed)
    engine = StandInEngine()
    writes = recorded_writes(monkeypatch)
    check.correct(cast(Engine, engine), release_part.Tools(), observed, compare(observed), log=lambda _line: None)
    ((args, inputs),) = writes
    assert args[:3] == ("apply", "--server-side", "--force-conflicts")
    assert f"--field-manager={state['__fieldManager']}" in args, "the provider keeps owning its fields"
    assert inputs == state["__inputs"] and "update" not in json.dumps(inputs)
    assert engine.runs == [], "nothing was deleted: no up"


def test_inputs_holding_a_secret_are_refused_not_applied_with_its_placeholder(monkeypatch: pytest.MonkeyPatch) -> None:
    observed = recorded("clean")
    edited_role(observed)["__inputs"]["metadata"]["annotations"] = {"token": "[secret]"}
    writes = recorded_writes(monkeypatch)
    with pytest.raises(check.CannotCheck, match="its inputs hold a secret"):
        check.correct(cast(Engine, StandInEngine()), release_part.Tools(), observed, compare(observed), print)
    assert writes == [], "the engine's placeholder must never reach the cluster"


def test_a_correction_never_applies_a_change_of_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    observed = pulumi_side(recorded("drifted"))
    record = next(r for r in observed.resources if r.type == HELM_RELEASE_TYPE)
    record.step, record.diffs = "update", ["values"]
    engine = StandInEngine()
    said: list[str] = []
    recorded_writes(monkeypatch)
    check.correct(cast(Engine, engine), release_part.Tools(), observed, compare(observed), log=said.append)
    assert engine.runs == [], "an unapplied stack change goes through a reviewed up, not a drift correction"
    assert any("./supersonic pulumi preview hammer --diff" in line for line in said), said


def stand_in_cluster(
    monkeypatch: pytest.MonkeyPatch, observed: Observed, status: str = "deployed", refusal: str = ""
) -> list[tuple[str, ...]]:
    """Helm and kubectl answering from a recording, ``refusal`` for the Envoy Service's dry-run apply; the calls."""
    calls: list[tuple[str, ...]] = []
    objects = observed.release.objects

    def run(self: release_part.Tools, tool: str, *args: str, input_text: str | None = None) -> Any:
        calls.append((tool, *args))
        sent = json.loads(input_text) if input_text and input_text.startswith("{") else {}
        if args[:2] == ("status", RELEASE):
            return subprocess.CompletedProcess(args, 0, json.dumps({"version": 3, "info": {"status": status}}), "")
        if args[:2] == ("get", "manifest"):
            return subprocess.CompletedProcess(args, 0, "\n---\n".join(json.dumps(o.manifest) for o in objects), "")
        keys = [f"{o['kind']}/{o['metadata']['name']}" for o in sent.get("items", [])]
        if args[0] == "get":
            found = [o.live for o in objects if o.key in keys and o.live is not None]
            return subprocess.CompletedProcess(args, 0, json.dumps({"kind": "List", "items": found}), "")
        service = f"Service/{CHART.envoy_service_name(RELEASE)}"
        if refusal and service in keys:
            return subprocess.CompletedProcess(args, 1, "", refusal)
        answered = [o.dry_run for o in objects if o.key in keys and o.dry_run is not None]
        return subprocess.CompletedProcess(args, 0, json.dumps({"kind": "List", "items": answered}), "")

    monkeypatch.setattr(release_part.Tools, "run", run)
    return calls


def test_a_refused_dry_run_apply_is_asked_object_by_object(monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = next(o.refused for o in recorded("drifted").release.objects if o.refused)
    calls = stand_in_cluster(monkeypatch, recorded("clean"), refusal=refusal)
    observed = release_part.observe(RELEASE, "e2e-drift", release_part.Tools())
    applies = [c for c in calls if c[1] == "apply"]
    assert all("--dry-run=server" in c and "--server-side" in c for c in applies), "the check never really applies"
    assert len(applies) == 1 + len(observed.objects), "one call for all, then one per object"
    assert [o.key for o in observed.objects if o.refused] == [f"Service/{CHART.envoy_service_name(RELEASE)}"]
    assert observed.revision == 3


def test_a_null_the_manifest_sets_is_the_servers_default_where_the_dry_run_apply_is_refused() -> None:
    observed = recorded("drifted")
    item = release_object(observed, f"Service/{CHART.envoy_service_name(RELEASE)}")
    assert item.refused
    for port in item.manifest["spec"]["ports"]:
        port["protocol"] = None
    rows = [(r.field, r.expected, r.live) for r in compare(observed).rows if r.object == item.key]
    assert rows == [("spec.ports[name=grpc].port", CHART.envoy_grpc_port, 8002)], "protocol null is TCP on the server"


@pytest.mark.parametrize(
    ("status", "refusal", "said"),
    [
        ("deployed", 'Error from server (Forbidden): services "x" is forbidden: User "x" cannot patch', "Forbidden"),
        ("pending-upgrade", "", "pending-upgrade"),
    ],
    ids=["a-forbidden-dry-run-is-no-answer-not-drift", "a-helm-operation-in-flight-is-nothing-compared"],
)
def test_the_release_is_not_compared_when(
    monkeypatch: pytest.MonkeyPatch, status: str, refusal: str, said: str
) -> None:
    calls = stand_in_cluster(monkeypatch, recorded("clean"), status=status, refusal=refusal)
    with pytest.raises(release_part.CannotCheck, match=said):
        release_part.observe(RELEASE, "e2e-drift", release_part.Tools())
    assert refusal or len(calls) == 1, "in flight: nothing is read after helm status"


def test_a_deleted_object_is_not_dry_run_applied_and_is_created_again_from_the_manifest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone = recorded("clean")
    release_object(gone, f"Deployment/{ENVOY}").live = None
    calls = stand_in_cluster(monkeypatch, gone)
    observed = release_part.observe(RELEASE, "e2e-drift", release_part.Tools())
    assert next(o for o in observed.objects if o.key == f"Deployment/{ENVOY}").dry_run is None
    assert [c for c in calls if c[1] == "apply"], "the others are"
    report = compare(Observed("s", observed, []))
    assert [(r.object, r.note) for r in report.rows] == [(f"Deployment/{ENVOY}", "deleted")]
    writes = recorded_writes(monkeypatch)
    release_part.correct(observed, report.rows, release_part.Tools())
    ((args, body),) = writes
    assert args[0] == "create" and body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert body["metadata"]["annotations"]["meta.helm.sh/release-name"] == RELEASE, "Helm still owns it after"


@pytest.mark.parametrize(("name", "code"), [("clean", 0), ("drifted", 1)])
def test_the_command_exits_0_without_drift_and_1_with_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, code: int
) -> None:
    report = compare(recorded(name))
    monkeypatch.setattr(check, "check", lambda engine, tools, fix=False, log=print: (report, None))
    assert drift_cli.main(["hammer"]) == code
    out = capsys.readouterr().out
    assert ("to bring it back: ./supersonic drift hammer --correct" in out) is bool(code)
    assert drift_cli.main(["hammer", "--json"]) == code
    assert json.loads(capsys.readouterr().out)["drift"] is bool(code)
    assert drift_cli.main(["hammer", "--markdown"]) == code
    assert ("`./supersonic drift hammer --correct`" in capsys.readouterr().out) is bool(code), "the issue says how"


def test_the_command_exits_2_with_one_line_of_the_reason_when_it_could_not_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    reason = "helm status supersonic-interlink -n cms: Kubernetes cluster unreachable"

    def cannot(*_args: Any, **_kwargs: Any) -> Any:
        raise check.CannotCheck(reason)

    monkeypatch.setattr(check, "check", cannot)
    assert drift_cli.main(["hammer", "--markdown"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"supersonic drift: could not check hammer: {reason}\n"


def test_after_a_correction_the_exit_code_is_the_second_checks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = compare(recorded("drifted")), compare(recorded("clean"))
    monkeypatch.setattr(check, "check", lambda engine, tools, fix=False, log=print: (before, after if fix else None))
    assert drift_cli.main(["hammer", "--correct"]) == 0
    out = capsys.readouterr().out
    assert out.index("before the correction:") < out.index(": drift") < out.index("after it:") < out.index("no drift")


def test_the_check_masks_every_value_a_secret_stack_config_value_reaches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check, "observe", lambda engine, tools: recorded("drifted"))
    found, second = check.check(cast(Engine, StandInEngine({})), release_part.Tools())
    image = next(r for r in found.rows if r.field.endswith("[name=envoy].image"))
    assert second is None and image.live == "[secret]", "the leaf v1.40.0 of a secret object is in the live image"
    config = next(r for r in found.rows if r.field == 'data["envoy.yaml"]')
    assert "1" in config.expected, "a secret leaf shorter than 4 characters (1) masks nothing"


def test_a_stack_never_deployed_is_refused_in_one_line() -> None:
    with pytest.raises(check.CannotCheck, match="stack hammer exports no releaseName and namespace"):
        check.deployed_release(cast(Engine, StandInEngine({"namespace": "cms"})))
    assert check.deployed_release(cast(Engine, StandInEngine({"releaseName": "r", "namespace": "cms"}))) == ("r", "cms")


def test_the_report_masks_what_a_secret_holds_and_what_a_stack_secret_reaches() -> None:
    report = Report("hammer", "supersonic-interlink", "cms", 3)
    report.rows = [
        Row("release", "Secret/supersonic-interlink-token", ("data", "token"), "c2VjcmV0LXZhbHVl", "b3RoZXI="),
        Row("release", "Deployment/triton", ("spec", "template", "spec"), {"args": ["--token=tok-9f3a"]}, "x"),
        Row("release", "Deployment/envoy", ("spec", "replicas"), 1, 3),
        Row("release", "ConfigMap/envoy", (), "present (in the release's manifest)", ABSENT, "deleted"),
    ]
    shown = masked(report, frozenset({"tok-9f3a"}))
    values = [(row.expected, row.live) for row in shown.rows]
    assert values == [
        ("[secret]", "[secret]"),
        ("[secret]", "x"),
        (1, 3),
        ("present (in the release's manifest)", ABSENT),
    ]
    for rendered in (text(shown), markdown(shown)):
        assert "c2VjcmV0LXZhbHVl" not in rendered and "tok-9f3a" not in rendered


SIDECAR_CODE = 'import os\n\nHOLD_ANNOTATION = "example.org/hold-until"\nHOLD_TTL = 900\n'
"""Admission sidecar code of the shape the chart ships (cfg/admission-server.py at db73925), with a name of its own."""


def hold_observation(code: str) -> release_part.ReleaseObservation:
    """The ScaledObject with the sidecar's hold deadline on the cluster only, and a sidecar ConfigMap of ``code``."""
    manifest = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "spec": {"minReplicaCount": 0}}
    manifest["metadata"] = {"name": SCALED_OBJECT, "annotations": {}}
    held: dict[str, Any] = copy.deepcopy(manifest)
    held["metadata"]["annotations"]["example.org/hold-until"] = "1796000000"
    sidecar = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r-envoy-admission"}}
    config = sidecar | {"data": {"a.py": code}}
    objects = [release_part.ObjectObservation(manifest, held, manifest)]
    objects.append(release_part.ObjectObservation(config, copy.deepcopy(config), copy.deepcopy(config)))
    return release_part.ReleaseObservation(RELEASE, "cms", 1, objects)


@pytest.mark.parametrize(
    ("code", "held"),
    [(SIDECAR_CODE, True), ("HOLD_TTL = 900\n", False), ("HOLD_ANNOTATION = (", False)],
    ids=["the-sidecar-names-it", "c292baf-names-none", "not-code-names-none"],
)
def test_the_sidecars_hold_deadline_is_not_drift_where_the_deployed_sidecar_code_names_its_annotation(
    code: str, held: bool
) -> None:
    found = compare(Observed("s", hold_observation(code), []))
    assert ([i.rule for i in found.ignored], [r.path for r in found.rows]) == (
        (["admission-hold-deadline"], []) if held else ([], [("metadata", "annotations", "example.org/hold-until")])
    ), "the sidecar writes it at every wake (no drift after each cold start); one it does not write is someone's edit"


def test_the_docs_give_drift_exactly_the_role_rbac_py_declares() -> None:
    section = (ROOT / "docs" / "state-backend.md").read_text().split("### Drift's credential", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == release_part.reader_role("supersonic-drift", "cms"), (
        "the Role an operator applies for drift must be the one its end-to-end test binds"
    )
