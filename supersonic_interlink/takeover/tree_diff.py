"""Field-by-field differences between two YAML-shaped trees (Helm values, Kubernetes objects).

Mappings are compared key by key. A list whose items are all mappings with distinct ``name`` keys (containers,
volumes, env, ports) is compared item by item by name, so an inserted container does not shift every later one;
any other list is one value. A key missing on one side is ``ABSENT``, which is not the same as an explicit null
(Helm reads a null as "delete this chart default").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class _Absent:
    """The value of a key that is not there (compared by identity: there is one)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class Named:
    """Path segment of a list item matched by its ``name``."""

    name: str


Segment = str | Named
Path = tuple[Segment, ...]


@dataclass(frozen=True)
class Change:
    """One field that differs: its path, the value before and the value after (either may be ``ABSENT``)."""

    path: Path
    before: Any
    after: Any


def changes(before: Any, after: Any, path: Path = ()) -> list[Change]:
    """Every leaf where ``after`` differs from ``before``, in a stable order (keys sorted, named items by name).

    A mapping present on one side only is reported leaf by leaf, each leaf ``ABSENT`` on the other side; a named
    list item present on one side only is reported whole.
    """
    if _mapping_or_absent(before) and _mapping_or_absent(after) and not (before is ABSENT and after is ABSENT):
        old = before if isinstance(before, Mapping) else {}
        new = after if isinstance(after, Mapping) else {}
        if old or new:
            found: list[Change] = []
            for key in sorted(set(old) | set(new), key=str):
                found.extend(changes(old.get(key, ABSENT), new.get(key, ABSENT), (*path, str(key))))
            return found
    before_items, after_items = _named_items(before), _named_items(after)
    if before_items is not None and after_items is not None:
        found = []
        for name in sorted(set(before_items) | set(after_items)):
            old_item, new_item = before_items.get(name, ABSENT), after_items.get(name, ABSENT)
            if old_item is ABSENT or new_item is ABSENT:
                # A whole container (volume, port) added or removed reads best as the item itself.
                found.append(Change((*path, Named(name)), old_item, new_item))
            else:
                found.extend(changes(old_item, new_item, (*path, Named(name))))
        return found
    if before is ABSENT or after is ABSENT:
        return [] if before is after else [Change(path, before, after)]
    if _same(before, after):
        return []
    return [Change(path, before, after)]


def _mapping_or_absent(value: Any) -> bool:
    return value is ABSENT or isinstance(value, Mapping)


def _named_items(value: Any) -> dict[str, Mapping[str, Any]] | None:
    """The items of a list of mappings keyed by their distinct string ``name``; None for any other value."""
    if not isinstance(value, list) or not value:
        return None
    items: dict[str, Mapping[str, Any]] = {}
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
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


def markdown_cell(text: str) -> str:
    """``text`` as inline code in a markdown table cell (pipes escaped, so the row stays one row)."""
    if not text:
        return ""
    body = text.replace("|", "\\|").replace("\n", " ")
    fence = "``" if "`" in body else "`"
    return f"{fence} {body} {fence}" if fence == "``" else f"`{body}`"


def markdown_value(value: Any) -> str:
    """A value for a markdown table cell: code, or *(not set)* for a missing key."""
    return "*(not set)*" if value is ABSENT else markdown_cell(format_value(value))
