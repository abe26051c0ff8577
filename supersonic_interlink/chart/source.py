"""A git chart fetched at exactly its pinned commit into ``.charts/<commit>/`` and verified (HEAD is the commit, no
file differs but the archives and lock the provider's ``dependencyUpdate`` writes); a ref is resolved only to pin."""

from __future__ import annotations

import contextvars
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from supersonic_interlink import ROOT
from supersonic_interlink.chart.helm import VERSION, declared_dependencies
from supersonic_interlink.config import PROJECT, ChartSource
from supersonic_interlink.config.loading import CHART_CACHE_DIR
from supersonic_interlink.contract import CHART

CACHE_DIR = CHART_CACHE_DIR
CACHE_ROOT = ROOT / CACHE_DIR
OFFLINE = contextvars.ContextVar("offline_evaluation", default=False)
"""True under ``./supersonic render`` and the tests: nothing is fetched and an unpinned chart is rendered."""


class ChartSourceError(Exception):
    """The chart cannot be had; the message is one line saying why and what to do."""


def pin_command(stack: str) -> str:
    return f"./supersonic render {stack} --pin-chart"


def unpinned_message(stack: str) -> str:
    return (
        f"{PROJECT}:release.chart is a git source without a commit, so it names no exact chart: "
        f"run `{pin_command(stack)}` and commit the stack file"
    )


def release_chart(chart: ChartSource) -> str:
    """Relative to the project directory, where the provider starts: the same input on every machine."""
    if chart.kind == "git":
        return f"{CACHE_DIR}/{chart.commit or 'unpinned'}/{chart.path}"
    return str(chart.path if chart.kind == "path" else chart.name)


def chart_on_disk(chart: ChartSource, cache: Path | None = None) -> Path | None:
    """The chart directory if it is on disk and verified (a path source, or a fetched pinned commit), else None."""
    if chart.kind == "path":
        return ROOT / str(chart.path) if (ROOT / str(chart.path) / "Chart.yaml").is_file() else None
    return fetched_copy(chart.commit, str(chart.path), cache)[0] if chart.kind == "git" and chart.commit else None


def fetched_copy(commit: str, path: str, cache: Path | None = None) -> tuple[Path | None, str | None]:
    """(the verified chart directory, None), (None, why it is not the pinned commit), or (None, None) if not fetched."""
    checkout = (cache or CACHE_ROOT) / commit
    problem = verify(checkout, commit, path) if checkout.is_dir() else None
    return (checkout / path, None) if checkout.is_dir() and problem is None else (None, problem)


def _git(*args: str, cwd: Path | None = None, url: str = "") -> str:
    """git's output; a failure is a ``ChartSourceError`` with git's last line (``url``: the repository it reads)."""
    try:
        environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=environment)
    except subprocess.TimeoutExpired:
        raise ChartSourceError(f"git {args[0]} took more than 300 s") from None
    if done.returncode != 0:
        said = ([line.strip() for line in done.stderr.splitlines() if line.strip()] or ["no output"])[-1]
        reading = f" of {url} (reading it needs network access)" if url else ""
        raise ChartSourceError(f"git {args[0]}{reading} failed: {said}")
    return done.stdout


def verify(checkout: Path, commit: str, path: str) -> str | None:
    """Why ``checkout`` is not exactly ``commit`` with its chart at ``path``, or None if it is."""
    try:
        head = _git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=checkout).strip()
    except ChartSourceError:
        head = ""
    if head != commit:
        return f"{checkout} is at {head or 'no commit'}, not {commit}"
    status = _git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching", cwd=checkout)
    chart = path.rstrip("/")
    # The provider's dependencyUpdate downloads the declared dependencies' archives and may write the lock file.
    allowed = "|".join(
        rf"{re.escape(name)}-{re.escape(version) if version else VERSION}\.tgz"
        for name, version in declared_dependencies(checkout / chart)
    )
    for entry in filter(None, status.split("\0")):
        code, name = entry[:2], entry[3:]
        archive = name.removeprefix(f"{chart}/charts/")
        dependency = code in ("??", "!!") and archive != name and re.fullmatch(allowed or "(?!)", archive)
        if not dependency and not (code in (" M", "??") and name == f"{chart}/Chart.lock"):
            return f"{checkout}: {name} differs from commit {commit} ({code.strip()})"
    if not (checkout / path / "Chart.yaml").is_file():
        return f"commit {commit} has no chart at {path} (no {path}/Chart.yaml)"
    return None


