"""The Envoy configuration, a pure function of the stack settings.

It is the configuration the SuperSONIC chart generates with scale from zero (admin, the ``listener_grpc``
listener, the Lua wake filter, the RepositoryIndex and inference routes, the Triton, admission and admin clusters),
plus what a Triton behind a Slurm-side wstunnel needs and the chart cannot express: a request buffer, outlier
ejection, an aggressive retry policy on the inference route and circuit breakers sized for that policy.

``build_envoy_config`` returns plain data in the order a reader wants it; ``render_envoy_yaml`` turns it into the
text the ConfigMap stores. The text is deterministic (same settings, same bytes, so the content hash in the
ConfigMap name only moves when the configuration does) and contains no ``$``: the chart's entrypoint runs
``envsubst`` over it before Envoy starts.
"""

from __future__ import annotations

from typing import Any

import yaml

from supersonic_interlink.config import Settings
from supersonic_interlink.contract import CHART

LISTEN_ADDRESS = "0.0.0.0"
LOOPBACK = "127.0.0.1"
ADMIN_ACCESS_LOG = "/tmp/admin_access.log"
LISTENER_NAME = "listener_grpc"
STAT_PREFIX = "ingress_grpc"
VIRTUAL_HOST = "backend_grpc"

REPOSITORY_INDEX_RETRY_ON = "5xx,connect-failure,refused-stream,unavailable"
"""The chart's retry conditions on the RepositoryIndex route."""

INFERENCE_RETRY_ON = (
    "5xx,gateway-error,reset,reset-before-request,connect-failure,refused-stream,retriable-status-codes,"
    "cancelled,deadline-exceeded,internal,resource-exhausted,unavailable"
)
"""The change request's retry conditions on the inference route: every transport failure a wstunnel to a Slurm
node can produce, and the gRPC statuses a restarting or overloaded Triton answers with."""

INFERENCE_RETRIABLE_STATUS_CODES = (404, 502, 503, 504)
"""HTTP statuses retried under ``retriable-status-codes``; 404 is what a wstunnel whose far end is gone answers."""

_TYPE = "type.googleapis.com/envoy."
_HTTP_CONNECTION_MANAGER = _TYPE + "extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
_LUA = _TYPE + "extensions.filters.http.lua.v3.Lua"
_BUFFER = _TYPE + "extensions.filters.http.buffer.v3.Buffer"
_ROUTER = _TYPE + "extensions.filters.http.router.v3.Router"
_FILE_ACCESS_LOG = _TYPE + "extensions.access_loggers.file.v3.FileAccessLog"
_PREVIOUS_HOSTS = _TYPE + "extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"
_HTTP_PROTOCOL_OPTIONS = _TYPE + "extensions.upstreams.http.v3.HttpProtocolOptions"


BUFFER_FILTER = "envoy.filters.http.buffer"


def declared_additions(inference_cluster: str) -> dict[tuple[str, ...], str]:
    """What this configuration adds to the one the chart generates, by place (``conformance`` compares the two with
    these taken out), each with why. Everything else must be what the chart generates."""
    return {
        ("http_filters", BUFFER_FILTER): "the 32 MiB request buffer",
        ("clusters", inference_cluster, "outlier_detection"): "outlier ejection",
        ("routes", "prefix /", "route", "retry_policy"): "the aggressive retry policy on the inference route",
        # Envoy's default of 3 concurrent retries per cluster would refuse that policy's retries in any outage.
        ("clusters", inference_cluster, "circuit_breakers"): "the retry policy's concurrency (docs/envoy.md)",
    }


def duration(milliseconds: int) -> str:
    """A protobuf Duration string, exact and short: 2000 -> ``2s``, 250 -> ``0.25s``."""
    seconds, millis = divmod(milliseconds, 1000)
    if millis == 0:
        return f"{seconds}s"
    return f"{seconds}.{millis:03d}".rstrip("0") + "s"


def repository_index_idle_timeout_seconds(settings: Settings) -> int:
    """Idle timeout of the held RepositoryIndex: the wake timeout plus the chart's margin, never set separately."""
    return settings.scaleFromZero.readyTimeoutSeconds + CHART.ready_timeout_margin_seconds


def _socket_address(address: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": address, "port_value": port}}


def _static_cluster(name: str, address: str, port: int) -> dict[str, Any]:
    """A loopback helper cluster the Lua filter calls with ``httpCall`` (HTTP/1.1, one fixed endpoint)."""
    return {
        "name": name,
        "type": "STATIC",
        "connect_timeout": duration(CHART.loopback_connect_timeout_ms),
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _socket_address(address, port)}}]}],
        },
    }


def _admin(settings: Settings) -> dict[str, Any]:
    return {
        "access_log": [
            {
                "name": "envoy.access_loggers.file",
                "typed_config": {"@type": _FILE_ACCESS_LOG, "path": ADMIN_ACCESS_LOG},
            }
        ],
        "address": _socket_address(LISTEN_ADDRESS, CHART.envoy_admin_port),
    }


