"""Every rule at its boundary, and every derived number from inputs that tell its sources apart: hammer sets
readyTimeoutSeconds and holdMinReplicasSeconds both to 900, so here they differ (600 and 1800)."""

from __future__ import annotations

import json

import pytest
from conftest import stack_config, stack_settings
from wake_records import cold_wake, cut_off_wake

from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE, release_timeout_seconds
from supersonic_interlink.config import HELM_UPGRADE_MARGIN_SECONDS, ConfigError
from supersonic_interlink.config.envoy import build_envoy_config, repository_index_idle_timeout_seconds
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.contract import CHART
from supersonic_interlink.render.evaluate import evaluate
from supersonic_interlink.wake.history import wake_from_record
from supersonic_interlink.wake.report import WakeTime, build_report

P = "supersonic-interlink"
READY, HOLD = 600, 1800


def problems(**overrides: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        settings_from_config(stack_config("hammer", **overrides))
    return caught.value.problems


def loads(**overrides: object) -> None:
    settings_from_config(stack_config("hammer", **overrides))


@pytest.fixture
def apart():
    """The hammer stack with readyTimeoutSeconds and holdMinReplicasSeconds apart."""
    return stack_settings("hammer", scaleFromZero={"readyTimeoutSeconds": READY, "holdMinReplicasSeconds": HOLD})


def test_the_idle_timeout_and_the_helm_timeout_follow_ready_timeout_not_the_hold(apart) -> None:
    assert repository_index_idle_timeout_seconds(apart) == READY + CHART.ready_timeout_margin_seconds == 720
    assert release_timeout_seconds(apart) == READY + HELM_UPGRADE_MARGIN_SECONDS == 900
    text = json.dumps(build_envoy_config(apart))
    assert '"idle_timeout": "720s"' in text, "the RepositoryIndex route waits readyTimeoutSeconds + the margin"
    assert '"idle_timeout": "1920s"' not in text


SFZ_OFF = {"enabled": False, "readyTimeoutSeconds": READY, "holdMinReplicasSeconds": 1}
HOLD_TEXT = "expected a value >= scaleFromZero.readyTimeoutSeconds (600); the chart refuses a shorter hold"


@pytest.mark.parametrize(
    ("allowed", "refused", "problem"),
    [
        (
            {"scaleFromZero": {"readyTimeoutSeconds": READY, "holdMinReplicasSeconds": READY}},
            {"scaleFromZero": {"readyTimeoutSeconds": READY, "holdMinReplicasSeconds": READY - 1}},
            f"scaleFromZero.holdMinReplicasSeconds = {READY - 1}: {HOLD_TEXT}",
        ),
        (
            {"keda": {"minReplicaCount": 3, "maxReplicaCount": 3}},
            {"keda": {"minReplicaCount": 4, "maxReplicaCount": 3}},
            "keda.minReplicaCount = 4: expected a value <= keda.maxReplicaCount (3)",
        ),
        (
            {"scaleFromZero": SFZ_OFF, "keda": {"minReplicaCount": 1}},
            {"scaleFromZero": SFZ_OFF, "keda": {"minReplicaCount": 0}},
            "keda.minReplicaCount = 0: expected >= 1 unless scaleFromZero.enabled is true",
        ),
        (
            {"envoy": {"inferenceRetry": {"backOffBaseMs": 250, "backOffMaxMs": 250}}},
            {"envoy": {"inferenceRetry": {"backOffBaseMs": 251, "backOffMaxMs": 250}}},
            "envoy.inferenceRetry.backOffBaseMs = 251: expected a value <= backOffMaxMs (250)",
        ),
        (
            {"envoy": {"repositoryIndexRetry": {"backOffBaseMs": 9, "backOffMaxMs": 9}}},
            {"envoy": {"repositoryIndexRetry": {"backOffBaseMs": 10, "backOffMaxMs": 9}}},
            "envoy.repositoryIndexRetry.backOffBaseMs = 10: expected a value <= backOffMaxMs (9)",
        ),
    ],
    ids=[
        "hold-equal-to-ready",
        "min-equal-to-max",
        "zero-needs-scale-from-zero",
        "inference-back-off",
        "repository-index-back-off",
    ],
)
def test_a_rule_allows_its_edge_and_refuses_one_past_it(allowed, refused, problem) -> None:
    loads(**allowed)  # with scale from zero off, a hold shorter than the ready timeout is allowed
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
    report = build_report("hammer", wakes)
    assert report.times == (WakeTime(100.0), WakeTime(500.0), WakeTime(300.0, cut_off=True))


def _secret_paths(value: object, inside: bool = False, path: str = "") -> dict[str, bool]:
    """Leaf path -> whether it sits inside a secret (pulumi's rpc signature), in the inputs the engine recorded."""
    if isinstance(value, dict):
        inside = inside or value.get("4dabf18193072939515e22adb298388d") == "1b47061264138c4ac30d75fd1eb44270"
        return {p: s for k, v in value.items() for p, s in _secret_paths(v, inside, f"{path}.{k}").items()}
    if isinstance(value, list):
        return {p: s for i, v in enumerate(value) for p, s in _secret_paths(v, inside, f"{path}[{i}]").items()}
    return {path: inside}


@pytest.mark.parametrize("key", ["scaleFromZero", "envoy"])
def test_a_secret_wake_or_envoy_setting_makes_the_envoy_configmap_and_the_release_values_secret(key: str) -> None:
    evaluation = evaluate(stack_config("hammer"), "hammer", secret_keys=[f"{P}:{key}"])
    (config_map,) = evaluation.of_type("kubernetes:core/v1:ConfigMap")
    data = {p: s for p, s in _secret_paths(config_map.inputs).items() if p.startswith(".data")}
    assert data and all(data.values()), f"the Envoy configuration is computed from {key}: {data}"
    values = _secret_paths(evaluation.one(HELM_RELEASE_TYPE).inputs)
    assert any(p.startswith(".values") for p in values) and all(s for p, s in values.items() if p.startswith(".values"))
    plain = evaluate(stack_config("hammer"), "hammer")
    (plain_map,) = plain.of_type("kubernetes:core/v1:ConfigMap")
    assert not any(_secret_paths(plain_map.inputs).values()), "without the secret nothing is marked: the test can fail"
