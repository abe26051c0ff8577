"""`./supersonic takeover objects` for a pinned stack in a copy of the project, each step in a fresh interpreter: the
command fetches the pinned chart with git and renders it with the real Helm (its logic: tests/test_objects_diff.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from chart_fixtures import chart_repository, git, redirect_upstream
from e2e_harness import run_supersonic
from project_copies import project_copy

ROOT = Path(__file__).resolve().parent.parent.parent
LIVE_VALUES = ROOT / "tests" / "fixtures" / "live-values-hammer.yaml"


def test_a_pinned_stack_fetches_its_chart_and_renders_it(tmp_path) -> None:
    root = project_copy(tmp_path)
    upstream = chart_repository(tmp_path / "remote")
    commit = git("rev-parse", "HEAD", cwd=upstream)
    env = redirect_upstream(upstream)
    pinned = run_supersonic("render", "hammer", "--pin-chart", cwd=root, env=env)
    assert pinned.returncode == 0, pinned.stderr
    shutil.rmtree(root / ".charts")

    (tmp_path / "manifest.yaml").write_text("")  # a stored manifest of nothing: every object is created
    argv = ["objects", "hammer", "--live", str(LIVE_VALUES), "--live-manifest", str(tmp_path / "manifest.yaml")]
    done = run_supersonic("takeover", *argv, cwd=root, env=env)

    assert done.returncode == 0, done.stderr
    assert (root / ".charts" / commit / "helm" / "supersonic" / "Chart.yaml").is_file(), "fetched the pinned commit"
    assert f"After: chart `{root / '.charts' / commit / 'helm' / 'supersonic'}` rendered by Helm" in done.stdout
    assert "- `Deployment.apps/cms/supersonic-interlink-envoy`\n" in done.stdout, "rendered with the real Helm"
