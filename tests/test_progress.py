"""Long steps say when they start and how long they took, on stderr, one line each."""

from __future__ import annotations

import re

import pytest
from cli_runner import run_cli
from conftest import ROOT

from supersonic_interlink import progress


def test_a_step_prints_its_start_and_its_elapsed_time_and_a_failure_too(capsys: pytest.CaptureFixture[str]) -> None:
    with progress.step("fetching x"):
        pass
    with pytest.raises(RuntimeError), progress.step("fetching y"):
        raise RuntimeError("no network")
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0] == "fetching x ..." and re.fullmatch(r"fetching x: done in \d+\.\d s", lines[1])
    assert lines[2] == "fetching y ..." and re.fullmatch(r"fetching y: stopped after \d+\.\d s", lines[3])


def test_render_check_says_how_long_the_checks_took() -> None:
    done = run_cli("render", "hammer", "--check", cwd=ROOT)
    assert re.search(r"^stack hammer: checking: .*: done in \d+\.\d s$", done.stderr, re.MULTILINE), done.stderr
