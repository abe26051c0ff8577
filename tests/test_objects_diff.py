"""What the takeover upgrade does, object by object: the stored manifest against the chart rendered by the real Helm
with the stack's values; every deletion explained or reported."""

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
from supersonic_interlink.takeover.objects_diff import LiveObject, compare, load_live_objects, markdown, notes
from supersonic_interlink.takeover.values_diff import LiveInputError, load_live_values

LIVE_VALUES = ROOT / "tests" / "fixtures" / "live-values-hammer.yaml"
NAMESPACE = "cms"
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
SCALE_FROM_ZERO_OBJECTS = (
    key("ConfigMap", "supersonic-interlink-envoy-admission"),
    key("ConfigMap", "supersonic-interlink-lua-config"),
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


def upgrade(chart: Path, values: dict, *served: dict) -> list[dict]:
    return render_chart(
        chart, "supersonic-interlink", NAMESPACE, values, served, post_renderer=ROOT / POSTRENDER, is_upgrade=True
    )


def stored_manifest(chart: Path) -> list[dict]:
    """What `helm get manifest` of the live release holds: its chart rendered with the live values."""
    return upgrade(chart, load_live_values(LIVE_VALUES.read_bytes(), "live"), OLD_ENVOY_CONFIG_MAP, LIVE_SCALED_OBJECT)


@pytest.fixture(scope="module")
def conforming(hammer, tmp_path_factory) -> tuple[list[dict], list[dict]]:
    """The stored manifest and the upgrade of the conforming chart, the live ScaledObject served."""
    chart = fixture_chart(CONFORMING, tmp_path_factory.mktemp(CONFORMING))
    return stored_manifest(chart), upgrade(chart, hammer.values, LIVE_SCALED_OBJECT, *hammer.served)


def changed_fields(comparison, object_key: ObjectKey) -> dict:
    (found,) = [c for c in comparison.diff.changed if c.key == object_key]
    return {c.path: (c.before, c.after) for c in found.changes}


def test_the_takeover_creates_the_lua_filter_and_changes_only_envoy_when_the_live_objects_are_served(
    hammer, conforming
) -> None:
    before, after = conforming
    comparison = compare(before, after, NAMESPACE, {})
    assert comparison.diff.removed == (), "the conforming chart renders every live object after the upgrade too"
    assert comparison.diff.added == SCALE_FROM_ZERO_OBJECTS
    assert [c.key for c in comparison.diff.changed] == [ENVOY_CONFIG, ENVOY, TRITON]
    assert changed_fields(comparison, TRITON) == {("spec", "replicas"): (1, ABSENT)}, (
        "with scale from zero the chart leaves Triton's replica count to KEDA and the admission sidecar"
    )
    assert changed_fields(comparison, ENVOY_CONFIG) == {("data", "envoy.yaml"): (OLD_ENVOY_YAML, hammer.envoy_yaml)}
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
    assert SCALED_OBJECT in comparison.diff.unchanged, (
        "the chart's lookup found the live ScaledObject and kept its minReplicaCount 1, as on the cluster"
    )
    assert not comparison.deletions.has_findings


def test_without_the_live_scaled_object_the_replica_floor_drops_and_the_report_says_so(hammer, conforming, tmp_path):
    before, _ = conforming
    after = upgrade(fixture_chart("conforming", tmp_path), hammer.values, *hammer.served)
    assert changed_fields(compare(before, after, NAMESPACE, {}), SCALED_OBJECT) == {
        ("spec", "minReplicaCount"): (1, 0)
    }, "no live ScaledObject to look up: the values' 0 is rendered"
    assert notes(hammer, [])[0].startswith("**No live ScaledObject `supersonic-interlink-keda-so` was given**")
    given = notes(hammer, [LiveObject(LIVE_SCALED_OBJECT, "live.yaml")])
    assert given == [
        "The chart's lookup was served `ScaledObject.keda.sh/cms/supersonic-interlink-keda-so` from `live.yaml`."
    ]


def live_files(tmp_path: Path, chart: str = CONFORMING) -> list[str]:
    """--live, --live-object and --live-manifest as step 1 of the runbook saves them, the live chart ``chart``."""
    objects, manifest = tmp_path / "live-objects.yaml", tmp_path / "live-manifest.yaml"
    objects.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [LIVE_SCALED_OBJECT]}))
    manifest.write_text(yaml.safe_dump_all(stored_manifest(fixture_chart(chart, tmp_path / "live-chart"))))
    return ["--live", str(LIVE_VALUES), "--live-object", str(objects), "--live-manifest", str(manifest)]


