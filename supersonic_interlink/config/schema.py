"""``Pulumi.yaml``'s ``config:`` types and descriptions, generated from the settings models.

The models in ``config/model*.py`` are the one declaration of every key; ``Pulumi.yaml`` carries what the Pulumi CLI
needs (each key's ``type``) and what ``pulumi config`` shows (its ``description``), plus the defaults, which are written
only there. ``tests/test_schema.py`` fails when the file and the models drift apart;

    .venv/bin/python -m supersonic_interlink.config.schema --write

rewrites the types and descriptions in place (comments and defaults are kept; run it after changing a model).
"""

from __future__ import annotations

import argparse
import io
import sys
import textwrap
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import annotated_types
from pydantic.fields import FieldInfo
from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

from supersonic_interlink.config import PROJECT_FILE, Expect, Model, Settings, Why, expanded

WIDTH = 112
"""Description lines are wrapped to fit Pulumi.yaml's 120 columns at their indentation."""


def _unwrap(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    while True:
        if typing.get_origin(annotation) is Annotated:
            inner, *extra = typing.get_args(annotation)
            annotation, metadata = inner, [*metadata, *expanded(extra)]
            continue
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if typing.get_origin(annotation) in (typing.Union, type(int | None)) and len(args) == 1:
            annotation = args[0]
            continue
        return annotation, metadata


def _bounds(metadata: list[Any]) -> str:
    low = next((m.ge for m in metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in metadata if isinstance(m, annotated_types.Le)), None)
    return f" {low}..{high}" if low is not None and high is not None else ""


def type_word(info: FieldInfo) -> str:
    """The Pulumi config type of a field, with its bounds for integers."""
    annotation, metadata = _unwrap(info.annotation, expanded(info.metadata))
    if isinstance(annotation, type) and issubclass(annotation, Model):
        return "object"
    if annotation is bool:
        return "boolean"
    if annotation is int:
        return "integer" + _bounds(metadata)
    if annotation is str:
        return "string"
    origin = typing.get_origin(annotation)
    if origin in (tuple, list):
        return "list"
    if origin in (Mapping, dict, typing.Mapping):
        return "map"
    return "string or integer"


def _what(info: FieldInfo) -> str:
    if info.description:
        return info.description
    _, metadata = _unwrap(info.annotation, expanded(info.metadata))
    for marker in (Why, Expect):
        text = next((m.text for m in reversed(metadata) if isinstance(m, marker)), None)
        if text:
            return text
    return ""


def _wrap(line: str, indent: str) -> list[str]:
    return textwrap.wrap(line, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False)


def _model(info: FieldInfo) -> type[Model] | None:
    annotation, _ = _unwrap(info.annotation, list(info.metadata))
    return annotation if isinstance(annotation, type) and issubclass(annotation, Model) else None


def describe(cls: type[Model]) -> str:
    """One line for the object, then one per field: ``name (type): what``; nested objects indent their fields."""
    lines = _wrap(" ".join((cls.__doc__ or "").strip().split("\n\n")[0].split()), "")
    lines += _field_lines(cls, "")
    return "\n".join(lines) + "\n"


def _field_lines(cls: type[Model], indent: str) -> list[str]:
    lines = []
    for name, info in cls.model_fields.items():
        what = _what(info)
        lines += _wrap(f"{name} ({type_word(info)})" + (f": {what}" if what else ""), indent)
        sub = _model(info)
        if sub is not None and not info.description:
            lines += _field_lines(sub, indent + "  ")
    return lines


def declarations() -> dict[str, dict[str, str]]:
    """``{key: {type, description}}`` for every top-level config key."""
    result: dict[str, dict[str, str]] = {}
    for name, info in Settings.model_fields.items():
        sub = _model(info)
        if sub is not None:
            result[name] = {"type": "object", "description": describe(sub)}
        else:
            kind = type_word(info)
            lines = _wrap(_what(info), "")
            text = lines[0] if len(lines) == 1 else "\n".join(lines) + "\n"
            result[name] = {"type": "object" if kind == "map" else kind, "description": text}
    return result


def drift(project_file: Path = PROJECT_FILE) -> list[str]:
    """Where ``Pulumi.yaml`` differs from the models: one line per key and field."""
    from supersonic_interlink.config.pulumi_yaml import read_pulumi_yaml

    declared = (read_pulumi_yaml(project_file.read_bytes()) or {}).get("config") or {}
    wanted = declarations()
    found = [f"config.{key}: declared in Pulumi.yaml, not a setting" for key in sorted(set(declared) - set(wanted))]
    for key, want in wanted.items():
        have = declared.get(key)
        if not isinstance(have, dict):
            found.append(f"config.{key}: missing from Pulumi.yaml")
            continue
        for part in ("type", "description"):
            if have.get(part) != want[part]:
                found.append(f"config.{key}.{part}: differs from the settings models")
    return found


def write(project_file: Path = PROJECT_FILE) -> bool:
    """Rewrite the types and descriptions in ``Pulumi.yaml``; True when the file changed."""
    yaml = YAML(typ="rt")
    yaml.width = 120
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.preserve_quotes = True
    before = project_file.read_text()
    document = yaml.load(before)
    config = document["config"]
    for key, want in declarations().items():
        if key not in config:
            config[key] = {}
        config[key]["type"] = want["type"]
        text = want["description"]
        config[key]["description"] = LiteralScalarString(text) if "\n" in text else text
    for key in [k for k in config if k not in Settings.model_fields]:
        del config[key]
    out = io.StringIO()
    yaml.dump(document, out)
    after = out.getvalue()
    if after != before:
        project_file.write_text(after)
    return after != before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check or rewrite Pulumi.yaml's config types and descriptions.")
    parser.add_argument("--write", action="store_true", help="rewrite them from the settings models")
    args = parser.parse_args(argv)
    if args.write:
        print("Pulumi.yaml: rewritten" if write() else "Pulumi.yaml: already up to date")
        return 0
    found = drift()
    for line in found:
        print(f"Pulumi.yaml {line}", file=sys.stderr)
    if found:
        print("run: .venv/bin/python -m supersonic_interlink.config.schema --write", file=sys.stderr)
        return 1
    print("Pulumi.yaml: config types and descriptions match the settings models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
