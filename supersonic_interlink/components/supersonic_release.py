"""SupersonicRelease: the SuperSONIC Helm release with scale from zero.

A ``helm.v3.Release`` (a real ``helm upgrade --install``), not ``helm.v4.Chart``: the chart reads the external
Envoy ConfigMap and the live ScaledObject with Helm's ``lookup``, which only works in a real install or upgrade,
and its admission sidecar patches the ScaledObject at run time, which per-object management would fight.

The values are a pure function of the settings (``release_values``); ``helmValues`` from the stack is merged
underneath, and a key it shares with a computed value is a config error (``helm_values_collisions``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from supersonic_interlink.chart.source import release_chart
from supersonic_interlink.config import HELM_UPGRADE_MARGIN_SECONDS, Settings, deep_merge
from supersonic_interlink.config.values import release_values

TYPE = "supersonic-interlink:index:SupersonicRelease"


def _type_token(resource_class: type) -> str:
    token = pulumi.get_type_token(resource_class)
    if not token:
        raise RuntimeError(f"{resource_class.__qualname__} carries no Pulumi type token")
    return token


HELM_RELEASE_TYPE = _type_token(k8s.helm.v3.Release)
"""The provider's type token of the Release, read off the SDK class (engine URNs and evaluations use it)."""
HELM_CHILD = "helm"
"""Role suffix of the Release's resource name inside the component."""

POSTRENDER = "postrender/keda-trigger-timeout"
"""Post-renderer, relative to the project directory (the provider's working directory), so the Release input
is the same on every operator's machine and in CI."""

# Helm's --wait covers the Triton Deployment, so the upgrade may take readyTimeoutSeconds before it counts as
# failed; the margin (declared with the settings, which bound readyTimeoutSeconds by it) covers the rest.
UPGRADE_MARGIN_SECONDS = HELM_UPGRADE_MARGIN_SECONDS


def split_nulls(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Separate the explicit nulls ("delete this chart default") from the other values.

    Returns (values without nulls, the nulls alone in the same nesting). Only a null that reaches Helm deletes a
    chart default, and the provider documents ``valueYamlFiles`` as the path that keeps nulls from every SDK
    language, so the nulls travel there.
    """
    kept: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            nulls[key] = None
        elif isinstance(value, Mapping):
            sub_kept, sub_nulls = split_nulls(value)
            kept[key] = sub_kept
            if sub_nulls:
                nulls[key] = sub_nulls
        else:
            kept[key] = value
    return kept, nulls


def helm_release_resource_name(component_name: str) -> str:
    """Pulumi resource name of the Release (not the Helm release name): ``<component>-helm``."""
    return f"{component_name}-{HELM_CHILD}"


def live_release_id(settings: Settings) -> str:
    """The id the provider reads a live Helm release by: ``<namespace>/<name>``."""
    return f"{settings.namespace}/{settings.release.name}"


def import_id(settings: Settings) -> str | None:
    """With ``release.adopt``, the live release to import (the ``import`` resource option), else None.

    The engine reads the live release into the state, diffs it against this program's inputs and upgrades it in
    place (Pulumi CLI 3.174 on; older CLIs refused an import whose inputs differ). If no such release runs, the
    import fails and nothing is installed. See docs/takeover.md.
    """
    return live_release_id(settings) if settings.release.adopt else None


RELEASE_VALUE_KEYS = ("helmValues", "scaleFromZero", "keda", "serverLoad", "prometheus", "triton", "envoy")
"""The config keys the chart values are computed from: if any came from a secret, the values are a secret."""


def secret_if(value: Any, secret: bool) -> Any:
    """``value`` as a Pulumi secret when it came from a secret config key, as it is otherwise."""
    return pulumi.Output.secret(value) if secret else value


def release_timeout_seconds(settings: Settings) -> int:
    return settings.scaleFromZero.readyTimeoutSeconds + UPGRADE_MARGIN_SECONDS


@dataclass(frozen=True)
class SupersonicReleaseArgs:
    settings: Settings
    """The stack's settings."""
    envoy_config_map_name: pulumi.Input[str]
    """Name of the ConfigMap with the Envoy configuration (from ``EnvoyConfig``); wiring it as an output also
    orders the ConfigMap's creation before the upgrade that reads it."""
    envoy_checksum: str
    """Checksum of the Envoy configuration, annotated on the Envoy pods so a change rolls them."""


class SupersonicRelease(pulumi.ComponentResource):
    """The SuperSONIC Helm release."""

    release_name: pulumi.Output[str | None]
    namespace: pulumi.Output[str | None]

    def __init__(self, name: str, args: SupersonicReleaseArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        settings = args.settings
        # helmValues goes underneath: collisions with computed values were rejected before anything registered.
        values, nulls = split_nulls(
            deep_merge(settings.helmValues, release_values(settings, args.envoy_config_map_name, args.envoy_checksum))
        )
        # A value set with `pulumi config set --secret` stays a secret in state and in `preview --diff`.
        hidden = settings.is_secret(*RELEASE_VALUE_KEYS)
        chart = settings.release.chart
        if chart.kind == "git":
            # The fetched commit, relative to the project directory (see chart_source). A chart checked out from
            # git has no dependencies in charts/: the provider downloads them, at the versions Chart.yaml names.
            source: dict[str, Any] = {"chart": release_chart(chart), "dependency_update": True}
        elif chart.kind == "path":
            source = {"chart": release_chart(chart)}
        else:
            source = {
                "chart": chart.name,
                "version": chart.version,
                "repository_opts": k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo),
            }
        release = k8s.helm.v3.Release(
            helm_release_resource_name(name),
            name=settings.release.name,
            namespace=settings.namespace,
            values=secret_if(values, hidden),
            value_yaml_files=(
                secret_if([pulumi.StringAsset(yaml.safe_dump(nulls, sort_keys=True))], hidden) if nulls else None
            ),
            max_history=settings.release.maxHistory,
            # atomic: a failed upgrade rolls back to the last good revision instead of leaving the release
            # half-changed, and a failed first install is purged; cleanup_on_fail removes objects a failed
            # upgrade created. The timeout is derived from the wake timeout (see UPGRADE_MARGIN_SECONDS).
            atomic=True,
            cleanup_on_fail=True,
            timeout=secret_if(release_timeout_seconds(settings), settings.is_secret("scaleFromZero")),
            postrender=POSTRENDER,
            # A new name or namespace replaces the release. The provider asks for create-before-delete
            # (helm_release.go Diff: DeleteBeforeReplace false), and the chart's objects whose names do not carry
            # the release name (the cvmfs PersistentVolumeClaim) would collide with the old release's: the old
            # release is uninstalled first instead (README: "Renaming a release").
            #
            # protect: the engine refuses to delete or replace a protected resource, so `pulumi destroy`, a rename
            # and removing the Release from the program all stop before `helm uninstall` (pulumi/pulumi
            # pkg/engine: protected resources fail the step); `release.removable` in a reviewed stack change is the
            # one way around it. No retain_on_delete: with delete_before_replace, a retained old release would keep
            # running beside the new one and hold its cvmfs claim, and a deliberate removal should uninstall.
            opts=pulumi.ResourceOptions(
                parent=self,
                import_=import_id(settings),
                delete_before_replace=True,
                protect=not settings.release.removable,
            ),
            **source,
        )
        self.release_name = release.name
        self.namespace = release.namespace
        self.register_outputs({"release_name": self.release_name, "namespace": self.namespace})
