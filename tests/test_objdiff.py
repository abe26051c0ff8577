"""The shared diff: trees field by field, manifests object by object as Helm matches them, one way to write both."""

from __future__ import annotations

import copy

import pytest

from supersonic_interlink.objdiff import (
    ABSENT,
    Change,
    Named,
    ObjectKey,
    changes,
    compare_objects,
    format_path,
    format_value,
    markdown_cell,
    markdown_value,
    overlay,
    put,
    text_diff,
)


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
CONTAINERS = ("spec", "template", "spec", "containers")


def test_a_missing_key_an_explicit_null_and_true_against_1_are_all_differences() -> None:
    before = {"a": 1, "b": None, "c": {"d": True}, "e": [True], "f": {"g": 1, "h": {"i": 2}}}
    after = {"b": 0, "c": {"d": 1}, "e": [1], "f": {"g": 1}, "n": {"o": 1, "p": {"q": 2}}}
    assert changes(before, after) == [
        Change(("a",), 1, ABSENT),
        Change(("b",), None, 0),
        Change(("c", "d"), True, 1),
        Change(("e",), [True], [1]),
        Change(("f", "h", "i"), 2, ABSENT),
        Change(("n", "o"), ABSENT, 1),
        Change(("n", "p", "q"), ABSENT, 2),
    ], "Helm reads null as 'delete the default' and true is not 1; a block on one side is listed leaf by leaf"
    assert changes({"a": None}, {"a": None}) == [] and changes({}, {}) == []


def test_named_items_are_matched_by_name_and_any_other_list_compares_whole() -> None:
    sidecar = {"name": "admission", "image": "python:3.12"}
    newer = {**ENVOY, "image": "envoyproxy/envoy:v1.40.0"}
    assert changes({"c": [ENVOY]}, {"c": [sidecar, newer]}) == [
        Change(("c", Named("admission")), ABSENT, sidecar),
        Change(("c", Named("envoy"), "image"), ENVOY["image"], newer["image"]),
    ], "an inserted container shifts nothing; one added is reported whole"
    assert changes({"c": [ENVOY]}, {"c": []}) == [Change(("c",), [ENVOY], [])]
    twice = [{"name": "x", "v": 1}, {"name": "x", "v": 2}]
    assert changes({"c": twice}, {"c": twice[:1]}) == [Change(("c",), twice, twice[:1])], "names not distinct"
    assert changes({"args": ["a", "b"]}, {"args": ["a", "c"]}) == [Change(("args",), ["a", "b"], ["a", "c"])]


def test_overlay_and_put_address_named_list_items_by_name() -> None:
    live = {"spec": {"ports": [{"name": "grpc", "port": 8002, "nodePort": 3}, {"name": "admin", "port": 9901}]}}
    manifest = {"spec": {"ports": [{"name": "grpc", "port": 8001}, {"name": "admin", "port": 9901}]}}
    assert overlay(live, manifest)["spec"]["ports"][0] == {"name": "grpc", "port": 8001, "nodePort": 3}
    assert overlay({"a": 1, "l": [1, 2]}, {"b": 2, "l": [3]}) == {"a": 1, "l": [3], "b": 2}
    target = copy.deepcopy(live)
    put(target, ("spec", "ports", Named("grpc"), "port"), 8001)
    put(target, ("spec", "ports", Named("admin")), ABSENT)
    put(target, ("spec", "ports", Named("http")), {"name": "http", "port": 80})
    put(target, ("spec", "type"), "ClusterIP")
    put(target, ("spec", "type"), ABSENT)
    put(target, ("metadata", "labels", "a"), "b")
    assert target == {
        "spec": {"ports": [{"name": "grpc", "port": 8001, "nodePort": 3}, {"name": "http", "port": 80}]},
        "metadata": {"labels": {"a": "b"}},
    }


