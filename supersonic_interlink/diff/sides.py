"""The two sides of a diff: the stack rendered at a git ref and in the working tree, each as a render tree.

The base is taken with ``git archive <ref>`` into a temporary directory (the user's working tree, index and
worktree list are never touched) and rendered there by its own code, ``python -m supersonic_interlink render <stack>
--out DIR``, with the project's ``.venv``, pinned tools and chart cache shared by link. The working tree is rendered
the same way in this process. Both trees are read back the same way: the program's objects (``manifests.yaml``),
the Helm release (``release.yaml``) as one object, and the chart's objects (``chart/``). A base tree without
``chart/`` (its pinned chart not fetched yet, or its code older than ``chart/``) gets its chart objects rendered
here, from its release and Envoy ConfigMap.

A pinned git chart not yet in the cache is fetched (as ``pulumi preview`` would). Each side's chart objects are
either there or missing with the reason, which the report names.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import EXIT_USAGE, ROOT, progress
from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.chart.binaries import BinaryError
from supersonic_interlink.chart.helm import ChartRenderError
from supersonic_interlink.config import PROJECT, ChartSource, ConfigError, load_yaml
from supersonic_interlink.config.stack_config import full_key, read_stack_document, secret_digests, stack_file
from supersonic_interlink.contract import UnknownGeneration, generation_of_values
from supersonic_interlink.render.stack import CHART_DIR, chart_objects, locate_chart, mask, render, write

SHARED = (".venv", ".tools", chart_source.CACHE_DIR)
"""What the base's temporary copy shares with the project by link: the interpreter and packages, the pinned Helm,
the chart cache."""
RENDER_TIMEOUT_SECONDS = 600
RELEASE_API_VERSION = "helm.sh/v3"


class SideError(Exception):
    """One side cannot be rendered; the message says which and why, in one line."""


class BaseRefError(SideError):
    """The --base given names no commit: a usage error."""


@dataclass
class Side:
    """One side's objects, as the render tree holds them (Secret data masked)."""

    label: str
    exists: bool = True
    """False when the stack has no stack file on this side (added or removed by the change)."""
    objects: list[dict[str, Any]] = field(default_factory=list)
    """The program's objects and the Helm release as one object."""
    chart: list[dict[str, Any]] | None = None
    """The chart's objects, or None with ``chart_note`` saying why they are not there."""
    chart_note: str = ""
    namespace: str = ""
    secrets: dict[str, str] = field(default_factory=dict)
    """Path of each secret config value -> digest of its ciphertext (``stack_config.secret_digests``)."""
    generation: str = ""
    """The chart generation the side rendered for (``contract.Generation.name``), read from its release's values."""


class GitMissing(SideError):
    """No git to run: said as such, never as a ref that is not there."""


def git(*args: str, cwd: Path = ROOT, binary: bool = False) -> Any:
    try:
        result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=not binary, check=False)
    except FileNotFoundError:
        raise GitMissing("git is not installed: diff reads the base from git (apt-get install git)") from None
    if result.returncode != 0:
        error = result.stderr.decode(errors="replace") if binary else result.stderr
        raise SideError(f"git {' '.join(args)}: {' '.join(error.split()) or f'exit {result.returncode}'}")
    return result.stdout


def default_base() -> tuple[str, str]:
    """(commit, how it was chosen): the merge base of HEAD with ``main`` (or ``origin/main``)."""
    for branch in ("main", "origin/main"):
        try:
            return git("merge-base", "HEAD", branch).strip(), f"merge base with {branch}"
        except GitMissing:
            raise
        except SideError:
            continue
    raise SideError("no merge base of HEAD with main or origin/main: give --base REF")