def objects_command(tmp_path: Path, chart: str, *args: str, live_chart: str = CONFORMING) -> list[str]:
    new_chart = fixture_chart(chart, tmp_path / "new-chart")
    return ["objects", "hammer", "--chart", str(new_chart), *live_files(tmp_path, live_chart), *args]


def test_the_objects_command_prints_the_report_and_exits_0_when_nothing_is_deleted(tmp_path, capsys) -> None:
    assert takeover.main(objects_command(tmp_path, "conforming")) == 0
    out = capsys.readouterr().out
    assert "**Deleted by the upgrade:**\n\n*(none)*\n" in out
    assert "**Created:**\n\n- `ConfigMap/cms/supersonic-interlink-envoy-admission`\n" in out
    assert "| `spec.template.spec.containers[name=envoy].image` | `envoy:fixture` | `envoyproxy/envoy:v1.39.1` |" in out
    assert "```diff\n--- live\n+++ this stack\n" in out, "the Envoy configuration's change reads as a text diff"
    assert (
        f"Before: the live release's stored manifest (`helm get manifest`, `{tmp_path / 'live-manifest.yaml'}`)" in out
    )
    assert out.rstrip().endswith(
        "0 deleted (0 unexplained), 5 created, 3 changed, 4 unchanged, 0 left by Helm, 0 stale."
    )


def test_the_objects_command_exits_1_on_an_unexplained_deletion_and_0_once_it_is_declared(
    tmp_path, capsys, monkeypatch
) -> None:
    argv = objects_command(tmp_path, "deletes-on-upgrade", live_chart="deletes-on-upgrade")
    assert takeover.main(argv) == 1
    captured = capsys.readouterr()
    deleted = f"**Deleted by the upgrade:**\n\n| object | why |\n|---|---|\n| `{TRITON_PDB}` | **not explained**"
    assert deleted in captured.out, "the live minReplicaCount 1 rendered the budget, the stack's 0 does not"
    assert captured.out.rstrip().endswith(
        "1 deleted (1 unexplained), 5 created, 3 changed, 4 unchanged, 0 left by Helm, 0 stale."
    ), "the budget is the only deletion"
    assert "stack hammer: 1 undeclared and 0 stale deletion(s); see the report" in captured.err
    declared = {("PodDisruptionBudget", "policy", "{instance}-triton"): NO_BUDGET}
    monkeypatch.setattr(objects_diff, "EXPECTED_DELETIONS", declared)
    assert takeover.main(argv) == 0
    assert f"| `{TRITON_PDB}` | {NO_BUDGET} |" in capsys.readouterr().out


def test_a_chart_that_refuses_the_stacks_values_is_a_finding_and_a_missing_manifest_a_usage_error(
    tmp_path, capsys
) -> None:
    argv = objects_command(tmp_path, "refuses-external-config")
    assert takeover.main(argv) == 1
    chart = tmp_path / "new-chart" / "supersonic"
    assert f"stack hammer: chart {chart} refuses this stack's values: execution error at" in capsys.readouterr().err
    assert takeover.main(argv[:-2]) == 2
    assert capsys.readouterr().err.strip() == (
        "stack hammer: give the stored manifest, what the upgrade compares against: --live-manifest FILE "
        "(`helm get manifest supersonic-interlink -n cms > FILE`) or --from-cluster"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: PodDisruptionBudget\napiVersion: policy/v1\nmetadata: {name: x}\n", "no discovery for this kind"),
        ("a: [", "not valid YAML (line 2, column 1)"),
        ("- just\n- a list\n", "object 1 is not a Kubernetes object (no kind or metadata.name)"),
        ("kind: List\nitems: 5\n", "object 1 is not a Kubernetes object"),
        ("kind: ConfigMap\nmetadata: {name: [x]}\n", "object 1 is not a Kubernetes object"),
    ],
)
def test_a_live_object_file_that_cannot_be_served_is_one_line_and_exit_2(tmp_path, capsys, text, message) -> None:
    bad = tmp_path / "objects.yaml"
    bad.write_text(text)
    assert takeover.main(["objects", "hammer", *live_files(tmp_path), "--live-object", str(bad)]) == 2
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
    event = "apiVersion: v1\nkind: Event\nmetadata: {name: e, namespace: cms}\n"
    with pytest.raises(LiveInputError, match=r"^x\.yaml: .*no discovery for this kind"):
        load_live_objects(event, "x.yaml", NAMESPACE)
    assert len(load_live_objects(event, "x.yaml", NAMESPACE, served=False)) == 1, "a stored manifest is not served"


