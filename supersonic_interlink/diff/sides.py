"""The two sides of a diff, each a render tree: the base from ``git archive`` into a temporary directory (the user's
tree untouched), rendered there by its own code with the project's ``.venv``, tools and chart cache linked in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import EXIT_USAGE, ROOT, progress
from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.config import load_yaml
from supersonic_interlink.config.stack_config import check_stack_name, read_stack_document, secret_digests
from supersonic_interlink.contract import generation_of_values
from supersonic_interlink.render.stack import CHART_DIR

SHARED = (".venv", ".tools", chart_source.CACHE_DIR)
TIMEOUT = 600
"""Seconds a side's render may take."""
NOT_RENDERED = re.compile(r"the chart's objects (?:are not|cannot be) rendered: (.*)")
"""What ``render --out`` prints when it writes no ``chart/``."""


class SideError(Exception):
    """One side cannot be rendered; the message says which and why, in one line."""


class UsageError(SideError):
    """The --base given names no commit, or the working tree's config is invalid."""


@dataclass
class Side:
    label: str
    exists: bool = True
    """False when the stack has no stack file on this side."""
    objects: list[dict[str, Any]] = field(default_factory=list)
    """The program's objects and the Helm release as one object."""
    chart: list[dict[str, Any]] | None = None
    """The chart's objects (Secret data masked), or None with ``chart_note`` saying why not."""
    chart_note: str = ""
    namespace: str = ""
    secrets: dict[str, str] = field(default_factory=dict)
    """Path of each secret config value -> digest of its ciphertext."""
    generation: str = ""


def git(*args: str, refused: SideError | None = None) -> str:
    """git's output; ``refused`` (or what git said) raised when it fails."""
    try:
        result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise SideError("git is not installed: diff reads the base from git (apt-get install git)") from None
    if result.returncode != 0:
        said = " ".join(result.stderr.split()) or f"exit {result.returncode}"
        raise refused or SideError(f"git {' '.join(args)}: {said}")
    return result.stdout


def default_base() -> tuple[str, str]:
    """(commit, how it was chosen): the merge base of HEAD with ``main``."""
    refused = SideError("no merge base of HEAD with main: give --base REF")
    return git("merge-base", "HEAD", "main", refused=refused).strip(), "merge base with main"


def resolve(ref: str) -> str:
    refused = UsageError(f"--base {ref!r}: not a commit in this repository")
    return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", refused=refused).strip()


def working_tree(stack: str, out: Path, chart_dir: Path | None = None) -> Side:
    return render_side(ROOT, check_stack_name(stack), "working tree", out, chart_dir)


def base(stack: str, commit: str, label: str, out: Path, chart_dir: Path | None = None) -> Side:
    """The side of ``commit``: its tree in a temporary directory, the shared tools linked in."""
    with tempfile.TemporaryDirectory(prefix="supersonic-diff-") as temporary:
        tree, archive = Path(temporary) / "tree", Path(temporary) / "tree.tar"
        git("archive", "--format=tar", f"--output={archive}", commit)
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")  # the shared directories are ignored by git, never in its archive
        for name in SHARED:
            if (ROOT / name).exists():
                (tree / name).symlink_to(ROOT / name)
        return render_side(tree, stack, label, out, chart_dir)


def render_side(root: Path, stack: str, label: str, out: Path, chart_dir: Path | None) -> Side:
    """The stack rendered by the code in ``root``, ``render --out``, for ``chart_dir``'s generation if given; a pinned
    chart not in the cache yet is fetched by its ``render --fetch-chart``, as ``pulumi preview`` would."""
    path = root / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        return Side(label, exists=False)

    def render(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "supersonic_interlink", "render", stack, *args]
        env = {**os.environ, "PYTHONPATH": str(root)}
        try:
            with progress.step(f"{label}: rendering"):
                return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise SideError(f"{label}: render did not finish within {TIMEOUT} s") from None

    command = ["--out", str(out)]
    command += ["--chart", str(chart_dir.resolve())] if chart_dir else []
    done = render(*command)
    if chart_dir is None and "--fetch-chart`" in done.stdout + done.stderr:  # where it cannot be, the note says why
        render("--fetch-chart")
        done = render(*command)
    printed = done.stdout + done.stderr if root == ROOT else (done.stdout + done.stderr).replace(str(root), "<base>")
    if not (out / "release.yaml").is_file():
        lines = " / ".join([line.strip() for line in printed.splitlines() if line.strip()][-4:]) or "no output"
        usage = root == ROOT and done.returncode == EXIT_USAGE  # the working tree's config is the user's to fix
        raise (UsageError if usage else SideError)(f"{label}: the stack does not render there: {lines}")
    why = NOT_RENDERED.search(printed)
    return read_tree(out, label, why[1] if why else "", path)


def read_tree(out: Path, label: str, chart_note: str, stack_path: Path) -> Side:
    """A render tree read back: the program's objects, the release as one object, the chart's objects."""
    release = load_yaml((out / "release.yaml").read_text())
    manifests = [m for m in yaml.safe_load_all((out / "manifests.yaml").read_text()) if isinstance(m, dict)]
    chart = None
    if (out / CHART_DIR).is_dir():
        chart = [load_yaml(path.read_text()) for path in sorted((out / CHART_DIR).rglob("*.yaml"))]
    as_object = {
        "apiVersion": "helm.sh/v3",
        "kind": "Release",
        "metadata": {"name": release["name"], "namespace": release["namespace"]},
        **{key: release[key] for key in ("chart", "options", "values")},
    }
    return Side(
        label,
        objects=[as_object, *manifests],
        chart=chart,
        chart_note=chart_note if chart is None else "",
        namespace=str(release["namespace"]),
        secrets=secret_digests(read_stack_document(stack_path)),
        generation=generation_of_values(release["values"]).name,
    )
