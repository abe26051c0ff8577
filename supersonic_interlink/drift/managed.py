"""The resources Pulumi manages directly (the Envoy ConfigMap, the cleanup CronJob, its ServiceAccount, Role and
RoleBinding, the Helm Release's record), read from a ``pulumi preview --refresh`` field by field: each field the
refresh found changed since the last ``up`` (expected: the state; live: the cluster), each resource it found gone, and
each step the preview then plans. The preview writes no state, so the check is read-only.

Not ``pulumi preview --refresh --expect-no-changes`` alone: after a refresh the preview of an edited object is ``same``
(the provider compares the program with the inputs it last sent, not with the live object), so it passes over an
edited Role; only the refresh's own outputs show it (docs/drift.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from supersonic_interlink.drift.report import PULUMI_PART, Ignored, Row
from supersonic_interlink.drift.rules import rule_for
from supersonic_interlink.objdiff import ABSENT, changes

QUIET_TYPES = ("pulumi:pulumi:Stack", "pulumi:providers:", "supersonic-interlink:")
"""The stack, the provider and the program's components: no cluster state of their own."""


@dataclass
class ResourceObservation:
    urn: str
    type: str
    step: str
    """The op the preview plans after the refresh (``same``, ``create``, ``update``, ...)."""
    refreshed: bool
    state: dict[str, Any] | None
    """The outputs before the refresh ..."""
    live: dict[str, Any] | None
    """... and after it (``None``: gone from the cluster)."""
    diffs: list[str]

    @property
    def label(self) -> str:
        outputs = self.state or self.live or {}
        if "kind" in outputs and isinstance(outputs.get("metadata"), Mapping):
            return f"{outputs['kind']}/{outputs['metadata'].get('name')}"
        return f"{self.type.split(':')[-1]} {self.urn.split('::')[-1]}"

    @property
    def is_object(self) -> bool:
        """A Kubernetes object (its outputs are the live object), not the Release's record or a component."""
        return {"apiVersion", "kind"} <= set(self.state or self.live or {})


def _op(metadata: Any) -> str:
    return str(getattr(metadata.op, "value", metadata.op))


def observations(events: Iterable[Any]) -> list[ResourceObservation]:
    """What a ``preview(refresh=True)``'s engine events say of each resource."""
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
            # The program itself would change it (a stack file edited and not yet applied): `preview --diff` shows
            # the values; the field names are what the engine reports.
            for name in item.diffs or [""]:
                rows.append(
                    Row(PULUMI_PART, item.label, (name,) if name else (), "(the program's)", "(the state's)", item.step)
                )
    return rows, ignored, compared
