"""``./supersonic stack new NAME``: a stack file from another's, with its own namespace, release, virtual node and
load-metric selectors, the source's comments and secrets left out; never over a file; then ``render --check``."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import EXIT_USAGE
from supersonic_interlink.config import PROJECT, ConfigError
from supersonic_interlink.config.pulumi_config import matchers, settings_from_config
from supersonic_interlink.config.stack_config import (
    check_stack_name,
    full_key,
    merged_config,
    read_stack_document,
    secret_paths,
    stack_file,
)
from supersonic_interlink.render.stack import run as render_run

NODE_LABEL = "kubernetes.io/hostname"
"""The label interLink's virtual node carries its name under."""


def _key(name: str) -> str:
    return f"{PROJECT}:{name}"


def new_config(source: dict[str, Any], *, namespace: str, release: str, node: str) -> tuple[dict[str, Any], list[str]]:
    """(the new stack's ``config:`` map, the source's secret paths left out)."""
    secrets = secret_paths(source)
    config: dict[str, Any] = {}
    for key, value in source.items():
        if not any(path == full_key(key) or path.startswith(f"{full_key(key)}.") for path in secrets):
            config[full_key(key)] = value
    config[_key("namespace")] = namespace
    config[_key("release")] = {**(config.get(_key("release")) or {}), "name": release}
    triton = config.get(_key("triton")) or {}
    config[_key("triton")] = {**triton, "nodeSelector": {**(triton.get("nodeSelector") or {}), NODE_LABEL: node}}
    load = config.get(_key("serverLoad")) or {}
    metric = load.get("metric")
    if isinstance(metric, str):
        for matcher in matchers(metric):
            if matcher.op in ("=", "=~"):
                wanted = release if matcher.label == "release" else namespace
                metric = metric.replace(matcher.text, f'{matcher.label}{matcher.op}"{wanted}"')
        config[_key("serverLoad")] = {**load, "metric": metric}
    return config, secrets


def _naming(value: Any, names: set[str], path: str = "") -> list[tuple[str, str]]:
    """(path, name) of each copied text that names the source's namespace or release as a word."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _naming(item, names, f"{path}.{key}".strip("."))]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _naming(item, names, f"{path}[{i}]")]
    if isinstance(value, str) and not path.endswith(("namespace", "release.name", "serverLoad.metric")):
        return [(path, n) for n in sorted(names) if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", value)]
    return []


def run(name: str, *, namespace: str, release: str, node: str, source: str) -> int:
    try:
        target = stack_file(check_stack_name(name))
        origin = stack_file(source)
        if not origin.is_file():
            raise ConfigError([f"--from {source}: no file {origin.name} in stacks/"])
        old = read_stack_document(origin)
        config, dropped = new_config(old, namespace=namespace, release=release, node=node)
        settings_from_config(merged_config(config))  # every config problem, before a file is written
    except ConfigError as error:
        print(f"stack new {name}: " + "\n  ".join(error.problems), file=sys.stderr)
        return EXIT_USAGE
    names = {str(old.get(_key("namespace")) or ""), str((old.get(_key("release")) or {}).get("name") or "")} - {""}
    header = [
        f"# {name}: made by `./supersonic stack new` from stack {source}. Its namespace, release name, virtual node",
        f"# and load-metric selectors are its own; every other value is {source}'s: review each for this cluster.",
    ]
    header += [f'#   review {path}: it holds "{word}", a name of {source}\'s' for path, word in _naming(config, names)]
    text = "\n".join(header) + "\n" + yaml.safe_dump({"config": config}, sort_keys=False, width=4096)
    try:
        with Path(target).open("x", encoding="utf-8") as file:
            file.write(text)
    except FileExistsError:
        print(f"stack new {name}: stacks/{target.name} exists; it is never overwritten", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote stacks/{target.name}")
    for path in dropped:
        print(f"left out the secret {path} (bound to {source}'s key): pulumi config set --secret --stack {name} ...")
    return render_run(name, out=None, check=True, strict=False, chart_dir=None, fetch_chart=False, pin_chart=None)
