"""Two trees field by field (named list items by name, ``ABSENT`` apart from null, ``true`` not ``1``), two manifest
sets object by object as Helm matches them, and the one way a path and a value are written: takeover, diff, drift."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ABSENT: Any = object()
"""The value of a key that is not there (compared by identity)."""


@dataclass(frozen=True)
class Named:
    """Path segment of a list item matched by its ``name``."""

    name: str


Path = tuple[str | Named, ...]
Manifests = Iterable[Mapping[str, Any]]


@dataclass(frozen=True)
class Change:
    path: Path
    before: Any
    after: Any


def changes(before: Any, after: Any, path: Path = ()) -> list[Change]:
    """Every leaf where ``after`` differs from ``before``: a one-sided mapping leaf by leaf, a named item whole."""
    if (before is ABSENT or isinstance(before, Mapping)) and (after is ABSENT or isinstance(after, Mapping)):
        old, new = (side if isinstance(side, Mapping) else {} for side in (before, after))
        if old or new:
            keys = sorted(set(old) | set(new), key=str)
            return [c for k in keys for c in changes(old.get(k, ABSENT), new.get(k, ABSENT), (*path, str(k)))]
    old_items, new_items = _named_items(before), _named_items(after)
    if old_items is not None and new_items is not None:
        found: list[Change] = []
        for name in sorted(old_items.keys() | new_items.keys()):
            old, new, at = old_items.get(name, ABSENT), new_items.get(name, ABSENT), (*path, Named(name))
            found += [Change(at, old, new)] if old is ABSENT or new is ABSENT else changes(old, new, at)
        return found
    return [] if _same(before, after) else [Change(path, before, after)]


def _named_items(value: Any) -> dict[str, Any] | None:
    """A non-empty list of mappings by their distinct string ``name``; None for any other value."""
    names: list[Any] = (
        [i.get("name") if isinstance(i, Mapping) else None for i in value] if isinstance(value, list) else []
    )
    distinct = all(isinstance(n, str) for n in names) and len(set(names)) == len(names)
    return dict(zip(names, value, strict=True)) if names and distinct else None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return isinstance(a, bool) == isinstance(b, bool) and bool(a == b)  # True is 1 in Python, not in YAML


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
        tree = value_at(tree, (segment,)) if isinstance(segment, Named) else tree.setdefault(segment, {})
    if isinstance(last, Named):
        at = next((i for i, item in enumerate(tree) if item.get("name") == last.name), len(tree))
        tree[at : at + 1] = [] if value is ABSENT else [value]
    elif value is ABSENT:
        tree.pop(last, None)
    else:
        tree[last] = value


def value_at(tree: Any, path: Path) -> Any:
    """The value at ``path``, ``ABSENT`` where there is none."""
    for segment in path:
        found, key = (_named_items(tree), segment.name) if isinstance(segment, Named) else (tree, segment)
        tree = found.get(key, ABSENT) if isinstance(found, Mapping) else ABSENT
    return tree


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def format_path(path: Path) -> str:
    """``triton.annotations["slurm-job.vk.io/flags"]``, ``spec.containers[name=envoy].image``."""
    parts = (
        f"[name={s.name}]" if isinstance(s, Named) else f".{s}" if _PLAIN_KEY.match(s) else f"[{json.dumps(s)}]"
        for s in path
    )
    return "".join(parts).removeprefix(".")


def format_value(value: Any) -> str:
    """``(not set)``, a string as it is, anything else as compact JSON."""
    if value is ABSENT:
        return "(not set)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(", ", ": "))


def markdown_cell(text: str) -> str:
    """``text`` as inline code in one markdown table cell."""
    if not text:
        return ""
    body = text.replace("|", "\\|").replace("\n", " ")
    return f"`` {body} ``" if "`" in body else f"`{body}`"


def cut(text: str, width: int) -> str:
    """``text``, or its first ``width`` - 1 characters and …"""
    return text if len(text) <= width else text[: width - 1] + "…"


def markdown_value(value: Any, width: int | None = None) -> str:
    """A value as a markdown cell, *(not set)* for ``ABSENT``, cut to ``width``."""
    if value is ABSENT:
        return "*(not set)*"
    return markdown_cell(format_value(value) if width is None else cut(format_value(value), width))


def markdown_table(columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """``| path | before | after | more |`` for rows of (change, *more cells), ``columns`` their headings; a multi-line
    text is too long for a cell, so its row points to its unified diff below the table, with the sides' headings."""
    texts = [c for c, *_ in rows if any(isinstance(v, str) and "\n" in v for v in (c.before, c.after))]
    lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    for c, *more in rows:
        sides = ["*(text: see below)*"] * 2 if c in texts else [markdown_value(c.before), markdown_value(c.after)]
        lines.append("| " + " | ".join([markdown_cell(format_path(c.path)), *sides, *more]) + " |")
    for c in texts:
        head = [f"--- {columns[1]}", f"+++ {columns[2]}"]
        lines += ["", f"`{format_path(c.path)}`:", "", "```diff", *head, *text_diff(c.before, c.after), "```"]
    return lines


