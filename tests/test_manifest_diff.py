"""Two renders of a release compared object by object: what an upgrade creates, deletes and changes, field by field."""

from __future__ import annotations

import pytest

from supersonic_interlink.takeover.manifest_diff import ObjectKey, compare_manifests, markdown
from supersonic_interlink.takeover.tree_diff import ABSENT, Change, Named, format_path


def deployment(name: str, *containers: dict, api: str = "apps/v1", **metadata: object) -> dict:
    return {
        "apiVersion": api,
        "kind": "Deployment",
        "metadata": {"name": name, **metadata},
        "spec": {"template": {"spec": {"containers": list(containers)}}},
    }


def config_map(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


ENVOY = {"name": "envoy", "image": "envoyproxy/envoy:v1.39.1", "ports": [{"name": "grpc", "containerPort": 8001}]}


def test_objects_only_the_old_render_has_are_deleted_and_only_the_new_one_has_are_created() -> None:
    before = [config_map("rel-envoy-config", a="1"), config_map("rel-settings"), deployment("rel-envoy", ENVOY)]
    after = [config_map("rel-envoy-config", a="1"), config_map("rel-lua"), deployment("rel-envoy", ENVOY)]
    diff = compare_manifests(before, after)
    assert diff.deleted == (ObjectKey("ConfigMap", "rel-settings"),), "a Helm upgrade deletes what it no longer renders"
    assert diff.created == (ObjectKey("ConfigMap", "rel-lua"),)
    assert diff.changed == ()
    assert diff.unchanged == (ObjectKey("ConfigMap", "rel-envoy-config"), ObjectKey("Deployment", "rel-envoy", "apps"))


def test_a_changed_object_lists_each_changed_field() -> None:
    newer = {**ENVOY, "image": "envoyproxy/envoy:v1.40.0"}
    before = [deployment("rel-envoy", ENVOY, labels={"helm.toolkit.fluxcd.io/name": "rel", "app": "envoy"})]
    after = [deployment("rel-envoy", newer, labels={"app": "envoy"})]
    (changed,) = compare_manifests(before, after).changed
    assert changed.key == ObjectKey("Deployment", "rel-envoy", "apps")
    assert changed.changes == (
        Change(("metadata", "labels", "helm.toolkit.fluxcd.io/name"), "rel", ABSENT),
        Change(
            ("spec", "template", "spec", "containers", Named("envoy"), "image"),
            "envoyproxy/envoy:v1.39.1",
            "envoyproxy/envoy:v1.40.0",
        ),
    )
    assert format_path(changed.changes[1].path) == "spec.template.spec.containers[name=envoy].image"
    assert format_path(changed.changes[0].path) == 'metadata.labels["helm.toolkit.fluxcd.io/name"]'


def test_containers_are_matched_by_name_so_an_added_sidecar_shifts_nothing() -> None:
    sidecar = {"name": "admission", "image": "python:3.12"}
    diff = compare_manifests([deployment("rel-envoy", ENVOY)], [deployment("rel-envoy", sidecar, ENVOY)])
    (changed,) = diff.changed
    assert changed.changes == (
        Change(("spec", "template", "spec", "containers", Named("admission")), ABSENT, sidecar),
    ), "the Envoy container itself did not change; only a container was added"


def test_a_new_api_version_of_the_same_kind_is_the_same_object_as_helm_sees_it() -> None:
    before = [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "rel-keda-so"}}]
    after = [{"apiVersion": "keda.sh/v1beta1", "kind": "ScaledObject", "metadata": {"name": "rel-keda-so"}}]
    diff = compare_manifests(before, after)
    assert diff.created == diff.deleted == ()
    assert diff.changed[0].changes == (Change(("apiVersion",), "keda.sh/v1alpha1", "keda.sh/v1beta1"),)
    other_group = [deployment("rel-envoy", ENVOY, api="extensions/v1beta1")]
    moved = compare_manifests(other_group, [deployment("rel-envoy", ENVOY)])
    assert len(moved.created) == len(moved.deleted) == 1, "another API group is another object"


def test_a_manifest_without_namespace_lives_in_the_release_namespace() -> None:
    before = [config_map("c")]
    after = [{**config_map("c"), "metadata": {"name": "c", "namespace": "cms"}}]
    diff = compare_manifests(before, after, namespace="cms", ignore=[("metadata", "namespace")])
    assert diff.unchanged == (ObjectKey("ConfigMap", "c", "", "cms"),) and not diff.created and not diff.deleted


def test_ignored_paths_do_not_make_a_change() -> None:
    before = [{**config_map("c", a="1"), "status": {"x": 1}}]
    after = [{**config_map("c", a="1"), "status": {"x": 2}}]
    assert compare_manifests(before, after, ignore=[("status",)]).changed == ()
    assert len(compare_manifests(before, after).changed) == 1


def test_true_and_1_differ_and_lists_of_unnamed_items_compare_whole() -> None:
    before = [{**config_map("c"), "spec": {"flag": True, "args": ["a", "b"]}}]
    after = [{**config_map("c"), "spec": {"flag": 1, "args": ["a", "c"]}}]
    (changed,) = compare_manifests(before, after).changed
    assert [c.path for c in changed.changes] == [("spec", "args"), ("spec", "flag")]


@pytest.mark.parametrize(
    ("manifests", "message"),
    [
        ([config_map("c"), config_map("c")], "before: ConfigMap/c appears twice"),
        ([{"kind": "ConfigMap", "metadata": {}}], "a manifest without kind or metadata.name"),
    ],
)
def test_a_render_helm_would_refuse_is_an_error(manifests, message) -> None:
    with pytest.raises(ValueError, match=message):
        compare_manifests(manifests, [])


def test_the_markdown_lists_deleted_objects_first_and_each_changed_field() -> None:
    before = [config_map("gone"), config_map("kept", a="1")]
    after = [config_map("kept", a="2"), config_map("new")]
    text = markdown(compare_manifests(before, after))
    assert text.index("**Deleted by the upgrade**") < text.index("**Created:**") < text.index("**Changed")
    assert "- `ConfigMap/gone`" in text and "- `ConfigMap/new`" in text
    assert "| `data.a` | `1` | `2` |" in text
    assert text.endswith("1 deleted, 1 created, 1 changed, 0 unchanged.\n")
