"""The live release's values against this project's, each deliberate difference declared once with its reason, and
the shape both takeover comparisons share: what is declared explained, the rest findings, and their report."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from supersonic_interlink import objdiff
from supersonic_interlink.config.pulumi_yaml import YAMLInputError, load_outside_yaml
from supersonic_interlink.config.values import CONFIG_CHECKSUM_ANNOTATION
from supersonic_interlink.contract import CHART, GENERATIONS, TRITON
from supersonic_interlink.objdiff import ABSENT, Change, Path, format_path

ENVOY, INFERENCE = CHART.envoy_values_key, TRITON.inference_values_key
DELIBERATE: dict[Path, str] = {
    ("scaleFromZero",): "What this project deploys: Envoy's Lua filter wakes Triton on a session's first request.",
    ("keda", "metricType"): "Now passed (Value): the live chart hard-coded it; AverageValue divides by replicas.",
    ("keda", "minReplicaCount"): "Scale to zero when idle: no Slurm allocation or GPU held while nobody infers.",
    (ENVOY, "external_config", "configmap_name"): "This program's Envoy ConfigMap, named by its hash, replaces Flux's.",
    (ENVOY, "annotations", CONFIG_CHECKSUM_ANNOTATION): "The config's hash on the Envoy pods: a change rolls them.",
    (ENVOY, "image"): "Always set (envoy.image, pinned in Pulumi.yaml), not left to the deployed chart commit.",
    (ENVOY, "loadBalancerPolicy"): "No longer passed: the chart reads it only for an Envoy configuration it generates.",
    (INFERENCE, "readinessProbe", "exec"): "No longer passed: the chart renders the exec probe from its command.",
    (INFERENCE, "readinessProbe", "grpc"): "No longer passed: the chart renders no grpc readiness handler at all.",
}
"""Each value path (a leaf or a block) where this project differs on purpose from the live release (of TRITON)."""


@dataclass(frozen=True)
class Declared:
    """Differences sorted by the declarations: each explained one with its reason, the others findings."""

    explained: tuple[tuple[Any, str], ...]
    undeclared: tuple[Any, ...]
    stale: tuple[tuple[Any, str], ...]
    """Declarations nothing differs under any more."""

    @property
    def has_findings(self) -> bool:
        return bool(self.undeclared or self.stale)

    def findings(self, what: str) -> str:
        """The line that counts the findings, or ""."""
        return f"{len(self.undeclared)} undeclared and {len(self.stale)} stale {what}" if self.has_findings else ""


def sort_declared(found: Iterable[Any], declared: Mapping[Any, str], explain: Callable[[Any], Any]) -> Declared:
    """Each of ``found`` explained by the declaration ``explain`` picks, or undeclared; the declarations nothing is
    explained by are stale."""
    explained, undeclared, used = [], [], set()
    for item in found:
        if (best := explain(item)) is None:
            undeclared.append(item)
        else:
            used.add(best)
            explained.append((item, declared[best]))
    return Declared(tuple(explained), tuple(undeclared), tuple(d for d in declared.items() if d[0] not in used))


def compare_values(
    live: Mapping[str, Any], project: Mapping[str, Any], declared: Mapping[Path, str] = DELIBERATE
) -> Declared:
    """Every difference sorted by the declarations. Across a move of the chart generation the live inference-server
    block is compared under the project's name, and the move is one row."""
    keys = [g.inference_values_key for g in GENERATIONS]
    old, new = ([k for k in keys if k in a and k not in b] for a, b in ((live, project), (project, live)))
    moved: list[tuple[Change, str]] = []
    if len(old) == len(new) == 1:
        was, now = old[0], new[0]
        live = {(now if key == was else key): value for key, value in live.items()}
        declared = {((now, *path[1:]) if path[:1] == (was,) else path): why for path, why in declared.items()}
        why = f"The chart generation moves: the {was}: block is compared under its new name {now}: below."
        moved.append((Change((was,), "(this block)", ABSENT), why))

    def explain(change: Change) -> Path | None:  # the most specific: a block-wide row never hides a narrower one
        return max((path for path in declared if objdiff.is_under(change.path, path)), key=len, default=None)

    found = sort_declared(objdiff.changes(live, project), declared, explain)
    return Declared((*moved, *found.explained), found.undeclared, found.stale)


class LiveInputError(ValueError):
    """A live values or objects file cannot be read, or served to the chart's lookup; the message names the file."""


def load_live_values(text: bytes | str, source: str) -> dict[str, Any]:
    """Chart values as ``helm get values -o yaml`` prints them (null for a release without values)."""
    try:
        documents = load_outside_yaml(text)
    except YAMLInputError as error:
        raise LiveInputError(f"{source}: {error}") from None
    found = f"{len(documents)} YAML documents" if len(documents) > 1 else "empty" if not documents else ""
    if found or not isinstance(documents[0], dict | None):
        found = found or f"a {type(documents[0]).__name__}"
        raise LiveInputError(f"{source}: {found}; expected `helm get values -o yaml` output, one mapping of values")
    return documents[0] or {}


def as_json(comparison: Declared) -> dict[str, Any]:
    """``before`` is the live value, ``after`` this stack's (docs/json.md)."""
    return {
        "deliberate": [{**change.as_json(), "why": why} for change, why in comparison.explained],
        "undeclared": [change.as_json() for change in comparison.undeclared],
        "stale": [{"path": format_path(path), "why": why} for path, why in comparison.stale],
    }


def report(title: str, body: Sequence[str], stale: Sequence[tuple[str, str]], here: str, counts: str) -> str:
    """A takeover report: its title, its tables, the declarations of ``here`` that are stale, the counts."""
    lines = [f"#### {title}", "", *body]
    if stale:
        lines += ["", f"**Declared in {here}, but no longer true** (findings: remove them):", ""]
        lines += [f"- {objdiff.markdown_cell(name)}: {why}" for name, why in stale]
    return "\n".join([*lines, "", counts]) + "\n"


HERE = "`supersonic_interlink/takeover/values_diff.py`"


def markdown(comparison: Declared, stack: str) -> str:
    """The difference table for the pull request, then any findings."""
    c, columns = comparison, ["value", "live", "this stack"]
    body = [*objdiff.markdown_table([*columns, "why"], c.explained), *([] if c.explained else ["| *(none)* | | | |"])]
    if c.undeclared:
        title = f"**Undeclared differences** (findings: fix the stack, or declare each with its reason in {HERE}):"
        body += ["", title, "", *objdiff.markdown_table(columns, [(change,) for change in c.undeclared])]
    stale = [(format_path(path), why) for path, why in c.stale]
    counts = f"{len(c.explained)} deliberate, {len(c.undeclared)} undeclared, {len(c.stale)} stale."
    return report(f"Values: the live release → stack `{stack}`", body, stale, HERE, counts)
