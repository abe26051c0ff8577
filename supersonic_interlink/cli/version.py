"""``./supersonic --version``: pyproject.toml's version (the project runs from its tree, never installed) with the git
commit, each stack's pinned chart, and the pinned engine, Helm and kubectl."""

from __future__ import annotations

import subprocess
import tomllib

from supersonic_interlink import ROOT
from supersonic_interlink.chart.binaries import BINARIES
from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.stack_config import load_stack, stack_names
from supersonic_interlink.engine import toolchain


def project_version() -> str:
    """``<version>[+g<12 hex>[.dirty]]``: the commit when the tree is a git checkout."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    git = ["git", "-C", str(ROOT)]
    commit = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if commit.returncode:
        return version
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
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
