"""The chart values computed from the settings, and the check that ``helmValues`` (merged underneath) overrides
none of them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from supersonic_interlink.config.rules import Settings, thaw
from supersonic_interlink.contract import CHART

CONFIG_CHECKSUM_ANNOTATION = "checksum/envoy-config"


def release_values(settings: Settings, envoy_config_map: Any, envoy_checksum: str) -> dict[str, Any]:
    triton, envoy = settings.triton, settings.envoy
    # the chart's own keys, but podAnnotations and the probes {} leaves to the chart
    inference = {k: v for k, v in _given(triton).items() if v or k not in ("readinessProbe", "startupProbe")}
    inference["annotations"] = inference.pop("podAnnotations")
    return {
        "serverLoadThreshold": settings.serverLoad.threshold,
        "scaleFromZero": _given(settings.scaleFromZero),
        "keda": _given(settings.keda),
        "prometheus": {"external": {"enabled": True, **thaw(settings.prometheus)}},
        "grafana": {"enabled": False},
        settings.generation.inference_values_key: inference,
        CHART.envoy_values_key: {
            "enabled": True,
            "image": envoy.image,
            "nodeSelector": thaw(envoy.nodeSelector),
            "tolerations": thaw(envoy.tolerations),
            # loadBalancerPolicy and grpc_route_timeout are in the computed envoy.yaml: the chart ignores them here.
            "service": {"type": envoy.serviceType},
            "ingress": {"enabled": False},
            # Envoy reads its configuration only at start: a changed checksum rolls the pods.
            "annotations": {CONFIG_CHECKSUM_ANNOTATION: envoy_checksum},
            "external_config": {
                "load_from_configmap": True,
                "configmap_name": envoy_config_map,
                "configmap_key": CHART.envoy_config_key,
            },
        },
        **({"serverLoadMetric": settings.serverLoad.metric} if settings.serverLoad.metric else {}),
    }


def _given(section: Any) -> dict[str, Any]:
    """A section's fields as the chart's values of the same names; one unset leaves the chart's default."""
    return {key: value for key, value in thaw(section).items() if value is not None}


def helm_values_collisions(computed: Mapping[str, Any], extra: Mapping[str, Any], path: str = "") -> list[str]:
    """Dotted paths where ``extra`` would override a computed value (objects on both sides are merged)."""
    found: list[str] = []
    for key, value in ((k, v) for k, v in extra.items() if k in computed):
        sub = f"{path}.{key}" if path else key
        merged = isinstance(value, Mapping) and isinstance(computed[key], Mapping)
        found += helm_values_collisions(computed[key], value, sub) if merged else [sub]
    return found


def split_nulls(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(values without nulls, the nulls alone): only ``valueYamlFiles`` carries a null (deleting a chart default) to
    Helm from every SDK language, as the provider documents."""
    kept: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            nulls[key] = None
        elif isinstance(value, Mapping):
            kept[key], sub_nulls = split_nulls(value)
            if sub_nulls:
                nulls[key] = sub_nulls
        else:
            kept[key] = value
    return kept, nulls
