"""EnvoyConfig: the ConfigMap holding the Envoy configuration the chart loads through ``external_config``.

The chart copies the ConfigMap only when Helm renders, with ``lookup``, and fails the install when it is missing.
So the ConfigMap is content-addressed: its name carries a hash of the configuration and it is immutable. A changed
configuration is a new ConfigMap, created before the Release is upgraded to point at it (the name flows into the
Release values), and the old one is deleted only after the upgrade: there is never a moment where the chart's
lookup finds nothing. The same hash, as a pod annotation, rolls the Envoy pods, which read their config only at start.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from supersonic_interlink.components import created_name
from supersonic_interlink.config import Settings
from supersonic_interlink.config.envoy import build_envoy_config, render_envoy_yaml
from supersonic_interlink.contract import CHART

TYPE = "supersonic-interlink:index:EnvoyConfig"
HASH_LENGTH = 10
ENVOY_KEYS = ("envoy", "scaleFromZero")
"""The config keys the configuration is computed from: if either came from a secret, the ConfigMap's data is one."""


def envoy_config_text(settings: Settings) -> str:
    """The configuration text exactly as stored in the ConfigMap."""
    return render_envoy_yaml(build_envoy_config(settings))


def config_checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def config_map_name(release_name: str, checksum: str) -> str:
    """``<release>-envoy-external-<hash>``: distinct from the chart's own ``<release>-envoy-config``."""
    return f"{CHART.envoy_object_name(release_name)}-external-{checksum[:HASH_LENGTH]}"


@dataclass(frozen=True)
class EnvoyConfigArgs:
    release_name: str
    namespace: str
    text: pulumi.Input[str]
    """The configuration text (``envoy_config_text``), a Pulumi secret when a setting it is computed from is one."""
    checksum: str
    """``config_checksum`` of the text: names the ConfigMap (``config_map_name``) and rolls the Envoy pods."""


class EnvoyConfig(pulumi.ComponentResource):
    """Owns the immutable, content-addressed ConfigMap with the Envoy configuration."""

    config_map_name: pulumi.Output[str]
    """Name of the ConfigMap, for ``envoy.external_config.configmap_name``."""

    def __init__(self, name: str, args: EnvoyConfigArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-configmap",
            metadata={
                "name": config_map_name(args.release_name, args.checksum),
                "namespace": args.namespace,
                "labels": {
                    CHART.instance_label: CHART.instance_name(args.release_name),
                    "app.kubernetes.io/managed-by": "pulumi",
                    CHART.component_label: CHART.envoy_component,
                },
                "annotations": {"supersonic-interlink/config-sha256": args.checksum},
            },
            immutable=True,
            data={CHART.envoy_config_key: args.text},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.config_map_name = config_map.metadata.apply(created_name)
        self.register_outputs({"config_map_name": self.config_map_name})
