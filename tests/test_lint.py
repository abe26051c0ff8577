"""`./supersonic lint` (scripts/lint.sh) fails on a formatting slip or a type error and says how to fix it.

Each case runs the real script, with the project's ruff and mypy from .venv, over a one-file tree that carries the
project's own tool configuration (its mypy file list narrowed to that file).
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT


def lint_tree(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "lint.sh", tmp_path / "scripts" / "lint.sh")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ruff = config["tool"]["ruff"]
    (tmp_path / "pyproject.toml").write_text(
        "[tool.ruff]\n"
        f"line-length = {ruff['line-length']}\n"
        f'target-version = "{ruff["target-version"]}"\n'
        "[tool.ruff.lint]\n"
        f"select = {ruff['lint']['select']!r}\n"
        f"ignore = {ruff['lint']['ignore']!r}\n"
        "[tool.mypy]\n"
        'files = ["mod.py"]\n'
        "strict_equality = true\n"
    )
    (tmp_path / "mod.py").write_text(source)
    return subprocess.run(
        ["sh", str(tmp_path / "scripts" / "lint.sh")], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    "source, step, advice",
    [
        ('"""A module."""\n\nanswer=42\n', "ruff format --check", "run '.venv/bin/ruff format .'"),
        ('"""A module."""\n\nanswer: int = "forty-two"\n', "mypy", "type errors above"),
        ('"""A module."""\n\nimport os\n', "ruff check", "'.venv/bin/ruff check --fix .'"),
    ],
)
def test_lint_fails_on_the_slip_and_says_how_to_fix_it(tmp_path: Path, source: str, step: str, advice: str) -> None:
    result = lint_tree(tmp_path, source)
    assert result.returncode == 1, f"a pull request with this slip must fail the check:\n{result.stdout}{result.stderr}"
    assert f"== {step}\n" in result.stdout, f"the failing step is named:\n{result.stdout}"
    assert advice in result.stderr, f"the message says how to fix it:\n{result.stderr}"


def test_clean_code_passes_the_python_checks(tmp_path: Path) -> None:
    result = lint_tree(tmp_path, '"""A module."""\n\nanswer: int = 42\n')
    assert "== shellcheck\n" in result.stdout, (
        f"ruff, formatting and mypy must pass a clean file and go on:\n{result.stdout}{result.stderr}"
    )
