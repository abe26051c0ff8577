"""`./supersonic takeover objects` for a pinned stack, run as an operator runs it in a copy of the project: render
--pin-chart fetches the chart with git, then the command renders it with the real Helm, each in a fresh interpreter.
The command's logic is tested in tests/test_objects_diff.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from chart_fixtures import chart_repository, git, redirect_upstream

ROOT = Path(__file__).resolve().parent.parent.parent
LIVE_VALUES = ROOT / "tests" / "fixtures" / "live-values-hammer.yaml"


def objects_command(*args: str) -> list[str]:
    return ["objects", "hammer", "--live", str(LIVE_VALUES), *args]


def run_takeover(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "supersonic_interlink", "takeover", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_a_pinned_stack_fetches_its_chart_and_renders_it(tmp_path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, root / name)
    for package in ("supersonic_interlink", "postrender", "scripts", "stacks"):
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    for shared in (".venv", ".tools"):
        (root / shared).symlink_to(ROOT / shared)
    upstream = chart_repository(tmp_path / "remote", "deletes-on-upgrade")
    commit = git("rev-parse", "HEAD", cwd=upstream)
    env = redirect_upstream(upstream)
    pinned = subprocess.run(
        [sys.executable, "-m", "supersonic_interlink", "render", "hammer", "--pin-chart"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
    )
    assert pinned.returncode == 0, pinned.stderr
    shutil.rmtree(root / ".charts")

    done = run_takeover(*objects_command(), cwd=root, env=env)

    assert done.returncode == 1, done.stderr
    assert (root / ".charts" / commit / "helm" / "supersonic" / "Chart.yaml").is_file(), "fetched the pinned commit"
    assert f"Chart `{root / '.charts' / commit / 'helm' / 'supersonic'}` rendered by Helm" in done.stdout
    assert "| `PodDisruptionBudget.policy/cms/supersonic-interlink-triton` | **not explained**" in done.stdout
