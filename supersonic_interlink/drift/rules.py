"""The fields a drift check ignores, each by a declared rule with its reason. Nothing else is skipped: a difference no
rule matches is drift, and the report counts what each rule ignored.

The sources behind the two run-time owners:

- fastmachinelearning/SuperSONIC ``helm/supersonic/cfg/admission-server.py`` (``c292baf1``): on a wake the sidecar
  sends ``PATCH {"spec": {"minReplicaCount": max(1, IDLE_MIN_REPLICAS)}}`` as a JSON merge patch to the ScaledObject
  and raises the Triton Deployment's ``/scale`` ``spec.replicas``; when its hold ends it patches ``minReplicaCount``
  back to ``IDLE_MIN_REPLICAS``. Nothing else of either object is written. ``templates/keda/so.yaml``
  (``0323a5ab``) keeps the live ``minReplicaCount`` across upgrades with ``lookup``.
- KEDA scales the ScaledObject's target through the HorizontalPodAutoscaler it creates, which writes the target's
  ``spec.replicas`` through ``/scale``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from supersonic_interlink.contract import CHART, GENERATIONS
from supersonic_interlink.objdiff import Path, is_under


@dataclass(frozen=True)
class IgnoreRule:
    name: str
    reason: str
    paths: tuple[Path, ...]
    """A difference at or under one of these paths is ignored ..."""
    keep: tuple[Path, ...] = ()
    """... unless it is at or under one of these."""
    kind: str = ""
    """Only objects of this kind (any kind when empty)."""
    names: Callable[[str], set[str]] | None = None
    """Only the objects of these names, a chart contract function of the release name; any object when None."""
    sidecar_annotation: bool = False
    """Only the annotation the release's own admission sidecar code names (``sidecar_hold_annotation``), when it
    names one; ``paths`` is then unused."""
    applies_to: str = "object"
    """``object``: a Kubernetes object (live, or a Pulumi resource's outputs); ``resource``: any Pulumi resource's
    outputs, the Helm Release's record included."""

    def matches(
        self, resource: Mapping[str, Any], release: str, path: Path, *, is_object: bool, hold_annotation: str | None
    ) -> bool:
        if self.applies_to == "object" and not is_object:
            return False
        paths = self.paths
        if self.sidecar_annotation:
            if hold_annotation is None:
                return False
            paths = (("metadata", "annotations", hold_annotation),)
        if self.kind and resource.get("kind") != self.kind:
            return False
        if self.names is not None and (resource.get("metadata") or {}).get("name") not in self.names(release):
            return False
        if not any(is_under(path, prefix) for prefix in paths):
            return False
        return not any(is_under(path, kept) for kept in self.keep)


def _inference_object(release: str) -> set[str]:
    # A release holds one generation's inference server; either generation's name is that object.
    return {g.inference_object_name(release) for g in GENERATIONS}


def _scaled_object(release: str) -> set[str]:
    return {CHART.scaled_object_name(release)}


RULES: tuple[IgnoreRule, ...] = (
    IgnoreRule(
        "status",
        "written by controllers (the controller-manager, the kubelet or kwok, KEDA), never by the manifest or the "
        "program",
        paths=(("status",),),
    ),
    IgnoreRule(
        "server-metadata",
        "resourceVersion, generation, uid, creationTimestamp, managedFields: the API server rewrites them on every "
        "write; the manifest and the program set only name, namespace, labels and annotations (Flux's "
        "driftDetection compares the same two)",
        paths=(("metadata",),),
        keep=(("metadata", "labels"), ("metadata", "annotations")),
    ),
    IgnoreRule(
        "triton-replicas",
        "KEDA's HorizontalPodAutoscaler sets the Triton replica count at run time, and the admission sidecar raises "
        "it through /scale on a wake; with scale from zero the chart leaves it out",
        paths=(("spec", "replicas"),),
        kind="Deployment",
        names=_inference_object,
    ),
    IgnoreRule(
        "admission-min-replicas",
        "the chart's admission sidecar merge-patches spec.minReplicaCount to max(1, idle minimum) while it holds a "
        "wake and back when the hold ends (cfg/admission-server.py); the chart keeps the live value across upgrades "
        "(templates/keda/so.yaml, lookup). It patches nothing else of the ScaledObject",
        paths=(("spec", "minReplicaCount"),),
        kind="ScaledObject",
        names=_scaled_object,
    ),
    IgnoreRule(
        "admission-hold-deadline",
        "the chart's admission sidecar writes a wake's hold deadline into an annotation of the ScaledObject and "
        "removes it when the hold ends (cfg/admission-server.py at db73925); ignored only under the name the sidecar "
        "code this release deployed gives it, and not at all when that code names none",
        paths=(),
        kind="ScaledObject",
        names=_scaled_object,
        sidecar_annotation=True,
    ),
    IgnoreRule(
        "provider-bookkeeping",
        "__inputs, __fieldManager, __initialApiVersion: the Kubernetes provider's record of what it last sent, not "
        "read from the cluster; a live change shows in the object's own fields",
        paths=(("__inputs",), ("__fieldManager",), ("__initialApiVersion",)),
        applies_to="resource",
    ),
)
"""Every rule, in the order the report lists them."""

API_DEFAULTS_NOTE = (
    "Defaults the API server fills (a Service's clusterIP and nodePorts, a container's terminationMessagePath, ...) "
    "need no rule: the dry-run apply returns them on both sides, and where the API server refuses the dry-run the "
    "comparison reads only the fields the manifest sets."
)


def rule_for(
    resource: Mapping[str, Any], release: str, path: Path, *, is_object: bool, hold_annotation: str | None = None
) -> IgnoreRule | None:
    """The first rule that ignores a difference at ``path`` of ``resource``, or None: then it is drift.
    ``hold_annotation``: what the release's admission sidecar code names its hold annotation (None: it names none)."""
    return next(
        (r for r in RULES if r.matches(resource, release, path, is_object=is_object, hold_annotation=hold_annotation)),
        None,
    )


def sidecar_hold_annotation(manifests: Iterable[Mapping[str, Any]]) -> str | None:
    """The annotation the chart's admission sidecar keeps its hold deadline in, read from the sidecar's Python code
    in the release's ConfigMaps (a module-level ``HOLD_ANNOTATION = "<name>"``, parsed, never run); None when no
    code there names one."""
    for manifest in manifests:
        if manifest.get("kind") != "ConfigMap":
            continue
        for text in (manifest.get("data") or {}).values():
            if not isinstance(text, str) or CHART.hold_annotation_variable not in text:
                continue
            try:
                module = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            for node in module.body:
                if (
                    isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == CHART.hold_annotation_variable for t in node.targets)
                    and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)
                ):
                    return node.value.value
    return None