def resolve(ref: str) -> str:
    try:
        return str(git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")).strip()
    except GitMissing:
        raise
    except SideError:
        raise BaseRefError(f"--base {ref!r}: not a commit in this repository") from None


def _unshared(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter, leaving out what is linked in from the project instead."""
    if member.name.split("/", 1)[0] in SHARED:
        return None
    return tarfile.data_filter(member, path)


@contextmanager
def checkout(commit: str) -> Iterator[Path]:
    """The tree of ``commit`` in a temporary directory, with the shared tools linked in; removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="supersonic-diff-") as temporary:
        tree = Path(temporary) / "base"
        tree.mkdir()
        archive = git("archive", "--format=tar", commit, binary=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree, filter=_unshared)
        for name in SHARED:
            if (ROOT / name).exists() and not (tree / name).exists():
                (tree / name).symlink_to(ROOT / name)
        yield tree


def _fetch_if_pinned(chart: ChartSource | None) -> str:
    """Fetch a pinned git chart that is not in the cache (a copy that is there, modified or not, is left for
    ``locate_chart`` to judge); why it cannot be fetched, or ""."""
    if (
        chart is None
        or chart.kind != "git"
        or chart.commit is None
        or (chart_source.CACHE_ROOT / chart.commit).exists()
    ):
        return ""
    try:
        with progress.step(f"fetching chart {chart.commit} from {chart.git}"):
            chart_source.fetch(str(chart.git), chart.commit, str(chart.path))
    except chart_source.ChartSourceError as error:
        return f"the pinned chart cannot be fetched: {error}"
    return ""


def pinned_chart(stack_path: Path) -> ChartSource | None:
    """The pinned git chart a stack file names (pinning always writes the chart into the stack file), else None."""
    try:
        config = read_stack_document(stack_path)
    except (ConfigError, OSError):
        return None
    release = next((v for k, v in config.items() if full_key(k) == f"{PROJECT}:release"), None)
    chart = release.get("chart") if isinstance(release, dict) else None
    if not isinstance(chart, dict) or not chart.get("commit"):
        return None
    try:
        return ChartSource.model_validate(chart)
    except ValueError:
        return None


def _chart_objects(stack: str, rendered: dict[str, Any], chart_dir: Path | None, root: Path) -> tuple[Any, str]:
    """(the chart's objects, "") or (None, why not) for one side's render."""
    unfetched = "" if chart_dir is not None else _fetch_if_pinned(rendered["chart_source"])
    if unfetched:
        return None, unfetched
    found, why = locate_chart(stack, rendered["chart_source"], chart_dir)
    if found is None:
        return None, why
    try:
        return chart_objects(found, rendered, root), ""
    except (ChartRenderError, BinaryError) as error:
        return None, f"the chart does not render with this side's values: {' '.join(str(error).split())}"


def working_tree(stack: str, out: Path, chart_dir: Path | None = None) -> Side:
    """The working tree's side (ConfigError for invalid config, as ``render`` exits 2 on it)."""
    if not stack_file(stack).is_file():
        return Side("working tree", exists=False)
    _fetch_if_pinned(pinned_chart(stack_file(stack)))  # the render reads the chart's generation from it
    rendered = render(stack, chart_dir=chart_dir)  # for the chart it renders with: --chart's generation, if given
    objects, note = _chart_objects(stack, rendered, chart_dir, ROOT)
    write(rendered, out, objects)
    side = read_tree(out, "working tree", note)
    side.secrets = secret_digests(read_stack_document(stack_file(stack)))
    return side


def base(stack: str, commit: str, label: str, out: Path, chart_dir: Path | None = None) -> Side:
    """The side of ``commit``, rendered by its own code in a temporary copy."""
    with checkout(commit) as tree:
        if not (tree / "stacks" / f"Pulumi.{stack}.yaml").is_file():
            return Side(label, exists=False)
        # A pinned chart in the cache first: the render reads the chart's generation from it.
        _fetch_if_pinned(pinned_chart(tree / "stacks" / f"Pulumi.{stack}.yaml"))
        command = [sys.executable, "-m", "supersonic_interlink", "render", stack, "--out", str(out)]
        # With --chart the base renders for that chart's generation too; a base whose render predates --chart renders
        # for its own chart's, and the diff's first line says when the two sides' generations differ.
        result = _render_base(tree, label, [*command, "--chart", str(chart_dir.resolve())] if chart_dir else command)
        if chart_dir is not None and result.returncode == EXIT_USAGE and "--chart" in result.stderr:
            result = _render_base(tree, label, command)
        printed = (result.stdout + result.stderr).replace(str(tree), "<base>")
        if not (out / "release.yaml").is_file():
            lines = [line.strip() for line in printed.splitlines() if line.strip()]
            raise SideError(f"{label}: the stack does not render there: {' / '.join(lines[-4:]) or 'no output'}")
        side = read_tree(out, label)
        side.secrets = secret_digests(read_stack_document(tree / "stacks" / f"Pulumi.{stack}.yaml"))
        if side.chart is None or chart_dir is not None:
            # The base's render did not write them (its pinned chart is not in the cache yet, as a render never
            # fetches, or its code predates chart/), or another chart is asked for: they are rendered here, from
            # the base's release, fetching its chart.
            side.chart, side.chart_note = _base_chart(stack, out, tree, chart_dir)
            if side.chart is not None:
                side.chart = mask(side.chart)
        return side


def _render_base(tree: Path, label: str, command: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        with progress.step(f"{label}: rendering"):
            return subprocess.run(
                command,
                cwd=tree,
                capture_output=True,
                text=True,
                timeout=RENDER_TIMEOUT_SECONDS,
                check=False,
                env={**os.environ, "PYTHONPATH": str(tree)},
            )
    except subprocess.TimeoutExpired:
        raise SideError(f"{label}: render did not finish within {RENDER_TIMEOUT_SECONDS} s") from None


def _base_chart(stack: str, out: Path, tree: Path, chart_dir: Path | None) -> tuple[Any, str]:
    release = load_yaml((out / "release.yaml").read_text())
    rendered = {
        "release": release,
        "manifests": list(yaml.safe_load_all((out / "manifests.yaml").read_text())),
        "envoy": (out / "envoy.yaml").read_text(),
        "chart_source": ChartSource.model_validate(release["chart"]),
    }
    return _chart_objects(stack, rendered, chart_dir, tree)


def release_object(release: dict[str, Any]) -> dict[str, Any]:
    """The Helm release as one object: its chart, Helm options and values."""
    return {
        "apiVersion": RELEASE_API_VERSION,
        "kind": "Release",
        "metadata": {"name": release["name"], "namespace": release["namespace"]},
        "chart": release["chart"],
        "options": release["options"],
        "values": release["values"],
    }


def read_tree(out: Path, label: str, chart_note: str = "") -> Side:
    """A render tree read back: the program's objects, the release as one object, the chart's objects."""
    release = load_yaml((out / "release.yaml").read_text())
    manifests = [m for m in yaml.safe_load_all((out / "manifests.yaml").read_text()) if isinstance(m, dict)]
    chart = None
    if (out / CHART_DIR).is_dir():
        chart = [load_yaml(path.read_text()) for path in sorted((out / CHART_DIR).rglob("*.yaml"))]
    return Side(
        label,
        objects=[release_object(release), *manifests],
        chart=chart,
        chart_note=chart_note if chart is None else "",
        namespace=str(release["namespace"]),
        generation=_generation(release["values"]),
    )


def _generation(values: Any) -> str:
    try:
        return generation_of_values(values).name
    except UnknownGeneration:
        return "unknown"
