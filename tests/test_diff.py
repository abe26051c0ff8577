"""./supersonic diff's pure part: printing a changed field (matching objects across the two sides is
tests/test_objdiff.py's). The command itself, run as a reviewer runs it in a git checkout (two renders in interpreters
of their own per case), is tested in tests/e2e/test_diff_command.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli

from supersonic_interlink.contract import NEWEST, TRITON
from supersonic_interlink.diff import report
from supersonic_interlink.diff.report import ROOT, Side, diff_stack, field_lines, text
from supersonic_interlink.objdiff import ABSENT, Change


def test_a_multi_line_text_shows_only_the_lines_that_changed_any_other_value_one_line_each() -> None:
    before = "".join(f"line {i}\n" for i in range(20))
    after = before.replace("line 10\n", "line ten\n")
    lines = field_lines(Change(("data", "envoy.yaml"), before, after))
    assert lines[0] == '    data["envoy.yaml"]'
    assert "-       line 10" in lines and "+       line ten" in lines
    assert "        line 0" not in lines, "two lines of context, not the whole text"
    assert lines[1] == "      @@ -9,5 +9,5 @@" and not any(line.startswith(("---", "+++")) for line in lines)
    replicas = field_lines(Change(("spec", "replicas"), ABSENT, 2))
    assert replicas == ["    spec.replicas", "-       (not set)", "+       2"]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--base", " "], "argument --base: is empty: expected a branch, a tag or a commit"),
        (["--chart", "tests"], "argument --chart: 'tests' is not a chart directory (no Chart.yaml in it)"),
    ],
)
def test_diff_refuses_an_empty_base_or_a_chart_that_is_not_one_before_reading_anything(
    args: list[str], says: str
) -> None:
    done = run_cli("diff", "hammer", *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr


@pytest.mark.parametrize("base", [["--base", "main"], []])
def test_diff_without_git_says_git_is_missing_not_that_the_ref_is_unknown(
    base: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no git on it
    done = run_cli("diff", "hammer", *base)
    assert (done.returncode, done.stderr) == (
        1,
        "stack hammer: git is not installed: diff reads the base from git (apt-get install git)\n",
    )


CONFORMING = Path(__file__).parent / "charts" / "conforming"


def test_with_chart_the_working_tree_renders_for_that_charts_generation(tmp_path: Path) -> None:
    head = report.render_side(ROOT, "hammer", "working tree", tmp_path / "head", chart_dir=CONFORMING)
    envoy = (tmp_path / "head" / "envoy.yaml").read_text()
    assert head.generation == TRITON.name, "hammer's own chart is unpinned (newest generation); --chart's is triton"
    assert TRITON.admission_cluster in envoy and NEWEST.admission_cluster not in envoy, (
        "the Envoy config must name the clusters the chart's Lua calls"
    )


def test_the_first_line_says_when_the_two_sides_generations_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "base_commit", lambda ref: ("0" * 40, ref))
    monkeypatch.setattr(report, "at_commit", lambda *args: Side("base", generation=TRITON.name))
    monkeypatch.setattr(report, "render_side", lambda *args: Side("working tree", generation=NEWEST.name))
    first = text(diff_stack("hammer", "main")).splitlines()[0]
    assert first == (
        f"stack hammer: base 000000000000 (main) -> working tree; the chart generation differs: {TRITON.name} at the "
        f"base, {NEWEST.name} in the working tree"
    )
    monkeypatch.setattr(report, "render_side", lambda *args: Side("working tree", generation=TRITON.name))
    assert "generation" not in text(diff_stack("hammer", "main")).splitlines()[0]
