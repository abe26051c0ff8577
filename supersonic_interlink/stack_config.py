"""The config map the Pulumi CLI would pass the program for a stack, built without the CLI.

The CLI merges each key declared in ``Pulumi.yaml`` that the stack file does not set from its ``default``
(a stack value replaces the default whole), and hands the program every value as text: strings as they are,
everything else as JSON. ``render.py`` and the tests use this so they evaluate the program exactly as
``pulumi up`` would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .settings import PROJECT, PROJECT_FILE, ConfigError, load_yaml, project_defaults

ROOT = PROJECT_FILE.parent
STACKS_DIR = ROOT / "stacks"


def stack_file(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


def stack_names() -> list[str]:
    """Every stack with a file in ``stacks/``, sorted."""
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def _as_cli_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def cli_config(stack_values: dict[str, Any], defaults: dict[str, Any] | None = None) -> dict[str, str]:
    """Merge ``Pulumi.yaml`` defaults under a stack's ``config:`` map the way the CLI does, as CLI text."""
    defaults = project_defaults() if defaults is None else defaults
    merged: dict[str, Any] = {f"{PROJECT}:{key}": value for key, value in defaults.items()}
    for key, value in stack_values.items():
        full = key if ":" in key else f"{PROJECT}:{key}"
        if isinstance(value, dict) and "secure" in value and len(value) == 1:
            raise ConfigError([f"{full}: is a secret; rendering offline cannot decrypt it (use `pulumi preview`)"])
        merged[full] = value
    return {key: _as_cli_text(value) for key, value in sorted(merged.items())}


def load_stack_config(stack: str) -> dict[str, str]:
    """The CLI-equivalent config map of ``stacks/Pulumi.<stack>.yaml``."""
    path = stack_file(stack)
    if not path.is_file():
        known = ", ".join(stack_names()) or "none"
        raise ConfigError([f"stack {stack!r}: no file {path.relative_to(ROOT)} (stacks: {known})"])
    try:
        document = load_yaml(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError([f"{path.relative_to(ROOT)}: not valid YAML: {exc}"]) from None
    values = document.get("config") or {}
    if not isinstance(values, dict):
        raise ConfigError([f"{path.relative_to(ROOT)}: 'config' must be a map of keys to values"])
    return cli_config(values)