def fetch(url: str, commit: str, path: str, cache: Path | None = None) -> Path:
    """The chart directory of ``commit`` from ``url``, fetched into the cache unless it is there and verified."""
    cache = cache or CACHE_ROOT
    found, problem = fetched_copy(commit, path, cache)
    if problem is not None:
        raise ChartSourceError(f"the cached chart is not the pinned commit: {problem}; delete {cache / commit}")
    if found is not None:
        return found
    cache.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{commit}.", dir=cache))
    try:
        _git("init", "--quiet", cwd=partial)
        _git("fetch", "--quiet", "--depth", "1", "--no-tags", url, commit, cwd=partial, url=url)
        _git("checkout", "--quiet", "--detach", commit, cwd=partial)
        if (problem := verify(partial, commit, path)) is not None:
            raise ChartSourceError(problem.replace(str(partial), url))
        partial.rename(cache / commit)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return cache / commit / path


def resolve(url: str, ref: str) -> str:
    """The commit a branch, then a tag, names; a full commit id as given (``fetch`` then proves it exists)."""
    if re.fullmatch(r"[0-9a-f]{40}", ref):
        return ref
    listed = _git("ls-remote", url, f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/tags/{ref}^{{}}", url=url)
    refs = {name: commit for commit, _, name in (line.partition("\t") for line in listed.splitlines())}
    for name in (f"refs/heads/{ref}", f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}"):
        if name in refs:
            return refs[name]
    raise ChartSourceError(f"{url} has no branch or tag named {ref!r}; give a branch, a tag or a full 40-hex commit")


def guard_line(chart_dir: Path) -> str | None:
    """``templates/<file>:<line>`` of the chart's ``fail`` on an external Envoy config with scale from zero, or None."""
    for template in sorted(p for p in (chart_dir / "templates").rglob("*") if p.is_file()):
        for number, line in enumerate(template.read_text(errors="replace").splitlines(), start=1):
            if "fail" in line and CHART.external_config_guard in line:
                return f"{template.relative_to(chart_dir)}:{number}"
    return None


def refuse_guarded(commit: str, chart_dir: Path | None = None) -> None:
    """Refuse a commit known to carry the guard (before any fetch), or whose ``chart_dir`` carries it."""
    where = CHART.guarded_commits.get(commit) or (guard_line(chart_dir) if chart_dir is not None else None)
    if where is not None:
        raise ChartSourceError(guarded_message(commit, where))


def guarded_message(commit: str, where: str | None = None) -> str:
    return (
        f"commit {commit} still refuses scaleFromZero.enabled with envoy.external_config.load_from_configmap "
        f"({where or CHART.guarded_commits[commit]}), so it cannot load this program's Envoy configuration: pin a "
        "commit without that fail (docs/chart.md)"
    )


def refuse_without_scale_from_zero(commit: str, chart_dir: Path) -> None:
    """A commit before scale from zero (main had none for a while) ignores its values and holds a replica for ever."""
    templates = (p for p in (chart_dir / "templates").rglob("*") if p.is_file())
    if not any("scaleFromZero" in p.read_text(errors="replace") for p in templates):
        raise ChartSourceError(
            f"commit {commit} has no scale from zero (no template of its chart reads scaleFromZero), which this stack "
            "enables: pin a commit that has it (docs/chart.md)"
        )


def prepare(chart: ChartSource, stack: str) -> None:
    """Under ``pulumi preview``/``up``, before anything registers: refuse an unpinned git source, fetch a pinned one."""
    if OFFLINE.get() or chart.kind != "git":
        return
    if chart.commit is None:
        raise ChartSourceError(unpinned_message(stack))
    refuse_guarded(chart.commit)
    refuse_guarded(chart.commit, fetch(str(chart.git), chart.commit, str(chart.path)))
