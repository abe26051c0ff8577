"""The GitHub workflows as data, and their `run:` blocks run the way a runner runs them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"


def workflow_files() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))


def load(path: Path) -> dict:
    # PyYAML reads the `on:` key as True; rename it back.
    document = yaml.safe_load(path.read_text())
    document["on"] = document.pop(True)
    return document


def pull_request_workflow() -> dict:
    return load(WORKFLOWS / "pull-request.yml")


def step(job: str, name: str) -> dict:
    steps = pull_request_workflow()["jobs"][job]["steps"]
    return next(s for s in steps if s.get("id") == name or s.get("name") == name)


def run_step(script: str, cwd: Path, timeout: int = 60, **env: str) -> subprocess.CompletedProcess:
    """Run a `run:` block the way a GitHub-hosted runner does (bash -e), with the given environment."""
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={"PATH": os.environ["PATH"], **env},
    )
