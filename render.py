"""Render a stack offline: what `pulumi up` would deploy, as reviewable files, with optional checks.

    python render.py <stack> [--out DIR] [--check [--chart DIR]]
    python render.py <stack> --fetch-chart
    python render.py <stack> --pin-chart [REF]

Evaluates the real program for the stack (Pulumi's mock engine stands in for the engine; there is no cluster)
with the config the Pulumi CLI would pass, and writes DIR/manifests.yaml (every object the program creates
directly), DIR/release.yaml (the Helm release and its values) and DIR/envoy.yaml (the Envoy configuration as
stored in its ConfigMap). --check validates them (strict Kubernetes schemas, envoy --mode validate) and, when the
chart is on disk (a chart directory, a fetched pinned commit, or --chart DIR), runs the chart conformance check
with the real Helm v3; it exits 1 on any finding. --fetch-chart fetches the stack's pinned git chart into .charts/;
--pin-chart resolves REF (default main) of the stack's git chart to a commit and writes it into the stack file.
Both need network access to the chart's repository. Invalid stack config or options exit 2 with one line per problem.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import chart_source
from supersonic_interlink.contract import CHART
from supersonic_interlink.settings import ChartSource, ConfigError, deep_merge, load_yaml
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


def chart_block(chart: ChartSource) -> dict[str, Any]:
    """The chart source as the stack states it (a git source without a commit shows ``commit: null``)."""
    if chart.kind == "git":
        return {"git": chart.git, "commit": chart.commit, "path": chart.path}
    if chart.kind == "path":
        return {"path": chart.path}
    return {"repo": chart.repo, "name": chart.name, "version": chart.version}


def render(stack: str) -> dict[str, Any]:
    """Evaluate the stack; return its manifests, release description and Envoy text. Raises ConfigError."""
    from supersonic_interlink.evaluate import evaluate
    from supersonic_interlink.program import settings_from_config

    config = load_stack_config(stack)
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
    from supersonic_interlink.binaries import BinaryError
    from supersonic_interlink.conformance import Expected, check

    chart = rendered["chart_source"]
    if chart_dir is None:
        chart_dir = chart_source.chart_on_disk(chart)
    if chart_dir is None:
        if chart.kind == "git" and chart.commit is None:
            why = f"the chart is not pinned (`{chart_source.pin_command(stack)}`)"
        elif chart.kind == "git":
            why = f"commit {chart.commit} is not fetched (`python render.py {stack} --fetch-chart`)"
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


def _fetch(stack: str, chart: ChartSource) -> int:
    if chart.kind != "git":
        print(f"stack {stack}: the chart is a {chart.kind} source; nothing to fetch")
        return 0
    if chart.commit is None:
        print(f"stack {stack}: {chart_source.unpinned_message(stack)}", file=sys.stderr)
        return 1
    try:
        directory = chart_source.fetch(str(chart.git), chart.commit, str(chart.path))
    except chart_source.ChartSourceError as error:
        print(f"stack {stack}: {error}", file=sys.stderr)
        return 1
    print(f"stack {stack}: chart {chart.commit} at {directory.relative_to(chart_source.ROOT)}")
    return 0


def _pin(stack: str, ref: str) -> int:
    from supersonic_interlink.pin import pin_chart

    try:
        commit, path = pin_chart(stack, ref)
    except ConfigError as error:
        _config_problems(stack, error)
        return 2
    except chart_source.ChartSourceError as error:
        print(f"stack {stack}: --pin-chart {ref}: {error}", file=sys.stderr)
        return 1
    print(f"stack {stack}: release.chart pinned to {commit} ({ref}); wrote {path.relative_to(chart_source.ROOT)}")
    return 0


def _config_problems(stack: str, error: ConfigError) -> None:
    print(f"stack {stack}: invalid config:", file=sys.stderr)
    for problem in error.problems:
        print(f"  {problem}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stack", help=f"stack name ({', '.join(stack_names())})")
    parser.add_argument("--out", type=Path, help="directory to write manifests.yaml, release.yaml, envoy.yaml")
    parser.add_argument("--check", action="store_true", help="validate the output; exit 1 on any finding")
    parser.add_argument(
        "--chart", type=Path, metavar="DIR", help="with --check: the chart directory to check instead of the stack's"
    )
    parser.add_argument(
        "--fetch-chart", action="store_true", help="fetch the stack's pinned git chart into .charts/ (needs network)"
    )
    parser.add_argument(
        "--pin-chart",
        nargs="?",
        const="main",
        metavar="REF",
        help="write the commit REF (default main) of the stack's git chart into the stack file (needs network)",
    )
    args = parser.parse_args(argv)
    if args.chart is not None and not args.check:
        parser.error("--chart DIR names the chart --check renders: give --check too")
    if args.chart is not None and not (args.chart / "Chart.yaml").is_file():
        parser.error(f"--chart {args.chart}: not a chart directory (no Chart.yaml in it)")
    if args.pin_chart is not None and not args.pin_chart.strip():
        parser.error("--pin-chart REF: REF is empty (a branch, a tag or a full commit id; without REF: main)")
    chart_actions = [
        flag for flag, given in (("--pin-chart", args.pin_chart), ("--fetch-chart", args.fetch_chart)) if given
    ]
    if chart_actions and (args.check or args.out or len(chart_actions) > 1):
        parser.error(f"{' and '.join(chart_actions)} only changes the chart: run --check / --out as a second command")
    if args.pin_chart is not None:
        return _pin(args.stack, args.pin_chart)
    try:
        rendered = render(args.stack)
    except ConfigError as error:
        _config_problems(args.stack, error)
        return 2
    chart = rendered["chart_source"]
    if args.fetch_chart:
        return _fetch(args.stack, chart)
    if args.out:
        try:
            written = write(rendered, args.out)
        except OSError as error:
            print(f"render.py: --out {args.out}: cannot write: {error.strerror or error}", file=sys.stderr)
            return 2
        for path in written:
            print(f"wrote {path}")
        if chart.kind == "git" and chart.commit is None:
            print(f"stack {args.stack}: {chart_source.unpinned_message(args.stack)}")
    else:
        print(summary(args.stack, rendered))
    if args.check:
        found = findings(rendered) + conformance(args.stack, rendered, args.chart)
        for finding in found:
            print(f"check: {finding}", file=sys.stderr)
        if found:
            print(f"stack {args.stack}: {len(found)} finding(s)", file=sys.stderr)
            return 1
        print(f"stack {args.stack}: checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
