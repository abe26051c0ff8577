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


def envoy_config_text(settings: Settings) -> str:
    """The configuration text exactly as stored in the ConfigMap."""
    return render_envoy_yaml(build_envoy_config(settings))


def config_checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def config_map_name(release_name: str, text: str) -> str:
    """``<release>-envoy-external-<hash>``: distinct from the chart's own ``<release>-envoy-config``."""
    return f"{CHART.envoy_object_name(release_name)}-external-{config_checksum(text)[:HASH_LENGTH]}"


@dataclass(frozen=True)
class EnvoyConfigArgs:
    settings: Settings
    """The stack's settings; the configuration is a pure function of them."""


class EnvoyConfig(pulumi.ComponentResource):
    """Owns the immutable, content-addressed ConfigMap with the Envoy configuration."""

    config_map_name: pulumi.Output[str]
    """Name of the ConfigMap, for ``envoy.external_config.configmap_name``."""
    checksum: str
    """SHA-256 of the configuration text, for the Envoy pod annotation that rolls the pods on change."""
    text: str
    """The configuration text as stored."""

    def __init__(self, name: str, args: EnvoyConfigArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        settings = args.settings
        self.text = envoy_config_text(settings)
        self.checksum = config_checksum(self.text)
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-configmap",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=config_map_name(settings.release.name, self.text),
                namespace=settings.namespace,
                labels={
                    CHART.instance_label: CHART.instance_name(settings.release.name),
                    "app.kubernetes.io/managed-by": "pulumi",
                    CHART.component_label: CHART.envoy_component,
                },
                annotations={"supersonic-interlink/config-sha256": self.checksum},
            ),
            immutable=True,
            # Secret in state and previews when a setting it is computed from was set with --secret.
            data=pulumi.Output.secret({CHART.envoy_config_key: self.text})
            if settings.is_secret("envoy", "scaleFromZero")
            else {CHART.envoy_config_key: self.text},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.config_map_name = config_map.metadata.apply(created_name)
        self.register_outputs({"config_map_name": self.config_map_name, "checksum": self.checksum})
