"""The Envoy configuration, a pure function of the settings: ``envoy.yaml`` filled in, the chart's own with scale
from zero plus what a Triton behind a Slurm-side wstunnel needs (``declared_additions``); deterministic and without
``$`` (the chart envsubsts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink.config.rules import Settings
from supersonic_interlink.contract import CHART


def declared_additions(inference_cluster: str) -> dict[tuple[str, ...], str]:
    """What this adds to the chart's configuration, by place, each with why; the rest must be the chart's."""
    return {
        ("http_filters", "envoy.filters.http.buffer"): "the 32 MiB request buffer",
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


TEMPLATE = yaml.safe_load((Path(__file__).parent / "envoy.yaml").read_text())


def _filled(node: Any, values: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        return {key: _filled(value, values) for key, value in node.items()}
    if isinstance(node, list):
        return [_filled(value, values) for value in node]
    return values[node[1:]] if isinstance(node, str) and node.startswith("$") else node


def build_envoy_config(settings: Settings) -> dict[str, Any]:
    """``envoy.yaml`` filled in from ``settings`` and the chart's contract."""
    envoy, generation = settings.envoy, settings.generation
    ri, inf, od, cb = envoy.repositoryIndexRetry, envoy.inferenceRetry, envoy.outlierDetection, envoy.circuitBreakers
    return _filled(
        TEMPLATE,
        {
            "admin_port": CHART.envoy_admin_port,
            "grpc_port": CHART.envoy_grpc_port,
            "route_config": CHART.route_config_name,
            "repository_index_path": CHART.repository_index_path,
            "inference_cluster": generation.inference_cluster,
            "route_timeout": duration(envoy.grpcRouteTimeoutSeconds * 1000),
            "idle_timeout": f"{repository_index_idle_timeout_seconds(settings)}s",
            "ri_retries": ri.numRetries,
            "ri_per_try": duration(ri.perTryTimeoutMs),
            "ri_base": duration(ri.backOffBaseMs),
            "ri_max": duration(ri.backOffMaxMs),
            "inf_retries": inf.numRetries,
            "inf_host_attempts": inf.hostSelectionRetryMaxAttempts,
            "inf_base": duration(inf.backOffBaseMs),
            "inf_max": duration(inf.backOffMaxMs),
            "lua_filter": CHART.lua_filter_path,
            "buffer_bytes": envoy.bufferMaxRequestBytes,
            "dns_refresh": duration(envoy.dnsRefreshMs),
            "connect_timeout": duration(envoy.connectTimeoutMs),
            "lb_policy": envoy.loadBalancerPolicy,
            "cb_connections": cb.maxConnections,
            "cb_pending": cb.maxPendingRequests,
            "cb_requests": cb.maxRequests,
            "cb_retries": cb.maxRetries,
            "od_5xx": od.consecutive5xx,
            "od_gateway": od.consecutiveGatewayFailure,
            "od_interval": duration(od.intervalSeconds * 1000),
            "od_ejection": duration(od.baseEjectionTimeSeconds * 1000),
            "od_max_percent": od.maxEjectionPercent,
            "inference_host": generation.inference_service_fqdn(settings.release.name, settings.namespace),
            "inference_port": CHART.inference_grpc_port,
            "admission_cluster": generation.admission_cluster,
            "admission_host": CHART.admission_host,
            "admission_port": CHART.admission_port,
            "admin_cluster": CHART.admin_cluster,
            "loopback_timeout": duration(CHART.loopback_connect_timeout_ms),
        },
    )


class _Dumper(yaml.SafeDumper):
    """Block style, no anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_envoy_yaml(config: dict[str, Any]) -> str:
    return yaml.dump(config, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
