"""Helm post-renderer (``postrender/keda-trigger-timeout``): the release's ScaledObject's first trigger gets
``metadata.timeout``, in a list's ``items`` too; every other document passes byte for byte; bad input is one line."""

from __future__ import annotations

import re
import sys
from typing import Any

import yaml

from supersonic_interlink.contract import CHART

# KEDA's Prometheus scaler gives up after 3 s; Geddes' Prometheus answers more slowly under load, and a timed-out
# query reads as "no load", scaling Triton down mid-burst. The old release carried the same patch.
TRIGGER_TIMEOUT_MS = "60000"

# libyaml: the pure-Python parser takes minutes on a large release.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# YAML's document marker: "---" then a blank or the line's end, never at a line's start inside a scalar.
_SEPARATOR = re.compile(r"^(?=---(?:[ \t\r\n]|\Z))", re.MULTILINE)
_SEPARATOR_ONLY = re.compile(r"---(?:[ \t]+(?:#.*)?)?")
_SOURCE = re.compile(r"^# Source: (.+?)\r?$", re.MULTILINE)


class PostRenderError(Exception):
    pass


def _header(chunk: str) -> str:
    """The separator and leading comments (``# Source: ...``) kept on a rewrite; ``--- {kind: ...}`` becomes ``---``."""
    kept: list[str] = []
    for line in chunk.splitlines(keepends=True):
        text = line.rstrip("\r\n")
        if not (_SEPARATOR_ONLY.fullmatch(text) or text.startswith("#") or not text.strip()):
            if not kept and _SEPARATOR.match(text):
                kept.append("---" + _line_break(chunk))
            break
        kept.append(line)
    return "".join(kept)


def _line_break(chunk: str) -> str:
    return "\r\n" if "\r\n" in chunk else "\n"


def _shape(value: Any) -> str:
    return {dict: "a mapping", list: "a list", type(None): "null"}.get(type(value)) or repr(value)


def _mapping(parent: dict, key: str, where: str, path: str) -> dict:
    value = parent.get(key, ...)
    if not isinstance(value, dict):
        raise PostRenderError(f"{where}: {path} is {'missing' if value is ... else _shape(value)}; expected a mapping")
    return value


def _set_timeout(scaled_object: dict, where: str) -> bool:
    """Set the first trigger's timeout; True if the object changed."""
    where = f"{where}, ScaledObject"
    name = _mapping(scaled_object, "metadata", where, "metadata").get("name")
    if not isinstance(name, str) or not name.endswith(f"-{CHART.scaled_object_suffix}"):
        raise PostRenderError(
            f"{where}: metadata.name is {_shape(name)}, which does not end in -{CHART.scaled_object_suffix}: the "
            "chart's naming changed; update supersonic_interlink/contract.py"
        )
    where = f"{where} {name!r}"
    triggers = _mapping(scaled_object, "spec", where, "spec").get("triggers")
    if not isinstance(triggers, list) or not triggers:
        shape = "an empty list" if triggers == [] else _shape(triggers)
        raise PostRenderError(f"{where}: spec.triggers is {shape}; expected a list of triggers")
    first = triggers[0]
    if not isinstance(first, dict):
        raise PostRenderError(f"{where}: spec.triggers[0] is {_shape(first)}; expected a mapping")
    first.setdefault("metadata", {})
    metadata = _mapping(first, "metadata", where, "spec.triggers[0].metadata")
    changed = metadata.get("timeout") != TRIGGER_TIMEOUT_MS
    metadata["timeout"] = TRIGGER_TIMEOUT_MS
    return changed


def _patch_object(obj: Any, where: str) -> bool:
    """Patch ``obj`` in place if it is, or lists, the ScaledObject (Kubernetes deploys each of any ``items``)."""
    if isinstance(obj, dict) and isinstance(obj.get("items"), list):
        changed = [_patch_object(item, f"{where}, items[{i}]") for i, item in enumerate(obj["items"])]
        return any(changed)  # every item patched, not only up to the first
    return isinstance(obj, dict) and obj.get("kind") == "ScaledObject" and _set_timeout(obj, where)


def patch(stream: str) -> str:
    """The rendered stream with the trigger timeout set."""
    out = []
    for index, chunk in enumerate(filter(None, _SEPARATOR.split(stream)), 1):  # each keeps the line that opened it
        if not ("ScaledObject" in chunk or "\\" in chunk):  # an escape could spell the word: parse those too
            out.append(chunk)
            continue
        source = _SOURCE.search(_header(chunk))
        where = f"document {index}" + (f" ({source.group(1)})" if source else "")
        try:
            documents = list(yaml.load_all(chunk, Loader=LOADER))
        except yaml.YAMLError as error:
            reason = " ".join(str(error).split())
            raise PostRenderError(f"{where} is not valid YAML: {reason}") from None
        changed = [_patch_object(document, where) for document in documents]
        dumped = yaml.dump_all(documents, Dumper=DUMPER, sort_keys=False, line_break=_line_break(chunk))
        out.append(_header(chunk) + dumped if any(changed) else chunk)
    return "".join(out)


def main() -> int:
    try:
        sys.stdout.buffer.write(patch(sys.stdin.buffer.read().decode("utf-8")).encode("utf-8"))
    except (PostRenderError, UnicodeDecodeError) as error:
        said = (
            f"the rendered manifests are not UTF-8 (byte {error.start})" if isinstance(error, UnicodeError) else error
        )
        print(f"keda-trigger-timeout post-renderer: {said}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
