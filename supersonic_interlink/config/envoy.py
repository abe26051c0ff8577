"""The Envoy configuration, a pure function of the settings: the chart's own with scale from zero, plus what a Triton
behind a Slurm-side wstunnel needs (``declared_additions``); deterministic and without ``$`` (the chart envsubsts)."""

from __future__ import annotations

from typing import Any

import yaml

from supersonic_interlink.config.model import Settings
from supersonic_interlink.contract import CHART

REPOSITORY_INDEX_RETRY_ON = "5xx,connect-failure,refused-stream,unavailable"  # the chart's
INFERENCE_RETRY_ON = (
    "5xx,gateway-error,reset,reset-before-request,connect-failure,refused-stream,retriable-status-codes,"
    "cancelled,deadline-exceeded,internal,resource-exhausted,unavailable"
)
"""Every transport failure a wstunnel to a Slurm node produces, and a restarting or overloaded Triton's statuses."""
INFERENCE_RETRIABLE_STATUS_CODES = (404, 502, 503, 504)  # 404: a wstunnel whose far end is gone
BUFFER_FILTER = "envoy.filters.http.buffer"


def declared_additions(inference_cluster: str) -> dict[tuple[str, ...], str]:
    """What this adds to the chart's configuration, by place, each with why; the rest must be the chart's."""
    return {
        ("http_filters", BUFFER_FILTER): "the 32 MiB request buffer",
        ("clusters", inference_cluster, "outlier_detection"): "outlier ejection",
        ("routes", "prefix /", "route", "retry_policy"): "the aggressive retry policy on the inference route",
        ("clusters", inference_cluster, "circuit_breakers"): "the retry policy's concurrency (docs/envoy.md)",
    }


def duration(milliseconds: int) -> str:
    """A protobuf Duration string, exact and short: 2000 -> ``2s``, 250 -> ``0.25s``."""
    seconds, millis = divmod(milliseconds, 1000)
    return f"{seconds}s" if millis == 0 else f"{seconds}.{millis:03d}".rstrip("0") + "s"


def repository_index_idle_timeout_seconds(settings: Settings) -> int:
    """Idle timeout of the held RepositoryIndex: the wake timeout plus the chart's margin."""
    return settings.scaleFromZero.readyTimeoutSeconds + CHART.ready_timeout_margin_seconds


def _typed(name: str, kind: str, **config: Any) -> dict[str, Any]:
    return {"name": name, "typed_config": {"@type": f"type.googleapis.com/envoy.{kind}", **config}}


