"""The config map the Pulumi CLI would pass for a stack, built without the CLI (sdk/go/common/resource/config), with
each ``secure:`` value replaced by ``SECRET_PLACEHOLDER`` and ``secret_paths`` saying where they sat."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supersonic_interlink.config.loading import cli_text, project_defaults
from supersonic_interlink.config.pulumi_yaml import YAMLInputError, read_pulumi_yaml
from supersonic_interlink.config.rules import PROJECT, PROJECT_FILE, SECRET_PLACEHOLDER, ConfigError, shorten

ROOT = PROJECT_FILE.parent
STACKS_DIR = ROOT / "stacks"

STACK_FILE_KEYS = ("config", "encryptedkey", "encryptionsalt", "environment", "secretsprovider")
"""``workspace.ProjectStack``'s keys: the CLI ignores others, so ``confg:`` would drop every setting unseen."""
_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}", re.ASCII)


def check_stack_name(stack: str) -> str:
    """``stack`` if the Pulumi CLI takes it as a stack name (tokens/stack_name.go ``ParseStackName``)."""
    if _STACK_NAME.fullmatch(stack) is None or stack in (".", ".."):
        allowed = f"1 to 100 letters, digits, '-', '_' or '.' (stacks: {', '.join(stack_names()) or 'none'})"
        raise ConfigError([f"stack {shorten(stack, 120)!r}: not a stack name; expected {allowed}"])
    return stack


def stack_file(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{check_stack_name(stack)}.yaml"


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def read_yaml_file(path: Path) -> Any:
    """A stack file or ``Pulumi.yaml`` as the CLI reads it; ``ConfigError`` naming the file."""
    try:
        return read_pulumi_yaml(path.read_bytes())
    except YAMLInputError as error:
        raise ConfigError([f"{_shown(path)}: {error}"]) from None


def full_key(key: str) -> str:
    """config/key.go ``ParseKey``; a bare name gets the project's namespace (``stackConfigNamespacedWithProject``)."""
    parts = key.split(":")
    if len(parts) == 1:
        return f"{PROJECT}:{key}"
    return f"{parts[0]}:{parts[2]}" if len(parts) == 3 and parts[1] == "config" else key


def _secrets(value: Any, path: str, found: dict[str, str]) -> Any:
    """``value`` with each ``{secure: ...}`` (config/object.go ``isSecureValue``) as the placeholder; ``found`` gets
    path -> ciphertext, in order."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("secure"), str):
        found[path] = value["secure"]
        return SECRET_PLACEHOLDER
    if isinstance(value, dict):
        return {key: _secrets(sub, f"{path}.{key}", found) for key, sub in value.items()}
    return [_secrets(sub, f"{path}[{i}]", found) for i, sub in enumerate(value)] if isinstance(value, list) else value


def secret_digests(stack_values: Mapping[str, Any]) -> dict[str, str]:
    """Path -> SHA-256 of its ciphertext: tells that a secret was set again, never what it is."""
    found: dict[str, str] = {}
    for key, value in stack_values.items():
        _secrets(value, full_key(key), found)
    return {path: hashlib.sha256(text.encode()).hexdigest() for path, text in found.items()}


def secret_paths(stack_values: Mapping[str, Any]) -> list[str]:
    return list(secret_digests(stack_values))


def secret_key_of(path: str) -> str:
    namespace, _, rest = path.partition(":")
    return f"{namespace}:{rest.split('.', 1)[0].split('[', 1)[0]}"


def merged_config(stack_values: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``Pulumi.yaml``'s defaults under a stack's ``config:`` map as the CLI merges them, values as read."""
    merged = {f"{PROJECT}:{k}": v for k, v in (project_defaults() if defaults is None else defaults).items()}
    seen: dict[str, str] = {}
    problems = []
    for key, value in stack_values.items():
        full = full_key(key)
        if full in seen:  # the CLI keeps one of the two at random (a Go map)
            problems.append(f"{full}: set twice, as {seen[full]!r} and {key!r}; keep one")
        seen[full] = key
        merged[full] = "" if value is None else _secrets(value, full, {})  # no value: the CLI passes ""
    if problems:
        raise ConfigError(problems)
    return dict(sorted(merged.items()))


def cli_config(stack_values: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``merged_config`` as the CLI hands it to the program, every value as text."""
    return {key: cli_text(value) for key, value in merged_config(stack_values, defaults).items()}


def read_stack_document(path: Path) -> dict[str, Any]:
    """The ``config:`` map of a stack file, after the checks of the file's shape."""
    document, shown = read_yaml_file(path), _shown(path)
    if not isinstance(document, dict):
        raise ConfigError([f"{shown}: expected a mapping with a 'config:' key at the top level"])
    problems = [
        f"{shown}: unknown top-level key {key!r} (expected {', '.join(STACK_FILE_KEYS)})"
        for key in sorted(set(document) - set(STACK_FILE_KEYS))
    ]
    if document.get("environment") is not None:
        problems.append(f"{shown}: 'environment' imports Pulumi ESC environments, which rendering offline cannot read")
    values = {} if document.get("config") is None else document["config"]
    if not isinstance(values, dict):
        problems.append(f"{shown}: 'config' must be a map of keys to values")
    if problems:
        raise ConfigError(problems)
    return values


@dataclass(frozen=True)
class StackConfig:
    """A stack file read once: ``merged_config`` and ``secret_paths``."""

    config: dict[str, Any]
    secrets: list[str]

    @property
    def secret_keys(self) -> list[str]:
        return sorted({secret_key_of(path) for path in self.secrets})


def load_stack(stack: str) -> StackConfig:
    """``stacks/Pulumi.<stack>.yaml``, read and checked once."""
    path = stack_file(stack)
    if not path.is_file():
        known = ", ".join(stack_names()) or "none"
        raise ConfigError([f"stack {stack!r}: no file {path.relative_to(ROOT)} (stacks: {known})"])
    values = read_stack_document(path)
    return StackConfig(merged_config(values), secret_paths(values))


def load_stack_config(stack: str) -> dict[str, str]:
    """The config map the CLI would pass for ``stacks/Pulumi.<stack>.yaml``, as text."""
    return {key: cli_text(value) for key, value in load_stack(stack).config.items()}
