"""``./supersonic diff <stack>``: the stack rendered at a base git ref, by that tree's own code, and in the working
tree, compared object by object, as one text for the terminal and the pull request."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from json import dumps
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_SKIPPED, EXIT_USAGE, ROOT, progress
from supersonic_interlink.chart.source import CACHE_DIR
from supersonic_interlink.config import ConfigError, load_yaml
from supersonic_interlink.config.stack_config import check_stack_name, read_stack_document, secret_digests
from supersonic_interlink.contract import generation_of_values
from supersonic_interlink.objdiff import Change, ObjectsDiff, compare_objects, format_path, format_value, text_diff
from supersonic_interlink.render.stack import CHART_DIR

NOT_RENDERED = re.compile(r"the chart's objects (?:are not|cannot be) rendered: (.*)")  # render --out, no chart/


class SideError(Exception):
    """A side cannot be rendered (exit 1), or the diff cannot start (exit 2): which and why, in one line."""

    def __init__(self, line: str, code: int = EXIT_FINDING):
        super().__init__(line)
        self.code = code


@dataclass
class Side:
    label: str
    exists: bool = True
    objects: list[dict[str, Any]] = field(default_factory=list)
    """The program's objects and the Helm release as one object."""
    chart: list[dict[str, Any]] | None = None
    """The chart's objects (Secret data masked), or None with ``chart_note`` saying why not."""
    chart_note: str = ""
    namespace: str = ""
    secrets: dict[str, str] = field(default_factory=dict)  # path -> digest of its ciphertext
    generation: str = ""


def git(*args: str, refused: SideError | None = None) -> str:
    """git's output; ``refused`` (or what git said) raised when it fails."""
    try:
        result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise SideError("git is not installed: diff reads the base from git (apt-get install git)") from None
    if result.returncode != 0:
        raise refused or SideError(f"git {' '.join(args)}: {' '.join(result.stderr.split()) or result.returncode}")
    return result.stdout.strip()


def base_commit(ref: str | None) -> tuple[str, str]:
    """(commit, how it was chosen): ``ref``, or the merge base of HEAD with ``main``."""
    if ref is None:
        refused = SideError("no merge base of HEAD with main: give --base REF")
        return git("merge-base", "HEAD", "main", refused=refused), "merge base with main"
    refused = SideError(f"--base {ref!r}: not a commit in this repository", EXIT_USAGE)
    return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", refused=refused), ref


def at_commit(stack: str, commit: str, label: str, out: Path, chart_dir: Path | None = None) -> Side:
    """The side of ``commit``: its tree in a temporary directory, the shared tools linked in."""
    with tempfile.TemporaryDirectory(prefix="supersonic-diff-") as temporary:
        tree, archive = Path(temporary) / "tree", Path(temporary) / "tree.tar"
        git("archive", "--format=tar", f"--output={archive}", commit)
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")  # the shared directories are ignored by git, never in its archive
        for name in (".venv", ".tools", CACHE_DIR):
            if (ROOT / name).exists():
                (tree / name).symlink_to(ROOT / name)
        return render_side(tree, stack, label, out, chart_dir)


def render_side(root: Path, stack: str, label: str, out: Path, chart_dir: Path | None) -> Side:
    """The stack rendered by the code in ``root``, ``render --out``, for ``chart_dir``'s generation if given; else after
    that tree's ``render --fetch-chart`` (where it fails, the render's note says why the chart is not compared)."""
    path = root / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        return Side(label, exists=False)
    command = [sys.executable, "-m", "supersonic_interlink", "render", stack]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out_args = ["--out", str(out)]
    runs = [[*out_args, "--chart", str(chart_dir.resolve())]] if chart_dir else [["--fetch-chart"], out_args]
    with progress.step(f"{label}: rendering"):
        for args in runs:
            done = subprocess.run([*command, *args], cwd=root, env=env, capture_output=True, text=True)
    printed = (done.stdout + done.stderr).replace(str(root), "<base>") if root != ROOT else done.stdout + done.stderr
    if not (out / "release.yaml").is_file():
        lines = " / ".join([line.strip() for line in printed.splitlines() if line.strip()][-4:]) or "no output"
        usage = root == ROOT and done.returncode == EXIT_USAGE  # the working tree's config is the user's to fix
        raise SideError(f"{label}: the stack does not render there: {lines}", EXIT_USAGE if usage else EXIT_FINDING)
    # The render tree read back: the program's objects, the release as one object, the chart's objects.
    release = load_yaml((out / "release.yaml").read_text())
    manifests = [m for m in yaml.safe_load_all((out / "manifests.yaml").read_text()) if isinstance(m, dict)]
    charts = out / CHART_DIR
    chart = [load_yaml(file.read_text()) for file in sorted(charts.rglob("*.yaml"))] if charts.is_dir() else None
    metadata = {"name": release["name"], "namespace": release["namespace"]}
    as_object = {"apiVersion": "helm.sh/v3", "kind": "Release", "metadata": metadata}
    as_object |= {key: release[key] for key in ("chart", "options", "values")}
    secrets, generation = secret_digests(read_stack_document(path)), generation_of_values(release["values"]).name
    note = why[1] if chart is None and (why := NOT_RENDERED.search(printed)) else ""
    return Side(label, True, [as_object, *manifests], chart, note, str(release["namespace"]), secrets, generation)


