"""What the takeover upgrade does, object by object, rendered by the real Helm; every deletion explained or reported."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from chart_fixtures import CHARTS, CONFORMING, fixture_chart
from cli_runner import run_cli
from conftest import ROOT

from supersonic_interlink.chart.helm import render_chart
from supersonic_interlink.cli.verbs import TAKEOVER as takeover
from supersonic_interlink.components.supersonic_release import POSTRENDER
from supersonic_interlink.objdiff import ABSENT, Change, Named, ObjectKey, object_key
from supersonic_interlink.render import stack as rendering
from supersonic_interlink.render.conformance import Expected
from supersonic_interlink.takeover import objects_diff, run
from supersonic_interlink.takeover.objects_diff import (
    LiveObject,
    compare,
    load_live_objects,
    markdown,
    render_sides,
    sides,
)
from supersonic_interlink.takeover.values_diff import LiveInputError, load_live_values

LIVE_VALUES = ROOT / "tests" / "fixtures" / "live-values-hammer.yaml"
RELEASE, NAMESPACE = "supersonic-interlink", "cms"
OLD_ENVOY_YAML = "admin:\n  address: {socket_address: {address: 0.0.0.0, port_value: 9901}}\n"

OLD_ENVOY_CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "supersonic-interlink-envoy-config-custom", "namespace": NAMESPACE, "resourceVersion": "7"},
    "data": {"envoy.yaml": OLD_ENVOY_YAML},
}
LIVE_SCALED_OBJECT = {
    "apiVersion": "keda.sh/v1alpha1",
    "kind": "ScaledObject",
    "metadata": {"name": "supersonic-interlink-keda-so", "namespace": NAMESPACE},
    "spec": {"minReplicaCount": 1, "maxReplicaCount": 10},
    "status": {"health": {}},
}


def key(kind: str, name: str, group: str = "") -> ObjectKey:
    return ObjectKey(kind, name, group, NAMESPACE)


ENVOY_CONFIG = key("ConfigMap", "supersonic-interlink-envoy-config")
LUA_CONFIG = key("ConfigMap", "supersonic-interlink-lua-config")
SCALE_FROM_ZERO_OBJECTS = (
    key("ConfigMap", "supersonic-interlink-envoy-admission"),
    LUA_CONFIG,
    key("Role", "supersonic-interlink-envoy", "rbac.authorization.k8s.io"),
    key("RoleBinding", "supersonic-interlink-envoy", "rbac.authorization.k8s.io"),
    key("ServiceAccount", "supersonic-interlink-envoy"),
)
ENVOY = key("Deployment", "supersonic-interlink-envoy", "apps")
TRITON = key("Deployment", "supersonic-interlink-triton", "apps")
SCALED_OBJECT = key("ScaledObject", "supersonic-interlink-keda-so", "keda.sh")
TRITON_PDB = key("PodDisruptionBudget", "supersonic-interlink-triton", "policy")
NO_BUDGET = "no budget for a Deployment that scales to zero"


@pytest.fixture(scope="module")
def hammer() -> Expected:
    return Expected.from_rendered(rendering.render("hammer", chart_dir=CHARTS / CONFORMING))


@pytest.fixture(scope="module")
def live() -> dict:
    return load_live_values(LIVE_VALUES.read_text(), str(LIVE_VALUES))


def served(*manifests: dict) -> list[LiveObject]:
    return [LiveObject(m, "live-objects.yaml") for m in manifests]


@pytest.fixture(scope="module")
def renders(hammer, live, tmp_path_factory) -> dict:
    given, _ = sides(hammer, live, served(OLD_ENVOY_CONFIG_MAP, LIVE_SCALED_OBJECT))
    charts = ("conforming", "deletes-on-upgrade", "kept-on-upgrade")
    return {
        chart: render_sides(fixture_chart(chart, tmp_path_factory.mktemp(chart)), hammer, given) for chart in charts
    }


def upgrade(renders: dict, chart: str):
    before, after = renders[chart]
    return compare(before, after, NAMESPACE, {})


def changed_fields(comparison, object_key: ObjectKey) -> dict:
    (found,) = [c for c in comparison.diff.changed if c.key == object_key]
    return {c.path: (c.before, c.after) for c in found.changes}


def test_the_takeover_creates_the_lua_filter_and_changes_only_envoy_when_the_live_objects_are_served(
    hammer, renders
) -> None:
    comparison = upgrade(renders, "conforming")
    assert comparison.diff.removed == (), "the conforming chart renders every live object after the upgrade too"
    assert comparison.diff.added == SCALE_FROM_ZERO_OBJECTS
    assert [c.key for c in comparison.diff.changed] == [ENVOY_CONFIG, ENVOY, TRITON]
    assert changed_fields(comparison, TRITON) == {("spec", "replicas"): (1, ABSENT)}, (
        "with scale from zero the chart leaves Triton's replica count to KEDA and the admission sidecar"
    )
    assert changed_fields(comparison, ENVOY_CONFIG) == {("data", "envoy.yaml"): (OLD_ENVOY_YAML, hammer.envoy_yaml)}, (
        "the chart copied the live ConfigMap on one side and this stack's on the other"
    )
    envoy = changed_fields(comparison, ENVOY)
    assert set(envoy) == {
        ("spec", "template", "metadata", "annotations", "checksum/envoy-config"),
        ("spec", "template", "spec", "containers", Named("admission")),
        ("spec", "template", "spec", "containers", Named("envoy"), "image"),
        ("spec", "template", "spec", "containers", Named("envoy"), "volumeMounts", Named("lua")),
        ("spec", "template", "spec", "volumes", Named("lua")),
        ("spec", "template", "spec", "volumes", Named("admission")),
        ("spec", "template", "spec", "serviceAccountName"),
    }
    assert envoy[("spec", "template", "spec", "containers", Named("envoy"), "image")] == (
        "envoy:fixture",
        "envoyproxy/envoy:v1.39.1",
    )
    assert SCALED_OBJECT in comparison.diff.unchanged, (
        "the chart's lookup found the live ScaledObject and kept its minReplicaCount 1, as on the cluster"
    )
    assert not comparison.has_findings


def test_without_the_live_objects_the_project_envoy_config_stands_in_and_the_replica_floor_drops(
    hammer, live, tmp_path
) -> None:
    given, notes = sides(hammer, live, [])
    before, after = render_sides(fixture_chart("conforming", tmp_path), hammer, given)
    comparison = compare(before, after, NAMESPACE, {})
    assert [c.key for c in comparison.diff.changed] == [ENVOY, TRITON, SCALED_OBJECT]
    assert ENVOY_CONFIG in comparison.diff.unchanged, "this stack's envoy.yaml was served under the live name"
    assert changed_fields(comparison, SCALED_OBJECT) == {("spec", "minReplicaCount"): (1, 0)}, (
        "no live ScaledObject to look up: the values' 0 is rendered"
    )
    assert any("was not given" in note and "supersonic-interlink-envoy-config-custom" in note for note in notes)
    assert any("No live ScaledObject" in note for note in notes)


def test_an_object_only_the_live_values_render_is_an_unexplained_deletion_until_declared_or_kept(renders) -> None:
    comparison = upgrade(renders, "deletes-on-upgrade")
    assert comparison.diff.removed == (TRITON_PDB,), "the live minReplicaCount 1 rendered it, the stack's 0 does not"
    assert comparison.unexplained == (TRITON_PDB,) and comparison.has_findings, "declared: the command's test below"
    comparison = upgrade(renders, "kept-on-upgrade")
    assert comparison.diff.removed == (TRITON_PDB,)
    assert [k for k, _ in comparison.left] == [TRITON_PDB], "helm.sh/resource-policy: keep: the upgrade skips it"
    assert comparison.deleted == () and comparison.unexplained == () and not comparison.has_findings
    report = markdown(comparison, "hammer", ["n"])
    assert "- `PodDisruptionBudget.policy/cms/supersonic-interlink-triton`: `helm.sh/resource-policy: keep`" in report


def objects_command(*args: str) -> list[str]:
    return ["objects", "hammer", "--live", str(LIVE_VALUES), *args]


def live_objects_file(tmp_path: Path, *manifests: dict) -> Path:
    path = tmp_path / "live-objects.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(manifests)}))
    return path


def test_the_objects_command_prints_the_report_and_exits_0_when_nothing_is_deleted(tmp_path, capsys) -> None:
    objects = live_objects_file(tmp_path, OLD_ENVOY_CONFIG_MAP, LIVE_SCALED_OBJECT)
    chart = fixture_chart("conforming", tmp_path)
    code = takeover.main(objects_command("--chart", str(chart), "--live-object", str(objects)))
    out = capsys.readouterr().out
    assert code == 0
    assert "**Deleted by the upgrade:**\n\n*(none)*\n" in out
    assert "**Created:**\n\n- `ConfigMap/cms/supersonic-interlink-envoy-admission`\n" in out
    assert "- `ConfigMap/cms/supersonic-interlink-lua-config`\n" in out
    assert "**Changed `Deployment.apps/cms/supersonic-interlink-envoy`:**" in out
    assert "| `spec.template.spec.containers[name=envoy].image` | `envoy:fixture` | `envoyproxy/envoy:v1.39.1` |" in out
    assert "```diff\n--- live\n+++ this stack\n" in out, "the Envoy configuration's change reads as a text diff"
    assert f"The live Envoy ConfigMap `supersonic-interlink-envoy-config-custom` is the one in `{objects}`." in out
    assert out.rstrip().endswith(
        "0 deleted (0 unexplained), 5 created, 3 changed, 4 unchanged, 0 left by Helm, 0 stale."
    )


def test_the_objects_command_exits_1_on_an_unexplained_deletion_and_0_once_it_is_declared(
    tmp_path, capsys, monkeypatch
) -> None:
    chart = fixture_chart("deletes-on-upgrade", tmp_path)
    assert takeover.main(objects_command("--chart", str(chart))) == 1
    captured = capsys.readouterr()
    assert "| `PodDisruptionBudget.policy/cms/supersonic-interlink-triton` | **not explained**" in captured.out
    assert "stack hammer: 1 unexplained and 0 stale deletion(s); see the report" in captured.err

    declared = {("PodDisruptionBudget", "policy", "{instance}-triton"): NO_BUDGET}
    monkeypatch.setattr(objects_diff, "EXPECTED_DELETIONS", declared)
    assert takeover.main(objects_command("--chart", str(chart))) == 0
    out = capsys.readouterr().out
    assert f"| `PodDisruptionBudget.policy/cms/supersonic-interlink-triton` | {NO_BUDGET} |" in out


def test_a_chart_that_refuses_the_stacks_values_is_a_finding_with_its_message(tmp_path, capsys) -> None:
    chart = fixture_chart("refuses-external-config", tmp_path / "refuses")
    assert takeover.main(objects_command("--chart", str(chart))) == 1
    err = capsys.readouterr().err
    assert f"stack hammer: chart {chart} refuses this stack's values: execution error at" in err
    moved = fixture_chart("inference-server", tmp_path / "moved")
    assert takeover.main(objects_command("--chart", str(moved))) == 2
    assert capsys.readouterr().err.strip() == (
        f"stack hammer: the live values are of the triton chart generation, chart {moved} of the inferenceServer "
        "one: give the stored manifest, --live-manifest FILE (`helm get manifest supersonic-interlink -n cms > FILE`) "
        "or --from-cluster"
    ), "a move of the chart generation without the stored manifest says how to give it"


def test_an_unpinned_stack_without_chart_is_one_line_naming_the_pin_command(unpinned_stacks) -> None:
    done = run_cli("takeover", *objects_command(), cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "stack hammer: supersonic-interlink:release.chart is a git source without a commit, so it names no exact "
        "chart: run `./supersonic render hammer --pin-chart` and commit the stack file"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: PodDisruptionBudget\napiVersion: policy/v1\nmetadata: {name: x}\n", "no discovery for this kind"),
        ("a: [", "not valid YAML (line 2, column 1)"),
        ("- just\n- a list\n", "object 1 is not a Kubernetes object (no kind or metadata.name)"),
        ("kind: List\nitems: 5\n", "a List whose items is not a list"),
        ("kind: ConfigMap\nmetadata: just-a-name\n", "object 1 is not a Kubernetes object"),
        ("kind: ConfigMap\nmetadata: {name: [x]}\n", "object 1 is not a Kubernetes object"),
        ("\xff\xfe\x00", "not valid UTF-16 text at byte 2"),  # the reader's limits: tests/test_values_diff.py
    ],
)
def test_a_live_object_file_that_cannot_be_served_is_one_line_and_exit_2(tmp_path, capsys, text, message) -> None:
    bad = tmp_path / "objects.yaml"
    bad.write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode())
    assert takeover.main(objects_command("--live-object", str(bad))) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"--live-object {bad}: ") and message in err and err.count("\n") == 1


def test_a_cluster_that_cannot_be_read_or_is_mid_operation_is_one_line(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    assert takeover.main(["objects", "hammer", "--from-cluster"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cannot read the cluster: helm status supersonic-interlink -n cms -o json: ") and (
        err.count("\n") == 1
    ), err

    monkeypatch.setattr(run, "_read", lambda *args: '{"info": {"status": "pending-upgrade"}, "version": 7}')
    assert takeover.main(["objects", "hammer", "--from-cluster"]) == 2
    assert "release supersonic-interlink is pending-upgrade (revision 7), not deployed" in capsys.readouterr().err


def test_live_objects_are_read_from_a_kubectl_list_or_documents_and_take_the_release_namespace() -> None:
    listed = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [LIVE_SCALED_OBJECT]})
    gitops = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\ndata: {envoy.yaml: x}\n---\n"
    objects = load_live_objects(listed + "---\n" + gitops, "live.yaml", NAMESPACE)
    assert [object_key(o.manifest) for o in objects] == [SCALED_OBJECT, key("ConfigMap", "old")]
    assert objects[1].manifest["metadata"]["namespace"] == NAMESPACE, "a GitOps manifest names no namespace"
    with pytest.raises(LiveInputError, match=r"^x\.yaml: .*no discovery for this kind"):
        load_live_objects("apiVersion: v1\nkind: Event\nmetadata: {name: e, namespace: cms}\n", "x.yaml", NAMESPACE)


def test_hooks_and_kept_objects_are_left_and_only_declared_deletions_are_explained() -> None:
    def config_map(name: str, **annotations: str) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": annotations}}

    before = [
        config_map("rel-hook", **{"helm.sh/hook": "pre-upgrade"}),
        config_map("rel-kept", **{"helm.sh/resource-policy": "keep"}),
        config_map("rel-declared"),
        config_map("rel-gone"),
        config_map("rel-same"),
    ]
    declared = {key("ConfigMap", "rel-declared"): "why", key("Secret", "x"): "old"}
    comparison = compare(before, [config_map("rel-same")], NAMESPACE, declared)
    assert [k.name for k, _ in comparison.left] == ["rel-hook", "rel-kept"]
    assert comparison.deleted == ((key("ConfigMap", "rel-declared"), "why"),)
    assert comparison.unexplained == (key("ConfigMap", "rel-gone"),)
    assert comparison.stale == ((key("Secret", "x"), "old"),)
    assert "**Declared deletions the upgrade no longer makes** (findings: " in markdown(comparison, "s", ["n"])
    assert "\n- `Secret/cms/x`: old\n" in markdown(comparison, "s", ["n"])


def test_the_report_shows_text_as_a_diff_and_findings_as_rows() -> None:
    before = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"f": "a\nb\n", "n": "1"}}]
    after = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"f": "a\nc\n"}}]
    report = markdown(compare(before, after, NAMESPACE, {}), "hammer", ["a note"])
    assert report.startswith("#### Objects: the live release → stack `hammer`\n\n- a note\n")
    assert "| `data.f` | *(text: see below)* | *(text: see below)* |" in report
    assert "| `data.n` | `1` | *(not set)* |" in report
    assert "```diff\n--- live\n+++ this stack\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n```" in report
    assert Change(("data", "n"), "1", ABSENT) in compare(before, after, NAMESPACE, {}).diff.changed[0].changes


def test_objects_needs_the_live_values_from_a_file_or_the_cluster(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        takeover.main(["objects", "hammer"])
    assert exit_.value.code == 2
    assert "one of the arguments --live --from-cluster is required" in capsys.readouterr().err
    assert takeover.main(["objects", "hammer", "--live", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err == f"--live {tmp_path / 'nope.yaml'}: cannot read: No such file or directory\n"
    assert takeover.main(objects_command("--chart", str(tmp_path))) == 2
    assert capsys.readouterr().err == f"stack hammer: --chart {tmp_path}: not a chart directory (no Chart.yaml in it)\n"


def _stored_manifest(tmp_path: Path) -> Path:
    """What `helm get manifest` of a live release on the triton generation holds: its chart with the live values."""
    live_chart = fixture_chart(CONFORMING, tmp_path / "live-chart")
    values = load_live_values(LIVE_VALUES.read_bytes(), str(LIVE_VALUES))
    served = [OLD_ENVOY_CONFIG_MAP, LIVE_SCALED_OBJECT]
    objects = render_chart(
        live_chart, "supersonic-interlink", "cms", values, served, post_renderer=ROOT / POSTRENDER, is_upgrade=True
    )
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def test_a_move_of_the_chart_generation_replaces_the_triton_deployment_by_the_inference_server_one(
    tmp_path, capsys
) -> None:
    manifest = _stored_manifest(tmp_path)
    objects = live_objects_file(tmp_path, OLD_ENVOY_CONFIG_MAP, LIVE_SCALED_OBJECT)
    chart = fixture_chart("inference-server", tmp_path / "new-chart")
    args = ("--chart", str(chart), "--live-object", str(objects), "--live-manifest", str(manifest))
    code = takeover.main(objects_command(*args))
    out = capsys.readouterr().out
    assert code == 0, "the two deletions the move makes are declared by it: no finding"
    assert "**The chart generation moves from triton to inferenceServer**" in out
    for kind in ("Deployment.apps", "Service"):
        assert f"| `{kind}/cms/supersonic-interlink-triton` | The chart generation moves from triton to " in out, (
            f"the old {kind} is deleted by the upgrade, and the report says why"
        )
        assert f"- `{kind}/cms/supersonic-interlink-inference-server`\n" in out, f"the new {kind} is created"
