"""The fields a drift check ignores, each by a declared rule with its reason (docs/drift.md has the table and the
sources); a difference no rule matches is drift."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from supersonic_interlink.contract import CHART, GENERATIONS
from supersonic_interlink.objdiff import Path, is_under

HOLD = ("metadata", "annotations", "<the sidecar's hold annotation>")
"""Stands for the annotation the release's admission sidecar code names (``sidecar_hold_annotation``)."""


@dataclass(frozen=True)
class IgnoreRule:
    name: str
    reason: str
    paths: tuple[Path, ...]
    """A difference at or under one of these is ignored, unless at or under one of ``keep``."""
    keep: tuple[Path, ...] = ()
    kind: str = ""
    names: Callable[[str], set[str]] | None = None
    """The object names of the release's name it applies to (any when None)."""
    resource: bool = False
    """Any Pulumi resource's outputs, not only Kubernetes objects."""

    def matches(self, resource: Mapping[str, Any], release: str, path: Path, is_object: bool, hold: str | None) -> bool:
        paths = [p for p in self.paths if p != HOLD] + ([(*HOLD[:2], hold)] if hold and HOLD in self.paths else [])
        return (
            (is_object or self.resource)
            and (not self.kind or resource.get("kind") == self.kind)
            and (self.names is None or (resource.get("metadata") or {}).get("name") in self.names(release))
            and any(is_under(path, prefix) for prefix in paths)
            and not any(is_under(path, kept) for kept in self.keep)
        )


RULES: tuple[IgnoreRule, ...] = (
    IgnoreRule(
        "status",
        "written by controllers (the controller-manager, the kubelet, KEDA), never by the manifest or the program",
        paths=(("status",),),
    ),
    IgnoreRule(
        "server-metadata",
        "the API server rewrites resourceVersion, uid, managedFields and the like on every write; labels and "
        "annotations are compared, as Flux's driftDetection does",
        paths=(("metadata",),),
        keep=(("metadata", "labels"), ("metadata", "annotations")),
    ),
    IgnoreRule(
        "triton-replicas",
        "KEDA's HorizontalPodAutoscaler sets the Triton replica count, and the admission sidecar raises it on a wake",
        paths=(("spec", "replicas"),),
        kind="Deployment",
        names=lambda release: {g.inference_object_name(release) for g in GENERATIONS},
    ),
    IgnoreRule(
        "admission-min-replicas",
        "the chart's admission sidecar merge-patches it while it holds a wake (cfg/admission-server.py), and the "
        "chart keeps the live value across upgrades (templates/keda/so.yaml)",
        paths=(("spec", "minReplicaCount"),),
        kind="ScaledObject",
        names=lambda release: {CHART.scaled_object_name(release)},
    ),
    IgnoreRule(
        "admission-hold-deadline",
        "the chart's admission sidecar keeps a wake's hold deadline in the annotation its deployed code names "
        "(cfg/admission-server.py at db73925); none when that code names none",
        paths=(HOLD,),
        kind="ScaledObject",
        names=lambda release: {CHART.scaled_object_name(release)},
    ),
    IgnoreRule(
        "provider-bookkeeping",
        "the Kubernetes provider's record of what it last sent, not read from the cluster",
        paths=(("__inputs",), ("__fieldManager",), ("__initialApiVersion",)),
        resource=True,
    ),
)
"""Every rule, in the order the report lists them."""

API_DEFAULTS_NOTE = (
    "Defaults the API server fills need no rule: the dry-run apply returns them on both sides, and where the API "
    "server refuses it the comparison reads only the fields the manifest sets."
)


def rule_for(
    resource: Mapping[str, Any], release: str, path: Path, *, is_object: bool, hold: str | None = None
) -> IgnoreRule | None:
    """The first rule that ignores a difference at ``path`` of ``resource``; None: drift."""
    return next((r for r in RULES if r.matches(resource, release, path, is_object, hold)), None)


def sidecar_hold_annotation(manifests: Iterable[Mapping[str, Any]]) -> str | None:
    """The annotation the admission sidecar keeps its hold deadline in: a ``HOLD_ANNOTATION = "<name>"`` line of its
    module in the release's ConfigMaps (read, never run); None when none names one."""
    assignment = re.compile(
        rf"""^{CHART.hold_annotation_variable}\s*=\s*["']([^"'\n]+)["']\s*(?:#.*)?$""", re.MULTILINE
    )
    texts = [t for m in manifests if m.get("kind") == "ConfigMap" for t in (m.get("data") or {}).values()]
    return next((found[1] for t in texts if isinstance(t, str) and (found := assignment.search(t))), None)