def text_diff(before: Any, after: Any) -> list[str]:
    """Unified-diff hunks without header, two lines of context; a side that is not text reads as empty."""
    old, new = (value.splitlines() if isinstance(value, str) else [] for value in (before, after))
    return list(difflib.unified_diff(old, new, n=2, lineterm=""))[2:]


def changes_json(found: Iterable[Change]) -> list[dict[str, Any]]:
    """Each change as ``{"path", "before", "after"}``, an ``ABSENT`` side left out (null is a value)."""
    return [{"path": format_path(c.path), **_set(before=c.before, after=c.after)} for c in found]


def _set(**sides: Any) -> dict[str, Any]:
    return {name: value for name, value in sides.items() if value is not ABSENT}


@dataclass(frozen=True, order=True)
class ObjectKey:
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
    """A replaced (content-addressed, renamed) object's old key."""


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
        """docs/json.md."""
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
    """``namespace`` stands in where the manifest names none."""
    api_version, metadata = str(manifest.get("apiVersion", "")), manifest.get("metadata") or {}
    if not manifest.get("kind") or not metadata.get("name"):
        raise ValueError(f"a manifest without kind or metadata.name: {format_value(dict(manifest))[:120]}")
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return ObjectKey(str(manifest["kind"]), str(metadata["name"]), group, str(metadata.get("namespace") or namespace))


def index(manifests: Manifests, namespace: str = "", side: str = "") -> dict[ObjectKey, Any]:
    """The manifests by key; ValueError for one without kind or name, or one that appears twice."""
    indexed: dict[ObjectKey, Any] = {}
    for manifest in manifests:
        key = object_key(manifest, namespace)
        if key in indexed:
            raise ValueError(f"{side}: {key} appears twice (Helm refuses such a release)")
        indexed[key] = manifest
    return indexed


_HASH_SUFFIX = re.compile(r"-[0-9a-f]{6,}$")


def compare_objects(before: Manifests, after: Manifests, namespace: str = "", *, renames: bool = False) -> ObjectsDiff:
    """``after`` against ``before``; with ``renames``, one removed and one added object of a kind whose names differ
    only in a trailing content hash are one object replaced. ValueError as ``index``."""
    old, new = index(before, namespace, "before"), index(after, namespace, "after")
    found = {key: tuple(changes(old[key], new[key])) for key in sorted(old.keys() & new.keys())}
    added, removed = sorted(new.keys() - old.keys()), sorted(old.keys() - new.keys())
    stems: dict[Any, list[ObjectKey]] = {}
    for key in (*removed, *added) if renames else ():
        if _HASH_SUFFIX.search(key.name):
            stems.setdefault((key.group, key.kind, key.namespace, _HASH_SUFFIX.sub("", key.name)), []).append(key)
    # One removed and one added object of a stem: removed keys come first, and a removed key is not in ``new``.
    pairs = [keys for keys in stems.values() if len(keys) == 2 and keys[0] not in new and keys[1] not in old]
    replaced = [ObjectChange(came, tuple(changes(old[gone], new[came])), gone) for gone, came in pairs]
    paired = {r.old for r in replaced} | {r.key for r in replaced}
    return ObjectsDiff(
        added=tuple(k for k in added if k not in paired),
        removed=tuple(k for k in removed if k not in paired),
        changed=tuple(ObjectChange(key, c) for key, c in found.items() if c),
        unchanged=tuple(key for key, c in found.items() if not c),
        replaced=tuple(replaced),
    )