@dataclass(frozen=True)
class StackDiff:
    stack: str
    base: Side
    head: Side
    title: str
    objects: ObjectsDiff
    chart_compared: bool

    @property
    def secrets(self) -> list[str]:
        """One line per secret config value added, removed or set again (its ciphertext changed); never a value."""
        old, new = self.base.secrets, self.head.secrets
        again = "set again (its ciphertext changed; the value, changed or not, is not shown)"
        changed = sorted(path for path in {*old, *new} if old.get(path) != new.get(path))
        return [
            f"secret {p}: {again if p in old and p in new else 'removed' if p in old else 'added'}" for p in changed
        ]

    @property
    def chart_note(self) -> str:
        """Why the chart's objects are not compared ("" when they are)."""
        missing = [s for s in (self.base, self.head) if s.exists and s.chart is None]
        notes = dict.fromkeys(s.chart_note for s in missing)  # said once when both sides say it
        return "; ".join(notes if len(notes) == 1 else (f"{s.label}: {s.chart_note}" for s in missing))


def as_json(diff: StackDiff) -> dict[str, Any]:
    """docs/json.md."""
    return {
        "stack": diff.stack,
        "title": diff.title,
        "base": {"label": diff.base.label, "exists": diff.base.exists, "generation": diff.base.generation},
        "head": {"label": diff.head.label, "exists": diff.head.exists, "generation": diff.head.generation},
        "chart_compared": diff.chart_compared,
        "chart_note": diff.chart_note,
        "secrets": diff.secrets,
        **diff.objects.as_json(),
    }


def field_lines(change: Change) -> list[str]:
    """A changed field: its path, then a multi-line text as its diff's lines, any other value as - and + lines."""
    lines, before, after = [f"    {format_path(change.path)}"], change.before, change.after
    if isinstance(before, str) and isinstance(after, str) and ("\n" in before or "\n" in after):
        hunks = text_diff(before, after)
        return lines + [f"      {line}" if line[0] == "@" else f"{line[0]}       {line[1:]}" for line in hunks]
    return [*lines, f"-       {format_value(before)}", f"+       {format_value(after)}"]


REPLACED = "replaced: a content-addressed name; the new one is created before the upgrade, the old one deleted after it"


def text(diff: StackDiff) -> str:
    objects = diff.objects
    lines = [f"stack {diff.stack}: {diff.title}"]
    lines += [] if diff.base.exists else ["the stack has no stack file at the base: every object is added"]
    lines += [] if diff.head.exists else ["the working tree has no stack file for it: every object is removed"]
    compared = "compared (rendered with the real Helm v3 on both sides)" if diff.chart_compared else "NOT compared: "
    lines += [f"chart objects: {compared}{diff.chart_note}"] if diff.chart_compared or diff.chart_note else []
    lines += ["no change" if objects.empty and not diff.secrets else objects.counts(), *diff.secrets]
    lines += [f"- {key} (removed)" for key in objects.removed] + [f"+ {key} (added)" for key in objects.added]
    for one in (*objects.replaced, *objects.changed):
        lines.append(f"± {one.old} -> {one.key.name} ({REPLACED})" if one.old else f"~ {one.key}")
        lines += [line for change in one.changes for line in field_lines(change)]
    return "\n".join(lines) + "\n"


def pull_request_text(diff: StackDiff) -> str:
    """The same text as a pull request comment's collapsible section."""
    if diff.objects.empty and diff.chart_compared and not diff.secrets:
        return f"- **{diff.stack}**: no change\n"
    summary = "no change" if diff.objects.empty else diff.objects.counts()
    summary += f"; {len(diff.secrets)} secret(s) changed" if diff.secrets else ""
    summary += "" if diff.chart_compared else "; chart objects not compared"
    return f"<details><summary><b>{diff.stack}</b>: {summary}</summary>\n\n````diff\n{text(diff)}````\n</details>\n"


def diff_stack(stack: str, base_ref: str | None = None, chart_dir: Path | None = None) -> StackDiff:
    """``stack`` at ``base_ref`` (default: the merge base with main) against the working tree."""
    commit, how = base_commit(base_ref)
    label = f"base {commit[:12]}" + (f" ({how})" if how != commit else "")
    with tempfile.TemporaryDirectory(prefix="supersonic-diff-out-") as out, ThreadPoolExecutor(max_workers=1) as pool:
        later = pool.submit(at_commit, stack, commit, label, Path(out) / "base", chart_dir)
        head = render_side(ROOT, check_stack_name(stack), "working tree", Path(out) / "head", chart_dir)
        base = later.result()
    if not base.exists and not head.exists:
        raise SideError(f"no stack file stacks/Pulumi.{stack}.yaml at the base or in the working tree", EXIT_USAGE)
    chart_compared = all(side.chart is not None for side in (base, head) if side.exists)
    before, after = (side.objects + (side.chart or [] if chart_compared else []) for side in (base, head))
    title = f"{label} -> working tree"
    if base.exists and head.exists and base.generation != head.generation:
        title += f"; the chart generation differs: {base.generation} at the base, {head.generation} in the working tree"
    objects = compare_objects(before, after, head.namespace or base.namespace, renames=True)
    return StackDiff(stack, base, head, title, objects, chart_compared)


def run(stack: str, base: str | None, chart: Path | None, *, markdown: bool, strict: bool, json: bool) -> int:
    try:
        result = diff_stack(stack, base, chart)
    except (ConfigError, SideError) as error:  # ConfigError: the stack's name
        print(f"stack {stack}: {error}", file=sys.stderr)
        return error.code if isinstance(error, SideError) else EXIT_USAGE
    printed = pull_request_text(result) if markdown else text(result)
    print(dumps(as_json(result), indent=2, default=str) + "\n" if json else printed, end="")
    if strict and not result.chart_compared:
        print(f"stack {stack}: --strict: the chart's objects were not compared (exit 3)", file=sys.stderr)
        return EXIT_SKIPPED
    return EXIT_OK
