"""What an upgrade does to a release's objects: two rendered manifest lists compared object by object.

Objects are matched the way Helm matches them on upgrade: by API group, kind, namespace and name (the API
version may change without making it another object). An object only the new render has is created; one only the
old render has is deleted by the upgrade (Helm removes what the new release no longer contains); one in both is
changed when any field differs, and the changed fields are listed. Pure: manifests in, plain data out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from supersonic_interlink.takeover.tree_diff import (
    Change,
    Path,
    changes,
    format_path,
    format_value,
    is_under,
    markdown_cell,
    markdown_value,
)


@dataclass(frozen=True, order=True)
class ObjectKey:
    """Identity of a Kubernetes object within a release."""

    kind: str
    name: str
    group: str = ""
    namespace: str = ""

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{kind}/{where}{self.name}"


@dataclass(frozen=True)
class ObjectChange:
    key: ObjectKey
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class ManifestDiff:
    created: tuple[ObjectKey, ...]
    deleted: tuple[ObjectKey, ...]
    """Objects of the old render the new one no longer contains: the upgrade deletes them."""
    changed: tuple[ObjectChange, ...]
    unchanged: tuple[ObjectKey, ...]


def object_key(manifest: Mapping[str, Any], namespace: str = "") -> ObjectKey:
    """The key of one manifest; ``namespace`` stands in where the manifest names none (the release namespace)."""
    api_version = str(manifest.get("apiVersion", ""))
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    metadata = manifest.get("metadata") or {}
    if not manifest.get("kind") or not metadata.get("name"):
        raise ValueError(f"a manifest without kind or metadata.name: {format_value(dict(manifest))[:120]}")
    return ObjectKey(
        kind=str(manifest["kind"]),
        name=str(metadata["name"]),
        group=group,
        namespace=str(metadata.get("namespace") or namespace),
    )


def _index(manifests: Iterable[Mapping[str, Any]], namespace: str, side: str) -> dict[ObjectKey, Mapping[str, Any]]:
    indexed: dict[ObjectKey, Mapping[str, Any]] = {}
    for manifest in manifests:
        key = object_key(manifest, namespace)
        if key in indexed:
            raise ValueError(f"{side}: {key} appears twice (Helm refuses such a release)")
        indexed[key] = manifest
    return indexed


def compare_manifests(
    before: Iterable[Mapping[str, Any]],
    after: Iterable[Mapping[str, Any]],
    *,
    namespace: str = "",
    ignore: Sequence[Path] = (),
) -> ManifestDiff:
    """Compare the objects of two renders; changes under any ``ignore`` path (such as ``("status",)``) don't count.

    Raises ValueError for a manifest without kind or name, or an object that appears twice on one side.
    """
    old = _index(before, namespace, "before")
    new = _index(after, namespace, "after")
    changed: list[ObjectChange] = []
    unchanged: list[ObjectKey] = []
    for key in sorted(old.keys() & new.keys()):
        found = tuple(c for c in changes(old[key], new[key]) if not any(is_under(c.path, p) for p in ignore))
        if found:
            changed.append(ObjectChange(key, found))
        else:
            unchanged.append(key)
    return ManifestDiff(
        created=tuple(sorted(new.keys() - old.keys())),
        deleted=tuple(sorted(old.keys() - new.keys())),
        changed=tuple(changed),
        unchanged=tuple(unchanged),
    )


def markdown(diff: ManifestDiff) -> str:
    """The comparison as markdown for a pull request: deleted, created, then each changed object's fields."""
    lines: list[str] = []
    if diff.deleted:
        lines += ["**Deleted by the upgrade** (the old release has them, the new render does not):", ""]
        lines += [f"- `{key}`" for key in diff.deleted]
        lines.append("")
    if diff.created:
        lines += ["**Created:**", ""] + [f"- `{key}`" for key in diff.created] + [""]
    for change in diff.changed:
        lines += [f"**Changed `{change.key}`:**", "", "| field | before | after |", "|---|---|---|"]
        lines += [
            f"| {markdown_cell(format_path(c.path))} | {markdown_value(c.before)} | {markdown_value(c.after)} |"
            for c in change.changes
        ]
        lines.append("")
    lines.append(
        f"{len(diff.deleted)} deleted, {len(diff.created)} created, {len(diff.changed)} changed, "
        f"{len(diff.unchanged)} unchanged."
    )
    return "\n".join(lines) + "\n"
