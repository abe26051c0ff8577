"""``./supersonic takeover steps|values|objects <stack>``: the live inputs read from files or the cluster (pinned Helm
v3 and kubectl), the chart found, the comparisons run and printed. Exit 1 on a finding, 2 if nothing was compared."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE, progress
from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.chart.binaries import BinaryError, ensure
from supersonic_interlink.config import ChartSource, ConfigError, Settings
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import load_stack
from supersonic_interlink.contract import CHART, GENERATIONS
from supersonic_interlink.files import write_text
from supersonic_interlink.objdiff import compare_objects
from supersonic_interlink.render.conformance import Expected
from supersonic_interlink.render.stack import locate_chart, render
from supersonic_interlink.takeover import flux_check, objects_diff, values_diff
from supersonic_interlink.takeover.objects_diff import LIVE, PROJECT, LiveObject, load_live_objects
from supersonic_interlink.takeover.steps import format_steps
from supersonic_interlink.takeover.values_diff import LiveInputError, load_live_values

T = TypeVar("T")


class Stop(Exception):
    """The command ends here: ``line`` on stderr, exit ``code``."""

    def __init__(self, line: str, code: int = EXIT_USAGE):
        super().__init__(line)
        self.code = code


def run(command: str, stack: str, *, live: Path | None = None, chart: Path | None = None, **options: Any) -> int:
    """``./supersonic takeover <command> <stack>`` with the options its parser read."""
    try:
        loaded = load_stack(stack)  # read once: the settings here, and the render below
        settings = settings_from_config(loaded.config, loaded.secret_keys)
    except ConfigError as error:
        print(f"stack {stack}: invalid config:", *(f"  {p}" for p in error.problems), sep="\n", file=sys.stderr)
        return EXIT_USAGE
    rendered = functools.partial(render, stack, loaded.config, loaded.secrets, chart_dir=chart)
    try:
        if command == "values":
            assert live is not None, "the parser requires --live"
            found = values_diff.compare_values(_load("--live", live, load_live_values), rendered()["release"]["values"])
            findings = f"{len(found.undeclared)} undeclared and {len(found.stale)} stale difference(s); see the table"
            document = values_diff.as_json(found) if options["json"] else None
            report = values_diff.markdown(found, stack)
            return _report(stack, report, options["out"], findings if found.has_findings else "", document)
        if command == "objects":
            return run_objects(stack, settings, rendered, live=live, chart=chart, **options)
        if options["check_live"]:  # steps --live: only once the live release passes flux_check
            problems = live_findings(settings)
            for finding in problems:
                print(f"stack {stack}: {finding.check}: {finding.problem}", file=sys.stderr)
            if problems:
                raise Stop(f"stack {stack}: not printing the steps: the import waits until these pass", EXIT_FINDING)
            print(f"stack {stack}: the live release is Flux's, suspended, on this chart, and deployed", file=sys.stderr)
        print(format_steps(stack, settings), end="")
        return EXIT_OK
    except Stop as stop:
        print(stop, file=sys.stderr)
        return stop.code
    except BinaryError as error:  # the pinned helm or kubectl cannot be had
        print(f"stack {stack}: {error}", file=sys.stderr)
        return EXIT_USAGE


def _report(stack: str, text: str, out: Path | None, findings: str, document: dict[str, Any] | None) -> int:
    """Print or write a report (``document`` as JSON instead of ``text``, when given); with ``findings`` exit 1."""
    if document is not None:
        text = json.dumps({"stack": stack, **document, "findings": findings}, indent=2, default=str) + "\n"
    if out is not None:
        write_text(out, text)
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(text, end="")
    if findings:
        print(f"stack {stack}: {findings}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK


def _load(flag: str, path: Path, load: Callable[[bytes, str], T]) -> T:
    """``load`` of a file given by ``flag``; an unreadable or refused file is one line naming the flag (exit 2)."""
    try:
        return load(path.read_bytes(), str(path))
    except OSError as error:
        raise Stop(f"{flag} {path}: cannot read: {error.strerror}") from None
    except LiveInputError as error:
        raise Stop(f"{flag} {error}") from None


def run_objects(
    stack: str,
    settings: Settings,
    rendered: Callable[[], Mapping[str, Any]],
    *,
    live: Path | None,
    live_objects: Sequence[Path] = (),
    chart: Path | None = None,
    out: Path | None = None,
    from_cluster: bool = False,
    live_manifest: Path | None = None,
    json: bool = False,
) -> int:
    """What the upgrade deletes, creates and changes. "Before" is the release's stored manifest (what Helm's upgrade
    compares against) when read ``from_cluster`` or given as ``live_manifest``, else the live values rendered."""
    namespace, release = settings.namespace, settings.release.name
    read_objects = functools.partial(load_live_objects, namespace=namespace)
    objects: list[LiveObject] = []
    stored: list[dict[str, Any]] | None = None
    where = f"`{live_manifest}`"
    if from_cluster:
        live_values, stored, objects, where = read_live_release(stack, release, namespace)
    else:
        assert live is not None, "the parser requires --live or --from-cluster"
        live_values = _load("--live", live, load_live_values)
        if live_manifest is not None:
            stored = [o.manifest for o in _load("--live-manifest", live_manifest, read_objects)]
    objects += [found for path in live_objects for found in _load("--live-object", path, read_objects)]
    chart_dir = chart_directory(stack, settings.release.chart, chart)
    expected = Expected.from_rendered(rendered())
    given, notes = objects_diff.sides(expected, live_values, objects)
    # Neither generation's block: the chart says what is wrong when it renders them.
    live_generation = next((g for g in GENERATIONS if g.inference_values_key in live_values), expected.generation)
    moves = live_generation != expected.generation
    if moves and stored is None:
        raise Stop(
            f"stack {stack}: the live values are of the {live_generation.name} chart generation, chart {chart_dir} of "
            f"the {expected.generation.name} one: give the stored manifest, --live-manifest FILE (`helm get manifest "
            f"{release} -n {namespace} > FILE`) or --from-cluster"
        )
    try:
        with progress.step(f"stack {stack}: rendering {chart_dir} with Helm, the live values and the stack's"):
            *live_render, after = objects_diff.render_sides(
                chart_dir, expected, given, [PROJECT] if moves else [LIVE, PROJECT]
            )
    except objects_diff.SideRefused as refused:
        raise Stop(f"stack {stack}: chart {chart_dir} refuses {refused}", EXIT_FINDING) from None
    first = f"Chart `{chart_dir}` rendered by Helm as an upgrade with the live values (`{live}`) and with this stack's."
    before = stored if stored is not None else live_render[0]
    if stored is not None:
        if moves:
            verdict = (
                f"**The chart generation moves from {live_generation.name} to {expected.generation.name}**: the "
                f"upgrade replaces `{live_generation.inference_object_name(release)}` by "
                f"`{expected.generation.inference_object_name(release)}`."
            )
        elif compare_objects(stored, live_render[0], namespace).empty:
            verdict = "The pinned chart renders the live values exactly as stored: it is the live chart."
        else:  # the two agree only if the pinned commit is the live chart
            verdict = "**The pinned chart renders the live values differently from the stored manifest** (step 1)."
        first = (
            f"Before: the live release's stored manifest (`helm get manifest`, {where}), what the upgrade compares "
            f"against. After: chart `{chart_dir}` rendered by Helm with this stack's values as an upgrade. {verdict}"
        )
    declared = objects_diff.declared_deletions(release, namespace, live_generation, expected.generation)
    found = objects_diff.compare(before, after, namespace, declared)
    findings = f"{len(found.unexplained)} unexplained and {len(found.stale)} stale deletion(s); see the report"
    notes.insert(0, first)
    document = {"notes": notes, **objects_diff.as_json(found)} if json else None
    report = objects_diff.markdown(found, stack, notes)
    return _report(stack, report, out, findings if found.has_findings else "", document)


def chart_directory(stack: str, chart: ChartSource, given: Path | None) -> Path:
    """``given`` (``--chart``), else the stack's chart, fetched if it is a pinned git commit not yet in the cache."""
    try:
        if given is None and chart.kind == "git":
            if chart.commit is None:
                raise chart_source.ChartSourceError(chart_source.unpinned_message(stack))
            if not (chart_source.CACHE_ROOT / chart.commit).is_dir():
                with progress.step(f"stack {stack}: fetching chart {chart.commit} from {chart.git}"):
                    chart_source.fetch(str(chart.git), chart.commit, str(chart.path))
    except chart_source.ChartSourceError as error:
        raise Stop(f"stack {stack}: {error}") from None
    found, why = locate_chart(stack, chart, given)
    if found is None or not (found / "Chart.yaml").is_file():
        raise Stop(f"stack {stack}: {why or f'--chart {found}: not a chart directory (no Chart.yaml in it)'}")
    return found


