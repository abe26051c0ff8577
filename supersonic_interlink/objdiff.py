"""The difference between two object trees (Helm values, Kubernetes objects, a Pulumi resource's outputs) and between
two sets of Kubernetes manifests, and the one way a path and a value are written. Takeover, diff and drift all use
it; each keeps its own rules of which differences matter. Pure: plain data in, plain data out.

Trees: mappings key by key; a list whose items are all mappings with distinct ``name`` keys (containers, volumes,
env, ports) item by item by name, so an inserted container shifts nothing; any other list is one value. A missing key
is ``ABSENT``, not an explicit null (Helm reads null as "delete this chart default"), and ``true`` is not ``1``.
deepdiff was weighed for this and not taken: its index paths would need mapping back to names, it reports a one-sided
block whole rather than leaf by leaf, and its only int/float grouping (``ignore_type_in_groups``) makes ``True``
equal ``1``.

Manifests: matched as Helm matches them on upgrade, by API group, kind, namespace and name (a new API version is the
same object): added, removed, or changed with the fields listed.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
"""The value of a key that is not there (compared by identity)."""


@dataclass(frozen=True)
class Named:
    """Path segment of a list item matched by its ``name``."""

    name: str


Path = tuple[str | Named, ...]


@dataclass(frozen=True)
class Change:
    """One field that differs: its path, the value before and after (either may be ``ABSENT``)."""

    path: Path
    before: Any
    after: Any


def changes(before: Any, after: Any, path: Path = ()) -> list[Change]:
    """Every leaf where ``after`` differs from ``before``, keys sorted and named items by name. A mapping on one
    side only is reported leaf by leaf (``ABSENT`` on the other); a named item on one side only, whole."""
    if (before is ABSENT or isinstance(before, Mapping)) and (after is ABSENT or isinstance(after, Mapping)):
        old, new = (side if isinstance(side, Mapping) else {} for side in (before, after))
        if old or new:
            keys = sorted(set(old) | set(new), key=str)
            return [c for k in keys for c in changes(old.get(k, ABSENT), new.get(k, ABSENT), (*path, str(k)))]
    old_items, new_items = _named_items(before), _named_items(after)
    if old_items is not None and new_items is not None:
        found: list[Change] = []
        for name in sorted(set(old_items) | set(new_items)):
            old, new = old_items.get(name, ABSENT), new_items.get(name, ABSENT)
            if old is ABSENT or new is ABSENT:
                found.append(Change((*path, Named(name)), old, new))
            else:
                found.extend(changes(old, new, (*path, Named(name))))
        return found
    if before is ABSENT or after is ABSENT:
        return [] if before is after else [Change(path, before, after)]
    return [] if _same(before, after) else [Change(path, before, after)]


def _named_items(value: Any) -> dict[str, Any] | None:
    """The items of a list of mappings keyed by their distinct string ``name``; None for any other value."""
    if not isinstance(value, list) or not value:
        return None
    items: dict[str, Any] = {}
    for item in value:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or item["name"] in items:
            return None
        items[item["name"]] = item
    return items


def _same(a: Any, b: Any) -> bool:
    # bool is an int in Python: True must not equal 1 here, as it does not in YAML.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def is_under(path: Path, prefix: Path) -> bool:
    """Whether ``path`` is ``prefix`` or lies inside it."""
    return path[: len(prefix)] == prefix


def overlay(base: Any, top: Any) -> Any:
    """``base`` with every field ``top`` sets put in: mappings key by key, named items by name, the rest whole."""
    if isinstance(base, Mapping) and isinstance(top, Mapping):
        return {**base, **{key: overlay(base[key], value) if key in base else value for key, value in top.items()}}
    base_named, top_named = _named_items(base), _named_items(top)
    if base_named is not None and top_named is not None:
        merged = [overlay(base_named[name], item) if name in base_named else item for name, item in top_named.items()]
        return merged + [item for name, item in base_named.items() if name not in top_named]
    return top


def put(tree: Any, path: Path, value: Any) -> None:
    """Set ``value`` at ``path`` in ``tree`` in place, creating missing mappings on the way (``ABSENT`` removes it)."""
    *parents, last = path
    for segment in parents:
        if isinstance(segment, Named):
            tree = next(item for item in tree if item.get("name") == segment.name)
        else:
            tree = tree.setdefault(segment, {})
    if not isinstance(last, Named):
        if value is ABSENT:
            tree.pop(last, None)
        else:
            tree[last] = value
        return
    index = next((i for i, item in enumerate(tree) if item.get("name") == last.name), None)
    if index is None:
        if value is not ABSENT:
            tree.append(value)
    elif value is ABSENT:
        del tree[index]
    else:
        tree[index] = value


# --------------------------------------------------------------------------------------------- the text format

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def format_path(path: Path) -> str:
    """``triton.annotations["slurm-job.vk.io/flags"]``, ``spec.containers[name=envoy].image``."""
    text = ""
    for segment in path:
        if isinstance(segment, Named):
            text += f"[name={segment.name}]"
        elif _PLAIN_KEY.match(segment):
            text += f".{segment}" if text else segment
        else:
            text += f"[{json.dumps(segment)}]"
    return text


def format_value(value: Any) -> str:
    """One line: ``(not set)``, ``null``, a string as it is, anything else as compact JSON."""
    if value is ABSENT:
        return "(not set)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(", ", ": "))


def markdown_cell(text: str) -> str:
    """``text`` as inline code in a markdown table cell (pipes escaped, so the row stays one row)."""
    if not text:
        return ""
    body = text.replace("|", "\\|").replace("\n", " ")
    return f"`` {body} ``" if "`" in body else f"`{body}`"


def cut(text: str, width: int) -> str:
    """``text``, or its first ``width`` - 1 characters and …"""
    return text if len(text) <= width else text[: width - 1] + "…"


def markdown_value(value: Any, width: int | None = None) -> str:
    """A value for a markdown table cell: code, or *(not set)* for a missing key; longer than ``width``: cut."""
    if value is ABSENT:
        return "*(not set)*"
    return markdown_cell(format_value(value) if width is None else cut(format_value(value), width))


def markdown_row(change: Change, *more: str) -> str:
    """``| path | before | after |`` and any ``more`` cells: one markdown table row."""
    cells = [markdown_cell(format_path(change.path)), markdown_value(change.before), markdown_value(change.after)]
    return "| " + " | ".join([*cells, *more]) + " |"


def text_diff(before: Any, after: Any) -> list[str]:
    """Two texts (a side that is not text reads as empty) as unified-diff hunks, two lines of context, no header."""
    old, new = (value.splitlines() if isinstance(value, str) else [] for value in (before, after))
    return list(difflib.unified_diff(old, new, n=2, lineterm=""))[2:]


def changes_json(found: Iterable[Change]) -> list[dict[str, Any]]:
    """Each change as ``{"path", "before", "after"}``, a side left out where the key is not there (``ABSENT``, which
    JSON's null would not tell apart from an explicit null)."""
    return [
        {
            "path": format_path(c.path),
            **{k: v for k, v in (("before", c.before), ("after", c.after)) if v is not ABSENT},
        }
        for c in found
    ]


# --------------------------------------------------------------------------------------------- manifests


@dataclass(frozen=True, order=True)
class ObjectKey:
    """Identity of a Kubernetes object within a release."""

    kind: str
    name: str
    group: str = ""
    namespace: str = ""

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{kind}/{self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass(frozen=True)
class ObjectChange:
    key: ObjectKey
    changes: tuple[Change, ...]
    old: ObjectKey | None = None
    """A replaced object's old key: a content-addressed object renamed, removed under ``old``, added under ``key``."""


@dataclass(frozen=True)
class ObjectsDiff:
    added: tuple[ObjectKey, ...]
    removed: tuple[ObjectKey, ...]
    changed: tuple[ObjectChange, ...]
    unchanged: tuple[ObjectKey, ...]
    replaced: tuple[ObjectChange, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.replaced or self.changed)

    def counts(self) -> str:
        return (
            f"{len(self.changed)} changed, {len(self.replaced)} replaced, {len(self.added)} added, "
            f"{len(self.removed)} removed, {len(self.unchanged)} unchanged"
        )

    def as_json(self) -> dict[str, Any]:
        """Objects as ``str(ObjectKey)``, each changed one with its changes (``changes_json``); docs/json.md."""
        return {
            "added": [str(key) for key in self.added],
            "removed": [str(key) for key in self.removed],
            "replaced": [
                {"object": str(c.key), "old": str(c.old), "changes": changes_json(c.changes)} for c in self.replaced
            ],
            "changed": [{"object": str(c.key), "changes": changes_json(c.changes)} for c in self.changed],
            "unchanged": len(self.unchanged),
        }


def object_key(manifest: Mapping[str, Any], namespace: str = "") -> ObjectKey:
    """The key of one manifest; ``namespace`` stands in where the manifest names none (the release namespace)."""
    api_version, metadata = str(manifest.get("apiVersion", "")), manifest.get("metadata") or {}
    if not manifest.get("kind") or not metadata.get("name"):
        raise ValueError(f"a manifest without kind or metadata.name: {format_value(dict(manifest))[:120]}")
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return ObjectKey(str(manifest["kind"]), str(metadata["name"]), group, str(metadata.get("namespace") or namespace))


def index(manifests: Iterable[Mapping[str, Any]], namespace: str = "", side: str = "") -> dict[ObjectKey, Any]:
    """The manifests by key. Raises ValueError for one without kind or name, or an object that appears twice."""
    indexed: dict[ObjectKey, Any] = {}
    for manifest in manifests:
        key = object_key(manifest, namespace)
        if key in indexed:
            raise ValueError(f"{side}: {key} appears twice (Helm refuses such a release)")
        indexed[key] = manifest
    return indexed


_HASH_SUFFIX = re.compile(r"-[0-9a-f]{6,}$")


def compare_objects(
    before: Iterable[Mapping[str, Any]],
    after: Iterable[Mapping[str, Any]],
    namespace: str = "",
    *,
    renames: bool = False,
) -> ObjectsDiff:
    """The objects of ``after`` against ``before``; ``namespace`` stands in where an object names none.

    With ``renames``, one removed and one added object of the same kind whose names differ only in a trailing content
    hash (``<release>-envoy-external-<hash>``) are one object *replaced*, compared field by field. Raises ValueError
    as ``index`` does.
    """
    old, new = index(before, namespace, "before"), index(after, namespace, "after")
    found = {key: tuple(changes(old[key], new[key])) for key in sorted(old.keys() & new.keys())}
    added, removed = sorted(new.keys() - old.keys()), sorted(old.keys() - new.keys())
    stems: dict[Any, tuple[list[ObjectKey], list[ObjectKey]]] = {}
    for side, keys in ((0, removed), (1, added)) if renames else ():
        for key in keys:
            if _HASH_SUFFIX.search(key.name):
                stem = (key.group, key.kind, key.namespace, _HASH_SUFFIX.sub("", key.name))
                stems.setdefault(stem, ([], []))[side].append(key)
    replaced = [
        ObjectChange(came[0], tuple(changes(old[gone[0]], new[came[0]])), gone[0])
        for gone, came in stems.values()
        if len(gone) == len(came) == 1
    ]
    paired = {r.old for r in replaced} | {r.key for r in replaced}
    return ObjectsDiff(
        added=tuple(k for k in added if k not in paired),
        removed=tuple(k for k in removed if k not in paired),
        changed=tuple(ObjectChange(key, c) for key, c in found.items() if c),
        unchanged=tuple(key for key, c in found.items() if not c),
        replaced=tuple(replaced),
    )