def test_hooks_and_kept_objects_are_left_only_declared_deletions_explained_and_text_shown_as_a_diff() -> None:
    def config_map(name: str, **annotations: str) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": annotations}}

    before = [
        config_map("rel-hook", **{"helm.sh/hook": "pre-upgrade"}),
        config_map("rel-kept", **{"helm.sh/resource-policy": "keep"}),
        config_map("rel-declared"),
        config_map("rel-gone"),
        {**config_map("rel-same"), "data": {"f": "a\nb\n", "n": "1"}},
    ]
    declared = {key("ConfigMap", "rel-declared"): "why", key("Secret", "x"): "old"}
    comparison = compare(before, [{**config_map("rel-same"), "data": {"f": "a\nc\n"}}], NAMESPACE, declared)
    assert [k.name for k, _ in comparison.left] == ["rel-hook", "rel-kept"]
    assert comparison.deletions.explained == ((key("ConfigMap", "rel-declared"), "why"),)
    assert comparison.deletions.undeclared == (key("ConfigMap", "rel-gone"),)
    assert comparison.deletions.stale == ((key("Secret", "x"), "old"),)
    report = markdown(comparison, "s", ["a note"])
    assert report.startswith("#### Objects: the live release → stack `s`\n\n- a note\n")
    assert "**Declared in `supersonic_interlink/takeover/objects_diff.py`, but no longer true** (findings: " in report
    assert "\n- `Secret/cms/x`: old\n" in report
    assert "| `data.f` | *(text: see below)* | *(text: see below)* |" in report
    assert "| `data.n` | `1` | *(not set)* |" in report
    assert "```diff\n--- live\n+++ this stack\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n```" in report
    assert Change(("data", "n"), "1", ABSENT) in comparison.diff.changed[0].changes


def test_objects_needs_the_live_values_from_a_file_or_the_cluster(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        takeover.main(["objects", "hammer"])
    assert exit_.value.code == 2
    assert "one of the arguments --live --from-cluster is required" in capsys.readouterr().err
    assert takeover.main(["objects", "hammer", "--live", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err == f"--live {tmp_path / 'nope.yaml'}: cannot read: No such file or directory\n"
    assert takeover.main(["objects", "hammer", *live_files(tmp_path), "--chart", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"stack hammer: --chart {tmp_path}: not a chart directory (no Chart.yaml in it)\n"


def test_an_unpinned_stack_without_chart_is_one_line_naming_the_pin_command(unpinned_stacks, tmp_path) -> None:
    done = run_cli("takeover", "objects", "hammer", *live_files(tmp_path), cwd=ROOT)
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "stack hammer: the chart is not pinned (`./supersonic render hammer --pin-chart`)",
    )


def test_a_move_of_the_chart_generation_replaces_the_triton_deployment_by_the_inference_server_one(
    tmp_path, capsys
) -> None:
    assert takeover.main(objects_command(tmp_path, "inference-server")) == 0, "the move declares its deletions"
    out = capsys.readouterr().out
    for kind in ("Deployment.apps", "Service"):
        assert f"| `{kind}/cms/supersonic-interlink-triton` | The chart generation moves from triton to " in out, (
            f"the old {kind} is deleted by the upgrade, and the report says why"
        )
        assert f"- `{kind}/cms/supersonic-interlink-inference-server`\n" in out, f"the new {kind} is created"
