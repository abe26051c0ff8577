"""SupersonicRelease: the SuperSONIC Helm release with scale from zero.

A ``helm.v3.Release`` (a real ``helm upgrade --install``), not ``helm.v4.Chart``: the chart reads the external
Envoy ConfigMap and the live ScaledObject with Helm's ``lookup``, which only works in a real install or upgrade,
and its admission sidecar patches the ScaledObject at run time, which per-object management would fight.

The values are a pure function of the settings (``config.values.release_values``, ``helmValues`` merged
underneath; a key it shares with a computed value is a config error), computed by ``program.build``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from supersonic_interlink.chart.source import release_chart
from supersonic_interlink.config import HELM_UPGRADE_MARGIN_SECONDS, ChartSource, Settings

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


def helm_release_resource_name(component_name: str) -> str:
    """Pulumi resource name of the Release (not the Helm release name): ``<component>-helm``."""
    return f"{component_name}-{HELM_CHILD}"


def live_release_id(settings: Settings) -> str:
    """The id the provider reads a live Helm release by: ``<namespace>/<name>``."""
    return f"{settings.namespace}/{settings.release.name}"


RELEASE_VALUE_KEYS = ("helmValues", "scaleFromZero", "keda", "serverLoad", "prometheus", "triton", "envoy")
"""The config keys the chart values are computed from: if any came from a secret, the values are a secret."""


def release_timeout_seconds(settings: Settings) -> int:
    return settings.scaleFromZero.readyTimeoutSeconds + UPGRADE_MARGIN_SECONDS


@dataclass(frozen=True)
class SupersonicReleaseArgs:
    name: str
    """The Helm release name."""
    namespace: str
    chart: ChartSource
    values: pulumi.Input[dict[str, Any]]
    """The chart values without explicit nulls (``split_nulls``); the Envoy ConfigMap's name in them, an output of
    ``EnvoyConfig``, also orders the ConfigMap's creation before the upgrade that reads it."""
    nulls: pulumi.Input[dict[str, Any]] | None
    """The explicit nulls alone ("delete this chart default"), or None when there are none."""
    timeout_seconds: pulumi.Input[int]
    """``release_timeout_seconds``."""
    max_history: int
    import_id: str | None
    """With ``release.adopt``, the live release to import (``live_release_id``): the engine reads it into the state,
    diffs it against these inputs and upgrades it in place (Pulumi CLI 3.174 on; older CLIs refused an import whose
    inputs differ). If no such release runs, the import fails and nothing is installed. See docs/takeover.md."""
    protect: bool
    """``not release.removable``."""


class SupersonicRelease(pulumi.ComponentResource):
    """The SuperSONIC Helm release."""

    release_name: pulumi.Output[str | None]
    namespace: pulumi.Output[str | None]

    def __init__(self, name: str, args: SupersonicReleaseArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        chart = args.chart
        source: dict[str, Any] = {"chart": release_chart(chart)}
        if chart.kind == "git":
            # The fetched commit, relative to the project directory (see chart_source). A chart checked out from
            # git has no dependencies in charts/: the provider downloads them, at the versions Chart.yaml names.
            source["dependency_update"] = True
        elif chart.kind != "path":
            source |= {"version": chart.version, "repository_opts": {"repo": chart.repo}}
        release = k8s.helm.v3.Release(
            helm_release_resource_name(name),
            name=args.name,
            namespace=args.namespace,
            values=args.values,
            value_yaml_files=None
            if args.nulls is None
            else pulumi.Output.from_input(args.nulls).apply(
                lambda nulls: [pulumi.StringAsset(yaml.safe_dump(nulls, sort_keys=True))]
            ),
            max_history=args.max_history,
            # atomic: a failed upgrade rolls back to the last good revision instead of leaving the release
            # half-changed, and a failed first install is purged; cleanup_on_fail removes objects a failed
            # upgrade created. The timeout is derived from the wake timeout (see UPGRADE_MARGIN_SECONDS).
            atomic=True,
            cleanup_on_fail=True,
            timeout=args.timeout_seconds,
            postrender=POSTRENDER,
            # A new name or namespace replaces the release. The provider asks for create-before-delete
            # (helm_release.go Diff: DeleteBeforeReplace false), and the chart's objects whose names do not carry
            # the release name (the cvmfs PersistentVolumeClaim) would collide with the old release's: the old
            # release is uninstalled first instead (docs/engine.md: "Removing or renaming a release").
            #
            # protect: the engine refuses to delete or replace a protected resource, so `pulumi destroy`, a rename
            # and removing the Release from the program all stop before `helm uninstall` (pulumi/pulumi
            # pkg/engine: protected resources fail the step); `release.removable` in a reviewed stack change is the
            # one way around it. No retain_on_delete: with delete_before_replace, a retained old release would keep
            # running beside the new one and hold its cvmfs claim, and a deliberate removal should uninstall.
            opts=pulumi.ResourceOptions(
                parent=self,
                import_=args.import_id,
                delete_before_replace=True,
                protect=args.protect,
            ),
            **source,
        )
        self.release_name = release.name
        self.namespace = release.namespace
        self.register_outputs({"release_name": self.release_name, "namespace": self.namespace})
