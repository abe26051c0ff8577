"""The pull-request workflow's steps that run `./supersonic` render or diff, run as the runner runs them (the chart
fetch of an unpinned stack; the rendered-diff step over every stack of the merge's checkout, and its comment): each
starts the front door and renders in interpreters of their own; the workflows' other checks: tests/test_workflows.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

from chart_fixtures import chart_repository, git, redirect_upstream
from e2e_harness import run_supersonic
from project_copies import CIPHERTEXTS, SECRET_STACK, commit_all, edit, git_project, pin, project_copy, unpin
from workflow_steps import pull_request_workflow, run_step, step


def run_diff_step(root: Path, base: str, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, str]:
    marker = pull_request_workflow()["jobs"]["rendered-diff"]["env"]["MARKER"]
    output = tmp_path / "github-output"
    github = {"GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md")}
    script = step("rendered-diff", "diff")["run"]
    result = run_step(script, root, timeout=600, MARKER=marker, BASE_SHA=base, HOME=str(tmp_path), **github, **env)
    return result, output.read_text() if output.exists() else ""


def test_the_pull_request_comment_is_the_text_of_supersonic_diff_secrets_and_all(tmp_path: Path) -> None:
    """The real step, the real ./supersonic diff, in a checkout of a pull request's merge: a stack holding secrets
    whose chart is pinned, and the two committed stacks, unpinned, which fail the job by design."""
    root = git_project(tmp_path)
    upstream = chart_repository(tmp_path / "remote")
    secret_stack = root / "stacks" / SECRET_STACK.name
    pin(secret_stack, git("rev-parse", "HEAD", cwd=upstream))
    base = commit_all(root, "the base branch")
    edit(secret_stack, "maxReplicaCount: 10", "maxReplicaCount: 12")
    edit(secret_stack, "bA==:bm9uY2UtMDI=", "bA==:bm9uY2UtMDM=")  # `config set --secret` again: a new ciphertext
    edit(root / "stacks" / "Pulumi.hammer.yaml", "readyTimeoutSeconds: 900", "readyTimeoutSeconds: 1200")
    edit(root / "stacks" / "Pulumi.hammer.yaml", "holdMinReplicasSeconds: 900", "holdMinReplicasSeconds: 1200")
    commit_all(root, "the pull request, as it would merge")
    redirect = redirect_upstream(upstream)

    result, output = run_diff_step(root, base, tmp_path, **redirect)

    assert result.returncode == 0, result.stdout + result.stderr
    comment = (root / "rendered" / "comment.md").read_text()
    marker = pull_request_workflow()["jobs"]["rendered-diff"]["env"]["MARKER"]
    assert comment.startswith(marker), "the marker lets the next push edit this comment instead of adding one"
    local = run_supersonic("diff", "secret-example", "--base", base, "--markdown", cwd=root, env=redirect)
    assert local.returncode == 0, local.stderr
    assert local.stdout in comment, "what a reviewer reads locally and on the pull request is one text"
    assert "chart objects: compared" in local.stdout and "    spec.maxReplicaCount\n-       10\n+       12\n" in (
        local.stdout
    ), "the chart's ScaledObject, rendered from the pinned commit on both sides"
    assert "<details><summary><b>secret-example</b>: 2 changed, 0 replaced" in local.stdout
    assert "1 secret(s) changed</summary>" in local.stdout
    assert (
        "secret supersonic-interlink:triton.podAnnotations.example.org/pull-token: set again (its ciphertext changed; "
        "the value, changed or not, is not shown)"
    ) in local.stdout, "a secret set again is said, though its placeholder renders the same on both sides"
    assert "<details><summary><b>hammer</b>: 1 changed, 1 replaced, 0 added, 0 removed" in comment
    assert "    options.timeout\n-       1200\n+       1500\n" in comment, "the Helm timeout of hammer's release"
    assert "- **geddes-gpu**" not in comment and "<b>geddes-gpu</b>: no change; chart objects not compared" in comment
    printed = comment + result.stdout + result.stderr + local.stderr
    assert not [c for c in CIPHERTEXTS if c in printed], "a secret's ciphertext is never printed"
    assert output == "failed= geddes-gpu hammer\n", "unpinned charts could not be compared: the job fails on them"
    failing = run_step(
        step("rendered-diff", "Fail on a stack that could not be diffed in full")["run"], root, FAILED=" hammer"
    )
    assert failing.returncode == 1 and "./supersonic render <stack> --pin-chart" in failing.stdout


def test_a_huge_diff_points_to_the_artifact_instead(tmp_path: Path) -> None:
    root = git_project(tmp_path)
    base = git("rev-parse", "HEAD", cwd=root)
    long_argument = "--model-repository=/cvmfs/" + "x" * 70000
    edit(
        root / "stacks" / "Pulumi.geddes-gpu.yaml",
        "--allow-gpu-metrics=true",
        f"{long_argument} --allow-gpu-metrics=true",
    )

    result, _ = run_diff_step(root, base, tmp_path)

    assert result.returncode == 0, result.stderr
    comment = (root / "rendered" / "comment.md").read_text()
    assert len(comment) < 65536, "GitHub rejects longer comments"
    assert "- **geddes-gpu**: 1 changed, 0 replaced, 0 added, 0 removed" in comment
    assert "- **hammer**: no change; chart objects not compared" in comment
    assert "rendered-diff` artifact" in comment
    assert long_argument in (root / "rendered" / "diffs" / "geddes-gpu.md").read_text(), "the artifact has it all"


def test_an_unpinned_stack_fails_the_chart_fetch_with_the_pin_command(tmp_path: Path) -> None:
    """The real step, the real ./supersonic render, on a copy of the project whose hammer stack has no commit yet."""
    root = project_copy(tmp_path)
    unpin(root / "stacks" / "Pulumi.hammer.yaml")
    result = run_step(step("render-check", "fetch")["run"], root, STACKS='["hammer"]', HOME=str(tmp_path / "home"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "::error title=No chart for hammer::stack hammer: supersonic-interlink:release.chart is a git source without "
        "a commit, so it names no exact chart: run `./supersonic render hammer --pin-chart` and commit the stack file"
    ) in result.stdout, "an unpinned stack cannot be deployed; the check says so and how to pin it"
