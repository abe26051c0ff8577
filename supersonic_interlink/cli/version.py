"""``./supersonic --version``: the project's version, each stack's pinned chart and the pinned engine and Helm.

The project runs from its source tree (``PYTHONPATH``, never ``pip install``), so no package metadata exists for it:
the version is ``pyproject.toml``'s ``[project].version``, and the git commit of the tree is added when git can tell it.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import tomllib

from supersonic_interlink import ROOT
from supersonic_interlink.chart.binaries import BINARIES
from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.stack_config import load_stack, stack_names
from supersonic_interlink.engine import toolchain


def project_version() -> str:
    """``<version>[+g<12 hex>[.dirty]]``: package metadata if the project is installed, else pyproject.toml."""
    try:
        version = importlib.metadata.version("supersonic-interlink")
    except importlib.metadata.PackageNotFoundError:
        version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    try:
        git = ["git", "-C", str(ROOT)]
        commit = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return version  # not a git checkout, or no git: the version alone
    return f"{version}+g{commit.stdout.strip()}{'.dirty' if dirty.stdout.strip() else ''}"


def chart_pin(stack: str) -> str:
    """What ``release.chart`` in the stack file names: a git commit, ``unpinned``, or a chart directory."""
    try:
        chart = (load_stack(stack).config.get("supersonic-interlink:release") or {}).get("chart") or {}
    except ConfigError as error:
        return f"unreadable ({error.problems[0]})"
    if "path" in chart and "git" not in chart:
        return f"chart directory {chart['path']}"
    return f"{chart['git']} {chart['commit']}" if chart.get("commit") else f"{chart.get('git', 'the default')} unpinned"


def text() -> str:
    lines = [f"supersonic-interlink {project_version()}"]
    lines += [f"  stack {stack}: chart {chart_pin(stack)}" for stack in stack_names()]
    builds = {name: toolchain.version(toolchain.build_for(name)) for name in ("pulumi", "pulumi-resource-kubernetes")}
    lines += [
        f"  Pulumi CLI {builds['pulumi']}, Kubernetes provider {builds['pulumi-resource-kubernetes']} (tools/*/go.mod)",
        f"  Helm {BINARIES['helm'].version}, kubectl {BINARIES['kubectl'].version} (chart/binaries.py)",
    ]
    return "\n".join(lines)
