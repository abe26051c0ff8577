"""The Envoy configuration, computed from settings (placeholder until the full configuration lands)."""

from __future__ import annotations

from typing import Any

import yaml

from .contract import CHART
from .settings import Settings


def build_envoy_config(settings: Settings) -> dict[str, Any]:
    """Plain data of the Envoy bootstrap configuration for one stack."""
    ready = settings.scaleFromZero.readyTimeoutSeconds
    return {
        "admin": {"address": {"socket_address": {"address": "0.0.0.0", "port_value": settings.envoy.adminPort}}},
        "static_resources": {
            "listeners": [],
            "clusters": [
                {"name": CHART.inference_cluster, "idle_timeout_placeholder": f"{ready + CHART.ready_timeout_margin_seconds}s"},
            ],
        },
    }


def render_envoy_yaml(config: dict[str, Any]) -> str:
    """Deterministic YAML text of the configuration, in the order it was built."""
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False, width=120)
