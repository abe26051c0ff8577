"""./supersonic diff's pure part: printing a changed field (matching objects across the two sides is
tests/test_objdiff.py's). The command itself, run as a reviewer runs it in a git checkout (two renders in interpreters
of their own per case), is tested in tests/e2e/test_diff_command.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli

from supersonic_interlink.diff.report import field_lines
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
