"""Render a stack offline: what `pulumi up` would deploy, as reviewable files, with optional checks.

    python render.py <stack> [--out DIR] [--check]

Evaluates the real program for the stack (Pulumi's mock engine stands in for the engine; there is no cluster)
with the config the Pulumi CLI would pass, and writes DIR/manifests.yaml (every object the program creates
directly), DIR/release.yaml (the Helm release and its values) and DIR/envoy.yaml (the Envoy configuration as
stored in its ConfigMap). --check validates them (strict Kubernetes schemas, envoy --mode validate) and exits 1
on any finding. Invalid stack config exits 2 with one line per problem.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink.contract import CHART
from supersonic_interlink.settings import ConfigError, deep_merge, load_yaml
from supersonic_interlink.stack_config import load_stack_config, stack_names

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


def render(stack: str) -> dict[str, Any]:
    """Evaluate the stack; return its manifests, release description and Envoy text. Raises ConfigError."""
    from supersonic_interlink.evaluate import evaluate
    from supersonic_interlink.program import settings_from_config

    config = load_stack_config(stack)
    settings_from_config(config)  # every config problem, before anything is evaluated
    evaluation = evaluate(config, stack)
    manifests = [
        r.inputs
        for r in evaluation.resources
        if r.custom and r.type.startswith("kubernetes:") and r.type != RELEASE_TYPE
    ]
    manifests.sort(key=lambda m: (m["kind"], m["metadata"]["name"]))
    release_inputs = evaluation.one(RELEASE_TYPE).inputs
    if "repositoryOpts" in release_inputs:
        chart = {
            "repo": release_inputs["repositoryOpts"]["repo"],
            "name": release_inputs["chart"],
            "version": release_inputs["version"],
        }
    else:
        chart = {"path": release_inputs["chart"]}
    # What Helm receives: the value files first, then `values` over them (Helm's own order).
    values: dict[str, Any] = {}
    for asset in release_inputs.get("valueYamlFiles", []):
        values = deep_merge(values, load_yaml(asset["text"]) or {})
    values = deep_merge(values, release_inputs["values"])
    release = {
        "name": release_inputs["name"],
        "namespace": release_inputs["namespace"],
        "chart": chart,
        "options": {
            key: release_inputs[key]
            for key in ("atomic", "cleanupOnFail", "maxHistory", "postrender", "timeout")
            if key in release_inputs
        },
        "values": values,
    }
    config_name = release["values"]["envoy"]["external_config"]["configmap_name"]
    envoy_text = next(
        m["data"][CHART.envoy_config_key]
        for m in manifests
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == config_name
    )
    return {"manifests": manifests, "release": release, "envoy": envoy_text, "outputs": evaluation.outputs}


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
    from supersonic_interlink.checks import envoy_findings, kubernetes_findings

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


def summary(stack: str, rendered: dict[str, Any]) -> str:
    release = rendered["release"]
    values = release["values"]
    sfz = values["scaleFromZero"]
    chart = release["chart"]
    source = chart.get("path") or f"{chart['repo']} {chart['name']} {chart['version']}"
    lines = [
        f"stack {stack}: release {release['name']} in namespace {release['namespace']}",
        f"  chart: {source}",
        f"  scale from zero: {'on' if sfz['enabled'] else 'off'}, readyTimeoutSeconds {sfz['readyTimeoutSeconds']}"
        f" (RepositoryIndex idle_timeout {_repository_index_idle_timeout(rendered['envoy'])}),"
        f" KEDA {values['keda']['minReplicaCount']}..{values['keda']['maxReplicaCount']} replicas",
        "  objects: " + ", ".join(f"{m['kind']}/{m['metadata']['name']}" for m in rendered["manifests"]),
        f"  client endpoint: {rendered['outputs'].get('clientEndpoint')}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stack", help=f"stack name ({', '.join(stack_names())})")
    parser.add_argument("--out", type=Path, help="directory to write manifests.yaml, release.yaml, envoy.yaml")
    parser.add_argument("--check", action="store_true", help="validate the output; exit 1 on any finding")
    args = parser.parse_args(argv)
    try:
        rendered = render(args.stack)
    except ConfigError as error:
        print(f"stack {args.stack}: invalid config:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    if args.out:
        for path in write(rendered, args.out):
            print(f"wrote {path}")
    else:
        print(summary(args.stack, rendered))
    if args.check:
        found = findings(rendered)
        for finding in found:
            print(f"check: {finding}", file=sys.stderr)
        if found:
            print(f"stack {args.stack}: {len(found)} finding(s)", file=sys.stderr)
            return 1
        print(f"stack {args.stack}: checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
