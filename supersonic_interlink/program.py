"""The program: settings in, components out. ``__main__.py`` runs it; ``render.py`` and the tests run that."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from components.envoy_config import EnvoyConfig, EnvoyConfigArgs
from components.failed_pod_cleanup import FailedPodCleanup, FailedPodCleanupArgs
from components.supersonic_release import (
    SupersonicRelease,
    SupersonicReleaseArgs,
    helm_values_collisions,
    release_values,
)
from supersonic_interlink import chart_source
from supersonic_interlink.contract import CHART
from supersonic_interlink.settings import PROJECT, ConfigError, Settings, load_settings


def settings_from_config(config: Mapping[str, Any]) -> Settings:
    """Load and check a stack's settings completely, before any resource exists.

    Raises ``ConfigError`` with every problem, including ``helmValues`` keys that would override computed values.
    """
    settings = load_settings(config)
    collisions = helm_values_collisions(release_values(settings, "<configmap>", "<checksum>"), settings.helmValues)
    if collisions:
        raise ConfigError(
            [
                f"{PROJECT}:helmValues.{path}: set by the program from typed settings; change the typed key instead "
                f"(see Pulumi.yaml) or remove it from helmValues"
                for path in collisions
            ]
        )
    return settings


def build(settings: Settings) -> None:
    """Register every resource of the stack and export what operators and other tooling read."""
    envoy = EnvoyConfig("envoy", EnvoyConfigArgs(settings=settings))
    release = SupersonicRelease(
        "supersonic",
        SupersonicReleaseArgs(
            settings=settings,
            envoy_config_map_name=envoy.config_map_name,
            envoy_checksum=envoy.checksum,
        ),
    )
    cleanup = FailedPodCleanup("cleanup", FailedPodCleanupArgs(settings=settings))
    pulumi.export("releaseName", release.release_name)
    pulumi.export("namespace", release.namespace)
    pulumi.export("envoyConfigMap", envoy.config_map_name)
    pulumi.export("cleanupCronJob", cleanup.cronjob_name)
    pulumi.export(
        "clientEndpoint",
        f"{CHART.client_endpoint_host(settings.release.name, settings.namespace)}:{CHART.envoy_grpc_port}",
    )


def current_config() -> dict[str, Any]:
    """The config map the Pulumi CLI handed this process (project and provider keys alike)."""
    from pulumi.runtime import config as runtime_config

    merged = dict(runtime_config.get_config_env())
    merged.update(runtime_config.CONFIG.get())
    return merged


def settings_or_stop() -> Settings:
    """The stack's settings from the config the CLI passed, with its chart on disk (a git chart fetched at its
    pinned commit); stops the program cleanly on any problem, before any resource is registered."""
    try:
        settings = settings_from_config(current_config())
    except ConfigError as error:
        # RunError ends the program with the message alone: these are the operator's mistakes, not bugs.
        raise pulumi.RunError("invalid stack config:\n  " + "\n  ".join(error.problems)) from None
    try:
        chart_source.prepare(settings.release.chart, pulumi.get_stack())
    except chart_source.ChartSourceError as error:
        raise pulumi.RunError(str(error)) from None
    return settings
