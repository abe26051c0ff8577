"""The one place that runs Helm: ``helm template --dry-run=server`` renders client-side but answers each ``lookup``
from its kubeconfig's API server, here the stand-in serving the objects a caller gives; the post-renderer runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import yaml

from supersonic_interlink.chart import binaries
from supersonic_interlink.chart.lookup_api import LookupApi, write_loopback_kubeconfig
from supersonic_interlink.config.pulumi_yaml import YAMLInputError, load_outside_yaml
from supersonic_interlink.postrender import LOADER

VERSION = r"v?[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?"
"""An exact SemVer version, as in a packaged chart's name."""
_ARCHIVE = re.compile(rf"(?P<name>.+?)-{VERSION}\.tgz")


class ChartRenderError(Exception):
    """Helm refused to render the chart; the message is Helm's, the chart's ``fail`` text verbatim in it."""


def _helm_error(stderr: str) -> str:
    """Helm's error without its ``Error:`` prefix, its warnings and its hint about ``--debug``."""
    noise = ("WARNING:", "Use --debug flag")
    lines = [line for line in stderr.strip().splitlines() if line.strip() and not line.startswith(noise)]
    return "\n".join(lines).removeprefix("Error: ")


def _chart_file(path: Path) -> Any:
    try:
        documents = load_outside_yaml(path.read_bytes())
    except (OSError, YAMLInputError) as error:
        raise ChartRenderError(f"{path}: not a readable chart file: {' '.join(str(error).split())}") from None
    return documents[0] if documents else None


def declared_dependencies(chart_dir: Path) -> list[tuple[str, str]]:
    """(name, version) of each dependency ``Chart.yaml`` declares: ``Chart.lock``'s version, else the requirement's
    own if it is exact, else "" (a range no lock resolved)."""
    if not (chart_dir / "Chart.yaml").is_file():
        return []  # Helm refuses the directory in its own words
    metadata = _chart_file(chart_dir / "Chart.yaml")
    wanted = (metadata.get("dependencies") if isinstance(metadata, dict) else None) or []
    if not isinstance(metadata, dict) or not isinstance(wanted, list):
        raise ChartRenderError(f"{chart_dir / 'Chart.yaml'}: expected a mapping with a list of dependencies")
    if not all(isinstance(dependency, dict) for dependency in wanted):
        raise ChartRenderError(f"{chart_dir / 'Chart.yaml'}: every entry of dependencies must be a mapping")
    lock = _chart_file(chart_dir / "Chart.lock") if (chart_dir / "Chart.lock").is_file() else None
    entries = (lock.get("dependencies") if isinstance(lock, dict) else None) or []
    locked = {str(e.get("name")): str(e.get("version")) for e in entries if isinstance(e, dict)}
    versions = [(str(d.get("name")), locked.get(str(d.get("name"))) or str(d.get("version") or "")) for d in wanted]
    return [(name, version if re.fullmatch(VERSION, version) else "") for name, version in versions]


def missing_dependencies(chart_dir: Path) -> list[tuple[str, str]]:
    """``declared_dependencies`` with no chart of that name in ``charts/`` (a directory or an archive)."""
    present = set()
    for sub in (chart_dir / "charts").glob("*"):
        match = _ARCHIVE.fullmatch(sub.name)
        metadata = None if match or not (sub / "Chart.yaml").is_file() else _chart_file(sub / "Chart.yaml")
        present.add(match["name"] if match else metadata.get("name") if isinstance(metadata, dict) else None)
    return [(name, version) for name, version in declared_dependencies(chart_dir) if name not in present]


def prepare_chart(chart_dir: Path, workdir: Path) -> Path:
    """``chart_dir``, or a copy in ``workdir`` where each dependency missing on disk (Helm refuses the chart, even with
    it disabled) is an empty chart whose one template fails naming it: disabled, it renders nothing either way."""
    missing = [(name, version) for name, version in missing_dependencies(chart_dir) if version]
    if not missing:
        return chart_dir
    copy = workdir / "chart" / chart_dir.name
    shutil.copytree(chart_dir, copy, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    for name, version in missing:
        stand_in = copy / "charts" / name
        (stand_in / "templates").mkdir(parents=True)
        (stand_in / "Chart.yaml").write_text(json.dumps({"apiVersion": "v2", "name": name, "version": version}))
        message = f"dependency {name} {version} is not on disk and the values enable it: run helm dependency build"
        (stand_in / "templates" / "not-on-disk.yaml").write_text(f"{{{{ fail {json.dumps(message)} }}}}\n")
    return copy


@dataclass
class ChartRenderer:
    """One chart as one release against one stand-in API, for many renders (each its own Helm process)."""

    chart_dir: Path
    release_name: str
    namespace: str
    served_objects: Iterable[Mapping[str, Any]] = ()
    post_renderer: Path | None = None

    def __post_init__(self) -> None:
        self.helm = binaries.ensure("helm")
        self.api = LookupApi(self.served_objects)

    def __enter__(self) -> Self:
        with ExitStack() as entered:
            work = Path(entered.enter_context(tempfile.TemporaryDirectory(prefix="helm-render-")))
            self._chart = prepare_chart(self.chart_dir, work)
            entered.enter_context(self.api)
            # Helm's config, cache and data inside the work directory: none of the operator's repositories or plugins.
            self._env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("HELM_") and k != "KUBECONFIG"},
                "KUBECONFIG": str(write_loopback_kubeconfig(work / "kubeconfig", self.api.url, self.namespace)),
                **{f"HELM_{home.upper()}_HOME": str(work / f"helm-{home}") for home in ("config", "cache", "data")},
            }
            self._entered = entered.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._entered.close()

    def render(
        self, values: Mapping[str, Any], *, is_upgrade: bool = False, post_render: Callable[[str], str] | None = None
    ) -> list[dict[str, Any]]:
        """The rendered objects in Helm's order. ``post_render`` replaces the post-renderer executable in this process:
        Helm hands it the manifests and prints what comes back, so the text is the same."""
        command = [str(self.helm), "template", self.release_name, str(self._chart), "--namespace", self.namespace]
        command += ["--values", "-", "--dry-run=server", *(["--is-upgrade"] if is_upgrade else [])]
        if self.post_renderer is not None and post_render is None:
            command += ["--post-renderer", str(self.post_renderer)]
        # JSON is YAML, and keeps explicit nulls (Helm's "delete this default").
        result = subprocess.run(command, input=json.dumps(values), capture_output=True, text=True, env=self._env)
        if result.returncode != 0:
            raise ChartRenderError(_helm_error(result.stderr) or f"helm template exited {result.returncode}")
        try:
            text = result.stdout if post_render is None else post_render(result.stdout)
        except Exception as error:  # the post-renderer's refusal, as Helm reports one: a scanned variant may cause it
            raise ChartRenderError(f"error while running post render on files: {error}") from None
        return [document for document in yaml.load_all(text, Loader=LOADER) if isinstance(document, dict)]


def render_chart(
    chart_dir: Path,
    release_name: str,
    namespace: str,
    values: Mapping[str, Any],
    served_objects: Iterable[Mapping[str, Any]] = (),
    *,
    post_renderer: Path | None = None,
    is_upgrade: bool = False,
) -> list[dict[str, Any]]:
    with ChartRenderer(chart_dir, release_name, namespace, served_objects, post_renderer) as renderer:
        return renderer.render(values, is_upgrade=is_upgrade)
