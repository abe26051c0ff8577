"""``./supersonic diff``: a stack's base and working tree compared object by object, as one text for the terminal and
the pull request (``-`` removed, ``+`` added, ``±`` replaced, ``~`` changed, each field's before and after)."""

from __future__ import annotations

import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from json import dumps
from pathlib import Path
from typing import Any

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_SKIPPED, EXIT_USAGE
from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.stack_config import stack_names
from supersonic_interlink.diff import sides
from supersonic_interlink.objdiff import Change, ObjectsDiff, compare_objects, format_path, format_value, text_diff


@dataclass(frozen=True)
class StackDiff:
    stack: str
    base: sides.Side
    head: sides.Side
    title: str
    objects: ObjectsDiff
    chart_compared: bool

    @property
    def secrets(self) -> list[str]:
        """One line per secret config value added, removed or set again; never a value."""
        before, after = self.base.secrets, self.head.secrets
        again = "set again (its ciphertext changed; the value, changed or not, is not shown)"
        return (
            [f"secret {path}: added (its value is not shown)" for path in after if path not in before]
            + [f"secret {path}: removed" for path in before if path not in after]
            + [f"secret {path}: {again}" for path in after if before.get(path, after[path]) != after[path]]
        )

    @property
    def chart_note(self) -> str:
        """Why the chart's objects are not compared ("" when they are)."""
        missing = [s for s in (self.base, self.head) if s.exists and s.chart is None]
        if len(missing) == 2 and missing[0].chart_note == missing[1].chart_note:
            return f"on both sides, {missing[0].chart_note}"
        return "; ".join(f"{s.label}: {s.chart_note}" for s in missing)


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
    lines = [f"    {format_path(change.path)}"]
    before, after = change.before, change.after
    if isinstance(before, str) and isinstance(after, str) and ("\n" in before or "\n" in after):
        return lines + [
            f"      {line}" if line[0] == "@" else f"{line[0]}       {line[1:]}" for line in text_diff(before, after)
        ]
    return [*lines, f"-       {format_value(before)}", f"+       {format_value(after)}"]


REPLACED = "replaced: a content-addressed name; the new one is created before the upgrade, the old one deleted after it"


def text(diff: StackDiff) -> str:
    lines = [f"stack {diff.stack}: {diff.title}"]
    if not diff.base.exists:
        lines.append("the stack has no stack file at the base: every object is added")
    if not diff.head.exists:
        lines.append("the working tree has no stack file for it: every object is removed")
    if diff.chart_compared:
        lines.append("chart objects: compared (rendered with the real Helm v3 on both sides)")
    elif diff.chart_note:
        lines.append(f"chart objects: NOT compared: {diff.chart_note}")
    objects = diff.objects
    lines.append("no change" if objects.empty and not diff.secrets else objects.counts())
    lines += diff.secrets
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
    commit, how = sides.default_base() if base_ref is None else (sides.resolve(base_ref), base_ref)
    label = f"base {commit[:12]}" + (f" ({how})" if how != commit else "")
    with (
        tempfile.TemporaryDirectory(prefix="supersonic-diff-out-") as out,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        base_side = pool.submit(sides.base, stack, commit, label, Path(out) / "base", chart_dir)
        head = sides.working_tree(stack, Path(out) / "head", chart_dir)
        base = base_side.result()
    if not base.exists and not head.exists:
        where = f"stacks/Pulumi.{stack}.yaml at the base or in the working tree (stacks: {', '.join(stack_names())})"
        raise sides.UsageError(f"no stack file {where}")
    chart_compared = all(side.chart is not None for side in (base, head) if side.exists)
    before, after = (side.objects + (side.chart or [] if chart_compared else []) for side in (base, head))
    title = f"{label} -> working tree"
    if base.exists and head.exists and base.generation != head.generation:
        title += (
            f"; the chart generation differs: {base.generation} at the base, {head.generation} in the working tree "
            "(object names and Envoy cluster names change with it)"
        )
    objects = compare_objects(before, after, head.namespace or base.namespace, renames=True)
    return StackDiff(stack, base, head, title, objects, chart_compared)


def run(stack: str, base: str | None, chart: Path | None, *, markdown: bool, strict: bool, json: bool) -> int:
    try:
        result = diff_stack(stack, base, chart)
    except ConfigError as error:
        print(f"stack {stack}: invalid config in the working tree:", *error.problems, sep="\n  ", file=sys.stderr)
        return EXIT_USAGE
    except sides.SideError as error:
        print(f"stack {stack}: {error}", file=sys.stderr)
        return EXIT_USAGE if isinstance(error, sides.UsageError) else EXIT_FINDING
    printed = pull_request_text(result) if markdown else text(result)
    print(dumps(as_json(result), indent=2, default=str) + "\n" if json else printed, end="")
    if strict and not result.chart_compared:
        print(f"stack {stack}: --strict: the chart's objects were not compared (exit 3)", file=sys.stderr)
        return EXIT_SKIPPED
    return EXIT_OK
