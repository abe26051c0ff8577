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

# Part of every URN: a rename without its old name in the aliases replaces the release, which protection refuses.
RELEASE_COMPONENT = "supersonic"
RELEASE_COMPONENT_ALIASES: tuple[str, ...] = ()


def build(settings: Settings) -> None:
    """Register the stack's resources; the one place a value computed from a ``--secret`` key becomes a Pulumi
    secret (names, namespaces and checksums never are: ``SECRET_CAPABLE`` in ``config/rules.py``)."""

    def secret(value: Any, *keys: str) -> Any:
        return pulumi.Output.secret(value) if settings.is_secret(*keys) else value

    release_name, namespace = settings.release.name, settings.namespace
    text = envoy_cm.envoy_config_text(settings)
    checksum = envoy_cm.config_checksum(text)
    args = envoy_cm.EnvoyConfigArgs(release_name, namespace, text=secret(text, *envoy_cm.ENVOY_KEYS), checksum=checksum)
    envoy = envoy_cm.EnvoyConfig("envoy", args)
    # helmValues goes underneath: collisions with computed values were refused before anything registered.
    computed = release_values(settings, envoy.config_map_name, checksum)
    values, nulls = split_nulls(deep_merge(settings.helmValues, computed))
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
        "cleanup",
        cleanup_cj.FailedPodCleanupArgs(
            release_name,
            namespace,
            enabled=cleanup.enabled,
            image=secret(cleanup.image, "cleanup"),
            schedule=secret(cleanup.schedule, "cleanup"),
            environment={k: secret(v, "cleanup") for k, v in cleanup_cj.script_environment(settings).items()},
            node_selector=secret(thaw(cleanup.nodeSelector), "cleanup"),
            tolerations=secret(thaw(cleanup.tolerations), "cleanup"),
        ),
    )
    pulumi.export("releaseName", release.release_name)
    pulumi.export("namespace", release.namespace)
    pulumi.export("envoyConfigMap", envoy.config_map_name)
    pulumi.export("cleanupCronJob", cleaner.cronjob_name)
    pulumi.export("clientEndpoint", f"{CHART.client_endpoint_host(release_name, namespace)}:{CHART.envoy_grpc_port}")


def settings_or_stop() -> Settings:
    """The stack's settings, its git chart fetched; a problem stops the program before anything is registered."""
    stack = pulumi.get_stack()
    try:
        config = current_config()
        return settings_from_config(
            config, current_secret_keys(config), prepare_chart=lambda chart: chart_source.prepare(chart, stack)
        )
    except ConfigError as error:
        # RunError ends the program with the message alone, no traceback.
        raise pulumi.RunError("invalid stack config:\n  " + "\n  ".join(error.problems)) from None
    except chart_source.ChartSourceError as error:
        raise pulumi.RunError(str(error)) from None
