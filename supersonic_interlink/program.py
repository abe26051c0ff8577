"""The program: settings in, components out. ``__main__.py`` runs it; ``./supersonic render`` and the tests run that."""

from __future__ import annotations

import pulumi

from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.components.envoy_config import EnvoyConfig, EnvoyConfigArgs
from supersonic_interlink.components.failed_pod_cleanup import FailedPodCleanup, FailedPodCleanupArgs
from supersonic_interlink.components.supersonic_release import SupersonicRelease, SupersonicReleaseArgs
from supersonic_interlink.config import ConfigError, Settings
from supersonic_interlink.config.pulumi_config import current_config, current_secret_keys, settings_from_config
from supersonic_interlink.contract import CHART

ENVOY_COMPONENT = "envoy"
RELEASE_COMPONENT = "supersonic"
CLEANUP_COMPONENT = "cleanup"
"""Pulumi resource names of the three components: part of every URN in the state, so renaming one would make
the engine replace what it names (for the release: a second Helm release, then the first uninstalled)."""

RELEASE_COMPONENT_ALIASES: tuple[str, ...] = ()
"""Earlier names of the release component. Renaming ``RELEASE_COMPONENT`` means adding its old name here: the
engine then moves the state to the new URN (children follow their parent's alias) and changes nothing on the
cluster. Without it, the Release's protection and the preview gate refuse the rename (tests/e2e)."""


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


def settings_or_stop() -> Settings:
    """The stack's settings from the config the CLI passed, with its chart on disk (a git chart fetched at its
    pinned commit); stops the program cleanly on any problem, before any resource is registered."""
    stack = pulumi.get_stack()
    try:
        config = current_config()
        return settings_from_config(
            config, current_secret_keys(config), prepare_chart=lambda chart: chart_source.prepare(chart, stack)
        )
    except ConfigError as error:
        # RunError ends the program with the message alone: these are the operator's mistakes, not bugs.
        raise pulumi.RunError("invalid stack config:\n  " + "\n  ".join(error.problems)) from None
    except chart_source.ChartSourceError as error:
        raise pulumi.RunError(str(error)) from None
