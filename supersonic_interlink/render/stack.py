"""Render a stack offline, as ``pulumi up`` would evaluate it: the manifests the program creates, the Helm release with
its values, the Envoy configuration and, when the chart is on disk, the chart's objects; the checks run on them, and
each check that could not run is named with the reason. ``./supersonic render`` is the command line over this.

A stack holding secrets (``secure:`` values) renders without its passphrase: each secret is the placeholder
``[secret]`` (``stack_config.SECRET_PLACEHOLDER``) and the program is evaluated with those keys marked secret, as
the Pulumi CLI marks them; neither the ciphertext nor a decrypted value is ever read into the output.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config import PROJECT, ChartSource, ConfigError, deep_merge, generation, load_yaml
from supersonic_interlink.config.generation import values_on_disk
from supersonic_interlink.config.stack_config import (
    SECRET_PLACEHOLDER,
    load_stack,
    secret_key_of,
)
from supersonic_interlink.contract import CHART, Generation
from supersonic_interlink.files import write_text


class _Dumper(yaml.SafeDumper):
    """Block style; long strings as literal blocks so multi-line text diffs line by line."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump(document: Any) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=120)


def dump_all(documents: list[Any]) -> str:
    return yaml.dump_all(documents, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=120)


def chart_block(chart: ChartSource) -> dict[str, Any]:
    """The chart source as the stack states it (a git source without a commit shows ``commit: null``)."""
    if chart.kind == "git":
        return {"git": chart.git, "commit": chart.commit, "path": chart.path}
    if chart.kind == "path":
        return {"path": chart.path}
    return {"repo": chart.repo, "name": chart.name, "version": chart.version}


def _placeholder_problems(problems: Sequence[str]) -> list[str]:
    """Config problems, each one about a secret's placeholder saying so."""
    return [
        f"{problem} (a secret: rendered offline as {SECRET_PLACEHOLDER}, which this key does not take; "
        f"`pulumi preview` checks the real value)"
        if SECRET_PLACEHOLDER in problem
        else problem
        for problem in problems
    ]


def render(
    stack: str, config: Mapping[str, Any] | None = None, secrets: Sequence[str] = (), chart_dir: Path | None = None
) -> dict[str, Any]:
    """Evaluate the stack (its stack file's config, or ``config`` as the CLI would pass it, with ``secrets`` the
    paths of the secret values in it); return its manifests, release description and Envoy text. Raises ConfigError.
    ``chart_dir``: a chart directory to render for instead of the stack's own chart (its generation is read there).
    The settings are built once and the program (``program.build``) runs on them under the mock engine.
    """
    from supersonic_interlink.config.pulumi_config import settings_from_config
    from supersonic_interlink.program import build
    from supersonic_interlink.render.evaluate import evaluate, reveal

    if config is None:
        loaded = load_stack(stack)
        config, secrets = loaded.config, loaded.secrets
    secret_keys = sorted({secret_key_of(path) for path in secrets})
    override = generation.CHART_OVERRIDE.set(chart_dir)
    try:
        settings = settings_from_config(config, secret_keys)  # every config problem, before anything is evaluated
    except ConfigError as error:
        raise ConfigError(_placeholder_problems(error.problems)) from None
    finally:
        generation.CHART_OVERRIDE.reset(override)
    evaluation = evaluate({}, stack, program=lambda: build(settings), chart_dir=chart_dir)
    # What the provider is handed: secrets unwrapped (offline they are placeholders).
    manifests = [
        reveal(r.inputs)
        for r in evaluation.resources
        if r.custom and r.type.startswith("kubernetes:") and r.type != HELM_RELEASE_TYPE
    ]
    manifests.sort(key=lambda m: (m["kind"], m["metadata"]["name"]))
    release_inputs = reveal(evaluation.one(HELM_RELEASE_TYPE).inputs)
    # What Helm receives: the value files first, then `values` over them (Helm's own order).
    values: dict[str, Any] = {}
    for asset in release_inputs.get("valueYamlFiles", []):
        values = deep_merge(values, load_yaml(asset["text"]) or {})
    values = deep_merge(values, release_inputs["values"])
    release = {
        "name": release_inputs["name"],
        "namespace": release_inputs["namespace"],
        "chart": chart_block(settings.release.chart),
        "options": {
            key: release_inputs[key]
            for key in ("atomic", "chart", "cleanupOnFail", "dependencyUpdate", "maxHistory", "postrender", "timeout")
            if key in release_inputs
        },
        "values": values,
    }
    config_name = release["values"][CHART.envoy_values_key]["external_config"]["configmap_name"]
    envoy_text = next(
        m["data"][CHART.envoy_config_key]
        for m in manifests
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == config_name
    )
    return {
        "manifests": manifests,
        "release": release,
        "envoy": envoy_text,
        "outputs": reveal(evaluation.outputs),
        "chart_source": settings.release.chart,
        "generation": settings.generation,
        "generation_chart": chart_dir,
        "secrets": list(secrets),
        "settings": settings,
    }


