"""The suite's own rule (tests/conftest.py, under both tiers): a skipped test fails the run, checked in a child
pytest. Here and not in the unit tier because the child is a fresh interpreter importing the program's SDKs."""

import os
import subprocess
import sys
from pathlib import Path

CHILD_TESTS = """import pytest
def test_runs():
    assert True
@pytest.mark.skip(reason="not here")
def test_skipped():
    pass
"""


def test_a_skipped_test_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text((Path(__file__).resolve().parent.parent / "conftest.py").read_text())
    (tmp_path / "test_x.py").write_text(CHILD_TESTS)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=60, env=env, check=False)
    assert result.returncode == 1, f"a skip must fail the run, got {result.returncode}:\n{result.stdout}"
    assert "every test must run" in result.stdout
