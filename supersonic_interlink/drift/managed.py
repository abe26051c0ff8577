"""The resources Pulumi manages directly, read from a ``pulumi preview --refresh`` field by field: what the refresh
found changed or gone since the last ``up``, what the preview then plans (docs/drift.md: not the preview alone)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from supersonic_interlink.drift.report import PULUMI_PART, Ignored, Row
from supersonic_interlink.drift.rules import rule_for
from supersonic_interlink.objdiff import ABSENT, changes

QUIET_TYPES = ("pulumi:pulumi:Stack", "pulumi:providers:", "supersonic-interlink:")
"""No cluster state of their own."""


@dataclass
class ResourceObservation:
    urn: str
    type: str
    step: str
    """The op the preview plans after the refresh."""
    refreshed: bool
    state: dict[str, Any] | None
    """The outputs before the refresh, and after it (``None``: gone)."""
    live: dict[str, Any] | None
    diffs: list[str]

    @property
    def label(self) -> str:
        outputs = self.state or self.live or {}
        if "kind" in outputs and isinstance(outputs.get("metadata"), Mapping):
            return f"{outputs['kind']}/{outputs['metadata'].get('name')}"
        return f"{self.type.split(':')[-1]} {self.urn.split('::')[-1]}"

    @property
    def is_object(self) -> bool:
        """A Kubernetes object, not the Release's record."""
        return {"apiVersion", "kind"} <= set(self.state or self.live or {})


def _op(metadata: Any) -> str:
    return str(getattr(metadata.op, "value", metadata.op))


def observations(events: Iterable[Any]) -> list[ResourceObservation]:
    found: dict[str, ResourceObservation] = {}
    for event in events:
        outputs, pre = getattr(event, "res_outputs_event", None), getattr(event, "resource_pre_event", None)
        refresh = outputs is not None and _op(outputs.metadata) == "refresh"
        source = outputs if refresh else pre
        if source is None or (not refresh and _op(source.metadata) == "refresh"):
            continue
        m = source.metadata
        item = found.setdefault(m.urn, ResourceObservation(m.urn, m.type, "same", refresh, None, None, []))
        if refresh:
            item.state = dict(m.old.outputs or {}) if m.old is not None else None
            item.live = dict(m.new.outputs or {}) if m.new is not None and m.new.outputs is not None else None
        else:
            item.step, item.diffs = _op(m), list(m.diffs or [])
    return list(found.values())


def compare(observed: Iterable[ResourceObservation], release: str) -> tuple[list[Row], list[Ignored], list[str]]:
    rows: list[Row] = []
    ignored: list[Ignored] = []
    compared: list[str] = []
    for item in (i for i in observed if not i.type.startswith(QUIET_TYPES)):
        compared.append(item.label)
        if item.refreshed and item.state is not None and item.live is None:
            rows.append(Row(PULUMI_PART, item.label, (), "present (in the state)", ABSENT, "deleted"))
        elif item.refreshed and item.state is not None and item.live is not None:
            for change in changes(item.state, item.live):
                rule = rule_for(item.state, release, change.path, is_object=item.is_object)
                if rule is not None:
                    ignored.append(Ignored(PULUMI_PART, item.label, change.path, rule.name))
                else:
                    rows.append(Row(PULUMI_PART, item.label, change.path, change.before, change.after, "refresh"))
        if item.step != "same" and not any(row.object == item.label for row in rows):
            # A change of the program itself: `preview --diff` shows the values, the engine names the fields.
            for name in item.diffs or [""]:
                rows.append(
                    Row(PULUMI_PART, item.label, (name,) if name else (), "(the program's)", "(the state's)", item.step)
                )
    return rows, ignored, compared
