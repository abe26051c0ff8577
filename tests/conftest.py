"""Shared fixtures: the program evaluated under Pulumi's mock engine, with config as the CLI passes it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from supersonic_interlink.config import PROJECT, Settings, load_settings
from supersonic_interlink.config import stack_config as stacks
from supersonic_interlink.render.evaluate import Evaluation, evaluate

ROOT = Path(__file__).resolve().parent.parent

# The same examples on every run (a CI failure reproduces on a laptop), no example database in the clone, and no
# deadline or too-slow check: the property tests assert on what an example gives, never on how fast.
settings.register_profile(
    "supersonic", derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("supersonic")


def stack_config(stack: str, **overrides: Any) -> dict[str, str]:
    """A stack's CLI config map with some top-level keys replaced (``scaleFromZero={...}``), as the CLI passes them:
    strings as they are, everything else as JSON."""
    config = stacks.load_stack_config(stack)
    for key, value in overrides.items():
        config[f"{PROJECT}:{key}"] = value if isinstance(value, str) else json.dumps(value)
    return config


def stack_settings(stack: str, **overrides: Any) -> Settings:
    return load_settings(stack_config(stack, **overrides))


def unpinned_config(stack: str) -> dict[str, str]:
    """A stack's CLI config map with its git chart's commit taken out: what a stack looks like before its pin."""
    config = stacks.load_stack_config(stack)
    release = json.loads(config[f"{PROJECT}:release"])
    release["chart"] = {k: v for k, v in release["chart"].items() if k != "commit"}
    config[f"{PROJECT}:release"] = json.dumps(release)
    return config


@pytest.fixture
def unpinned_stacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's stack files with every ``commit:`` line taken out, in force for the test."""
    directory = tmp_path / "unpinned-stacks"
    directory.mkdir()
    for path in stacks.STACKS_DIR.glob("Pulumi.*.yaml"):
        lines = path.read_text().splitlines(True)
        (directory / path.name).write_text("".join(line for line in lines if not line.lstrip().startswith("commit:")))
    monkeypatch.setattr(stacks, "STACKS_DIR", directory)
    return directory


@pytest.fixture
def run_stack() -> Callable[..., Evaluation]:
    """Evaluate the real program for a stack under the mock engine (preview=False), with optional overrides."""

    def run(stack: str = "hammer", **overrides: Any) -> Evaluation:
        return evaluate(stack_config(stack, **overrides), stack)

    return run


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped test is a test that did not run: fail the session so nothing passes by being skipped."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    skipped = len(reporter.stats.get("skipped", [])) + len(reporter.stats.get("xfailed", []))
    if skipped and session.exitstatus == 0:
        reporter.write_line(f"FAILED: {skipped} test(s) skipped or xfailed; every test must run", red=True)
        session.exitstatus = 1
