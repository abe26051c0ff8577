"""Two trees field by field, manifests object by object as Helm matches them, and the one way a change is written."""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ABSENT: Any = object()  # the value of a key that is not there (compared by identity)


@dataclass(frozen=True)
class Named:
    name: str  # a path segment: the list item of this name


Path = tuple[str | Named, ...]
Manifests = Iterable[Mapping[str, Any]]


@dataclass(frozen=True)
class Change:
    path: Path
    before: Any
    after: Any

    def as_json(self) -> dict[str, Any]:
        """``{"path", "before", "after"}``, an ``ABSENT`` side left out (null is a value)."""
        return {**{k: v for k, v in vars(self).items() if v is not ABSENT}, "path": format_path(self.path)}


def changes(before: Any, after: Any, path: Path = ()) -> list[Change]:
    """Every leaf where ``after`` differs from ``before``: a one-sided mapping leaf by leaf, a named item whole."""
    old, new = (side if isinstance(side, Mapping) else {} for side in (before, after))
    if None not in (items := [_named_items(side) for side in (before, after)]):
        old, new = ({Named(name): item for name, item in named.items()} for named in items)  # type: ignore[union-attr]
    elif not (old or new) or not all(side is ABSENT or isinstance(side, Mapping) for side in (before, after)):
        as_json = [json.dumps(side, sort_keys=True, default=str) for side in (before, after)]  # true is not 1 in YAML
        return [] if as_json[0] == as_json[1] else [Change(path, before, after)]
    found: list[Change] = []
    for key in sorted(old.keys() | new.keys(), key=str):
        at, a, b = (*path, key if isinstance(key, Named) else str(key)), old.get(key, ABSENT), new.get(key, ABSENT)
        found += [Change(at, a, b)] if isinstance(key, Named) and ABSENT in (a, b) else changes(a, b, at)
    return found


def _named_items(value: Any) -> dict[str, Any] | None:
    """A non-empty list of mappings by their distinct string ``name``; None for any other value."""
    names: list[Any] = (
        [i.get("name") if isinstance(i, Mapping) else None for i in value] if isinstance(value, list) else []
    )
    distinct = all(isinstance(n, str) for n in names) and len(set(names)) == len(names)
    return dict(zip(names, value, strict=True)) if names and distinct else None


def is_under(path: Path, prefix: Path) -> bool:
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
    body = text.replace("|", "\\|").replace("\n", " ")
    return "" if not text else f"`` {body} ``" if "`" in body else f"`{body}`"


def cut(text: str, width: int) -> str:
    """``text``, or its first ``width`` - 1 characters and …"""
    return text if len(text) <= width else text[: width - 1] + "…"


def markdown_value(value: Any, width: int | None = None) -> str:
    """A value as a markdown cell, *(not set)* for ``ABSENT``, cut to ``width``."""
    return "*(not set)*" if value is ABSENT else markdown_cell(cut(format_value(value), width or sys.maxsize))


def markdown_table(columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """``| path | before | after | more |`` for rows of (change, *more cells); a multi-line text's diff below it."""
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


@dataclass(frozen=True, order=True)
class ObjectKey:
    kind: str
    name: str
    group: str = ""
    namespace: str = ""

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return "/".join(filter(None, (kind, self.namespace, self.name)))


@dataclass(frozen=True)
class ObjectChange:
    key: ObjectKey
    changes: tuple[Change, ...]
    old: ObjectKey | None = None  # a replaced (content-addressed, renamed) object's old key

    def as_json(self) -> dict[str, Any]:
        old = {"old": str(self.old)} if self.old else {}
        return {"object": str(self.key), **old, "changes": [c.as_json() for c in self.changes]}


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
        kinds = ("changed", "replaced", "added", "removed", "unchanged")
        return ", ".join(f"{len(getattr(self, kind))} {kind}" for kind in kinds)

    def as_json(self) -> dict[str, Any]:
        """docs/json.md."""
        keys = {kind: [str(key) for key in getattr(self, kind)] for kind in ("added", "removed")}
        objects = {kind: [c.as_json() for c in getattr(self, kind)] for kind in ("replaced", "changed")}
        return {**keys, **objects, "unchanged": len(self.unchanged)}


def object_key(manifest: Mapping[str, Any], namespace: str = "") -> ObjectKey:
    """``namespace`` stands in where the manifest names none (Helm refuses one without kind or name)."""
    api_version, metadata = str(manifest.get("apiVersion", "")), manifest.get("metadata") or {}
    group, name = api_version.rpartition("/")[0], str(metadata.get("name"))
    return ObjectKey(str(manifest.get("kind")), name, group, str(metadata.get("namespace") or namespace))


_HASH_SUFFIX = re.compile(r"-[0-9a-f]{6,}$")


def compare_objects(before: Manifests, after: Manifests, namespace: str = "", *, renames: bool = False) -> ObjectsDiff:
    """``after`` against ``before``; with ``renames`` a removed and an added object a hash apart are one replaced."""
    old, new = ({object_key(m, namespace): m for m in side} for side in (before, after))
    found = {key: tuple(changes(old[key], new[key])) for key in sorted(old.keys() & new.keys())}
    added, removed = sorted(new.keys() - old.keys()), sorted(old.keys() - new.keys())
    stems: dict[Any, list[ObjectKey]] = {}
    for key in [key for key in (*removed, *added) if renames and _HASH_SUFFIX.search(key.name)]:
        stems.setdefault((key.group, key.kind, key.namespace, _HASH_SUFFIX.sub("", key.name)), []).append(key)
    pairs = [keys for keys in stems.values() if len(keys) == 2 and keys[0] not in new and keys[1] not in old]
    replaced = tuple(ObjectChange(came, tuple(changes(old[gone], new[came])), gone) for gone, came in pairs)
    paired = {key for pair in pairs for key in pair}
    new_keys, old_keys = (tuple(key for key in keys if key not in paired) for keys in (added, removed))
    changed = tuple(ObjectChange(key, c) for key, c in found.items() if c)
    return ObjectsDiff(new_keys, old_keys, changed, tuple(key for key, c in found.items() if not c), replaced)
