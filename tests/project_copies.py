"""Copies of the project for tests that run it in a fresh interpreter: plain (``project_copy``, ``project_with``), or
a git checkout for those that read a base commit from git (``git_project``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from chart_fixtures import git
from e2e_harness import run_supersonic

ROOT = Path(__file__).resolve().parent.parent
SECRET_STACK = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.secret-example.yaml"
CIPHERTEXTS = ("Q0lQSEVSVEVYVC1NRVRSSUMtbm90LXJlYWw", "Q0lQSEVSVEVYVC1UT0tFTi1ub3QtcmVhbA", "c2FsdC1ub3QtcmVhbA")
"""The secret stack's ciphertexts: none may appear in anything printed or written."""
COPIED = (
    "Pulumi.yaml",
    "__main__.py",
    "supersonic",
    "requirements.txt",
    "requirements-render.txt",
    "requirements-tools.txt",
    "requirements-dev.txt",
    "constraints.txt",
)
PACKAGES = ("supersonic_interlink", "postrender", "scripts", "stacks", "tools")


def project_copy(into: Path, *, tools: bool = True) -> Path:
    """A copy of the project whose stack files and chart cache a test may change; .venv and (with ``tools``) the
    pinned tools are shared by link."""
    root = into / "project"
    root.mkdir()
    for name in COPIED:
        shutil.copy2(ROOT / name, root / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    for shared in (".venv", ".tools") if tools else (".venv",):
        (root / shared).symlink_to(ROOT / shared)
    return root


def git_project(into: Path) -> Path:
    """A git checkout (branch main, one commit, with the secret stack); the links are ignored, as in a real clone."""
    root = project_copy(into)
    shutil.copy(SECRET_STACK, root / "stacks" / SECRET_STACK.name)
    (root / ".gitignore").write_text(".venv\n.tools\n.charts\n__pycache__/\n")
    git("init", "--quiet", "--initial-branch", "main", cwd=root)
    commit_all(root, "base")
    return root


def commit_all(root: Path, message: str) -> str:
    git("add", "--all", cwd=root)
    git("commit", "--quiet", "-m", message, cwd=root)
    return git("rev-parse", "HEAD", cwd=root)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path.name} no longer holds {old!r}"
    path.write_text(text.replace(old, new))


def unpin(stack_file: Path) -> None:
    """Take the git chart's commit out of a stack file: how it reads before ``--pin-chart``."""
    lines = stack_file.read_text().splitlines(True)
    stack_file.write_text("".join(line for line in lines if not line.startswith("      commit: ")))


def pin(stack_file: Path, commit: str) -> None:
    """Write ``commit`` into a stack file's git chart source, as --pin-chart does."""
    text = stack_file.read_text()
    if "      commit: " in text:
        lines = [f"      commit: {commit}" if line.startswith("      commit: ") else line for line in text.splitlines()]
        stack_file.write_text("\n".join(lines) + "\n")
    else:
        edit(stack_file, "      path: helm/supersonic\n", f"      commit: {commit}\n      path: helm/supersonic\n")


def project_with(tmp_path: Path, stack: str, text: str) -> Path:
    """A copy of the project (not a git checkout) whose only stack file is ``text``."""
    root = project_copy(tmp_path)
    shutil.rmtree(root / "stacks")
    (root / "stacks").mkdir()
    (root / "stacks" / f"Pulumi.{stack}.yaml").write_text(text)
    return root


def render_in(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_supersonic("render", *args, cwd=root, timeout=120)