def _address(address: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": address, "port_value": port}}


def _endpoints(name: str, address: str, port: int) -> dict[str, Any]:
    return {"cluster_name": name, "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _address(address, port)}}]}]}


def _back_off(retry: Any) -> dict[str, str]:
    return {"base_interval": duration(retry.backOffBaseMs), "max_interval": duration(retry.backOffMaxMs)}


def _static_cluster(name: str, address: str, port: int) -> dict[str, Any]:
    return {
        "name": name,
        "type": "STATIC",
        "connect_timeout": duration(CHART.loopback_connect_timeout_ms),
        "load_assignment": _endpoints(name, address, port),
    }


def _routes(settings: Settings) -> list[dict[str, Any]]:
    envoy, cluster = settings.envoy, settings.generation.inference_cluster
    ri, inf = envoy.repositoryIndexRetry, envoy.inferenceRetry
    route_timeout = duration(envoy.grpcRouteTimeoutSeconds * 1000)
    return [
        {
            # Held by the Lua filter while Triton wakes; the margin covers /wake, the wait and these retries.
            "match": {"path": CHART.repository_index_path},
            "route": {
                "cluster": cluster,
                "timeout": route_timeout,
                "idle_timeout": f"{repository_index_idle_timeout_seconds(settings)}s",
                "retry_policy": {
                    "retry_on": REPOSITORY_INDEX_RETRY_ON,
                    "num_retries": ri.numRetries,
                    "per_try_timeout": duration(ri.perTryTimeoutMs),
                    "retry_back_off": _back_off(ri),
                },
            },
        },
        {
            "match": {"prefix": "/"},
            "route": {
                "cluster": cluster,
                "timeout": route_timeout,
                "retry_policy": {
                    "retry_on": INFERENCE_RETRY_ON,
                    "num_retries": inf.numRetries,
                    "retriable_status_codes": list(INFERENCE_RETRIABLE_STATUS_CODES),
                    "retry_host_predicate": [
                        _typed(
                            "envoy.retry_host_predicates.previous_hosts",
                            "extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate",
                        )
                    ],
                    "host_selection_retry_max_attempts": inf.hostSelectionRetryMaxAttempts,
                    "retry_back_off": _back_off(inf),
                },
            },
        },
    ]


def _listener(settings: Settings) -> dict[str, Any]:
    http_filters = [
        # Lua first: a wake starts on the headers, before any body is buffered.
        _typed(
            "envoy.filters.http.lua",
            "extensions.filters.http.lua.v3.Lua",
            default_source_code={"filename": CHART.lua_filter_path},
        ),
        # The whole request buffered is what lets a retry replay the body.
        _typed(
            BUFFER_FILTER,
            "extensions.filters.http.buffer.v3.Buffer",
            max_request_bytes=settings.envoy.bufferMaxRequestBytes,
        ),
        _typed("envoy.filters.http.router", "extensions.filters.http.router.v3.Router"),
    ]
    manager = _typed(
        "envoy.filters.network.http_connection_manager",
        "extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        stat_prefix="ingress_grpc",
        codec_type="AUTO",
        generate_request_id=True,
        http2_protocol_options={},
        route_config={
            "name": CHART.route_config_name,
            "virtual_hosts": [{"name": "backend_grpc", "domains": ["*"], "routes": _routes(settings)}],
        },
        http_filters=http_filters,
    )
    return {
        "name": "listener_grpc",
        "address": _address("0.0.0.0", CHART.envoy_grpc_port),
        "filter_chains": [{"filters": [manager]}],
    }


def _inference_cluster(settings: Settings) -> dict[str, Any]:
    envoy, name = settings.envoy, settings.generation.inference_cluster
    od, cb = envoy.outlierDetection, envoy.circuitBreakers
    return {
        "name": name,
        # The chart's: no ready pod, no host, which the Lua filter's membership_healthy wait watches.
        "type": "STRICT_DNS",
        "dns_refresh_rate": duration(envoy.dnsRefreshMs),
        "dns_lookup_family": "V4_ONLY",
        "connect_timeout": duration(envoy.connectTimeoutMs),
        "lb_policy": envoy.loadBalancerPolicy,
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}},
            },
        },
        # Envoy's default of 3 concurrent retries fails every other client when a Triton restarts (docs/envoy.md).
        "circuit_breakers": {
            "thresholds": [
                {
                    "priority": "DEFAULT",
                    "max_connections": cb.maxConnections,
                    "max_pending_requests": cb.maxPendingRequests,
                    "max_requests": cb.maxRequests,
                    "max_retries": cb.maxRetries,
                    "track_remaining": True,
                }
            ],
        },
        "outlier_detection": {
            "split_external_local_origin_errors": True,
            "consecutive_5xx": od.consecutive5xx,
            "consecutive_gateway_failure": od.consecutiveGatewayFailure,
            # Envoy's default is 0 %: a wstunnel answering 502/503/504 for a dead Slurm job must be ejected.
            "enforcing_consecutive_gateway_failure": 100,
            "interval": duration(od.intervalSeconds * 1000),
            "base_ejection_time": duration(od.baseEjectionTimeSeconds * 1000),
            "max_ejection_percent": od.maxEjectionPercent,
        },
        "load_assignment": _endpoints(
            name,
            settings.generation.inference_service_fqdn(settings.release.name, settings.namespace),
            CHART.inference_grpc_port,
        ),
    }


def build_envoy_config(settings: Settings) -> dict[str, Any]:
    admin_log = _typed(
        "envoy.access_loggers.file", "extensions.access_loggers.file.v3.FileAccessLog", path="/tmp/admin_access.log"
    )
    return {
        "admin": {"access_log": [admin_log], "address": _address("0.0.0.0", CHART.envoy_admin_port)},
        "static_resources": {
            "listeners": [_listener(settings)],
            "clusters": [
                _inference_cluster(settings),
                _static_cluster(settings.generation.admission_cluster, CHART.admission_host, CHART.admission_port),
                _static_cluster(CHART.admin_cluster, "127.0.0.1", CHART.envoy_admin_port),
            ],
        },
    }


class _Dumper(yaml.SafeDumper):
    """Block style, no anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_envoy_yaml(config: dict[str, Any]) -> str:
    return yaml.dump(config, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
