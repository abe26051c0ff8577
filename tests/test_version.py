"""``./supersonic --version``: the project's version, each stack's chart as its file pins it, and the pinned tools."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from cli_runner import run_cli
from conftest import ROOT

from supersonic_interlink.config import stack_config

COMMIT = "42b2b9334db34ebd51ac97f18a0301922cbe90cb"


def test_version_prints_the_project_version_and_commit_each_stacks_chart_and_the_pinned_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hammer = re.sub(r"(?m)^ +commit: .*\n", "", (ROOT / "stacks" / "Pulumi.hammer.yaml").read_text())
    pinned = hammer.replace(
        "      path: helm/supersonic\n", f"      path: helm/supersonic\n      commit: {COMMIT}\n", 1
    )
    assert pinned != hammer
    (tmp_path / "Pulumi.pinned.yaml").write_text(pinned)
    (tmp_path / "Pulumi.loose.yaml").write_text(hammer)
    (tmp_path / "Pulumi.broken.yaml").write_text("config: [\n")
    (tmp_path / "Pulumi.local.yaml").write_text(
        "config:\n  supersonic-interlink:release:\n    chart: {path: charts/x}\n"
    )
    monkeypatch.setattr(stack_config, "STACKS_DIR", tmp_path)
    done = run_cli("--version")
    assert done.returncode == 0, done.stderr
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version != "0.0.0", "a placeholder version says nothing about what runs"
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"supersonic-interlink {version}+g{commit.stdout.strip()}"), (
        "the version pyproject.toml states (nothing installs the package, so there is no metadata), and the commit"
    )
    assert lines[1].startswith("  stack broken: chart unreadable (") and "not valid YAML" in lines[1], (
        "a stack file that cannot be read is named, and the rest still printed"
    )
    assert lines[2:5] == [
        "  stack local: chart directory charts/x",
        "  stack loose: chart https://github.com/fastmachinelearning/SuperSONIC unpinned",
        f"  stack pinned: chart https://github.com/fastmachinelearning/SuperSONIC {COMMIT}",
    ], "each stack's chart exactly as its file says"
    assert lines[5:] == [
        "  Pulumi CLI v3.274.1, Kubernetes provider v4.25.0 (tools/*/go.mod)",
        "  Helm v3.18.0, kubectl v1.34.5 (chart/binaries.py)",
    ]
    monkeypatch.setenv("PATH", "/nonexistent")  # without git the version stands alone
    alone = run_cli("--version")
    assert alone.stdout.splitlines()[0] == f"supersonic-interlink {version}" and "Traceback" not in alone.stderr


def test_help_ends_with_the_hint_for_one_verb() -> None:
    done = subprocess.run([str(ROOT / "supersonic"), "--help"], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1].endswith("every verb; `./supersonic <verb> --help` for one"), done.stdout
    assert "./supersonic --version" in done.stdout
