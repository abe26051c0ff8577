"""The Envoy configuration as data and text: every number from the stack settings, deterministic text that survives
the chart's envsubst. That hammer's is the chart's own plus the declared additions: test_generated_envoy_config.py."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml
from conftest import stack_settings
from loopback import OLDER_GENERATION_CHART, loopback_settings

from supersonic_interlink.config import ChartSource, ConfigError
from supersonic_interlink.config.envoy import build_envoy_config, duration, render_envoy_yaml
from supersonic_interlink.config.loading import select_generation
from supersonic_interlink.config.stack_config import stack_names
from supersonic_interlink.contract import NEWEST, TRITON


@pytest.fixture(scope="module")
def hammer():
    return build_envoy_config(stack_settings("hammer"))


def hcm_of(config):
    return config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]


def clusters_of(config):
    return {c["name"]: c for c in config["static_resources"]["clusters"]}


def test_the_wstunnel_additions_and_the_order_the_chart_names_things_in(hammer):
    (_, inference) = hcm_of(hammer)["route_config"]["virtual_hosts"][0]["routes"]
    policy = inference["route"]["retry_policy"]
    assert "gateway-error,reset," in policy["retry_on"] and policy["retriable_status_codes"] == [404, 502, 503, 504]
    assert [p["name"] for p in policy["retry_host_predicate"]] == ["envoy.retry_host_predicates.previous_hosts"]
    assert inference["route"]["timeout"] == "0s", "grpc_route_timeout 0: no route timeout on a long inference"
    filters = [f["name"] for f in hcm_of(hammer)["http_filters"]]
    assert filters == ["envoy.filters.http.lua", "envoy.filters.http.buffer", "envoy.filters.http.router"], (
        "Lua ahead of the buffer, so a wake starts on the headers, not after a body is buffered"
    )
    clusters = [c["name"] for c in hammer["static_resources"]["clusters"]]
    assert clusters == ["inference_server_grpc_service", "inference_server_admission", "envoy_admin"], (
        "the newest chart's Lua filter calls these clusters by name and reads stats under the first"
    )
    cluster = clusters_of(hammer)[NEWEST.inference_cluster]
    assert cluster["outlier_detection"]["enforcing_consecutive_gateway_failure"] == 100, "Envoy's default is 0 %"
    (thresholds,) = cluster["circuit_breakers"]["thresholds"]
    assert thresholds["max_retries"] == thresholds["max_requests"] == 1024 and thresholds["track_remaining"] is True


def test_a_stack_on_a_triton_generation_chart_names_the_clusters_as_that_chart_does():
    config = build_envoy_config(loopback_settings("hammer", chart=OLDER_GENERATION_CHART))
    names = [c["name"] for c in config["static_resources"]["clusters"]]
    assert names == ["triton_grpc_service", "triton_admission", "envoy_admin"], (
        "the generation is read from the chart: its values.yaml declares triton:, and its Lua calls triton_*"
    )
    (group,) = clusters_of(config)["triton_grpc_service"]["load_assignment"]["endpoints"]
    address = group["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]["address"]
    assert address == "supersonic-interlink-triton.cms.svc.cluster.local."


def test_a_repo_chart_is_of_the_triton_generation_only_at_a_published_version() -> None:
    repo = {"repo": "https://fastmachinelearning.org/SuperSONIC", "name": "supersonic"}
    assert select_generation(ChartSource(**repo, version="0.3.1")) == TRITON
    unpublished = r"chart\.version = '0\.4\.0': expected a published SuperSONIC version \(0\.1\.0,"
    with pytest.raises(ConfigError, match=unpublished):
        select_generation(ChartSource(**repo, version="0.4.0"))


def test_a_chart_on_disk_of_no_known_generation_is_refused_naming_it(tmp_path) -> None:
    (tmp_path / "chart").mkdir()
    (tmp_path / "chart" / "values.yaml").write_text("replicas: 1\n")
    with pytest.raises(ConfigError, match=r"release\.chart: the chart at chart is of no supported generation"):
        select_generation(ChartSource(path="chart"), root=tmp_path)


NUMBERS: list[tuple[str, Any]] = [
    ("bufferMaxRequestBytes", 12345678),
    ("connectTimeoutMs", 3456),
    ("dnsRefreshMs", 789),
    ("grpcRouteTimeoutSeconds", 77),
    ("outlierDetection", {"consecutive5xx": 11, "consecutiveGatewayFailure": 12, "intervalSeconds": 13}),
    ("outlierDetection", {"baseEjectionTimeSeconds": 14, "maxEjectionPercent": 35}),
    ("inferenceRetry", {"numRetries": 21, "hostSelectionRetryMaxAttempts": 22, "backOffBaseMs": 23}),
    ("inferenceRetry", {"backOffMaxMs": 2400}),
    ("repositoryIndexRetry", {"numRetries": 31, "perTryTimeoutMs": 3200, "backOffBaseMs": 330, "backOffMaxMs": 3400}),
    ("circuitBreakers", {"maxConnections": 41, "maxPendingRequests": 42, "maxRequests": 43, "maxRetries": 44}),
]


@pytest.mark.parametrize(("key", "value"), NUMBERS)
def test_every_number_of_the_configuration_comes_from_a_stack_setting(key: str, value: Any) -> None:
    before = render_envoy_yaml(build_envoy_config(stack_settings("hammer")))
    after = render_envoy_yaml(build_envoy_config(stack_settings("hammer", envoy={key: value})))
    for number in [value] if isinstance(value, int) else list(value.values()):
        spellings = {f": {number}\n", f": {duration(number)}\n", f": {duration(number * 1000)}\n"}
        assert not any(s in before for s in spellings), f"test value {number} must not occur in the defaults"
        assert any(s in after for s in spellings), f"envoy.{key} = {number} does not reach the config"


def test_every_retry_back_off_in_milliseconds_becomes_an_exact_duration():
    cases = {0: "0s", 1: "0.001s", 200: "0.2s", 250: "0.25s", 1000: "1s", 1500: "1.5s", 5000: "5s", 120000: "120s"}
    assert [duration(ms) for ms in cases] == list(cases.values())


@pytest.mark.parametrize("stack", stack_names())
def test_the_text_is_deterministic_readable_yaml_that_the_charts_envsubst_leaves_unchanged(stack):
    settings = stack_settings(stack)
    text = render_envoy_yaml(build_envoy_config(settings))
    again = render_envoy_yaml(build_envoy_config(settings.model_copy()))
    assert text == again, "the ConfigMap name hashes this text; it may only change when the config does"
    assert "$" not in text, "the chart's entrypoint runs envsubst over the file"
    env = {"POD_NAME": "supersonic-interlink-envoy-0", "PATH": "/usr/bin:/bin"}
    substituted = subprocess.run(["envsubst"], input=text, capture_output=True, text=True, timeout=10, env=env)
    assert substituted.returncode == 0, substituted.stderr
    assert substituted.stdout == text, "the chart's entrypoint pipes the file through envsubst before Envoy reads it"
    assert yaml.safe_load(text) == build_envoy_config(settings), "the text says exactly what the data says"
    assert "&id" not in text and "*id" not in text, "no YAML anchors: a reviewer reads every block where it stands"
    assert text.startswith("admin:\n") and "\nstatic_resources:\n" in text, "written in build order, not sorted"
    assert "{" not in text.replace("{}", ""), "block style only, so a one-number change is a one-line diff"
