"""``./supersonic takeover steps|values|objects <stack>``: the live inputs read from files or the cluster (pinned Helm
v3 and kubectl), the chart found, the comparisons run and printed. Exit 1 on a finding, 2 if nothing was compared."""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from json import dumps, loads
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE, ROOT, progress
from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.chart.binaries import BinaryError, ensure
from supersonic_interlink.chart.helm import ChartRenderError, render_chart
from supersonic_interlink.components.supersonic_release import POSTRENDER
from supersonic_interlink.config import ChartSource, ConfigError, Settings
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import load_stack
from supersonic_interlink.contract import CHART, GENERATIONS
from supersonic_interlink.files import write_text
from supersonic_interlink.render.conformance import Expected
from supersonic_interlink.render.stack import config_problems, locate_chart, render
from supersonic_interlink.takeover import objects_diff, values_diff
from supersonic_interlink.takeover.objects_diff import LiveObject, load_live_objects
from supersonic_interlink.takeover.steps import format_steps
from supersonic_interlink.takeover.values_diff import LiveInputError, load_live_values


class Stop(Exception):
    """The command ends here: its first argument on stderr, exit its second (default 2)."""


def run(command: str, stack: str, *, live: Path | None = None, chart: Path | None = None, **options: Any) -> int:
    try:
        loaded = load_stack(stack)  # read once: the settings here, and the render below
        settings = settings_from_config(loaded.config, loaded.secret_keys)
    except ConfigError as error:
        return config_problems(stack, error)
    rendered = functools.partial(render, stack, loaded.config, loaded.secrets, chart_dir=chart)
    try:
        if command == "values":
            assert live is not None, "the parser requires --live"
            found = values_diff.compare_values(_load("--live", live, load_live_values), rendered()["release"]["values"])
            findings = found.findings("difference(s); see the table")
            return _report(stack, values_diff.markdown(found, stack), values_diff.as_json(found), findings, **options)
        if command == "objects":
            return run_objects(stack, settings, rendered, live=live, chart=chart, **options)
        if options["check_live"]:  # steps --live: only once the live release passes check_live
            problems = live_findings(settings)
            for finding in problems:
                print(f"stack {stack}: {finding}", file=sys.stderr)
            if problems:
                raise Stop(f"stack {stack}: not printing the steps: the import waits until these pass", EXIT_FINDING)
            print(f"stack {stack}: the live release is Flux's, suspended, and deployed", file=sys.stderr)
        print(format_steps(stack, settings), end="")
        return EXIT_OK
    except (Stop, BinaryError) as stop:  # BinaryError: the pinned helm or kubectl cannot be had
        line, code = (*stop.args, EXIT_USAGE)[:2]
        print(line, file=sys.stderr)
        return code


