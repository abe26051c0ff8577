"""``Pulumi.yaml``'s ``config:`` types, descriptions and defaults, from the models' ``model_json_schema()``:
``python -m supersonic_interlink.config.schema --write`` rewrites them, comments kept."""

from __future__ import annotations

import argparse
import io
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

from supersonic_interlink.config.loading import project_defaults
from supersonic_interlink.config.rules import PROJECT_FILE, ConfigError, Settings
from supersonic_interlink.config.stack_config import read_yaml_file

WIDTH = 112  # Pulumi.yaml's 120 columns at the descriptions' indentation
SCHEMA = Settings.model_json_schema()
_TYPES = {"boolean": "boolean", "integer": "integer", "string": "string", "array": "list", "object": "map"}


def _inner(field: dict[str, Any]) -> dict[str, Any]:
    kinds = [s for s in field.get("anyOf", [field]) if s.get("type") != "null"]
    if len(kinds) == 1:
        field = {**{k: v for k, v in field.items() if k != "anyOf"}, **kinds[0]}
    return SCHEMA["$defs"][field["$ref"].rsplit("/", 1)[1]] if "$ref" in field else field


def type_word(field: dict[str, Any]) -> str:
    inner = _inner(field)
    if "properties" in inner:
        return "object"
    bounds = f" {inner['minimum']}..{inner['maximum']}" if "minimum" in inner and "maximum" in inner else ""
    return _TYPES[inner["type"]] + (bounds if inner["type"] == "integer" else "")


def _what(field: dict[str, Any]) -> str:
    inner = field if "$ref" in field else _inner(field)
    return field.get("description") or inner.get("x-expected") or ""


def _wrap(line: str, indent: str) -> list[str]:
    return textwrap.wrap(line, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False)


def _field_lines(model: dict[str, Any], indent: str) -> Iterator[str]:
    for name, field in model["properties"].items():
        what = _what(field)
        yield from _wrap(f"{name} ({type_word(field)})" + (f": {what}" if what else ""), indent)
        if type_word(field) == "object" and not field.get("description"):
            yield from _field_lines(_inner(field), indent + "  ")


def declarations() -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = {}
    defaults = project_defaults()
    for name, field in SCHEMA["properties"].items():
        kind = type_word(field)
        if kind == "object":
            model = _inner(field)
            lines = [*_wrap(" ".join(model["description"].split("\n\n")[0].split()), ""), *_field_lines(model, "")]
        else:
            lines = _wrap(_what(field), "")
        text = lines[0] if len(lines) == 1 else "\n".join(lines) + "\n"
        result[name] = {"type": "object" if kind == "map" else kind, "description": text}
        if name in defaults:
            result[name]["default"] = defaults[name]
    return result


def _declared(project_file: Path) -> dict[str, Any]:
    document = read_yaml_file(project_file)
    if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
        raise ConfigError([f"{project_file.name}: expected a mapping with a 'config:' mapping of the project's keys"])
    return document["config"]


def drift(project_file: Path = PROJECT_FILE) -> list[str]:
    declared, wanted = _declared(project_file), declarations()
    found = [f"config.{key}: declared in Pulumi.yaml, not a setting" for key in sorted(set(declared) - set(wanted))]
    for key, want in wanted.items():
        have = declared[key] if isinstance(declared.get(key), dict) else {}
        differs = [part for part in dict.fromkeys([*want, "default"]) if have.get(part) != want.get(part)]
        found += [f"config.{key}.{part}: differs from the settings models" for part in differs]
    return found


def write(project_file: Path = PROJECT_FILE) -> bool:
    """Rewrite ``Pulumi.yaml``'s types, descriptions and defaults; True when the file changed."""
    yaml = YAML(typ="rt")
    yaml.width, yaml.preserve_quotes = 120, True
    yaml.indent(mapping=2, sequence=4, offset=2)
    before = project_file.read_text()
    config = (document := yaml.load(before))["config"]
    declared = _declared(project_file)
    for key in [k for k in config if k not in Settings.model_fields]:
        del config[key]
    for key, want in declarations().items():
        entry = config.setdefault(key, {})
        entry["type"], text = want["type"], want["description"]
        entry["description"] = LiteralScalarString(text) if "\n" in text else text
        if "default" not in want:
            entry.pop("default", None)
        elif (declared.get(key) or {}).get("default") != want["default"]:  # as it is, with its comments, if it is
            entry["default"] = want["default"]
    out = io.StringIO()
    yaml.dump(document, out)
    after = out.getvalue()
    if after != before:
        project_file.write_text(after)
    return after != before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check or rewrite Pulumi.yaml's config types and descriptions.")
    parser.add_argument("--write", action="store_true", help="rewrite them from the settings models")
    if parser.parse_args(argv).write:
        print("Pulumi.yaml: rewritten" if write() else "Pulumi.yaml: already up to date")
        return 0
    if found := drift():
        print("\n".join(f"Pulumi.yaml {line}" for line in found), file=sys.stderr)
        print("run: .venv/bin/python -m supersonic_interlink.config.schema --write", file=sys.stderr)
        return 1
    print("Pulumi.yaml: config types and descriptions match the settings models")
    return 0


if __name__ == "__main__":
    sys.exit(main())
