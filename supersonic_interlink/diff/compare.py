"""Two sides' objects compared as a reviewer reads a change: added, removed, replaced, changed, with the fields.

Objects are matched as Helm and the engine match them, by group, kind, namespace and name
(``manifest_diff.compare_manifests``). A content-addressed object, whose name ends in a hash of its content (the
Envoy ConfigMap, ``<release>-envoy-external-<hash>``), gets a new name whenever its content changes: a removed and an
added object of the same kind whose names differ only in that hash are one object *replaced*, compared field by
field like a changed one. Pure: objects in, plain data out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from supersonic_interlink.takeover.manifest_diff import ObjectKey, compare_manifests, object_key
from supersonic_interlink.takeover.tree_diff import Change, changes

_HASH_SUFFIX = re.compile(r"-[0-9a-f]{6,}$")


@dataclass(frozen=True)
class Replaced:
    old: ObjectKey
    new: ObjectKey
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class ObjectsDiff:
    added: tuple[ObjectKey, ...]
    removed: tuple[ObjectKey, ...]
    replaced: tuple[Replaced, ...]
    changed: tuple[tuple[ObjectKey, tuple[Change, ...]], ...]
    unchanged: int

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.replaced or self.changed)

    def counts(self) -> str:
        return (
            f"{len(self.changed)} changed, {len(self.replaced)} replaced, {len(self.added)} added, "
            f"{len(self.removed)} removed, {self.unchanged} unchanged"
        )


def _stem(key: ObjectKey) -> tuple[str, str, str, str] | None:
    if not _HASH_SUFFIX.search(key.name):
        return None
    return (key.group, key.kind, key.namespace, _HASH_SUFFIX.sub("", key.name))


def compare(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]], namespace: str = ""
) -> ObjectsDiff:
    """The objects of ``after`` against ``before``; ``namespace`` stands in where an object names none."""
    diff = compare_manifests(before, after, namespace=namespace)
    old = {object_key(m, namespace): m for m in before}
    new = {object_key(m, namespace): m for m in after}
    removed_by_stem: dict[Any, list[ObjectKey]] = {}
    added_by_stem: dict[Any, list[ObjectKey]] = {}
    for key in diff.deleted:
        removed_by_stem.setdefault(_stem(key), []).append(key)
    for key in diff.created:
        added_by_stem.setdefault(_stem(key), []).append(key)
    replaced = []
    for stem, removed in removed_by_stem.items():
        added = added_by_stem.get(stem, [])
        if stem is not None and len(removed) == 1 and len(added) == 1:
            replaced.append(Replaced(removed[0], added[0], tuple(changes(old[removed[0]], new[added[0]]))))
    paired = {r.old for r in replaced} | {r.new for r in replaced}
    return ObjectsDiff(
        added=tuple(k for k in diff.created if k not in paired),
        removed=tuple(k for k in diff.deleted if k not in paired),
        replaced=tuple(replaced),
        changed=tuple((c.key, c.changes) for c in diff.changed),
        unchanged=len(diff.unchanged),
    )
