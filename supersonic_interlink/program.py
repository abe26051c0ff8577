"""The program: settings in, components out. ``__main__.py`` runs it; ``render.py`` and the tests run that."""

from __future__ import annotations

from collections.abc import Collection, Mapping
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

ENVOY_COMPONENT = "envoy"
RELEASE_COMPONENT = "supersonic"
CLEANUP_COMPONENT = "cleanup"
"""Pulumi resource names of the three components: part of every URN in the state, so renaming one would make
the engine replace what it names (for the release: a second Helm release, then the first uninstalled)."""

RELEASE_COMPONENT_ALIASES: tuple[str, ...] = ()
"""Earlier names of the release component. Renaming ``RELEASE_COMPONENT`` means adding its old name here: the
engine then moves the state to the new URN (children follow their parent's alias) and changes nothing on the
cluster. Without it, the Release's protection and the preview gate refuse the rename (tests/e2e)."""


def settings_from_config(config: Mapping[str, Any], secret_keys: Collection[str] = ()) -> Settings:
    """Load and check a stack's settings completely, before any resource exists.

    ``secret_keys`` are the config keys the CLI passed as secrets. Raises ``ConfigError`` with every problem,
    including ``helmValues`` keys that would override computed values.
    """
    settings = load_settings(config, secret_keys=frozenset(secret_keys))
    collisions = helm_values_collisions(release_values(settings, "<configmap>", "<checksum>"), settings.helmValues)
    problems = [
        f"{PROJECT}:helmValues.{path}: set by the program from typed settings; change the typed key instead "
        f"(see Pulumi.yaml) or remove it from helmValues"
        for path in collisions
    ]
    chart = settings.release.chart
    if settings.release.adopt and not chart.pinned:
        # Adopting upgrades the live release at once: with a moving chart that upgrade could be any commit.
        problems.append(
            f"{PROJECT}:release.adopt = true: expected a pinned chart to adopt with (release.chart.commit is unset); "
            f"pin the commit the live release runs (docs/takeover.md, steps 1 and 2)"
        )
    if problems:
        raise ConfigError(problems)
    return settings


def build(settings: Settings) -> None:
    """Register every resource of the stack and export what operators and other tooling read."""
    envoy = EnvoyConfig(ENVOY_COMPONENT, EnvoyConfigArgs(settings=settings))
    release = SupersonicRelease(
        RELEASE_COMPONENT,
        SupersonicReleaseArgs(
            settings=settings,
            envoy_config_map_name=envoy.config_map_name,
            envoy_checksum=envoy.checksum,
        ),
        pulumi.ResourceOptions(aliases=[pulumi.Alias(name=old) for old in RELEASE_COMPONENT_ALIASES]),
    )
    cleanup = FailedPodCleanup(CLEANUP_COMPONENT, FailedPodCleanupArgs(settings=settings))
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


def current_secret_keys(config: Mapping[str, Any]) -> frozenset[str]:
    """The config keys the CLI passed as secrets: ``PULUMI_CONFIG_SECRET_KEYS`` (how the Python language host hands
    them over) and any the runtime was told about (``set_all_config``, as under the mock engine)."""
    from pulumi.runtime import config as runtime_config

    listed = set(runtime_config.get_config_secret_keys_env())
    return frozenset(listed | {key for key in config if runtime_config.is_config_secret(key)})


def settings_or_stop() -> Settings:
    """The stack's settings from the config the CLI passed, with its chart on disk (a git chart fetched at its
    pinned commit); stops the program cleanly on any problem, before any resource is registered."""
    try:
        config = current_config()
        settings = settings_from_config(config, current_secret_keys(config))
    except ConfigError as error:
        # RunError ends the program with the message alone: these are the operator's mistakes, not bugs.
        raise pulumi.RunError("invalid stack config:\n  " + "\n  ".join(error.problems)) from None
    try:
        chart_source.prepare(settings.release.chart, pulumi.get_stack())
    except chart_source.ChartSourceError as error:
        raise pulumi.RunError(str(error)) from None
    return settings