def _read(tool: str, *args: str) -> str:
    """The output of the pinned ``tool`` (helm or kubectl) run with ``args`` on the cluster ``KUBECONFIG`` names."""
    done = subprocess.run([str(ensure(tool)), *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise Stop(f"cannot read the cluster: {tool} {' '.join(args)}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def live_findings(settings: Settings) -> list[flux_check.Finding]:
    """Flux's objects and the release's status read from the cluster and checked (``flux_check.check``)."""
    helm_releases, repositories = (
        json.loads(_read("kubectl", "get", resource, "--all-namespaces", "-o", "json"))["items"]
        for resource in ("helmreleases.helm.toolkit.fluxcd.io", "gitrepositories.source.toolkit.fluxcd.io")
    )
    status = json.loads(_read("helm", "status", settings.release.name, "-n", settings.namespace, "-o", "json"))
    return flux_check.check(helm_releases, repositories, status, settings)


def read_live_release(
    stack: str, release: str, namespace: str
) -> tuple[dict[str, Any], list[Any], list[LiveObject], str]:
    """(values, stored manifest, the objects the chart looks up, which revision) from the cluster: Helm's record of the
    release, whose ``config`` is what ``helm get values`` prints and ``manifest`` what ``helm get manifest`` does
    (helm/helm ``pkg/release`` ``Release``); refused unless the release is deployed."""
    record = json.loads(_read("helm", "status", release, "-n", namespace, "-o", "json"))
    if (status := record["info"]["status"]) != "deployed":
        raise Stop(f"stack {stack}: release {release} is {status} (revision {record['version']}), not deployed")
    values, manifest = record.get("config") or {}, [d for d in yaml.safe_load_all(record.get("manifest", "")) if d]
    names = [f"scaledobject.keda.sh/{CHART.scaled_object_name(CHART.instance_name(release))}"]
    envoy = objects_diff.live_envoy_config_map(values)
    names += [f"configmap/{envoy[0]}"] if envoy is not None else []
    found = _read("kubectl", "get", *names, "-n", namespace, "--ignore-not-found", "-o", "yaml")
    objects = load_live_objects(found, f"kubectl get {' '.join(names)}", namespace)
    return values, manifest, objects, f"revision {record['version']}"
