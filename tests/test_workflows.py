"""The GitHub workflows: actionlint, shellcheck and zizmor find nothing, and their shell steps do what they claim."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_steps import WORKFLOWS, load, pull_request_workflow, run_step, step, workflow_files

ROOT = Path(__file__).resolve().parent.parent
ZIZMOR = Path(sys.executable).with_name("zizmor")
ACTIONLINT = Path(sys.executable).with_name("actionlint")
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")


def zizmor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ZIZMOR), "--offline", "--no-progress", "--format=json", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        # No token: with --offline zizmor must not need one, and none should reach it from CI.
        env={k: v for k, v in os.environ.items() if k not in {"GH_TOKEN", "GITHUB_TOKEN", "ZIZMOR_GITHUB_TOKEN"}},
    )


def preview_step() -> dict:
    return next(s for s in pull_request_workflow()["jobs"]["preview"]["steps"] if "pulumi preview" in s.get("run", ""))


@pytest.mark.parametrize("persona", ["regular", "pedantic", "auditor"])
def test_zizmor_finds_nothing_in_the_workflows(persona):
    result = zizmor(f"--persona={persona}", str(WORKFLOWS))
    findings = json.loads(result.stdout or "[]")
    summary = [f"{f['ident']}: {f['desc']}" for f in findings]
    assert result.returncode == 0 and findings == [], f"zizmor ({persona}) findings: {summary}\n{result.stderr}"
    for path in workflow_files():
        assert f"completed {path}" in result.stderr, f"zizmor did not audit {path.name}: a clean result means nothing"


def test_zizmor_does_catch_what_the_workflows_avoid(tmp_path):
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "name: bad\non: pull_request\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - uses: actions/checkout@v6\n"
        '      - run: echo "${{ github.event.pull_request.title }}"\n'
    )
    found = {f["ident"] for f in json.loads(zizmor(str(bad.parent)).stdout)}
    assert {"unpinned-uses", "template-injection", "artipacked", "excessive-permissions"} <= found, (
        f"this zizmor would not notice the mistakes the real workflows are checked for: {found}"
    )


def test_every_action_is_pinned_to_a_commit_and_no_expression_is_expanded_inside_a_shell_script():
    assert "pull-request.yml" in [p.name for p in workflow_files()], "the tests below read it"
    for path in workflow_files():
        uses = re.findall(r"uses: (.+)$", path.read_text(), re.MULTILINE)
        assert uses, f"{path.name} uses no actions?"
        for ref in uses:
            assert PINNED.match(ref.strip()), f"{path.name}: {ref!r} is not pinned to a full SHA with '# vX.Y.Z'"
        for name, job in load(path)["jobs"].items():
            for item in job.get("steps", []):
                assert "${{" not in item.get("run", ""), (
                    f"{path.name} {name}: pass values through env:, a `run:` expansion is a script injection"
                )


def test_permissions_are_empty_by_default_and_granted_per_job_and_a_newer_push_cancels_the_older_run():
    workflow = pull_request_workflow()
    assert workflow["permissions"] == {}, "no job gets the token's default permissions"
    writers = {name for name, job in workflow["jobs"].items() if "write" in job["permissions"].values()}
    assert writers == {"rendered-diff", "preview"}, "only the two commenting jobs may write, and only to PRs"
    for name in writers:
        assert workflow["jobs"][name]["permissions"] == {"contents": "read", "pull-requests": "write"}, name
    concurrency = workflow["concurrency"]
    assert concurrency["cancel-in-progress"] is True
    assert "github.event.pull_request.number" in concurrency["group"], "one group per pull request"


def test_preview_runs_per_stack_with_the_operators_command_and_comments():
    preview = pull_request_workflow()["jobs"]["preview"]
    assert preview["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert "needs.preview-secrets.outputs.ready == 'true'" in preview["if"], "forks skip instead of failing"
    run = preview_step()
    assert './supersonic pulumi preview "$STACK" --diff' in run["run"] and "set -o pipefail" in run["run"]
    assert run["env"]["PULUMI_BACKEND_URL"] == "${{ secrets.PULUMI_BACKEND_URL }}", "the backend comes from a secret"
    assert run["env"]["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"
    comment = step("preview", "Comment the preview on the pull request")
    assert comment["if"] == "always()", "a gated (failed) preview is commented too"
    (install,) = [s for s in preview["steps"] if s.get("uses", "").startswith("pulumi/actions@")]
    assert install["uses"] == "pulumi/actions@8e5e406f4007fca908480587cb9893c07090f58d", "v7.0.0's tag commit"
    assert set(install["with"]) == {"pulumi-version"}, "install only: a `command` would bypass the gate"
    first = next(item for item in preview["steps"] if "supersonic render" in item.get("run", ""))
    assert first["run"].splitlines() == [
        './supersonic render "$STACK" --fetch-chart',
        './supersonic render "$STACK" --check --strict',
    ], "the chart is fetched and checked before previewing"


@pytest.mark.parametrize("job", ["preview", "drift"])
def test_no_job_an_operator_waits_on_builds_from_go(job: str) -> None:
    spec = (pull_request_workflow() if job == "preview" else drift_workflow())["jobs"][job]
    text = json.dumps(spec)
    assert "GOTOOLCHAIN" not in text and "setup-go" not in text and "toolchain build" not in text
    assert spec["timeout-minutes"] <= 20
    names = [s.get("name", s.get("uses", "")) for s in spec["steps"]]
    runs = [i for i, s in enumerate(spec["steps"]) if re.search(r"\./supersonic (pulumi|drift)", s.get("run", ""))]
    assert names.index("Install the Pulumi CLI") < names.index("Install the Kubernetes provider") < min(runs), (
        "the engine step finds the installed CLI and provider, so it builds nothing"
    )


def bot(comment_id: int, body: str) -> dict:
    return {"id": comment_id, "user": {"login": "github-actions[bot]"}, "body": body}


@pytest.mark.parametrize(
    ("comments", "expected"),
    [
        ([], "api --method POST repos/o/r/issues/5/comments -F body=@"),
        (
            [
                bot(11, "<!-- supersonic-interlink: pulumi preview hammer -->\nolder"),
                bot(12, "<!-- supersonic-interlink: pulumi preview hammer-2 -->\nanother stack's"),
                {**bot(13, "<!-- supersonic-interlink: pulumi preview hammer -->"), "user": {"login": "a-person"}},
            ],
            "api --method PATCH repos/o/r/issues/comments/11 -F body=@",
        ),
    ],
)
def test_the_preview_comment_is_one_per_stack_edited_on_each_push(
    tmp_path: Path, comments: list[dict], expected: str
) -> None:
    bin_dir = fake_tools(tmp_path, listing=json.dumps(comments))
    preview = tmp_path / "preview.txt"
    preview.write_text("Previewing update (hammer):\n  ~ 1 to update\n")
    comment = tmp_path / "comment.md"
    result = run_step(
        step("preview", "Comment the preview on the pull request")["run"],
        tmp_path,
        STACK="hammer",
        PR="5",
        REPO="o/r",
        GH_TOKEN="token",
        PREVIEW_FILE=str(preview),
        COMMENT_FILE=str(comment),
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        PATH=f"{bin_dir}:{os.environ['PATH']}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    calls = (tmp_path / "gh.log").read_text().splitlines()
    assert calls[0] == "api --paginate repos/o/r/issues/5/comments"
    assert calls[1:] == [f"{expected}{comment}"], "hammer-2's comment and a person's are not hammer's"
    text = comment.read_text()
    assert text.startswith("<!-- supersonic-interlink: pulumi preview hammer -->\n### ./supersonic pulumi preview")
    assert "  ~ 1 to update" in text


def test_the_stack_list_is_the_stack_files_and_a_name_that_is_not_a_stack_name_stops_the_run(tmp_path):
    for tool in ("bash", "jq", "diff", "find"):
        assert shutil.which(tool), f"{tool} is needed to run the workflow's shell steps in these tests"
    output = tmp_path / "output"
    result = run_step(step("stacks", "list")["run"], ROOT, GITHUB_OUTPUT=str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    expected = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    assert expected, "the repository has stack files"
    assert output.read_text() == f"stacks={json.dumps(expected, separators=(',', ':'))}\n"
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.hammer.yaml").write_text("config: {}\n")
    (tmp_path / "stacks" / "Pulumi.$(reboot).yaml").write_text("config: {}\n")
    result = run_step(step("stacks", "list")["run"], tmp_path, GITHUB_OUTPUT=str(output))
    assert result.returncode == 1 and "Bad stack file name" in result.stdout


def actionlint(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ACTIONLINT), "-no-color", *map(str, paths)], capture_output=True, text=True, timeout=60, check=False
    )


def test_actionlint_and_shellcheck_find_nothing_in_the_workflows_and_do_report_a_broken_one(tmp_path: Path) -> None:
    assert shutil.which("shellcheck"), "without shellcheck actionlint silently skips every run: block"
    result = actionlint(*workflow_files())
    assert result.returncode == 0 and result.stdout == "", f"actionlint findings:\n{result.stdout}{result.stderr}"
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: pull_request\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - run: echo ${{ github.event.pull_request.title }} $undefined_var\n"
        "      - uses: actions/checkout@v4\n        with: {nonsense: 1}\n"
    )
    broken_result = actionlint(broken)
    assert broken_result.returncode == 1, "a linter that passes everything proves nothing"
    assert "nonsense" in broken_result.stdout


def test_the_chart_is_checked_by_the_conformance_code_and_lint_is_the_same_as_contributors_and_ci() -> None:
    steps = pull_request_workflow()["jobs"]["render-check"]["steps"]
    commands = [line for item in steps for line in item.get("run", "").splitlines() if not line.strip().startswith("#")]
    scripts = "\n".join(commands)
    assert "./supersonic render" in scripts
    for gone in ("load_from_configmap", "helm template", "helm version", "grep", "helm_template_args"):
        assert gone not in scripts, f"{gone!r}: the runner's Helm with lookup turned off never saw what deploys"
    check = step("render-check", "./supersonic render <stack> --check")
    assert './supersonic render "$stack" --out "rendered/$stack" --check --strict' in check["run"], (
        "supersonic render installs the pinned Helm v3 the conformance check runs"
    )
    assert check["if"] == "${{ !cancelled() }}", "the offline checks report even when a chart could not be fetched"
    fetch_index = steps.index(step("render-check", "fetch"))
    assert steps.index(check) == fetch_index + 1, "the chart is on disk before --check looks for it"
    runs = [step.get("run", "") for step in pull_request_workflow()["jobs"]["lint"]["steps"]]
    assert "./supersonic lint" in runs, "a formatting slip or a type error must fail the pull request's checks"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./supersonic lint\n./supersonic test\n./supersonic e2e\n" in ci, (
        "CI lints, then runs the README's test commands: unit tests, then the end-to-end tier"
    )


def drift_workflow() -> dict:
    return load(WORKFLOWS / "drift.yml")


def drift_step(name: str) -> dict:
    return next(s for s in drift_workflow()["jobs"]["drift"]["steps"] if s.get("id") == name or s.get("name") == name)


def test_drift_runs_the_operators_command_per_stack_every_few_hours_with_least_privilege() -> None:
    workflow = drift_workflow()
    (schedule,) = workflow["on"]["schedule"]
    minute, hour, *rest = schedule["cron"].split()
    assert minute.isdigit() and hour.startswith("*/") and rest == ["*", "*", "*"], "every few hours, per stack"
    assert workflow["permissions"] == {}, "no job gets the token's default permissions"
    jobs = workflow["jobs"]
    assert jobs["stacks"]["permissions"] == {"contents": "read"}
    assert jobs["drift"]["permissions"] == {"contents": "read", "issues": "write"}, "issues only: no contents write"
    assert jobs["drift"]["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert jobs["drift"]["strategy"]["fail-fast"] is False, "one cluster unreachable must not hide another's drift"
    assert workflow["concurrency"]["cancel-in-progress"] is False, "a run is never cut off halfway through an issue"
    check = drift_step("check")
    assert './supersonic drift "$STACK" --markdown' in check["run"]
    assert "--correct" not in json.dumps(drift_workflow()), "the scheduled check corrects nothing"
    secrets = {k: v for k, v in check["env"].items() if "secrets." in v}
    assert secrets == {k: v for k, v in preview_step()["env"].items() if "secrets." in v}, "the same state backend"


def test_drift_checks_every_pinned_stack_and_names_the_unpinned_ones(tmp_path: Path) -> None:
    listing = next(s for s in drift_workflow()["jobs"]["stacks"]["steps"] if s.get("id") == "list")
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    for stack in (ROOT / "stacks").glob("Pulumi.*.yaml"):
        (project / "stacks" / stack.name).write_text(stack.read_text())
    gpu = project / "stacks" / "Pulumi.geddes-gpu.yaml"
    gpu.write_text("".join(line for line in gpu.read_text().splitlines(True) if "      commit: " not in line))
    output = tmp_path / "output"
    result = run_step(listing["run"], project, GITHUB_OUTPUT=str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    assert output.read_text() == 'stacks=["hammer"]\n', "only the pinned stack"
    assert "::notice title=Stack geddes-gpu not checked::its chart is not pinned" in result.stdout
    committed = run_step(listing["run"], ROOT, GITHUB_OUTPUT=str(tmp_path / "committed"))
    assert committed.returncode == 0 and (tmp_path / "committed").read_text() == 'stacks=["geddes-gpu","hammer"]\n'


def test_drift_reads_the_cluster_with_its_own_kubeconfig_not_the_previews_read_only_one(tmp_path: Path) -> None:
    # The preview's kubeconfig may only get, list and watch; drift's server-side dry run needs patch.
    text = json.dumps(drift_workflow())
    assert "secrets.KUBECONFIGS" not in text and "secrets.DRIFT_KUBECONFIGS" in text
    script = drift_step("Drift kubeconfig for this cluster")["run"]
    target = tmp_path / "kubeconfig"
    secret = json.dumps({"hammer": "apiVersion: v1\nkind: Config\n"})
    result = run_step(script, tmp_path, STACK="hammer", DRIFT_KUBECONFIGS=secret, KUBECONFIG_FILE=str(target))
    assert result.returncode == 0 and target.read_text().startswith("apiVersion: v1\nkind: Config\n")
    assert oct(target.stat().st_mode & 0o777) == "0o600", "readable by the runner user alone"
    missing = run_step(script, tmp_path, STACK="other", DRIFT_KUBECONFIGS=secret, KUBECONFIG_FILE=str(target))
    assert missing.returncode == 1
    assert "::error title=No drift kubeconfig for other::the DRIFT_KUBECONFIGS secret" in missing.stdout


def fake_tools(directory: Path, supersonic_status: int = 0, listing: str = "[]") -> Path:
    """A ``gh`` that logs its arguments and lists ``listing``, and a ``./supersonic`` that answers ``status``."""
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    (directory / "listing.json").write_text(listing)
    gh = bin_dir / "gh"
    gh.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> "{directory}/gh.log"\n'
        f'case "$*" in *--paginate*|"issue list"*) cat "{directory}/listing.json";; esac\n'
    )
    front = directory / "supersonic"
    front.write_text(
        f"#!/bin/sh\necho '| part | object |' \necho 'supersonic drift: the last line' >&2\nexit {supersonic_status}\n"
    )
    for tool in (gh, front):
        tool.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize(("status", "fails"), [(0, False), (1, False), (2, True)])
def test_the_drift_step_passes_drift_on_and_fails_only_when_nothing_was_checked(
    tmp_path: Path, status: int, fails: bool
) -> None:
    fake_tools(tmp_path, supersonic_status=status)
    output = tmp_path / "output"
    result = run_step(
        drift_step("check")["run"],
        tmp_path,
        STACK="hammer",
        REPORT_FILE=str(tmp_path / "drift.md"),
        LOG_FILE=str(tmp_path / "drift.log"),
        GITHUB_OUTPUT=str(output),
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
    )
    assert (result.returncode != 0) is fails, result.stdout + result.stderr
    assert output.read_text() == f"status={status}\n"
    assert "| part | object |" in (tmp_path / "summary.md").read_text()
    if fails:
        assert "::error title=Drift of hammer not checked::supersonic drift: the last line" in result.stdout


ISSUES = json.dumps([{"number": 7, "title": "Drift: stack hammer"}, {"number": 9, "title": "Drift: stack hammer-2"}])


@pytest.mark.parametrize(
    ("status", "issues", "expected"),
    [
        ("1", "[]", "issue create --repo o/r --title Drift: stack hammer --body-file"),
        ("1", ISSUES, "issue edit 7 --repo o/r --body-file"),
        ("0", ISSUES, "issue close 7 --repo o/r --comment No drift any more: https://run"),
        ("0", "[]", None),
    ],
)
def test_one_issue_per_stack_is_opened_updated_and_closed(
    tmp_path: Path, status: str, issues: str, expected: str | None
) -> None:
    bin_dir = fake_tools(tmp_path, listing=issues)
    report = tmp_path / "drift.md"
    report.write_text("the table\n")
    result = run_step(
        drift_step("issue")["run"],
        tmp_path,
        STACK="hammer",
        STATUS=status,
        REPORT_FILE=str(report),
        RUN_URL="https://run",
        GITHUB_REPOSITORY="o/r",
        GH_TOKEN="token",
        PATH=f"{bin_dir}:{os.environ['PATH']}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    calls = (tmp_path / "gh.log").read_text().splitlines()
    assert calls[0].startswith("issue list --repo o/r --state open"), calls
    assert calls[1:] == ([] if expected is None else [line for line in calls[1:] if line.startswith(expected)]), calls
    assert len(calls) == (1 if expected is None else 2), "one issue per stack: hammer-2's issue is not hammer's"
    if status == "1":
        assert "the table" in report.read_text() and "https://run" in report.read_text()
