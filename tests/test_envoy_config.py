"""The Envoy configuration as data and text: every number from the stack settings, deterministic text that survives
the chart's envsubst. That hammer's is the chart's own plus the declared additions: test_generated_envoy_config.py."""

from __future__ import annotations

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
    (listener,) = config["static_resources"]["listeners"]
    (chain,) = listener["filter_chains"]
    (hcm,) = chain["filters"]
    return hcm["typed_config"]


def routes_of(config):
    (virtual_host,) = hcm_of(config)["route_config"]["virtual_hosts"]
    return virtual_host["routes"]


def clusters_of(config):
    return {c["name"]: c for c in config["static_resources"]["clusters"]}


def endpoint_of(cluster):
    (group,) = cluster["load_assignment"]["endpoints"]
    (endpoint,) = group["lb_endpoints"]
    return endpoint["endpoint"]["address"]["socket_address"]


def test_the_inference_route_carries_the_change_requests_aggressive_retry_policy(hammer):
    (_, inference) = routes_of(hammer)
    policy = inference["route"]["retry_policy"]
    assert policy["retry_on"] == (
        "5xx,gateway-error,reset,reset-before-request,connect-failure,refused-stream,retriable-status-codes,"
        "cancelled,deadline-exceeded,internal,resource-exhausted,unavailable"
    )
    assert policy["num_retries"] == 15
    assert policy["retriable_status_codes"] == [404, 502, 503, 504]
    assert [p["name"] for p in policy["retry_host_predicate"]] == ["envoy.retry_host_predicates.previous_hosts"], (
        "a retry should go to another Triton when there is one"
    )
    assert policy["host_selection_retry_max_attempts"] == 10
    assert policy["retry_back_off"] == {"base_interval": "0.2s", "max_interval": "5s"}
    assert inference["route"]["timeout"] == "0s", "grpc_route_timeout 0: no route timeout on a long inference"


def test_http_filters_run_lua_then_buffer_then_router(hammer):
    filters = hcm_of(hammer)["http_filters"]
    assert [f["name"] for f in filters] == [
        "envoy.filters.http.lua",
        "envoy.filters.http.buffer",
        "envoy.filters.http.router",
    ], "Lua ahead of the buffer, so a wake starts on the headers, not after a body is buffered"
    assert filters[1]["typed_config"]["max_request_bytes"] == 33554432


def test_the_three_clusters_come_in_the_order_the_lua_filter_and_routes_name_them(hammer):
    assert [c["name"] for c in hammer["static_resources"]["clusters"]] == [
        "inference_server_grpc_service",
        "inference_server_admission",
        "envoy_admin",
    ], "the newest chart's Lua filter calls these clusters by name and reads stats under the first (hammer is unpinned)"


def test_a_stack_on_a_triton_generation_chart_names_the_clusters_as_that_chart_does():
    config = build_envoy_config(loopback_settings("hammer", chart=OLDER_GENERATION_CHART))
    assert [c["name"] for c in config["static_resources"]["clusters"]] == [
        "triton_grpc_service",
        "triton_admission",
        "envoy_admin",
    ], "the generation is read from the chart: its values.yaml declares triton:, and its Lua calls triton_*"
    service = endpoint_of(clusters_of(config)["triton_grpc_service"])
    assert service["address"] == "supersonic-interlink-triton.cms.svc.cluster.local."


def test_a_repo_chart_is_of_the_triton_generation_only_at_a_published_version() -> None:
    repo = {"repo": "https://fastmachinelearning.org/SuperSONIC", "name": "supersonic"}
    assert select_generation(ChartSource(**repo, version="0.3.1")) == TRITON
    with pytest.raises(
        ConfigError, match=r"chart\.version = '0\.4\.0': expected a published SuperSONIC version \(0\.1\.0,"
    ):
        select_generation(ChartSource(**repo, version="0.4.0"))


def test_a_chart_on_disk_of_no_known_generation_is_refused_naming_it(tmp_path) -> None:
    (tmp_path / "chart").mkdir()
    (tmp_path / "chart" / "values.yaml").write_text("replicas: 1\n")
    with pytest.raises(ConfigError, match=r"release\.chart: the chart at chart is of no supported generation"):
        select_generation(ChartSource(path="chart"), root=tmp_path)


