"""``./supersonic render <stack> --pin-chart [REF]``: resolve REF, fetch and verify the commit, and write it as
``release.chart.commit`` with the stack file's comments and layout kept (ruamel.yaml), one reviewable line."""

from __future__ import annotations

import io
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.config import PROJECT, ChartSource, ConfigError, load_settings
from supersonic_interlink.config.stack_config import full_key, load_stack, stack_file

RELEASE_KEY = f"{PROJECT}:release"


def with_commit(text: str, chart: ChartSource, commit: str) -> str:
    """The stack file ``text`` with ``release.chart.commit`` set to ``commit``, everything else as it was."""
    yaml = YAML()  # round-trip: comments, key order, quoting and flow style survive
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a long line
    yaml.indent(mapping=2, sequence=4, offset=2)  # the stack files' own layout
    document = yaml.load(text)
    config = document["config"]
    # Bare (`release:`), prefixed, or the old `<ns>:config:release`, as the CLI reads it.
    written_as = [key for key in config if isinstance(key, str) and full_key(key) == RELEASE_KEY]
    if len(written_as) != 1:
        raise ConfigError([f"{RELEASE_KEY}: written {len(written_as)} times in the stack file; expected once"])
    release = config[written_as[0]]
    if "chart" not in release:  # the Pulumi.yaml default: a stack's release.chart replaces it whole
        release["chart"] = CommentedMap([("git", chart.git), ("commit", commit), ("path", chart.path)])
    elif "commit" in (written := release["chart"]):
        written["commit"] = commit
    else:
        keys = list(written)
        written.insert(keys.index("git") + 1 if "git" in keys else len(keys), "commit", commit)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def pin_chart(stack: str, ref: str = "main") -> tuple[str, Path]:
    """(commit, stack file); the file is written only once every check passed."""
    settings = load_settings(load_stack(stack).config)
    chart = settings.release.chart
    if chart.kind != "git":
        raise chart_source.ChartSourceError(
            f"{PROJECT}:release.chart is a {chart.kind} source: --pin-chart pins the commit of a git source "
            f"({{git, path}})"
        )
    commit = chart_source.resolve(str(chart.git), ref)
    chart_source.refuse_guarded(commit)
    fetched = chart_source.fetch(str(chart.git), commit, str(chart.path))
    chart_source.refuse_guarded(commit, fetched)
    if settings.scaleFromZero.enabled:
        chart_source.refuse_without_scale_from_zero(commit, fetched)
    path = stack_file(stack)
    path.write_text(with_commit(path.read_text(), chart, commit))
    return commit, path
