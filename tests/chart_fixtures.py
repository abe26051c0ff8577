"""The conformance tests' own charts (tests/charts/), assembled and served from local git repositories.

``conforming/`` is a whole chart; every other folder holds only the files in which one failure class differs from
it (see tests/charts/README.md). ``fixture_chart(name, into)`` lays the chart out in ``into``;
``chart_repository(into, ...)`` commits it at ``helm/supersonic`` in a fresh git repository, the layout of the
SuperSONIC repository, for the tests that fetch and pin a git chart without any network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CHARTS = Path(__file__).resolve().parent / "charts"
CONFORMING = "conforming"
VARIANTS = sorted(p.name for p in CHARTS.iterdir() if p.is_dir() and p.name != CONFORMING)
CHART_PATH = "helm/supersonic"
UPSTREAM = "https://github.com/fastmachinelearning/SuperSONIC"

_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "fixture",
    "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "fixture",
    "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
}


def fixture_chart(name: str, into: Path) -> Path:
    """The chart ``name`` (``conforming`` or a failure class) as a chart directory under ``into``."""
    chart = into / "supersonic"
    shutil.copytree(CHARTS / CONFORMING, chart)
    if name != CONFORMING:
        shutil.copytree(CHARTS / name, chart, dirs_exist_ok=True)
    return chart


def git(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env={**os.environ, **_GIT_IDENTITY}
    )
    return result.stdout.strip()


def commit_chart(repository: Path, name: str, message: str) -> str:
    """Replace the chart at ``helm/supersonic`` with fixture ``name``, commit, and return the commit id."""
    target = repository / CHART_PATH
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(fixture_chart(name, repository / ".assemble")), str(target))
    shutil.rmtree(repository / ".assemble")
    git("add", "--all", cwd=repository)
    git("commit", "--quiet", "-m", message, cwd=repository)
    return git("rev-parse", "HEAD", cwd=repository)


def chart_repository(into: Path, name: str = CONFORMING) -> Path:
    """A git repository (branch main) whose one commit holds fixture ``name`` at ``helm/supersonic``."""
    repository = into / "SuperSONIC"
    repository.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch", "main", cwd=repository)
    commit_chart(repository, name, f"chart: {name}")
    return repository


def redirect_upstream(repository: Path, url: str = UPSTREAM) -> dict[str, str]:
    """Environment that makes git read ``url`` from ``repository`` (git's url.<base>.insteadOf, set through the
    environment), so the stack files' real https URL is served locally."""
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{repository.as_uri()}.insteadOf",
        "GIT_CONFIG_VALUE_0": url,
    }
