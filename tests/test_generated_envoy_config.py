"""The computed Envoy configuration against what chart commit 42b2b933 generates: equal but for declared additions."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from conftest import stack_settings

from supersonic_interlink.config.envoy import build_envoy_config
from supersonic_interlink.contract import INFERENCE_SERVER
from supersonic_interlink.render.conformance import generated_config_findings

# What 42b2b933 generates for the hammer stack's values with load_from_configmap false (scale from zero on, no auth,
# no rate limiter, readyTimeoutSeconds 900, grpc_route_timeout 0s, loadBalancerPolicy ROUND_ROBIN).
GENERATED_AT_42B2B933 = r"""
admin:
  access_log:
    - name: envoy.access_loggers.file
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
        path: /tmp/admin_access.log
  address: {socket_address: {address: 0.0.0.0, port_value: 9901}}
static_resources:
  listeners:
    - name: listener_grpc
      address: {socket_address: {address: 0.0.0.0, port_value: 8001}}
      filter_chains:
        - filters:
            - name: envoy.filters.network.http_connection_manager
              typed_config:
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.\
                  HttpConnectionManager"
                generate_request_id: true
                stat_prefix: ingress_grpc
                codec_type: AUTO
                route_config:
                  name: local_route_grpc
                  virtual_hosts:
                    - name: backend_grpc
                      domains: ["*"]
                      routes:
                        - match: {path: /inference.GRPCInferenceService/RepositoryIndex}
                          route:
                            cluster: inference_server_grpc_service
                            timeout: 0s
                            idle_timeout: 1020s
                            retry_policy:
                              retry_on: 5xx,connect-failure,refused-stream,unavailable
                              num_retries: 15
                              per_try_timeout: 2s
                              retry_back_off: {base_interval: 0.25s, max_interval: 1s}
                        - match: {prefix: /}
                          route: {cluster: inference_server_grpc_service, timeout: 0s}
                http_filters:
                  - name: envoy.filters.http.lua
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua
                      default_source_code: {filename: /etc/envoy/lua/envoy-filter.lua}
                  - name: envoy.filters.http.router
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
                http2_protocol_options: {}
  clusters:
    - name: inference_server_admission
      type: STATIC
      connect_timeout: 1s
      load_assignment:
        cluster_name: inference_server_admission
        endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}}}]}]
    - name: envoy_admin
      type: STATIC
      connect_timeout: 1s
      load_assignment:
        cluster_name: envoy_admin
        endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 9901}}}}]}]
    - name: inference_server_grpc_service
      connect_timeout: 2s
      type: STRICT_DNS
      dns_refresh_rate: 1s
      lb_policy: ROUND_ROBIN
      dns_lookup_family: V4_ONLY
      typed_extension_protocol_options:
        envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
          "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
          explicit_http_config: {http2_protocol_options: {}}
      load_assignment:
        cluster_name: inference_server_grpc_service
        endpoints:
          - lb_endpoints:
              - endpoint:
                  address:
                    socket_address:
                      address: supersonic-interlink-inference-server.cms.svc.cluster.local.
                      port_value: 8001
"""


@pytest.fixture
def generated() -> dict[str, Any]:
    return yaml.safe_load(GENERATED_AT_42B2B933)


@pytest.fixture
def computed() -> dict[str, Any]:
    return build_envoy_config(stack_settings("hammer"))


def _cluster(config: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in config["static_resources"]["clusters"] if c["name"] == name)


def _hcm(config: dict[str, Any]) -> dict[str, Any]:
    return config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]


def test_hammers_configuration_is_what_the_pinned_commit_generates_plus_the_declared_additions(generated, computed):
    assert generated_config_findings(generated, computed, INFERENCE_SERVER) == [], (
        "the buffer, outlier ejection and the inference route's retry policy (with the breakers it needs) are the "
        "only differences from the chart's own configuration"
    )


def test_a_changed_generated_field_is_named_by_its_cluster(generated, computed):
    _cluster(computed, "inference_server_grpc_service")["connect_timeout"] = "0.25s"
    (finding,) = generated_config_findings(generated, computed, INFERENCE_SERVER)
    assert finding == (
        "the Envoy configuration changes the chart's cluster inference_server_grpc_service: connect_timeout "
        "(chart: 2s, this stack: 0.25s)"
    )


def test_a_generated_route_retry_policy_the_stack_lacks_is_named_by_its_route(generated, computed):
    routes = _hcm(computed)["route_config"]["virtual_hosts"][0]["routes"]
    del routes[0]["route"]["retry_policy"]
    (finding,) = generated_config_findings(generated, computed, INFERENCE_SERVER)
    assert finding.startswith(
        "the Envoy configuration changes the chart's route path /inference.GRPCInferenceService/RepositoryIndex: "
        "route.retry_policy.num_retries (chart: 15, this stack: (not set)); "
    ), finding


def test_a_cluster_the_chart_generates_and_the_stack_lacks_is_named(generated, computed):
    computed["static_resources"]["clusters"] = [
        c for c in computed["static_resources"]["clusters"] if c["name"] != "envoy_admin"
    ]
    (finding,) = generated_config_findings(generated, computed, INFERENCE_SERVER)
    assert finding == "the Envoy configuration lacks the chart's cluster envoy_admin"


def test_the_charts_filters_keep_their_order(generated, computed):
    filters = _hcm(computed)["http_filters"]
    filters.insert(0, filters.pop())
    (finding,) = generated_config_findings(generated, computed, INFERENCE_SERVER)
    assert "HTTP filters in another order than the chart's (envoy.filters.http.lua, envoy.filters.http.router)" in (
        finding
    ), finding


def test_an_undeclared_addition_is_a_finding_a_declared_one_is_not(generated, computed):
    declared = copy.deepcopy(computed)
    assert "outlier_detection" in _cluster(declared, "inference_server_grpc_service"), "the declared addition is there"
    _cluster(computed, "envoy_admin")["outlier_detection"] = {"consecutive_5xx": 1}
    (finding,) = generated_config_findings(generated, computed, INFERENCE_SERVER)
    assert finding == (
        "the Envoy configuration changes the chart's cluster envoy_admin: outlier_detection.consecutive_5xx "
        "(chart: (not set), this stack: 1)"
    ), "outlier ejection is declared on the inference cluster only"
