"""Every rule at its boundary, and every derived number from inputs that tell its sources apart: hammer sets
readyTimeoutSeconds and holdMinReplicasSeconds both to 900, so here they differ (600 and 1800)."""

from __future__ import annotations

import json

import pytest
from conftest import stack_config, stack_settings
from wake_records import cold_wake, cut_off_wake

from supersonic_interlink.components.supersonic_release import release_timeout_seconds
from supersonic_interlink.config import HELM_UPGRADE_MARGIN_SECONDS, ConfigError
from supersonic_interlink.config.envoy import build_envoy_config, repository_index_idle_timeout_seconds
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.contract import CHART
from supersonic_interlink.wake.history import wake_from_record
from supersonic_interlink.wake.report import WakeTime, build_report

P = "supersonic-interlink"
READY, HOLD = 600, 1800
SFZ_OFF = {"enabled": False, "readyTimeoutSeconds": READY, "holdMinReplicasSeconds": 1}
HOLD_TEXT = "expected a value >= scaleFromZero.readyTimeoutSeconds (600); the chart refuses a shorter hold"
EDGES = {  # id: (the overrides at the rule's edge, one past it, the refusal of the second)
    "hold-equal-to-ready": (
        {"scaleFromZero": {"readyTimeoutSeconds": READY, "holdMinReplicasSeconds": READY}},
        {"scaleFromZero": {"readyTimeoutSeconds": READY, "holdMinReplicasSeconds": READY - 1}},
        f"scaleFromZero.holdMinReplicasSeconds = {READY - 1}: {HOLD_TEXT}",
    ),
    "min-equal-to-max": (
        {"keda": {"minReplicaCount": 3, "maxReplicaCount": 3}},
        {"keda": {"minReplicaCount": 4, "maxReplicaCount": 3}},
        "keda.minReplicaCount = 4: expected a value <= keda.maxReplicaCount (3)",
    ),
    "zero-needs-scale-from-zero": (
        {"scaleFromZero": SFZ_OFF, "keda": {"minReplicaCount": 1}},
        {"scaleFromZero": SFZ_OFF, "keda": {"minReplicaCount": 0}},
        "keda.minReplicaCount = 0: expected >= 1 unless scaleFromZero.enabled is true",
    ),
    "inference-back-off": (
        {"envoy": {"inferenceRetry": {"backOffBaseMs": 250, "backOffMaxMs": 250}}},
        {"envoy": {"inferenceRetry": {"backOffBaseMs": 251, "backOffMaxMs": 250}}},
        "envoy.inferenceRetry.backOffBaseMs = 251: expected a value <= backOffMaxMs (250)",
    ),
    "repository-index-back-off": (
        {"envoy": {"repositoryIndexRetry": {"backOffBaseMs": 9, "backOffMaxMs": 9}}},
        {"envoy": {"repositoryIndexRetry": {"backOffBaseMs": 10, "backOffMaxMs": 9}}},
        "envoy.repositoryIndexRetry.backOffBaseMs = 10: expected a value <= backOffMaxMs (9)",
    ),
}


def problems(**overrides: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        settings_from_config(stack_config("hammer", **overrides))
    return caught.value.problems


def test_the_idle_timeout_and_the_helm_timeout_follow_ready_timeout_not_the_hold() -> None:
    apart = stack_settings("hammer", scaleFromZero={"readyTimeoutSeconds": READY, "holdMinReplicasSeconds": HOLD})
    assert repository_index_idle_timeout_seconds(apart) == READY + CHART.ready_timeout_margin_seconds == 720
    assert release_timeout_seconds(apart) == READY + HELM_UPGRADE_MARGIN_SECONDS == 900
    text = json.dumps(build_envoy_config(apart))
    assert '"idle_timeout": "720s"' in text, "the RepositoryIndex route waits readyTimeoutSeconds + the margin"
    assert '"idle_timeout": "1920s"' not in text


@pytest.mark.parametrize(("allowed", "refused", "problem"), EDGES.values(), ids=EDGES)
def test_a_rule_allows_its_edge_and_refuses_one_past_it(allowed, refused, problem) -> None:
    settings_from_config(stack_config("hammer", **allowed))  # with scale from zero off, a shorter hold is allowed
    assert problems(**refused) == [f"{P}:{problem}"]


@pytest.mark.parametrize("path", ["/helm/supersonic", "helm/../../etc", ".."])
def test_a_git_chart_path_must_stay_inside_the_repository(path: str) -> None:
    chart = {"git": "https://github.com/fastmachinelearning/SuperSONIC", "commit": "a" * 40, "path": path}
    found = problems(release={"name": "supersonic-interlink", "chart": chart})
    assert found == [
        f"{P}:release.chart.path = \"{path}\": expected the chart's directory in the repository, relative, without '..'"
    ]


def test_cut_off_wakes_sort_after_every_measured_one_whatever_their_seconds() -> None:
    records = [cut_off_wake(300.0, ready_timeout=300), cold_wake(500.0), cold_wake(100.0)]
    wakes = [wake_from_record(i, r) for i, r in enumerate(records, start=1)]
    assert build_report("hammer", wakes).times == (WakeTime(100.0), WakeTime(500.0), WakeTime(300.0, cut_off=True))
