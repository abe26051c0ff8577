"""The live release's values against this project's, each deliberate difference declared once with its reason: the
table for the pull request, and the findings (a difference not declared, or a declaration that no longer differs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from supersonic_interlink.config.pulumi_yaml import YAMLInputError, load_outside_yaml
from supersonic_interlink.config.values import CONFIG_CHECKSUM_ANNOTATION
from supersonic_interlink.contract import CHART, GENERATIONS, TRITON
from supersonic_interlink.objdiff import (
    ABSENT,
    Change,
    Path,
    changes,
    changes_json,
    format_path,
    is_under,
    markdown_cell,
    markdown_table,
)

DELIBERATE: dict[Path, str] = {
    ("scaleFromZero",): (
        "The change this project deploys: Envoy's Lua filter wakes Triton on a session's first RepositoryIndex."
    ),
    ("keda", "metricType"): (
        "Now passed (Value): the live chart hard-coded Value; a newer one's AverageValue divides the load by replicas."
    ),
    ("keda", "minReplicaCount"): (
        "Scale to zero when idle: no Slurm allocation or GPU held while nobody infers (0 only with scale from zero)."
    ),
    (CHART.envoy_values_key, "external_config", "configmap_name"): (
        "This program's Envoy ConfigMap, named after its content's hash; it replaces the one Flux applied."
    ),
    (CHART.envoy_values_key, "annotations", CONFIG_CHECKSUM_ANNOTATION): (
        "The configuration's hash on the Envoy pods: Envoy reads it only at start, so a change must roll the pods."
    ),
    (CHART.envoy_values_key, "image"): (
        "Always set (envoy.image, pinned in Pulumi.yaml), not left to whichever chart commit is deployed."
    ),
    (CHART.envoy_values_key, "loadBalancerPolicy"): (
        "No longer passed: the chart reads it only for an Envoy configuration it generates; this program's sets it."
    ),
    (TRITON.inference_values_key, "readinessProbe", "exec"): (
        "No longer passed: the chart renders the exec probe from readinessProbe.command; this null never reached it."
    ),
    (TRITON.inference_values_key, "readinessProbe", "grpc"): (
        "No longer passed: the chart renders no grpc readiness handler; the pod's exec probe does not change."
    ),
}
"""Each value path (a leaf or a block) where this project differs on purpose from the live release (of TRITON)."""


@dataclass(frozen=True)
class ValuesComparison:
    deliberate: tuple[tuple[Change, str], ...]
    undeclared: tuple[Change, ...]
    stale: tuple[tuple[Path, str], ...]
    """Declared differences under which live and project now agree."""

    @property
    def has_findings(self) -> bool:
        return bool(self.undeclared or self.stale)


def compare_values(
    live: Mapping[str, Any], project: Mapping[str, Any], declared: Mapping[Path, str] = DELIBERATE
) -> ValuesComparison:
    """Every difference sorted by the declarations, the most specific one explaining a change (a block-wide row never
    hides a narrower one). Across a move of the chart generation the live inference-server block is compared under the
    project's name, and the move is one row."""
    deliberate: list[tuple[Change, str]] = []
    keys = [g.inference_values_key for g in GENERATIONS]
    old = [k for k in keys if k in live and k not in project]
    new = [k for k in keys if k in project and k not in live]
    if len(old) == len(new) == 1:
        was, now = old[0], new[0]
        live = {(now if key == was else key): value for key, value in live.items()}
        declared = {((now, *path[1:]) if path[:1] == (was,) else path): why for path, why in declared.items()}
        why = f"The chart generation moves: the {was}: block is compared under its new name {now}: below."
        deliberate.append((Change((was,), "(this block)", ABSENT), why))
    undeclared, used = [], set()
    for change in changes(live, project):
        best = max((path for path in declared if is_under(change.path, path)), key=len, default=None)
        if best is None:
            undeclared.append(change)
        else:
            used.add(best)
            deliberate.append((change, declared[best]))
    return ValuesComparison(
        tuple(deliberate), tuple(undeclared), tuple(d for d in declared.items() if d[0] not in used)
    )


class LiveInputError(ValueError):
    """A live values or objects file cannot be read, or served to the chart's lookup; the message names the file."""


def load_live_values(text: bytes | str, source: str) -> dict[str, Any]:
    """Chart values as ``helm get values -o yaml`` prints them."""
    try:
        documents = load_outside_yaml(text)
    except YAMLInputError as error:
        raise LiveInputError(f"{source}: {error}") from None
    if not documents:  # an empty file is a command that failed, or a redirect cut short
        raise LiveInputError(
            f"{source}: empty; expected `helm get values -o yaml` output (a release without values prints null)"
        )
    if len(documents) > 1:
        raise LiveInputError(f"{source}: {len(documents)} YAML documents; expected one mapping of chart values")
    if not isinstance(documents[0], dict | None):
        raise LiveInputError(f"{source}: expected a mapping of chart values, found {type(documents[0]).__name__}")
    if documents[0] and "kind" in documents[0] and "apiVersion" in documents[0]:
        raise LiveInputError(f"{source}: a Kubernetes object, not chart values: give `helm get values -o yaml` output")
    if documents[0] and "USER-SUPPLIED VALUES" in documents[0]:  # the heading plain `helm get values` prints first
        raise LiveInputError(f"{source}: `helm get values` output without -o yaml: rerun it with -o yaml")
    return documents[0] or {}


def as_json(comparison: ValuesComparison) -> dict[str, Any]:
    """``before`` is the live value, ``after`` this stack's (docs/json.md)."""
    return {
        "deliberate": [{**changes_json([change])[0], "why": why} for change, why in comparison.deliberate],
        "undeclared": changes_json(comparison.undeclared),
        "stale": [{"path": format_path(path), "why": why} for path, why in comparison.stale],
    }


HERE = "`supersonic_interlink/takeover/values_diff.py`"
UNDECLARED = f"**Undeclared differences** (findings: fix the stack, or declare each with its reason in {HERE}):"


def markdown(comparison: ValuesComparison, stack: str) -> str:
    """The difference table for the pull request, then any findings."""
    c, columns = comparison, ["value", "live", "this stack"]
    lines = [f"#### Values: the live release → stack `{stack}`", "", *markdown_table([*columns, "why"], c.deliberate)]
    lines += ([] if c.deliberate else ["| *(none)* | | | |"]) + [""]
    if c.undeclared:
        lines += [UNDECLARED, "", *markdown_table(columns, [(change,) for change in c.undeclared]), ""]
    if c.stale:
        lines += [f"**Declared differences that no longer differ** (findings: remove them from {HERE}):", ""]
        lines += [f"- {markdown_cell(format_path(path))}: {why}" for path, why in c.stale] + [""]
    lines.append(f"{len(c.deliberate)} deliberate, {len(c.undeclared)} undeclared, {len(c.stale)} stale.")
    return "\n".join(lines) + "\n"
