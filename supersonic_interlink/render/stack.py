"""Render a stack offline, as ``pulumi up`` would evaluate it: the manifests the program creates, the Helm release with
its values, the Envoy configuration; the checks run on them. ``./supersonic render`` is the command line over this."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.config import ChartSource, deep_merge, load_yaml
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.contract import CHART

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


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


def render(stack: str, config: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Evaluate the stack (its stack file's config, or ``config`` as the CLI would pass it); return its manifests,
    release description and Envoy text. Raises ConfigError."""
    from supersonic_interlink.config.pulumi_config import settings_from_config
    from supersonic_interlink.render.evaluate import evaluate

    config = dict(load_stack_config(stack) if config is None else config)
    settings = settings_from_config(config)  # every config problem, before anything is evaluated
    evaluation = evaluate(config, stack)
    manifests = [
        r.inputs
        for r in evaluation.resources
        if r.custom and r.type.startswith("kubernetes:") and r.type != RELEASE_TYPE
    ]
    manifests.sort(key=lambda m: (m["kind"], m["metadata"]["name"]))
    release_inputs = evaluation.one(RELEASE_TYPE).inputs
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
        "outputs": evaluation.outputs,
        "chart_source": settings.release.chart,
    }


def write(rendered: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "manifests.yaml": dump_all(rendered["manifests"]),
        "release.yaml": dump(rendered["release"]),
        "envoy.yaml": rendered["envoy"],
    }
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        written.append(path)
    return written


def findings(rendered: dict[str, Any]) -> list[str]:
    from supersonic_interlink.render.checks import envoy_findings, kubernetes_findings

    return kubernetes_findings(rendered["manifests"]) + envoy_findings(rendered["envoy"])


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


def summary(stack: str, rendered: dict[str, Any]) -> str:
    release = rendered["release"]
    values = release["values"]
    sfz = values["scaleFromZero"]
    lines = [
        f"stack {stack}: release {release['name']} in namespace {release['namespace']}",
        f"  chart: {chart_line(stack, rendered['chart_source'])}",
        (
            f"  scale from zero: {'on' if sfz['enabled'] else 'off'}, readyTimeoutSeconds {sfz['readyTimeoutSeconds']}"
            f" (RepositoryIndex idle_timeout {_repository_index_idle_timeout(rendered['envoy'])}),"
            f" KEDA {values['keda']['minReplicaCount']}..{values['keda']['maxReplicaCount']} replicas"
        ),
        "  objects: " + ", ".join(f"{m['kind']}/{m['metadata']['name']}" for m in rendered["manifests"]),
        f"  client endpoint: {rendered['outputs'].get('clientEndpoint')}",
    ]
    return "\n".join(lines)


def conformance(stack: str, rendered: dict[str, Any], chart_dir: Path | None) -> list[str]:
    """The chart conformance check's findings, or none (with a line saying why) when the chart is not on disk."""
    from supersonic_interlink.chart.binaries import BinaryError
    from supersonic_interlink.render.conformance import Expected, check

    chart = rendered["chart_source"]
    if chart_dir is None:
        chart_dir = chart_source.chart_on_disk(chart)
    if chart_dir is None:
        if chart.kind == "git" and chart.commit is None:
            why = f"the chart is not pinned (`{chart_source.pin_command(stack)}`)"
        elif chart.kind == "git":
            why = f"commit {chart.commit} is not fetched (`./supersonic render {stack} --fetch-chart`)"
        elif chart.kind == "path":
            why = f"no chart at {chart.path}"
        else:
            why = "the chart is in a chart repository, not on disk (give --chart DIR)"
        print(f"stack {stack}: chart conformance not run: {why}")
        return []
    try:
        found = [f"chart {chart_dir}: {finding}" for finding in check(chart_dir, Expected.from_rendered(rendered))]
    except BinaryError as error:
        return [f"chart conformance could not run: {error}"]
    if not found:
        print(f"stack {stack}: chart {chart_dir} conforms")
    return found
