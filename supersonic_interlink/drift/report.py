"""The fields a drift check ignores, each by a declared rule with its reason (docs/drift.md has the table and sources),
and what a check found: one row per drifted field, as a table, JSON and the issue's markdown, secrets masked."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from supersonic_interlink.contract import CHART, GENERATIONS
from supersonic_interlink.objdiff import ABSENT, Path, cut, format_path, format_value, markdown_cell, markdown_value

HOLD = ("metadata", "annotations", "<the sidecar's hold annotation>")
"""Stands for the annotation the release's admission sidecar code names (``sidecar_hold_annotation``)."""


def key(obj: Mapping[str, Any]) -> str:
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


@dataclass(frozen=True)
class IgnoreRule:
    name: str
    reason: str
    paths: tuple[Path, ...]
    """A difference at or under one of these is ignored, unless at or under one of ``keep``."""
    keep: tuple[Path, ...] = ()
    objects: Callable[[str], set[str]] | None = None
    """The ``Kind/name`` of each object it applies to, from the release's name (any when None)."""
    resource: bool = False
    """Any Pulumi resource's outputs, not only Kubernetes objects."""

    def matches(self, resource: Mapping[str, Any], release: str, path: Path, is_object: bool, hold: str | None) -> bool:
        paths = [p for p in self.paths if p != HOLD] + ([(*HOLD[:2], hold)] if hold and HOLD in self.paths else [])
        applies = (is_object or self.resource) and (self.objects is None or key(resource) in self.objects(release))
        under = any(path[: len(prefix)] == prefix for prefix in paths)
        return applies and under and not any(path[: len(kept)] == kept for kept in self.keep)


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
        objects=lambda release: {f"Deployment/{g.inference_object_name(release)}" for g in GENERATIONS},
    ),
    IgnoreRule(
        "admission-min-replicas",
        "the chart's admission sidecar merge-patches it while it holds a wake (cfg/admission-server.py), and the "
        "chart keeps the live value across upgrades (templates/keda/so.yaml)",
        paths=(("spec", "minReplicaCount"),),
        objects=lambda release: {f"ScaledObject/{CHART.scaled_object_name(release)}"},
    ),
    IgnoreRule(
        "admission-hold-deadline",
        "the chart's admission sidecar keeps a wake's hold deadline in the annotation its deployed code names "
        "(cfg/admission-server.py at db73925); none when that code names none",
        paths=(HOLD,),
        objects=lambda release: {f"ScaledObject/{CHART.scaled_object_name(release)}"},
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
    assignment = re.compile(rf"""(?m)^{CHART.hold_annotation_variable}\s*=\s*["']([^"'\n]+)["']\s*(?:#.*)?$""")
    texts = [t for m in manifests if m.get("kind") == "ConfigMap" for t in (m.get("data") or {}).values()]
    return next((found[1] for t in texts if isinstance(t, str) and (found := assignment.search(t))), None)


RELEASE_PART, PULUMI_PART = "helm release", "pulumi"
CELL, MARKDOWN_CELL = 60, 300
"""Widest value the table prints, and the issue's (a GitHub issue body holds at most 65,536 characters)."""
SECRET_SHOWN = "[secret]"
SECRET_MIN_LENGTH = 4
"""Shorter secret values are not masked (every "1" would be)."""


@dataclass(frozen=True)
class Row:
    part: str
    object: str
    """``Kind/name`` of a Kubernetes object, or the Pulumi resource's type and name."""
    path: Path
    expected: Any
    """What applying the stored manifest (or the state Pulumi recorded) makes the field."""
    live: Any
    note: str = ""

    @property
    def field(self) -> str:
        return format_path(self.path) or "(the object)"

    def as_json(self) -> dict[str, Any]:
        sides: dict[str, Any] = {}
        for side in ("expected", "live"):
            value = getattr(self, side)
            sides |= {side: None if value is ABSENT else value, f"{side}Set": value is not ABSENT}
        return {"part": self.part, "object": self.object, "field": self.field, **sides, "note": self.note}


@dataclass(frozen=True)
class Ignored:
    part: str
    object: str
    path: Path
    rule: str


@dataclass
class Report:
    stack: str
    release: str
    namespace: str
    revision: int
    rows: list[Row] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)
    objects: list[str] = field(default_factory=list)

    @property
    def drift(self) -> bool:
        return bool(self.rows)

    def ignored_counts(self) -> dict[str, int]:
        return {rule.name: sum(i.rule == rule.name for i in self.ignored) for rule in RULES}

    def as_json(self) -> dict[str, Any]:
        return {
            **{name: getattr(self, name) for name in ("stack", "release", "namespace", "revision", "drift")},
            "rows": [row.as_json() for row in self.rows],
            "objects": self.objects,
            "ignored": [
                {"part": i.part, "object": i.object, "field": format_path(i.path), "rule": i.rule} for i in self.ignored
            ],
            "rules": [{"name": r.name, "reason": r.reason} for r in RULES],
        }