CHART_DIR = "chart"
"""Where in a render tree the chart's objects go, one file each (``release.file_names``)."""


def write(rendered: dict[str, Any], out: Path, chart_objects: Sequence[Mapping[str, Any]] | None = None) -> list[Path]:
    """Write the render tree: manifests.yaml, release.yaml, envoy.yaml and, given the chart's objects,
    ``chart/<Kind>[.<group>]/<name>.yaml`` (Secret data masked). A ``chart/`` left from an earlier render is removed
    first, so the tree is exactly this render. Returns the files written and, with chart objects, the ``chart/``
    directory."""
    from supersonic_interlink.render.release import file_names, mask

    out.mkdir(parents=True, exist_ok=True)
    files = {
        "manifests.yaml": dump_all(rendered["manifests"]),
        "release.yaml": dump(rendered["release"]),
        "envoy.yaml": rendered["envoy"],
    }
    written = []
    for name, text in files.items():
        path = out / name
        write_text(path, text)  # a link planted in the output directory is not followed
        written.append(path)
    chart_dir = out / CHART_DIR
    if chart_dir.is_dir():
        shutil.rmtree(chart_dir)
    if chart_objects is not None:
        masked = mask(chart_objects)
        for name, manifest in zip(file_names(masked), masked, strict=True):
            path = chart_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text(path, dump(manifest))
        written.append(chart_dir)
    return written


def findings(rendered: dict[str, Any]) -> list[str]:
    from supersonic_interlink.render.checks import envoy_findings, kubernetes_findings, object_findings

    return (
        kubernetes_findings(rendered["manifests"])
        + object_findings(rendered["manifests"], rendered["settings"], schemas=False)
        + envoy_findings(rendered["envoy"])
    )


def _repository_index_idle_timeout(envoy_yaml: str) -> str:
    """The idle_timeout of the RepositoryIndex route as the rendered configuration states it."""
    config = load_yaml(envoy_yaml)
    for listener in config["static_resources"]["listeners"]:
        for chain in listener["filter_chains"]:
            for network_filter in chain["filters"]:
                for host in network_filter["typed_config"].get("route_config", {}).get("virtual_hosts", []):
                    for route in host["routes"]:
                        if route["match"].get("path") == CHART.repository_index_path:
                            return route["route"]["idle_timeout"]
    return "missing"


def chart_line(stack: str, chart: ChartSource) -> str:
    if chart.kind == "git":
        where = f"git {chart.git} {chart.path}"
        if chart.commit is None:
            return f"{where}, NOT PINNED: pulumi preview/up refuse it; run `{chart_source.pin_command(stack)}`"
        return f"{where} at {chart.commit}"
    if chart.kind == "path":
        return str(chart.path)
    return f"{chart.repo} {chart.name} {chart.version}"


def generation_line(chart: ChartSource, row: Generation, chart_dir: Path | None) -> str:
    names = (
        f"{row.name} ({row.inference_values_key}: values, <release>-{row.inference_component}, "
        f"Envoy clusters {row.inference_cluster} and {row.admission_cluster})"
    )
    if chart_dir is not None:
        return f"{names}, read from {chart_dir}/values.yaml (--chart)"
    if chart.kind == "repo":
        return f"{names}, that of every published version up to 0.3.1"
    if values_on_disk(chart) is None and chart.commit is not None:
        return f"{names}, assumed (what SuperSONIC main carries): commit {chart.commit[:12]} is not on disk to read"
    if values_on_disk(chart) is None:
        return f"{names}, assumed (what SuperSONIC main carries): the chart is not on disk to read it from"
    return f"{names}, read from the chart's values.yaml"


