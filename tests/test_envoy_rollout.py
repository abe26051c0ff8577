"""A change of the Envoy configuration reaches the running Envoy pods, and never leaves the chart without a ConfigMap.

The chart copies the external ConfigMap only when Helm renders, and Envoy reads its file only at start. So a new
configuration must change the Release's values (a Helm upgrade) and the Envoy pods' template (a roll), and arrive as
a new ConfigMap created before the upgrade that reads it, the old one deleted only after it. Under the mock engine.
"""

from __future__ import annotations

import json
from typing import Any

from conftest import stack_config

from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config.values import CONFIG_CHECKSUM_ANNOTATION
from supersonic_interlink.contract import CHART
from supersonic_interlink.objdiff import changes, format_path
from supersonic_interlink.render.evaluate import evaluate

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def release_values(evaluation) -> dict[str, Any]:
    return evaluation.one(HELM_RELEASE_TYPE).inputs["values"]


def config_map(evaluation) -> dict[str, Any]:
    return evaluation.one(CONFIG_MAP).inputs


def test_one_changed_number_upgrades_the_release_rolls_envoy_and_replaces_the_config_map_create_first() -> None:
    # An override replaces the whole key: hammer's own envoy key with only the buffer limit changed.
    envoy = json.loads(stack_config("hammer")["supersonic-interlink:envoy"])
    before = evaluate(stack_config("hammer", envoy=envoy), "hammer")
    after = evaluate(stack_config("hammer", envoy={**envoy, "bufferMaxRequestBytes": 33554433}), "hammer")
    assert [format_path(c.path) for c in changes(release_values(before), release_values(after))] == [
        f'envoy.annotations["{CONFIG_CHECKSUM_ANNOTATION}"]',
        "envoy.external_config.configmap_name",
    ], "identical values mean no Helm upgrade, and an unchanged pod annotation leaves the old configuration running"
    old, new = config_map(before)["metadata"]["name"], config_map(after)["metadata"]["name"]
    assert old != new, "a new name makes the change a create-then-delete replacement, not an in-place edit"
    prefix = f"{CHART.envoy_object_name('supersonic-interlink')}-external-"
    assert old.startswith(prefix) and new.startswith(prefix)
    for evaluation in (before, after):
        assert (
            release_values(evaluation)["envoy"]["external_config"]["configmap_name"]
            == config_map(evaluation)["metadata"]["name"]
        ), "the release must read the ConfigMap created with it"
    config_map_record, release_record = before.one(CONFIG_MAP), before.one(HELM_RELEASE_TYPE)
    assert config_map(before)["immutable"] is True, "immutable, so the provider replaces rather than edits it"
    assert not config_map_record.delete_before_replace, (
        "delete-before-replace would leave a moment with no ConfigMap for the chart's lookup to find"
    )
    assert any(urn.endswith(f"{CONFIG_MAP}::{config_map_record.name}") for urn in release_record.dependencies), (
        "the Release must depend on the ConfigMap, so the new one exists before the upgrade and the old one "
        "is deleted only after it"
    )


def test_an_unchanged_stack_changes_nothing_and_a_change_outside_envoy_leaves_the_envoy_pods_alone(run_stack) -> None:
    first, second = run_stack("hammer"), run_stack("hammer")
    assert release_values(first) == release_values(second), "no upgrade of the release, so no roll of the Envoy pods"
    assert config_map(first) == config_map(second), "nor a replaced ConfigMap"
    other = run_stack("hammer", keda={"maxReplicaCount": 9})
    assert release_values(first) != release_values(other)
    assert release_values(first)["envoy"]["annotations"] == release_values(other)["envoy"]["annotations"], (
        "rolling Envoy cuts every client's connection; only an Envoy configuration change should do it"
    )