def test_paths_values_and_text_diffs_are_written_one_way() -> None:
    path = ("spec", "template", "spec", "containers", Named("envoy"), "image")
    assert format_path(path) == "spec.template.spec.containers[name=envoy].image"
    assert format_path(("metadata", "labels", "helm.toolkit.fluxcd.io/name")) == (
        'metadata.labels["helm.toolkit.fluxcd.io/name"]'
    )
    assert [format_value(v) for v in (ABSENT, None, "a b", {"b": 1, "a": [True]})] == [
        "(not set)",
        "null",
        "a b",
        '{"a": [true], "b": 1}',
    ]
    assert markdown_value(ABSENT) == "*(not set)*" and markdown_value("") == ""
    assert markdown_cell("a | b\nc") == "`a \\| b c`", "a pipe or a line break must not split the row"
    assert markdown_cell("a`b") == "`` a`b ``"
    assert markdown_value("x" * 10, width=5) == "`xxxx…`" and markdown_value("x" * 5, width=5) == "`xxxxx`"
    before = "".join(f"line {i}\n" for i in range(20))
    hunks = text_diff(before, before.replace("line 10\n", "line ten\n"))
    assert hunks == ["@@ -9,5 +9,5 @@", " line 8", " line 9", "-line 10", "+line ten", " line 11", " line 12"]
    assert text_diff(ABSENT, "a\n") == ["@@ -0,0 +1 @@", "+a"], "a side that is not text reads as empty"


def test_objects_are_removed_added_changed_field_by_field_or_unchanged() -> None:
    newer = {**ENVOY, "image": "envoyproxy/envoy:v1.40.0"}
    before = [config_map("rel-settings"), config_map("same"), deployment("rel-envoy", ENVOY, labels={"a": "b"})]
    after = [config_map("rel-lua"), config_map("same"), deployment("rel-envoy", newer)]
    diff = compare_objects(before, after)
    assert diff.removed == (ObjectKey("ConfigMap", "rel-settings"),), "a Helm upgrade deletes what it no longer renders"
    assert diff.added == (ObjectKey("ConfigMap", "rel-lua"),) and diff.unchanged == (ObjectKey("ConfigMap", "same"),)
    (changed,) = diff.changed
    assert str(changed.key) == "Deployment.apps/rel-envoy"
    assert changed.changes == (
        Change(("metadata", "labels", "a"), "b", ABSENT),
        Change((*CONTAINERS, Named("envoy"), "image"), "envoyproxy/envoy:v1.39.1", "envoyproxy/envoy:v1.40.0"),
    )
    assert diff.counts() == "1 changed, 0 replaced, 1 added, 1 removed, 1 unchanged" and not diff.empty
    assert compare_objects(before, before).empty


def test_a_new_api_version_or_an_unset_namespace_is_the_same_object_as_helm_sees_it() -> None:
    before = [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "rel-keda-so"}}]
    after = [{"apiVersion": "keda.sh/v1beta1", "kind": "ScaledObject", "metadata": {"name": "rel-keda-so"}}]
    diff = compare_objects(before, after)
    assert diff.added == diff.removed == ()
    assert diff.changed[0].changes == (Change(("apiVersion",), "keda.sh/v1alpha1", "keda.sh/v1beta1"),)
    other_group = [deployment("rel-envoy", ENVOY, api="extensions/v1beta1")]
    moved = compare_objects(other_group, [deployment("rel-envoy", ENVOY)])
    assert len(moved.added) == len(moved.removed) == 1, "another API group is another object"
    after = [{**config_map("c"), "metadata": {"name": "c", "namespace": "cms"}}]
    diff = compare_objects([config_map("c")], after, "cms")
    assert not diff.added and not diff.removed, "the same object"
    assert str(diff.changed[0].key) == "ConfigMap/cms/c"


def test_a_content_addressed_rename_is_one_replaced_object_with_its_fields() -> None:
    before, after = [config_map("r-envoy-external-0123456789", a="1")], [config_map("r-envoy-external-abcdef0123")]
    found = compare_objects(before, after, renames=True)
    assert (found.added, found.removed) == ((), ())
    assert [(r.old and r.old.name, r.key.name) for r in found.replaced] == [
        ("r-envoy-external-0123456789", "r-envoy-external-abcdef0123")
    ]
    assert {c.path for c in found.replaced[0].changes} == {("data", "a"), ("metadata", "name")}
    assert "1 replaced" in found.counts() and not found.empty
    plain = compare_objects(before, after)
    assert plain.replaced == () and len(plain.added) == len(plain.removed) == 1, "without renames: what Helm does"


@pytest.mark.parametrize(
    "before, after",
    [
        (["r-a"], ["r-b"]),
        (["r-0123456789", "q-0123456789"], ["r-abcdef0123", "r-fedcba9876"]),
        ([], ["r-abcdef0123", "r-fedcba9876"]),
    ],
)
def test_names_that_are_not_one_hash_apart_stay_a_removal_and_an_addition(before: list, after: list) -> None:
    found = compare_objects([config_map(n) for n in before], [config_map(n) for n in after], renames=True)
    assert found.replaced == () and len(found.removed) == len(before)
