"""Which chart generation (``contract.GENERATIONS``) a stack's chart is, read from its own ``values.yaml``; a repo
version by SuperSONIC's published list; a git chart not on disk (only offline) as ``contract.NEWEST``."""

from __future__ import annotations

import contextvars
from pathlib import Path

from supersonic_interlink import ROOT
from supersonic_interlink.config.model import ChartSource
from supersonic_interlink.config.pulumi_yaml import load_outside_yaml
from supersonic_interlink.config.rules import PROJECT, ConfigError
from supersonic_interlink.contract import NEWEST, TRITON, Generation, UnknownGeneration, generation_of_values

CHART_CACHE_DIR = ".charts"  # <commit>/<path> of each fetched git chart

PUBLISHED_TRITON_VERSIONS = frozenset({"0.1.0", "0.1.1", "0.1.2", "0.2.0", "0.2.1", "0.3.0", "0.3.1"})
"""SuperSONIC's chart repository index.yaml, read 2026-11-30: every one names the inference server ``triton``."""
CHART_OVERRIDE: contextvars.ContextVar[Path | None] = contextvars.ContextVar("chart_override", default=None)
"""``render --chart DIR``: the chart an offline render uses instead of the stack's own."""


def chart_directory(chart: ChartSource, root: Path = ROOT) -> Path | None:
    """Where the chart is expected on disk (a path, or a pinned git commit's fetched copy), else None."""
    if chart.kind == "path":
        return root / str(chart.path)
    if chart.kind == "git" and chart.commit is not None:
        return root / CHART_CACHE_DIR / chart.commit / str(chart.path)
    return None


def values_on_disk(chart: ChartSource, root: Path = ROOT) -> Path | None:
    directory = chart_directory(chart, root)
    values_file = None if directory is None else directory / "values.yaml"
    return values_file if values_file is not None and values_file.is_file() else None


def select(chart: ChartSource, root: Path = ROOT) -> Generation:
    key = f"{PROJECT}:release.chart"
    override = CHART_OVERRIDE.get()
    if override is not None and (override / "values.yaml").is_file():
        return _read(override / "values.yaml", key, root)  # without one, Helm and the checks say what is wrong
    if chart.kind == "repo":
        if chart.version in PUBLISHED_TRITON_VERSIONS:
            return TRITON
        published = ", ".join(sorted(PUBLISHED_TRITON_VERSIONS))
        raise ConfigError([f"{key}.version = {chart.version!r}: expected a published SuperSONIC version ({published})"])
    values_file = values_on_disk(chart, root)
    if values_file is None:
        # Only offline: preview and up fetch a pinned chart first, and `render` says it assumed.
        return NEWEST
    return _read(values_file, key, root)


def _read(values_file: Path, key: str, root: Path) -> Generation:
    try:
        documents = load_outside_yaml(values_file.read_bytes())
        return generation_of_values(documents[0] if documents else None)
    except (OSError, UnknownGeneration, ValueError) as error:
        chart = values_file.parent.relative_to(root) if values_file.parent.is_relative_to(root) else values_file.parent
        raise ConfigError([f"{key}: the chart at {chart} is of no supported generation: {error}"]) from None