def test_the_triton_cluster_ejects_failing_hosts_and_lets_every_request_retry_at_once(hammer):
    cluster = clusters_of(hammer)[NEWEST.inference_cluster]
    assert cluster["outlier_detection"] == {
        "split_external_local_origin_errors": True,
        "consecutive_5xx": 5,
        "consecutive_gateway_failure": 5,
        "enforcing_consecutive_gateway_failure": 100,
        "interval": "10s",
        "base_ejection_time": "30s",
        "max_ejection_percent": 50,
    }, "enforcing_consecutive_gateway_failure defaults to 0 %: without it the gateway-failure threshold never ejects"
    (thresholds,) = cluster["circuit_breakers"]["thresholds"]
    assert thresholds["max_retries"] == thresholds["max_requests"] == 1024, (
        "Envoy's default of 3 concurrent retries fails every other client at once when a Triton restarts"
    )
    assert thresholds["track_remaining"] is True, "remaining_retries gauges show how close the breaker is"


NUMBERS: dict[str, tuple[str, Any]] = {
    "bufferMaxRequestBytes": ("buffer limit", 12345678),
    "connectTimeoutMs": ("connect timeout", 3456),
    "dnsRefreshMs": ("DNS refresh", 789),
    "grpcRouteTimeoutSeconds": ("route timeout", 77),
    "outlierDetection": (
        "outlier detection",
        {
            "consecutive5xx": 11,
            "consecutiveGatewayFailure": 12,
            "intervalSeconds": 13,
            "baseEjectionTimeSeconds": 14,
            "maxEjectionPercent": 35,
        },
    ),
    "inferenceRetry": (
        "inference retry",
        {"numRetries": 21, "hostSelectionRetryMaxAttempts": 22, "backOffBaseMs": 230, "backOffMaxMs": 2400},
    ),
    "repositoryIndexRetry": (
        "RepositoryIndex retry",
        {"numRetries": 31, "perTryTimeoutMs": 3200, "backOffBaseMs": 330, "backOffMaxMs": 3400},
    ),
    "circuitBreakers": (
        "circuit breakers",
        {"maxConnections": 41, "maxPendingRequests": 42, "maxRequests": 43, "maxRetries": 44},
    ),
}


@pytest.mark.parametrize("key", sorted(NUMBERS))
def test_every_number_of_the_configuration_comes_from_a_stack_setting(key):
    what, value = NUMBERS[key]
    before = render_envoy_yaml(build_envoy_config(stack_settings("hammer")))
    after = render_envoy_yaml(build_envoy_config(stack_settings("hammer", envoy={key: value})))
    assert before != after, f"the {what} must follow envoy.{key}"
    expected = [value] if isinstance(value, int) else list(value.values())
    for number in expected:
        spellings = {f": {number}\n", f": {duration(number)}\n", f": {duration(number * 1000)}\n"}
        assert not any(s in before for s in spellings), f"test value {number} must not occur in the defaults"
        assert any(s in after for s in spellings), f"envoy.{key} = {number} ({what}) does not reach the config"


def test_every_retry_back_off_in_milliseconds_becomes_an_exact_duration():
    cases = {0: "0s", 1: "0.001s", 200: "0.2s", 250: "0.25s", 1000: "1s", 1500: "1.5s", 5000: "5s", 120000: "120s"}
    assert [duration(ms) for ms in cases] == list(cases.values())


@pytest.mark.parametrize("stack", stack_names())
def test_the_text_is_deterministic_readable_yaml_without_dollar_signs(stack):
    settings = stack_settings(stack)
    text = render_envoy_yaml(build_envoy_config(settings))
    again = render_envoy_yaml(build_envoy_config(settings.model_copy()))
    assert text == again, "the ConfigMap name hashes this text; it may only change when the config does"
    assert "$" not in text, "the chart's entrypoint runs envsubst over the file"
    assert yaml.safe_load(text) == build_envoy_config(settings), "the text says exactly what the data says"
    assert "&id" not in text and "*id" not in text, "no YAML anchors: a reviewer reads every block where it stands"
    assert text.startswith("admin:\n") and "\nstatic_resources:\n" in text, "written in build order, not sorted"
    assert "{" not in text.replace("{}", ""), "block style only, so a one-number change is a one-line diff"
