"""Which chart generation a stack's chart is (``contract.GENERATIONS``), read from the chart itself.

The chart's own ``values.yaml`` declares its inference-server block (``triton:`` or ``inferenceServer:``), so a path
source and a fetched git commit are read from disk. A chart repository's version is known only for the versions
SuperSONIC has published, all of the ``triton`` generation. A git chart not on disk (unpinned, or pinned and not
fetched: only ever in an offline render) is rendered with the generation SuperSONIC main carries
(``contract.NEWEST``), and ``render`` says so.
"""

from __future__ import annotations

import contextvars
from pathlib import Path

from supersonic_interlink import ROOT
from supersonic_interlink.config.model import ChartSource
from supersonic_interlink.config.pulumi_yaml import load_outside_yaml
from supersonic_interlink.config.rules import PROJECT, ConfigError
from supersonic_interlink.contract import NEWEST, TRITON, Generation, UnknownGeneration, generation_of_values

CHART_CACHE_DIR = ".charts"
"""Where a git chart is fetched, ``<commit>/<path>`` under the project directory (listed in .gitignore)."""

PUBLISHED_TRITON_VERSIONS = frozenset({"0.1.0", "0.1.1", "0.1.2", "0.2.0", "0.2.1", "0.3.0", "0.3.1"})
"""SuperSONIC's published chart versions (its chart repository's index.yaml, read 2026-11-30): every one names the
inference server ``triton``."""


CHART_OVERRIDE: contextvars.ContextVar[Path | None] = contextvars.ContextVar("chart_override", default=None)
"""The chart directory an offline render is told to use instead of the stack's own (``render --chart DIR``): the
generation is read from it."""


def chart_directory(chart: ChartSource, root: Path = ROOT) -> Path | None:
    """Where the chart is expected on disk (a path source, or a pinned git commit's fetched copy), else None."""
    if chart.kind == "path":
        return root / str(chart.path)
    if chart.kind == "git" and chart.commit is not None:
        return root / CHART_CACHE_DIR / chart.commit / str(chart.path)
    return None


def values_on_disk(chart: ChartSource, root: Path = ROOT) -> Path | None:
    """The chart's ``values.yaml`` when the chart is on disk, else None."""
    directory = chart_directory(chart, root)
    values_file = None if directory is None else directory / "values.yaml"
    return values_file if values_file is not None and values_file.is_file() else None


def select(chart: ChartSource, root: Path = ROOT) -> Generation:
    """The generation of the stack's chart; ``ConfigError`` naming ``release.chart`` when it cannot be told."""
    key = f"{PROJECT}:release.chart"
    override = CHART_OVERRIDE.get()
    if override is not None and (override / "values.yaml").is_file():
        return _read(override / "values.yaml", key, root)  # without one, Helm and the checks say what is wrong
    if chart.kind == "repo":
        if chart.version in PUBLISHED_TRITON_VERSIONS:
            return TRITON
        raise ConfigError(
            [
                (
                    f"{key}.version = {chart.version!r}: not a SuperSONIC version this program knows the naming of "
                    f"(published: {', '.join(sorted(PUBLISHED_TRITON_VERSIONS))}); use a {{path}} or "
                    f"{{git, commit, path}} source, whose values.yaml tells its generation"
                )
            ]
        )
    values_file = values_on_disk(chart, root)
    if values_file is None:
        # Not on disk: an unpinned git source, or a pinned one not fetched yet, rendered offline. pulumi preview and up
        # fetch a pinned chart before this runs, and the conformance check reads the chart again, so neither deploys
        # or checks on this assumption; `render` says it is one.
        return NEWEST
    return _read(values_file, key, root)


def _read(values_file: Path, key: str, root: Path) -> Generation:
    try:
        documents = load_outside_yaml(values_file.read_bytes())
        return generation_of_values(documents[0] if documents else None)
    except (OSError, UnknownGeneration, ValueError) as error:
        raise ConfigError(
            [f"{key}: the chart at {_shown(values_file.parent, root)} is of no supported generation: {error}"]
        ) from None


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
