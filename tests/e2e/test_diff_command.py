"""./supersonic diff, run as a reviewer runs it in a git checkout, and lint's stack check (scripts/check-stacks.sh):
each renders both sides in interpreters of their own with the real Helm (seconds of CPU); pure parts: test_diff.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from chart_fixtures import chart_repository, commit_chart, git, redirect_upstream
from e2e_harness import run_supersonic
from project_copies import commit_all, edit, git_project, pin, unpin

from supersonic_interlink.render.stack import render

ROOT = Path(__file__).resolve().parent.parent.parent
CONFORMING = ROOT / "tests" / "charts" / "conforming"


def test_a_ready_timeout_edit_shows_every_object_it_moves(tmp_path: Path) -> None:
    root = git_project(tmp_path)
    stack = root / "stacks" / "Pulumi.hammer.yaml"
    edit(stack, "readyTimeoutSeconds: 900", "readyTimeoutSeconds: 1200")
    edit(stack, "holdMinReplicasSeconds: 900", "holdMinReplicasSeconds: 1200")
    before = git("status", "--porcelain", cwd=root), git("worktree", "list", cwd=root), git("stash", "list", cwd=root)

    result = run_supersonic("diff", "hammer", "--chart", str(CONFORMING), cwd=root)

    assert result.returncode == 0, result.stdout + result.stderr
    after = git("status", "--porcelain", cwd=root), git("worktree", "list", cwd=root), git("stash", "list", cwd=root)
    assert after == before, "the base is read with git archive into a temporary directory"
    out = result.stdout
    base = git("rev-parse", "HEAD", cwd=root)
    assert out.startswith(f"stack hammer: base {base[:12]} (merge base with main) -> working tree\n")
    assert "chart objects: compared (rendered with the real Helm v3 on both sides)" in out
    # The base's Envoy ConfigMap: hammer as it stands, rendered for --chart's generation (both sides are).
    (old,) = [m for m in render("hammer", chart_dir=CONFORMING)["manifests"] if m["kind"] == "ConfigMap"]
    assert f"± ConfigMap/cms/{old['metadata']['name']} -> supersonic-interlink-envoy-external-" in out, (
        "the content-addressed Envoy ConfigMap is replaced, not shown as an unrelated removal and addition"
    )
    assert "-                         idle_timeout: 1020s\n+                         idle_timeout: 1320s\n" in out, (
        "the RepositoryIndex route timeout, as a line of the Envoy configuration"
    )
    envoy = out[out.index("~ Deployment.apps/cms/supersonic-interlink-envoy") :]
    assert envoy.splitlines()[1] == '    spec.template.metadata.annotations["checksum/envoy-config"]', (
        "the Envoy pods roll: the chart's Deployment carries the new checksum"
    )
    release = out[out.index("~ Release.helm.sh/cms/supersonic-interlink") :]
    assert "    options.timeout\n-       1200\n+       1500\n" in release, "the Helm upgrade timeout moves too"
    assert "- " not in "".join(line[:2] for line in out.splitlines() if line.endswith("(removed)")), "nothing removed"
    assert "1 replaced, 0 added, 0 removed" in out


def test_a_chart_commit_bump_shows_each_chart_object_it_changes(tmp_path: Path) -> None:
    root = git_project(tmp_path)
    upstream = chart_repository(tmp_path / "remote")
    first = git("rev-parse", "HEAD", cwd=upstream)
    second = commit_chart(upstream, "default-one", "ScaledObject minReplicaCount rendered with default 1")
    stack = root / "stacks" / "Pulumi.hammer.yaml"
    pin(stack, first)
    base = commit_all(root, "pin the chart")
    pin(stack, second)

    result = run_supersonic("diff", "hammer", "--strict", env=redirect_upstream(upstream), cwd=root)

    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"stack hammer: base {base[:12]} (merge base with main)" in out
    assert "chart objects: compared" in out, "both commits were fetched into the cache and rendered"
    scaled = out[out.index("~ ScaledObject.keda.sh/cms/supersonic-interlink-keda-so") :]
    assert scaled.splitlines()[1:4] == ["    spec.minReplicaCount", "-       0", "+       1"], scaled
    assert f"    chart.commit\n-       {first}\n+       {second}\n" in out
    assert (
        f"    options.chart\n-       .charts/{first}/helm/supersonic\n+       .charts/{second}/helm/supersonic\n" in out
    )
    assert out.count("\n~ ") == 2 and "0 added, 0 removed" in out, "the chart's other objects are unchanged"


def test_an_unpinned_chart_is_not_compared_failing_diff_under_strict_and_lint_checks_it_without_unless_unreadable(
    tmp_path: Path,
) -> None:
    root = git_project(tmp_path)
    unpin(root / "stacks" / "Pulumi.hammer.yaml")
    commit_all(root, "hammer before its pin")
    result = run_supersonic("diff", "hammer", "--strict", cwd=root)
    assert result.returncode == 3, result.stdout + result.stderr
    assert (
        "chart objects: NOT compared: the chart is not pinned (`./supersonic render hammer --pin-chart`)"
    ) in result.stdout
    assert "no change" in result.stdout
    assert "--strict: the chart's objects were not compared (exit 3)" in result.stderr
    linted = check_stacks(root, "stacks/Pulumi.hammer.yaml")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert (
        "check-stacks: stack hammer: chart not pinned: checked without --strict, the chart conformance check skipped"
    ) in linted.stdout
    edit(
        root / "supersonic_interlink" / "render" / "stack.py",
        "def chart_pinned(stack: str) -> bool:\n",
        "def chart_pinned(stack: str) -> bool:\n    raise RuntimeError('broken')\n",
    )
    broken = check_stacks(root, "stacks/Pulumi.hammer.yaml")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "check-stacks: stack hammer failed: whether its chart is pinned could not be read (exit 1)" in broken.stderr
    assert "chart not pinned" not in broken.stdout, "a pin lint cannot read is failed, not checked as unpinned"


def test_a_new_stack_is_all_added_and_a_base_not_a_commit_or_a_stack_neither_side_has_is_one_line(
    tmp_path: Path,
) -> None:
    root = git_project(tmp_path)
    shutil.copy(root / "stacks" / "Pulumi.geddes-gpu.yaml", root / "stacks" / "Pulumi.second.yaml")
    result = run_supersonic("diff", "second", cwd=root)
    assert result.returncode == 0, result.stderr
    assert "the stack has no stack file at the base: every object is added" in result.stdout
    assert "+ Release.helm.sh/cms/supersonic-gpu (added)" in result.stdout
    result = run_supersonic("diff", "hammer", "--base", "no-such-ref", cwd=root)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "stack hammer: --base 'no-such-ref': not a commit in this repository"
    result = run_supersonic("diff", "hamer", cwd=root)
    assert result.returncode == 2 and result.stdout == ""
    assert "no stack file stacks/Pulumi.hamer.yaml at the base or in the working tree" in result.stderr


# --------------------------------------------------------------------------------------------- lint's stack check


def check_stacks(root: Path, *files: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = ["scripts/check-stacks.sh", *files]
    environment = {**os.environ, **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=root, env=environment, check=False)


def test_lint_names_a_pinned_chart_it_cannot_fetch_and_fetches_one_it_can_failing_it_on_any_finding(
    tmp_path: Path,
) -> None:
    root = git_project(tmp_path)
    offline = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "url.https://127.0.0.1:1/.insteadOf"}
    result = check_stacks(
        root, "stacks/Pulumi.hammer.yaml", env={**offline, "GIT_CONFIG_VALUE_0": "https://github.com/"}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "check-stacks: stack hammer: its pinned chart cannot be fetched here (no network access to its repository): "
        "checked without --strict, the chart checks skipped"
    ) in result.stdout, "the skipped chart checks are named, never passed over; the pull-request workflow runs them"
    upstream = chart_repository(tmp_path / "remote")
    pin(root / "stacks" / "Pulumi.hammer.yaml", git("rev-parse", "HEAD", cwd=upstream))
    redirect = redirect_upstream(upstream)

    passing = check_stacks(root, "stacks/Pulumi.hammer.yaml", env=redirect)
    refusing = commit_chart(upstream, "refuses-external-config", "a chart that refuses the stack's values")
    pin(root / "stacks" / "Pulumi.hammer.yaml", refusing)
    failing = check_stacks(root, "stacks/Pulumi.hammer.yaml", env=redirect)

    assert passing.returncode == 0 and "chart not pinned" not in passing.stdout, passing.stdout + passing.stderr
    assert (root / ".charts" / git("rev-parse", "HEAD~1", cwd=upstream)).is_dir(), "lint fetched the pinned chart"
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert (
        "check-stacks: stack hammer failed: run './supersonic render hammer --check --strict' to see why"
    ) in failing.stderr