def _routes(settings: Settings) -> list[dict[str, Any]]:
    envoy = settings.envoy
    route_timeout = duration(envoy.grpcRouteTimeoutSeconds * 1000)
    ri, inf = envoy.repositoryIndexRetry, envoy.inferenceRetry
    return [
        {
            # The first call of every client session. The Lua filter holds it while Triton wakes, so its idle
            # timeout must outlast readyTimeoutSeconds; the chart's margin covers /wake, the wait and these retries.
            "match": {"path": CHART.repository_index_path},
            "route": {
                "cluster": settings.generation.inference_cluster,
                "timeout": route_timeout,
                "idle_timeout": f"{repository_index_idle_timeout_seconds(settings)}s",
                "retry_policy": {
                    "retry_on": REPOSITORY_INDEX_RETRY_ON,
                    "num_retries": ri.numRetries,
                    "per_try_timeout": duration(ri.perTryTimeoutMs),
                    "retry_back_off": {
                        "base_interval": duration(ri.backOffBaseMs),
                        "max_interval": duration(ri.backOffMaxMs),
                    },
                },
            },
        },
        {
            "match": {"prefix": "/"},
            "route": {
                "cluster": settings.generation.inference_cluster,
                "timeout": route_timeout,
                "retry_policy": {
                    "retry_on": INFERENCE_RETRY_ON,
                    "num_retries": inf.numRetries,
                    "retriable_status_codes": list(INFERENCE_RETRIABLE_STATUS_CODES),
                    # A retry goes to another Triton when there is one.
                    "retry_host_predicate": [
                        {
                            "name": "envoy.retry_host_predicates.previous_hosts",
                            "typed_config": {"@type": _PREVIOUS_HOSTS},
                        }
                    ],
                    "host_selection_retry_max_attempts": inf.hostSelectionRetryMaxAttempts,
                    "retry_back_off": {
                        "base_interval": duration(inf.backOffBaseMs),
                        "max_interval": duration(inf.backOffMaxMs),
                    },
                },
            },
        },
    ]


def _http_filters(settings: Settings) -> list[dict[str, Any]]:
    return [
        # Lua first: it acts on the request headers, so a wake starts before any body has been buffered.
        {
            "name": "envoy.filters.http.lua",
            "typed_config": {"@type": _LUA, "default_source_code": {"filename": CHART.lua_filter_path}},
        },
        # The buffer holds the whole request before the router sees it, which is what lets a retry replay the
        # body; a larger request is refused with 413 before it reaches Triton.
        {
            "name": BUFFER_FILTER,
            "typed_config": {"@type": _BUFFER, "max_request_bytes": settings.envoy.bufferMaxRequestBytes},
        },
        {"name": "envoy.filters.http.router", "typed_config": {"@type": _ROUTER}},
    ]


def _listener(settings: Settings) -> dict[str, Any]:
    return {
        "name": LISTENER_NAME,
        "address": _socket_address(LISTEN_ADDRESS, CHART.envoy_grpc_port),
        "filter_chains": [
            {
                "filters": [
                    {
                        "name": "envoy.filters.network.http_connection_manager",
                        "typed_config": {
                            "@type": _HTTP_CONNECTION_MANAGER,
                            "stat_prefix": STAT_PREFIX,
                            "codec_type": "AUTO",
                            "generate_request_id": True,
                            "http2_protocol_options": {},
                            "route_config": {
                                "name": CHART.route_config_name,
                                "virtual_hosts": [
                                    {"name": VIRTUAL_HOST, "domains": ["*"], "routes": _routes(settings)}
                                ],
                            },
                            "http_filters": _http_filters(settings),
                        },
                    }
                ],
            }
        ],
    }


def _inference_cluster(settings: Settings) -> dict[str, Any]:
    envoy = settings.envoy
    od, cb = envoy.outlierDetection, envoy.circuitBreakers
    name = settings.generation.inference_cluster
    return {
        "name": name,
        # As the chart generates it: every address the headless Service returns is a host, and no address (no ready
        # inference server) means no host, which is what the Lua filter's membership_healthy wait watches. Envoy
        # 1.39 calls Cluster.dns_refresh_rate deprecated (a warning the chart's own configuration has too).
        "type": "STRICT_DNS",
        "dns_refresh_rate": duration(envoy.dnsRefreshMs),
        "dns_lookup_family": "V4_ONLY",
        "connect_timeout": duration(envoy.connectTimeoutMs),
        "lb_policy": envoy.loadBalancerPolicy,
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": _HTTP_PROTOCOL_OPTIONS,
                "explicit_http_config": {"http2_protocol_options": {}},
            },
        },
        # Envoy's defaults allow 3 concurrent retries per cluster, which would fail every other client at once
        # when a Triton restarts under load; see docs/envoy.md for the measurement behind these thresholds.
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
            # Envoy enforces this rule 0 % of the time unless told otherwise, which would make the threshold
            # decoration: a wstunnel answering 502/503/504 for a dead Slurm job is exactly what it should eject.
            "enforcing_consecutive_gateway_failure": 100,
            "interval": duration(od.intervalSeconds * 1000),
            "base_ejection_time": duration(od.baseEjectionTimeSeconds * 1000),
            "max_ejection_percent": od.maxEjectionPercent,
        },
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [
                {
                    "lb_endpoints": [
                        {
                            "endpoint": {
                                "address": _socket_address(
                                    settings.generation.inference_service_fqdn(
                                        settings.release.name, settings.namespace
                                    ),
                                    CHART.inference_grpc_port,
                                )
                            }
                        }
                    ]
                }
            ],
        },
    }


def build_envoy_config(settings: Settings) -> dict[str, Any]:
    """Plain data of the Envoy bootstrap configuration for one stack."""
    return {
        "admin": _admin(settings),
        "static_resources": {
            "listeners": [_listener(settings)],
            "clusters": [
                _inference_cluster(settings),
                _static_cluster(settings.generation.admission_cluster, CHART.admission_host, CHART.admission_port),
                _static_cluster(CHART.admin_cluster, LOOPBACK, CHART.envoy_admin_port),
            ],
        },
    }


class _Dumper(yaml.SafeDumper):
    """Block style, no anchors: every mapping written out where it stands, so the text reads top to bottom."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_envoy_yaml(config: dict[str, Any]) -> str:
    """Deterministic YAML text of the configuration, in the order it was built."""
    return yaml.dump(config, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
