"""A change of the Envoy configuration reaches the running Envoy pods, and never leaves the chart without a ConfigMap.

The chart copies the external ConfigMap only when Helm renders, and Envoy reads its file only at start. So a new
configuration must (a) change the Release's values, so Pulumi runs a Helm upgrade, (b) change the Envoy pods'
template, so the Deployment rolls, and (c) arrive as a new ConfigMap created before the upgrade that reads it,
with the old one deleted only after it. Evaluated under the mock engine with the real program.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import stack_config

from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config.values import CONFIG_CHECKSUM_ANNOTATION
from supersonic_interlink.contract import CHART
from supersonic_interlink.objdiff import changes, format_path
from supersonic_interlink.render.evaluate import evaluate

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def hammer_envoy(**changes: Any) -> dict[str, Any]:
    """Hammer's own ``envoy`` key with some sub-keys changed (an override replaces the whole key)."""
    return {**json.loads(stack_config("hammer")["supersonic-interlink:envoy"]), **changes}


def release_values(evaluation) -> dict[str, Any]:
    return evaluation.one(HELM_RELEASE_TYPE).inputs["values"]


def envoy_pod_annotations(evaluation) -> dict[str, str]:
    return release_values(evaluation)["envoy"]["annotations"]


def config_map(evaluation) -> dict[str, Any]:
    return evaluation.one(CONFIG_MAP).inputs


@pytest.fixture(scope="module")
def pair():
    """Hammer as it is, and hammer with one number of the Envoy configuration changed (the buffer limit)."""
    before = evaluate(stack_config("hammer", envoy=hammer_envoy()), "hammer")
    after = evaluate(stack_config("hammer", envoy=hammer_envoy(bufferMaxRequestBytes=33554433)), "hammer")
    return before, after


def test_one_changed_number_changes_the_release_values_so_helm_upgrades_and_the_envoy_pods_roll(pair):
    """Identical values mean no Helm upgrade, and the chart would keep its copy of the old configuration; Envoy reads
    its file only at start, so an unchanged pod annotation leaves the old configuration running."""
    before, after = pair
    assert [format_path(c.path) for c in changes(release_values(before), release_values(after))] == [
        f'envoy.annotations["{CONFIG_CHECKSUM_ANNOTATION}"]',
        "envoy.external_config.configmap_name",
    ], "the configuration reaches the release only through the ConfigMap name and the pods' checksum annotation"


def test_one_changed_number_gives_a_config_map_of_a_new_name(pair):
    before, after = pair
    old, new = config_map(before)["metadata"]["name"], config_map(after)["metadata"]["name"]
    assert old != new, "a new name makes the change a create-then-delete replacement, not an in-place edit"
    prefix = f"{CHART.envoy_object_name('supersonic-interlink')}-external-"
    assert old.startswith(prefix) and new.startswith(prefix)
    for evaluation in pair:
        assert (
            release_values(evaluation)["envoy"]["external_config"]["configmap_name"]
            == config_map(evaluation)["metadata"]["name"]
        ), "the release must read the ConfigMap created with it"


def test_identical_configurations_give_identical_values_annotations_and_config_map(run_stack):
    first, second = run_stack("hammer"), run_stack("hammer")
    assert release_values(first) == release_values(second), "an unchanged stack must not upgrade the release"
    assert envoy_pod_annotations(first) == envoy_pod_annotations(second), "nor roll the Envoy pods"
    assert config_map(first) == config_map(second), "nor replace the ConfigMap"


def test_a_change_outside_the_envoy_configuration_leaves_the_envoy_pods_alone(run_stack):
    first = run_stack("hammer")
    second = run_stack("hammer", keda={"maxReplicaCount": 9})
    assert release_values(first) != release_values(second)
    assert envoy_pod_annotations(first) == envoy_pod_annotations(second), (
        "rolling Envoy cuts every client's connection; only an Envoy configuration change should do it"
    )


def test_the_config_map_is_immutable_created_before_the_release_reads_it_and_replaced_create_first() -> None:
    evaluation = evaluate(stack_config("hammer"), "hammer")
    config_map_record, release_record = evaluation.one(CONFIG_MAP), evaluation.one(HELM_RELEASE_TYPE)
    assert config_map(evaluation)["immutable"] is True, (
        "immutable, so the provider replaces rather than edits it when the data changes"
    )
    assert not config_map_record.delete_before_replace, (
        "delete-before-replace would leave a moment with no ConfigMap for the chart's lookup to find"
    )
    assert any(urn.endswith(f"{CONFIG_MAP}::{config_map_record.name}") for urn in release_record.dependencies), (
        "the Release must depend on the ConfigMap, so the new one exists before the upgrade and the old one "
        "is deleted only after it"
    )
