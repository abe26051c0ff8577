"""What each verb of ``./supersonic`` installs into ``.venv``: an operator's verbs no test tooling."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_TOOLING = ("pytest", "moto", "mypy", "zizmor", "ruff", "pre-commit", "actionlint")


def requirements_of(verb: str) -> Path:
    """The requirements file the front door's case for ``verb`` installs."""
    text = (ROOT / "supersonic").read_text()
    for patterns, body in re.findall(r"^  ([a-z0-9|-]+)\)\n(.*?)\n    ;;", text, re.MULTILINE | re.DOTALL):
        if verb in patterns.split("|"):
            (name,) = re.findall(r"ensure_venv (\S+)", body)
            return ROOT / name
    raise AssertionError(f"./supersonic has no case for {verb}")


def packages(requirements: Path) -> set[str]:
    """Every package a requirements file names, following its ``-r`` includes."""
    names: set[str] = set()
    for text in requirements.read_text().splitlines():
        line = text.split("#")[0].strip()
        if line.startswith("-r "):
            names |= packages(requirements.parent / line[3:].strip())
        elif line and not line.startswith("-"):
            names.add(re.split(r"[\[=<>]", line)[0].lower())
    return names


@pytest.mark.parametrize("verb", ["render", "diff", "takeover", "pulumi", "drift", "probe", "cluster", "rehearse"])
def test_an_operators_verb_installs_no_test_tooling(verb: str) -> None:
    installed = packages(requirements_of(verb))
    assert not [p for p in installed if p.startswith(TEST_TOOLING)], f"{verb} installs test tooling"


def test_the_engine_verbs_install_the_program_alone_and_the_test_verbs_their_tooling() -> None:
    for verb in ("pulumi", "drift", "cluster", "toolchain"):
        assert requirements_of(verb) == ROOT / "requirements.txt", verb
    for verb in ("test", "e2e", "lint"):
        assert {"pytest", "zizmor", "mypy"} <= packages(requirements_of(verb)), verb


def test_every_package_installed_is_pinned_in_constraints() -> None:
    pinned = {line.split("==")[0].lower().replace("_", "-") for line in (ROOT / "constraints.txt").read_text().split()}
    for requirements in ROOT.glob("requirements*.txt"):
        missing = {p.replace("_", "-") for p in packages(requirements)} - pinned
        assert not missing, f"{requirements.name}: not in constraints.txt: {missing}"