def leaves(value: Any) -> Iterator[Any]:
    """Every value inside ``value`` that is neither a mapping nor a list (or ``value`` itself)."""
    if isinstance(value, Mapping | list | tuple):
        for item in value.values() if isinstance(value, Mapping) else value:
            yield from leaves(item)
    else:
        yield value


def masked(report: Report, secrets: Iterable[str]) -> Report:
    """Every value of a Secret object, and every value holding a text a stack secret holds (a JSON one's leaves too,
    none shorter than ``SECRET_MIN_LENGTH``), shown as ``[secret]``."""
    texts = set(secrets)
    for secret in list(texts):
        with contextlib.suppress(ValueError):
            texts.update(str(leaf) for leaf in leaves(json.loads(secret)) if leaf is not None)
    hidden = [t for t in texts if len(t) >= SECRET_MIN_LENGTH]

    def mask(row: Row, value: Any) -> Any:
        hides = any(isinstance(leaf, str) and any(secret in leaf for secret in hidden) for leaf in leaves(value))
        return SECRET_SHOWN if value is not ABSENT and (row.object.startswith("Secret/") or hides) else value

    rows = [dataclasses.replace(row, expected=mask(row, row.expected), live=mask(row, row.live)) for row in report.rows]
    return dataclasses.replace(report, rows=rows)


def _summary(report: Report) -> str:
    ignored = ", ".join(f"{name} {count}" for name, count in report.ignored_counts().items() if count) or "nothing"
    return f"{len(report.objects)} objects compared; {len(report.rows)} drifted field(s); ignored by rule: {ignored}"


def text(report: Report) -> str:
    head = f"stack {report.stack}: release {report.namespace}/{report.release} (revision {report.revision})"
    if not report.rows:
        return f"{head}: no drift\n{_summary(report)}\n"
    table = [["part", "object", "field", "expected", "live"]]
    for row in report.rows:
        values = [cut(format_value(value).replace("\n", "\\n"), CELL) for value in (row.expected, row.live)]
        table.append([row.part, row.object, row.field + (f" ({row.note})" if row.note else ""), *values])
    widths = [max(len(line[i]) for line in table) for i in range(4)]
    lines = ["  ".join([*(cell.ljust(widths[i]) for i, cell in enumerate(line[:4])), line[4]]) for line in table]
    return f"{head}: drift\n" + "\n".join(line.rstrip() for line in lines) + f"\n{_summary(report)}\n"


def markdown(report: Report, *, correct_command: str = "") -> str:
    lines = [
        f"Drift of stack `{report.stack}`: release `{report.namespace}/{report.release}` (revision {report.revision}).",
        "",
        *(["| part | object | field | expected | live |", "|---|---|---|---|---|"] if report.rows else ["No drift."]),
    ]
    for row in report.rows:
        name = markdown_cell(row.field) + (f" ({row.note})" if row.note else "")
        values = " | ".join(markdown_value(value, MARKDOWN_CELL) for value in (row.expected, row.live))
        lines.append(f"| {row.part} | {markdown_cell(row.object)} | {name} | {values} |")
    lines += ["", _summary(report) + ".", "", "Ignored by rule (each with its reason):", ""]
    lines += [f"- `{rule.name}`: {rule.reason}" for rule in RULES]
    lines += ["", API_DEFAULTS_NOTE, "", "Values longer than a cell are cut (…); `--json` carries them whole."]
    if correct_command and report.rows:
        lines += ["", f"To bring the cluster back: `{correct_command}`"]
    return "\n".join(lines) + "\n"
