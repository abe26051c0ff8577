"""What a drift check found, one row per drifted field, and what each rule ignored: as a table, JSON and the markdown
of the scheduled workflow's issue, values a secret holds masked."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from supersonic_interlink.drift.rules import API_DEFAULTS_NOTE, RULES
from supersonic_interlink.objdiff import ABSENT, Path, cut, format_path, format_value, markdown_cell, markdown_value

RELEASE_PART, PULUMI_PART = "helm release", "pulumi"
CELL, MARKDOWN_CELL = 60, 300
"""Widest value the table prints, and the issue's (a GitHub issue body holds at most 65,536 characters)."""
SECRET_SHOWN = "[secret]"


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
        sides = {f"{s}{k}": v for s in ("expected", "live") for k, v in _side(getattr(self, s)).items()}
        return {"part": self.part, "object": self.object, "field": self.field, **sides, "note": self.note}


def _side(value: Any) -> dict[str, Any]:
    return {"": None if value is ABSENT else value, "Set": value is not ABSENT}


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
    """Every object or resource compared."""

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


def masked(report: Report, secrets: Collection[str]) -> Report:
    """Every value of a Secret object, and every value containing one of ``secrets`` (the stack's secret config
    values), shown as ``[secret]``."""

    def mask(row: Row, value: Any) -> Any:
        hides = any(isinstance(leaf, str) and any(secret in leaf for secret in secrets) for leaf in leaves(value))
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