def summary(stack: str, rendered: dict[str, Any]) -> str:
    release = rendered["release"]
    values = release["values"]
    sfz = values["scaleFromZero"]
    lines = [
        f"stack {stack}: release {release['name']} in namespace {release['namespace']}",
        f"  chart: {chart_line(stack, rendered['chart_source'])}",
        "  chart generation: "
        + generation_line(rendered["chart_source"], rendered["generation"], rendered["generation_chart"]),
        (
            f"  scale from zero: {'on' if sfz['enabled'] else 'off'}, readyTimeoutSeconds {sfz['readyTimeoutSeconds']}"
            f" (RepositoryIndex idle_timeout {_repository_index_idle_timeout(rendered['envoy'])}),"
            f" KEDA {values['keda']['minReplicaCount']}..{values['keda']['maxReplicaCount']} replicas"
        ),
        "  objects: " + ", ".join(f"{m['kind']}/{m['metadata']['name']}" for m in rendered["manifests"]),
        f"  client endpoint: {rendered['outputs'].get('clientEndpoint')}",
    ]
    if rendered["secrets"]:
        lines.append(
            f"  secrets: {len(rendered['secrets'])} value(s) rendered as the placeholder {SECRET_PLACEHOLDER} "
            f"(no passphrase is read): {', '.join(rendered['secrets'])}"
        )
    return "\n".join(lines)


def locate_chart(stack: str, chart: ChartSource, chart_dir: Path | None = None) -> tuple[Path | None, str]:
    """(the chart directory, "") when the chart is on disk (``chart_dir`` if given), else (None, why not)."""
    if chart_dir is not None:
        return chart_dir, ""
    if chart.kind == "git" and chart.commit is None:
        return None, f"the chart is not pinned (`{chart_source.pin_command(stack)}`)"
    if chart.kind == "git":
        found, modified = chart_source.fetched_copy(str(chart.commit), str(chart.path))
        if found is not None:
            return found, ""
        if modified is not None:
            return None, (
                f"the fetched copy of commit {chart.commit} is modified: {modified} (delete "
                f"{chart_source.CACHE_DIR}/{chart.commit} and run `./supersonic render {stack} --fetch-chart`)"
            )
        return None, (
            f"commit {str(chart.commit)[:12]} is not on disk: the chart checks need `./supersonic render {stack} "
            f"--fetch-chart` (network access to {chart.git})"
        )
    if chart.kind == "path":
        found = chart_source.chart_on_disk(chart)
        return (found, "") if found is not None else (None, f"no chart at {chart.path}")
    return None, "the chart is in a chart repository, not on disk (give --chart DIR)"


