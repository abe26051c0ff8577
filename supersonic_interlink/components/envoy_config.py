"""EnvoyConfig: the immutable ConfigMap, named by a hash of the Envoy configuration, that the chart copies with
``lookup``: a changed config is a new ConfigMap before the upgrade, the old one deleted after it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from supersonic_interlink.config import Settings
from supersonic_interlink.config.envoy import build_envoy_config, render_envoy_yaml
from supersonic_interlink.contract import CHART

TYPE = "supersonic-interlink:index:EnvoyConfig"
# The config keys the configuration is computed from: if either came from a secret, the ConfigMap's data is one.
ENVOY_KEYS = ("envoy", "scaleFromZero")


def envoy_config_text(settings: Settings) -> str:
    return render_envoy_yaml(build_envoy_config(settings))


def config_checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def config_map_name(release_name: str, checksum: str) -> str:
    """Distinct from the chart's own ``<release>-envoy-config``."""
    return f"{CHART.envoy_object_name(release_name)}-external-{checksum[:10]}"


@dataclass(frozen=True)
class EnvoyConfigArgs:
    release_name: str
    namespace: str
    text: pulumi.Input[str]
    checksum: str
    """Names the ConfigMap and, as a pod annotation, rolls the Envoy pods, which read their config only at start."""


class EnvoyConfig(pulumi.ComponentResource):
    config_map_name: pulumi.Output[str]

    def __init__(self, name: str, args: EnvoyConfigArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        self.config_map_name = k8s.core.v1.ConfigMap(
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
        ).metadata.name
        self.register_outputs({"config_map_name": self.config_map_name})