def _report(stack: str, text: str, document: dict[str, Any], findings: str, *, out: Path | None, json: bool) -> int:
    """Print the report, or write it to ``out``; with ``json`` the document instead of the text; exit 1 on findings."""
    if json:
        text = dumps({"stack": stack, **document, "findings": findings}, indent=2, default=str) + "\n"
    if out is not None:
        write_text(out, text)
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(text, end="")
    if findings:
        print(f"stack {stack}: {findings}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK


def _load(flag: str, path: Path, load: Callable[[bytes, str], Any]) -> Any:
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
    """What the upgrade deletes, creates and changes: the release's stored manifest (what Helm's upgrade compares
    against, read ``from_cluster`` or given as ``live_manifest``) against the pinned chart's render."""
    namespace, release = settings.namespace, settings.release.name
    read_objects = functools.partial(load_live_objects, namespace=namespace)
    if from_cluster:
        live_values, stored, objects, where = read_live_release(stack, release, namespace)
    else:
        assert live is not None, "the parser requires --live or --from-cluster"
        live_values, objects, where = _load("--live", live, load_live_values), [], f"`{live_manifest}`"
        if live_manifest is None:
            raise Stop(
                f"stack {stack}: give the stored manifest, what the upgrade compares against: --live-manifest FILE "
                f"(`helm get manifest {release} -n {namespace} > FILE`) or --from-cluster"
            )
        manifest = functools.partial(read_objects, served=False)
        stored = [o.manifest for o in _load("--live-manifest", live_manifest, manifest)]
    objects += [found for path in live_objects for found in _load("--live-object", path, read_objects)]
    chart_dir = chart_directory(stack, settings.release.chart, chart)
    expected = Expected.from_rendered(rendered())
    try:
        # As an upgrade (Flux upgrades on every change), the lookup served the live objects and the stack's Envoy
        # ConfigMap (`pulumi up` creates it first).
        with progress.step(f"stack {stack}: rendering {chart_dir} with Helm as an upgrade"):
            served = [*(o.manifest for o in objects), *expected.served]
            after = render_chart(
                chart_dir, release, namespace, expected.values, served, post_renderer=ROOT / POSTRENDER, is_upgrade=True
            )
    except ChartRenderError as error:
        raise Stop(f"stack {stack}: chart {chart_dir} refuses this stack's values: {error}", EXIT_FINDING) from None
    first = (
        f"Before: the live release's stored manifest (`helm get manifest`, {where}), what the upgrade compares "
        f"against. After: chart `{chart_dir}` rendered by Helm with this stack's values as an upgrade."
    )
    notes = [first, *objects_diff.notes(expected, objects)]
    # Neither generation's block: the chart says what is wrong when it renders them.
    live_generation = next((g for g in GENERATIONS if g.inference_values_key in live_values), expected.generation)
    declared = objects_diff.declared_deletions(release, namespace, live_generation, expected.generation)
    found = objects_diff.compare(stored, after, namespace, declared)
    document = {"notes": notes, **objects_diff.as_json(found)}
    findings = found.deletions.findings("deletion(s); see the report")
    return _report(stack, objects_diff.markdown(found, stack, notes), document, findings, out=out, json=json)


def chart_directory(stack: str, chart: ChartSource, given: Path | None) -> Path:
    """``given`` (``--chart``), else the stack's chart, fetched if it is a pinned git commit not yet in the cache."""
    if given is None and chart.kind == "git" and chart.commit and not (chart_source.CACHE_ROOT / chart.commit).is_dir():
        try:
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


def live_findings(settings: Settings) -> list[str]:
    """Flux's HelmReleases and the release's status read from the cluster and checked (``check_live``)."""
    helm_releases = loads(_read("kubectl", "get", "helmreleases.helm.toolkit.fluxcd.io", "-A", "-o", "json"))["items"]
    status = loads(_read("helm", "status", settings.release.name, "-n", settings.namespace, "-o", "json"))
    return check_live(helm_releases, status, settings)


def release_of(helm_release: dict[str, Any]) -> tuple[str, str]:
    """(Helm release name, namespace) helm-controller makes of a HelmRelease (fluxcd/helm-controller ``GetReleaseName``,
    ``GetReleaseNamespace``, v0.36.2 and v1.4.5)."""
    meta, spec = helm_release["metadata"], helm_release.get("spec") or {}
    target = spec.get("targetNamespace")
    name = spec.get("releaseName") or (f"{target}-{meta['name']}" if target else meta["name"])
    return name, target or meta["namespace"]


def check_live(helm_releases: list[dict[str, Any]], helm_status: dict[str, Any], settings: Settings) -> list[str]:
    """Before the import step: exactly one HelmRelease manages the release, suspended (deleted unsuspended, it
    uninstalls the release), and ``helm status`` is deployed (no Helm operation in flight). One line per finding."""
    rel, ns = settings.release.name, settings.namespace
    managing = [hr for hr in helm_releases if release_of(hr) == (rel, ns)]
    found = []
    if len(managing) != 1:
        names = ", ".join(f"{hr['metadata']['namespace']}/{hr['metadata']['name']}" for hr in managing) or "none"
        found.append(f"HelmRelease: expected exactly one HelmRelease managing {ns}/{rel}, found {names}")
    elif (suspend := (managing[0].get("spec") or {}).get("suspend")) is not True:
        where = f"HelmRelease {managing[0]['metadata']['namespace']}/{managing[0]['metadata']['name']}"
        found.append(f"suspend: {where} is not suspended (spec.suspend: {suspend!r}); step 3 first")
    if (status := str(helm_status["info"]["status"])) != "deployed":
        why = "not deployed"
        if status.startswith("pending-"):
            why = 'a Helm operation is in flight or was interrupted (docs/takeover.md, "An interrupted up")'
        found.append(f"helm status: release {ns}/{rel} is {status} (revision {helm_status.get('version')}): {why}")
    return found


def read_live_release(
    stack: str, release: str, namespace: str
) -> tuple[dict[str, Any], list[Any], list[LiveObject], str]:
    """(values, stored manifest, the objects the chart looks up, which revision) from Helm's record of the release,
    whose ``config`` is what ``helm get values`` prints and ``manifest`` what ``helm get manifest`` does (helm/helm
    ``pkg/release`` ``Release``); refused unless the release is deployed."""
    record = loads(_read("helm", "status", release, "-n", namespace, "-o", "json"))
    if (status := record["info"]["status"]) != "deployed":
        raise Stop(f"stack {stack}: release {release} is {status} (revision {record['version']}), not deployed")
    values, manifest = record.get("config") or {}, [d for d in yaml.safe_load_all(record.get("manifest", "")) if d]
    name = f"scaledobject.keda.sh/{CHART.scaled_object_name(CHART.instance_name(release))}"
    found = _read("kubectl", "get", name, "-n", namespace, "--ignore-not-found", "-o", "yaml")
    objects = load_live_objects(found, f"kubectl get {name}", namespace)
    return values, manifest, objects, f"revision {record['version']}"