@dataclass
class Outcome:
    """What the checks found, and which could not run and why: a check that did not run never counts as passed."""

    findings: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(check, why it could not run)."""
    deferred: list[tuple[str, str]] = field(default_factory=list)
    """(check, where it runs instead): a check of a secret's text, which offline is not here; never counted as
    passed, and not a skip under --strict, since the command that has the secret runs it."""

    def last_line(self, stack: str) -> str:
        if self.findings:
            return f"stack {stack}: {len(self.findings)} finding(s)"
        if self.skipped:
            names = ", ".join(check for check, _ in self.skipped)
            return f"stack {stack}: no findings, but {len(self.skipped)} check(s) skipped ({names}): not a pass"
        if self.deferred:
            names = ", ".join(check for check, _ in self.deferred)
            return f"stack {stack}: checks passed, except {names}, which pulumi preview runs (a secret's text)"
        return f"stack {stack}: checks passed"


CONFORMANCE = "chart conformance"
METRIC_SELECTORS = "load metric selectors"


def conformance_skipped(stack: str, rendered: dict[str, Any], chart_dir: Path | None) -> str | None:
    """Why the chart conformance check cannot run (the chart is not on disk), or None when it can."""
    found, why = locate_chart(stack, rendered["chart_source"], chart_dir)
    return None if found is not None else why


def conformance(stack: str, rendered: dict[str, Any], chart_dir: Path | None) -> list[str]:
    """The chart conformance check's findings; none when the chart is not on disk (``conformance_skipped`` says
    why, and ``checks`` counts it as skipped)."""
    from supersonic_interlink.chart.binaries import BinaryError
    from supersonic_interlink.render.conformance import Expected, check

    chart_dir, _ = locate_chart(stack, rendered["chart_source"], chart_dir)
    if chart_dir is None:
        return []
    try:
        found = [f"chart {chart_dir}: {finding}" for finding in check(chart_dir, Expected.from_rendered(rendered))]
    except BinaryError as error:
        return [f"chart conformance could not run: {error}"]
    if not found:
        print(f"stack {stack}: chart {chart_dir} conforms")
    return found


def chart_findings(stack: str, rendered: dict[str, Any], chart_dir: Path | None) -> list[str]:
    """The chart's objects, as the release deploys them, through the checks the program's own objects pass; a value
    refused there named by the stack key that set it. None when the chart is not on disk, or refuses the values
    (the conformance check then says so)."""
    from supersonic_interlink.chart.binaries import BinaryError
    from supersonic_interlink.chart.helm import ChartRenderError
    from supersonic_interlink.render.checks import object_findings

    try:
        objects, _ = release_chart_objects(stack, rendered, chart_dir)
    except (ChartRenderError, BinaryError):
        return []
    return object_findings(objects or [], rendered["settings"])


def checks(stack: str, rendered: dict[str, Any], chart_dir: Path | None = None) -> Outcome:
    """Every check of ``render --check``: strict Kubernetes schemas, ``envoy --mode validate``, and, when the chart
    is on disk, the same schemas and the API server's rules over the chart's objects and the chart conformance
    check (both skipped, with the reason, when it is not)."""
    outcome = Outcome(findings=findings(rendered))
    chart = rendered["chart_source"]
    if chart.kind == "git" and chart.commit in CHART.guarded_commits:
        # Known from the chart's history, so said offline too, where the chart is not on disk to render.
        outcome.findings.append(f"{PROJECT}:release.chart.commit: {chart_source.guarded_message(chart.commit)}")
    why = conformance_skipped(stack, rendered, chart_dir)
    if why is None:
        outcome.findings += chart_findings(stack, rendered, chart_dir)
        outcome.findings += conformance(stack, rendered, chart_dir)
    else:
        outcome.skipped.append((CONFORMANCE, why))
    if any(path.startswith(f"{PROJECT}:serverLoad") for path in rendered["secrets"]):
        # config/metric.py checks the metric's release and namespace selectors; offline a secret has no text.
        outcome.deferred.append(
            (METRIC_SELECTORS, "serverLoad is a secret, whose text is not here offline; pulumi preview checks it")
        )
    return outcome


def release_chart_objects(
    stack: str, rendered: dict[str, Any], chart_dir: Path | None = None
) -> tuple[list[dict[str, Any]] | None, str]:
    """(the chart's objects as the release deploys them, "") or, when the chart is not on disk, (None, why not).
    Raises ``ChartRenderError`` (the chart refuses the values) or ``BinaryError`` (no pinned Helm)."""
    from supersonic_interlink.render.release import chart_objects

    found, why = locate_chart(stack, rendered["chart_source"], chart_dir)
    if found is None:
        return None, why
    return chart_objects(found, rendered), ""


def chart_pinned(stack: str) -> bool:
    """Whether the stack's chart source names one exact chart (False too when its config does not load)."""
    try:
        return bool(render_settings(stack).release.chart.pinned)
    except ConfigError:
        return False


def render_settings(stack: str) -> Any:
    """The stack's settings as ``render`` checks them (secrets as placeholders). Raises ConfigError."""
    from supersonic_interlink.config.pulumi_config import settings_from_config

    loaded = load_stack(stack)
    return settings_from_config(loaded.config, loaded.secret_keys)
