"""Pulumi.yaml's config types and descriptions are generated from the settings models and cannot drift."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import ROOT

from supersonic_interlink.config import schema


def test_pulumi_yaml_says_what_the_settings_models_declare_in_types_the_pulumi_cli_accepts() -> None:
    assert schema.drift() == [], "run: python -m supersonic_interlink.config.schema --write"
    assert {d["type"] for d in schema.declarations().values()} <= {"string", "integer", "boolean", "array", "object"}


def test_regenerating_restores_the_file_and_keeps_defaults_and_comments(tmp_path: Path) -> None:
    copy = tmp_path / "Pulumi.yaml"
    shutil.copy(ROOT / "Pulumi.yaml", copy)
    assert schema.write(copy) is False, "the committed file is what the generator writes"
    text = copy.read_text().replace("type: string", "type: integer", 1)
    copy.write_text(text.replace("maxHistory (integer 1..", "maxHistory (integer ", 1) + "  stale:\n    type: string\n")
    assert schema.drift(copy) == [
        "config.stale: declared in Pulumi.yaml, not a setting",
        "config.namespace.type: differs from the settings models",
        "config.release.description: differs from the settings models",
    ]
    assert schema.write(copy) is True and copy.read_text() == (ROOT / "Pulumi.yaml").read_text()
