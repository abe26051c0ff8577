"""What each verb of ``./supersonic`` installs into ``.venv``: an operator's verbs no test tooling."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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


def test_an_operators_verb_installs_no_test_tooling_the_engine_verbs_the_program_alone() -> None:
    for verb in ("render", "diff", "takeover", "pulumi", "drift", "probe", "cluster", "rehearse", "toolchain"):
        installed = packages(requirements_of(verb))
        assert not [p for p in installed if p.startswith(TEST_TOOLING)], f"{verb} installs test tooling"
    for verb in ("pulumi", "drift", "cluster", "toolchain"):
        assert requirements_of(verb) == ROOT / "requirements.txt", verb
    for verb in ("test", "e2e", "lint"):
        assert {"pytest", "zizmor", "mypy"} <= packages(requirements_of(verb)), verb


def test_every_package_installed_is_pinned_in_constraints() -> None:
    pinned = {line.split("==")[0].lower().replace("_", "-") for line in (ROOT / "constraints.txt").read_text().split()}
    for requirements in ROOT.glob("requirements*.txt"):
        missing = {p.replace("_", "-") for p in packages(requirements)} - pinned
        assert not missing, f"{requirements.name}: not in constraints.txt: {missing}"


VERB_MODULES = {
    "render": "render.stack",
    "diff": "diff.report",
    "stack": "render.stack",
    "takeover": "takeover.run",
    "drift": "drift.check",
    "pulumi": "engine.run",
    "cluster": "engine.cluster",
    "rehearse": "rehearse.measure",
    "probe": "cli.probe",
    "state": "cli.state",
}


def installed_with(names: set[str]) -> set[str]:
    """The distributions ``names`` install, with what they require (environment markers evaluated, no extras)."""
    seen: set[str] = set()
    queue: list[str] = [canonicalize_name(n) for n in names]
    while queue:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                queue.append(canonicalize_name(requirement.name))
    return seen


@cache
def loaded(imports: str) -> frozenset[str]:
    """The top-level modules a fresh interpreter holds after ``import sys`` and ``imports``."""
    code = f"import sys{imports}; print(*{{m.split('.')[0] for m in sys.modules}})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return frozenset(done.stdout.split())


@pytest.mark.parametrize(("verb", "module"), VERB_MODULES.items())
def test_a_verb_imports_only_what_its_requirements_install(verb: str, module: str) -> None:
    """A fresh .venv holds only the verb's requirements file: every module its code loads must come from there."""
    allowed = installed_with(packages(requirements_of(verb)))
    # What the interpreter loads before any import (site's .pth hooks) is no verb's.
    verb_loads = loaded(f", supersonic_interlink.cli.verbs, supersonic_interlink.{module}") - loaded("")
    owners = metadata.packages_distributions()
    outside = {
        top: owners[top]
        for top in verb_loads
        if top in owners and not {canonicalize_name(d) for d in owners[top]} & allowed
    }
    assert not outside, f"{verb} loads modules its {requirements_of(verb).name} does not install: {outside}"
