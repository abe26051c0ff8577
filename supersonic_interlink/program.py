"""The program: settings in, components out. ``__main__.py`` runs it; ``./supersonic render`` and the tests run that."""

from __future__ import annotations

from typing import Any

import pulumi

from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.components import envoy_config as envoy_cm
from supersonic_interlink.components import failed_pod_cleanup as cleanup_cj
from supersonic_interlink.components import supersonic_release as release_hr
from supersonic_interlink.config import ConfigError, Settings, deep_merge, thaw
from supersonic_interlink.config.pulumi_config import current_config, current_secret_keys, settings_from_config
from supersonic_interlink.config.values import release_values, split_nulls
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
    """Register every resource of the stack and export what operators and other tooling read.

    The one place a setting becomes a Pulumi secret: every value computed from a key the CLI passed as a secret
    (``pulumi config set --secret``) goes to its component wrapped, so state and ``preview --diff`` show
    ``[secret]``. Names, namespaces and checksums never carry a secret (``SECRET_CAPABLE`` in ``config/model.py``).
    """

    def secret(value: Any, *keys: str) -> Any:
        return pulumi.Output.secret(value) if settings.is_secret(*keys) else value

    release_name, namespace = settings.release.name, settings.namespace
    text = envoy_cm.envoy_config_text(settings)
    checksum = envoy_cm.config_checksum(text)
    envoy = envoy_cm.EnvoyConfig(
        ENVOY_COMPONENT,
        envoy_cm.EnvoyConfigArgs(release_name, namespace, text=secret(text, *envoy_cm.ENVOY_KEYS), checksum=checksum),
    )
    # helmValues goes underneath: collisions with computed values were refused before anything registered.
    values, nulls = split_nulls(
        deep_merge(settings.helmValues, release_values(settings, envoy.config_map_name, checksum))
    )
    release = release_hr.SupersonicRelease(
        RELEASE_COMPONENT,
        release_hr.SupersonicReleaseArgs(
            name=release_name,
            namespace=namespace,
            chart=settings.release.chart,
            values=secret(values, *release_hr.RELEASE_VALUE_KEYS),
            nulls=secret(nulls, *release_hr.RELEASE_VALUE_KEYS) if nulls else None,
            timeout_seconds=secret(release_hr.release_timeout_seconds(settings), "scaleFromZero"),
            max_history=settings.release.maxHistory,
            import_id=release_hr.live_release_id(settings) if settings.release.adopt else None,
            protect=not settings.release.removable,
        ),
        pulumi.ResourceOptions(aliases=[pulumi.Alias(name=old) for old in RELEASE_COMPONENT_ALIASES]),
    )
    cleanup = settings.cleanup
    cleaner = cleanup_cj.FailedPodCleanup(
        CLEANUP_COMPONENT,
        cleanup_cj.FailedPodCleanupArgs(
            release_name,
            namespace,
            enabled=cleanup.enabled,
            image=secret(cleanup.image, "cleanup"),
            schedule=secret(cleanup.schedule, "cleanup"),
            environment={
                key: secret(value, "cleanup") for key, value in cleanup_cj.script_environment(settings).items()
            },
            node_selector=secret(thaw(cleanup.nodeSelector), "cleanup"),
            tolerations=secret(thaw(cleanup.tolerations), "cleanup"),
        ),
    )
    pulumi.export("releaseName", release.release_name)
    pulumi.export("namespace", release.namespace)
    pulumi.export("envoyConfigMap", envoy.config_map_name)
    pulumi.export("cleanupCronJob", cleaner.cronjob_name)
    pulumi.export(
        "clientEndpoint",
        f"{CHART.client_endpoint_host(release_name, namespace)}:{CHART.envoy_grpc_port}",
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
