"""SupersonicRelease: the SuperSONIC chart as a ``helm.v3.Release``, a real ``helm upgrade --install``: the chart's
``lookup`` works only there, and its admission sidecar patches the ScaledObject, which per-object management fights."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from supersonic_interlink.chart.source import release_chart
from supersonic_interlink.config import HELM_UPGRADE_MARGIN_SECONDS, ChartSource, Settings

TYPE = "supersonic-interlink:index:SupersonicRelease"
HELM_RELEASE_TYPE = str(pulumi.get_type_token(k8s.helm.v3.Release))
POSTRENDER = "postrender/keda-trigger-timeout"  # relative to the project, the provider's working directory
# The config keys the chart values are computed from: if any came from a secret, the values are a secret.
RELEASE_VALUE_KEYS = ("helmValues", "scaleFromZero", "keda", "serverLoad", "prometheus", "triton", "envoy")


def helm_release_resource_name(component_name: str) -> str:
    return f"{component_name}-helm"


def live_release_id(settings: Settings) -> str:
    return f"{settings.namespace}/{settings.release.name}"


def release_timeout_seconds(settings: Settings) -> int:
    """Helm's --wait covers the Triton Deployment, which may take readyTimeoutSeconds."""
    return settings.scaleFromZero.readyTimeoutSeconds + HELM_UPGRADE_MARGIN_SECONDS


@dataclass(frozen=True)
class SupersonicReleaseArgs:
    name: str
    namespace: str
    chart: ChartSource
    values: pulumi.Input[dict[str, Any]]
    """Without explicit nulls, which come alone in ``nulls`` ("delete this chart default")."""
    nulls: pulumi.Input[dict[str, Any]] | None
    timeout_seconds: pulumi.Input[int]
    max_history: int
    import_id: str | None
    """With ``release.adopt``, the live release to import and upgrade in place (docs/takeover.md)."""
    protect: bool


class SupersonicRelease(pulumi.ComponentResource):
    release_name: pulumi.Output[str | None]
    namespace: pulumi.Output[str | None]

    def __init__(self, name: str, args: SupersonicReleaseArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        chart, nulls = args.chart, args.nulls
        source: dict[str, Any] = {"chart": release_chart(chart)}
        if chart.kind == "git":  # a git checkout has no dependencies in charts/: the provider downloads them
            source["dependency_update"] = True
        elif chart.kind != "path":
            source |= {"version": chart.version, "repository_opts": {"repo": chart.repo}}
        release = k8s.helm.v3.Release(
            helm_release_resource_name(name),
            name=args.name,
            namespace=args.namespace,
            values=args.values,
            value_yaml_files=None
            if nulls is None
            else pulumi.Output.from_input(nulls).apply(lambda n: [pulumi.StringAsset(yaml.safe_dump(n))]),
            max_history=args.max_history,
            # atomic: a failed upgrade rolls back, a failed first install is purged.
            atomic=True,
            cleanup_on_fail=True,
            timeout=args.timeout_seconds,
            postrender=POSTRENDER,
            # delete_before_replace: the provider replaces create-before-delete (helm_release.go Diff), and the cvmfs
            # claim, not named after the release, would collide. protect: `pulumi destroy`, a rename and removal stop
            # before `helm uninstall`; `release.removable` is the way around (docs/engine.md).
            opts=pulumi.ResourceOptions(
                parent=self, import_=args.import_id, delete_before_replace=True, protect=args.protect
            ),
            **source,
        )
        self.release_name = release.name
        self.namespace = release.namespace
        self.register_outputs({"release_name": self.release_name, "namespace": self.namespace})
