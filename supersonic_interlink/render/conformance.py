"""Does a chart do what this program's values ask of it? Rendered with the real Helm v3 as an install would; each way
it falls short is one finding (docs/chart.md), each value it ignores among them (a changed value, same output)."""

from __future__ import annotations

import json
import os
import posixpath
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jmespath
import yaml

from supersonic_interlink import ROOT
from supersonic_interlink.chart.helm import ChartRenderer, ChartRenderError
from supersonic_interlink.components.supersonic_release import POSTRENDER
from supersonic_interlink.config.envoy import declared_additions
from supersonic_interlink.config.pulumi_yaml import load_outside_yaml
from supersonic_interlink.config.values import CONFIG_CHECKSUM_ANNOTATION
from supersonic_interlink.contract import CHART, Generation, UnknownGeneration, generation_of_values
from supersonic_interlink.objdiff import ABSENT, Named, changes, format_path, format_value, is_under
from supersonic_interlink.postrender import TRIGGER_TIMEOUT_MS, patch

UNSTABLE_RENDER = (
    "the chart renders the same values differently each time (random or time-based output), so the values it "
    "ignores cannot be told from those it reads"
)
GUARD_FINDING = (
    "this commit still refuses scaleFromZero.enabled with envoy.external_config.load_from_configmap, so it cannot "
    "load this program's Envoy configuration: pin a commit that has dropped that guard (42b2b933 is the first "
    "known one: docs/chart.md)"
)
SCAN_BUDGET_SECONDS = 120.0
"""A render takes well under a second and hammer has a few hundred values: a longer scan has a slow chart."""
SCAN_WORKERS_MAX = 8
"""Each Helm process holds the whole chart in memory."""
PROGRESS_EVERY_SECONDS = 10.0
PROBE_KEY = "conformance-probe"


@dataclass(frozen=True)
class Leaf:
    """One leaf of the values (an empty object or list counts), by its path of keys and indices."""

    path: tuple[str | int, ...]
    value: Any

    @property
    def name(self) -> str:
        """The values path as a reader writes it: ``triton.args[0]``, ``triton.nodeSelector["kubernetes.io/os"]``."""
        parts = [f"[{part}]" if isinstance(part, int) else format_path((part,)) for part in self.path]
        return "".join(part if i == 0 or part.startswith("[") else f".{part}" for i, part in enumerate(parts))


def leaves(values: Any, path: tuple[str | int, ...] = ()) -> Iterator[Leaf]:
    """Every leaf of ``values``, depth first in key order."""
    if isinstance(values, Mapping | list) and values:
        for key, value in values.items() if isinstance(values, Mapping) else enumerate(values):
            yield from leaves(value, (*path, key))
    else:
        yield Leaf(path, values)


def changed(value: Any) -> Any:
    """A different value of the same kind, so that a chart reading it renders something else."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return f"{value}-{PROBE_KEY}" if value else PROBE_KEY
    return (
        {PROBE_KEY: PROBE_KEY} if isinstance(value, Mapping) else [PROBE_KEY] if isinstance(value, list) else PROBE_KEY
    )


def with_leaf(values: Any, path: tuple[str | int, ...], new: Any) -> Any:
    """A copy of ``values`` with the leaf at ``path`` replaced by ``new``."""
    if not path:
        return new
    if isinstance(values, list):
        return [with_leaf(v, path[1:], new) if i == path[0] else v for i, v in enumerate(values)]
    return {k: with_leaf(v, path[1:], new) if k == path[0] else v for k, v in values.items()}


def canonical(objects: list[dict[str, Any]]) -> str:
    """The rendered objects, independent of document order, for an exact comparison."""
    return json.dumps(sorted(json.dumps(o, sort_keys=True) for o in objects))


def _get(tree: Any, *path: str) -> Any:
    for key in path:
        tree = (tree or {}).get(key) if isinstance(tree or {}, Mapping) else None
    return tree or {}


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    return next((o for o in objects if o.get("kind") == kind and _get(o, "metadata").get("name") == name), None)


def mounted_key(deployment: Mapping[str, Any], container: str, file_path: str) -> tuple[str, str] | None:
    """(ConfigMap name, key) that provides ``file_path`` in ``container`` of the Deployment's pods, or None."""
    spec = _get(deployment, "spec", "template", "spec")
    found = next((c for c in spec.get("containers") or [] if c.get("name") == container), None)
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    for mount in (found or {}).get("volumeMounts") or []:
        mount_path = str(mount.get("mountPath", "")).rstrip("/")
        config_map = (volumes.get(mount.get("name")) or {}).get("configMap")
        if mount.get("subPath"):
            relative = str(mount["subPath"]) if file_path == mount_path else None
        else:
            relative = file_path[len(mount_path) + 1 :] if file_path.startswith(mount_path + "/") else None
        if not config_map or relative is None:
            continue
        items = config_map.get("items")
        key = (
            next((i.get("key") for i in items if posixpath.normpath(str(i.get("path"))) == relative), None)
            if items
            else (relative if "/" not in relative else None)
        )
        if key is not None:
            return str(config_map.get("name")), str(key)
    return None


@dataclass(frozen=True)
class Expected:
    """What this stack expects of the chart's render, taken from what ``./supersonic render`` rendered."""

    release_name: str
    namespace: str
    values: dict[str, Any]
    """The values exactly as Helm receives them."""
    envoy_yaml: str
    served: list[dict[str, Any]]
    """What the stand-in API serves: the stack's Envoy ConfigMap."""
    generation: Generation

    @classmethod
    def from_rendered(cls, rendered: Mapping[str, Any]) -> Expected:
        release = rendered["release"]
        values = release["values"]
        name = values[CHART.envoy_values_key]["external_config"]["configmap_name"]
        served = [m for m in rendered["manifests"] if m["kind"] == "ConfigMap" and m["metadata"]["name"] == name]
        # A render tree read back from disk (the diff's base side) carries no generation: its values name it.
        generation = rendered.get("generation") or generation_of_values(values)
        return cls(release["name"], release["namespace"], values, rendered["envoy"], served, generation)


def contract_findings(objects: list[dict[str, Any]], expected: Expected) -> list[str]:
    """What the rendered objects lack that this stack's values and the contract table require."""
    release, values, row, found = expected.release_name, expected.values, expected.generation, []

    def need(kind: str, name: str, what: str) -> dict[str, Any]:
        there = _find(objects, kind, name)
        if there is None:
            found.append(f"no {kind} {name} ({what}) in what the chart renders")
        return there or {}

    def expect(obj: dict[str, Any], path: tuple[str, ...], wanted: Any, why: str) -> None:
        *parents, last = path
        if obj and _get(obj, *parents).get(last) != wanted:
            have = _get(obj, *parents).get(last)
            found.append(
                f"{obj['kind']} {obj['metadata']['name']}: {format_path(path)} is {have!r}, not {wanted!r} ({why})"
            )

    def mounted_text(deployment: dict[str, Any], path: str, what: str) -> tuple[str, str, str] | None:
        source, name = mounted_key(deployment, CHART.envoy_container, path), deployment["metadata"]["name"]
        config_map = _find(objects, "ConfigMap", source[0]) if source else None
        data = _get(config_map, "data")
        if source is None:
            found.append(f"{what}: no ConfigMap is mounted at {path} in container {CHART.envoy_container} of {name}")
        elif config_map is None:
            found.append(
                f"{what}: {path} in {name} is mounted from ConfigMap {source[0]}, which the chart does not render"
            )
        elif source[1] not in data:
            found.append(f"{what}: {path} in {name} is key {source[1]!r} of ConfigMap {source[0]}, which has none")
        else:
            return source[0], source[1], str(data[source[1]])
        return None

    inference, pod = row.inference_object_name(release), ("spec", "template")
    deployment = need("Deployment", inference, "the inference server")
    service = need("Service", inference, "the inference server's headless Service")
    expect(service, ("spec", "clusterIP"), "None", "a headless Service")
    for key, value in row.inference_pod_labels(release).items():
        expect(deployment, (*pod, "metadata", "labels", key), value, "the cleanup selects by it")
    wanted = _get(values, row.inference_values_key)
    for part, where in (("annotations", "metadata"), ("nodeSelector", "spec")):
        for key, value in _get(wanted, part).items():
            expect(deployment, (*pod, where, part, key), value, f"{row.inference_values_key}.{part}")
    for toleration in wanted.get("tolerations") or []:
        if deployment and toleration not in (_get(deployment, *pod, "spec").get("tolerations") or []):
            found.append(f"Deployment {inference}: pods lack toleration {json.dumps(toleration, sort_keys=True)}")
    keda = _get(values, "keda")
    if keda.get("enabled"):
        scaled = need("ScaledObject", CHART.scaled_object_name(release), "KEDA's autoscaling of the inference server")
        expect(scaled, ("spec", "minReplicaCount"), keda.get("minReplicaCount"), "keda.minReplicaCount")
        expect(scaled, ("spec", "scaleTargetRef", "name"), inference, "the inference server")
        trigger = (_get(scaled, "spec").get("triggers") or [{}])[0]
        if scaled and _get(trigger, "metadata").get("timeout") != TRIGGER_TIMEOUT_MS:
            found.append(
                f"ScaledObject {scaled['metadata']['name']}: first trigger's metadata.timeout is "
                f"{_get(trigger, 'metadata').get('timeout')!r}, not {TRIGGER_TIMEOUT_MS!r} (the post-renderer's)"
            )

    envoy_values = _get(values, CHART.envoy_values_key)
    need("Service", CHART.envoy_service_name(release), "the Envoy Service clients connect to")
    envoy = need("Deployment", CHART.envoy_object_name(release), "Envoy")
    if not envoy:
        return found
    checksum = _get(envoy_values, "annotations").get(CONFIG_CHECKSUM_ANNOTATION)
    if checksum is not None:
        annotation = (*pod, "metadata", "annotations", CONFIG_CHECKSUM_ANNOTATION)
        expect(envoy, annotation, checksum, "a changed configuration would not roll Envoy")
    config = mounted_text(envoy, CHART.envoy_config_path, "Envoy configuration")
    own = CHART.envoy_config_map_name(release)
    if config and config[0] != own:
        found.append(f"Envoy configuration: {CHART.envoy_config_path} comes from ConfigMap {config[0]}, not {own}")
    if config and config[2].rstrip("\n") != expected.envoy_yaml.rstrip("\n"):
        found.append(
            f"Envoy configuration: key {config[1]!r} of ConfigMap {config[0]} is not this stack's envoy.yaml "
            f"(the chart did not copy the external ConfigMap's key {CHART.envoy_config_key!r})"
        )
    if not _get(values, "scaleFromZero").get("enabled"):
        return found
    lua = mounted_text(envoy, CHART.lua_filter_path, "scale-from-zero Lua filter")
    for cluster in (row.admission_cluster, CHART.admin_cluster, row.inference_cluster):
        if lua is not None and cluster not in lua[2]:
            found.append(
                f"scale-from-zero Lua filter: never names the Envoy cluster {cluster}, which this stack's "
                "envoy.yaml defines for it to call"
            )
    containers = _get(envoy, *pod, "spec").get("containers") or []
    sidecar = next((c for c in containers if c.get("name") == CHART.admission_container), None)
    if sidecar is None:
        found.append(
            f"Deployment {envoy['metadata']['name']}: no {CHART.admission_container} sidecar (scale from zero has "
            "nothing to wake Triton)"
        )
    elif CHART.admission_port not in [p.get("containerPort") for p in sidecar.get("ports") or []]:
        found.append(
            f"Deployment {envoy['metadata']['name']}: the {CHART.admission_container} sidecar does not listen on "
            f"port {CHART.admission_port}"
        )
    return found


# --------------------------------------------------------------------------------------------- generated Envoy config

_MANAGERS = "static_resources.listeners[].filter_chains[].filters[].typed_config"
HTTP_FILTERS = jmespath.compile(f"{_MANAGERS}.http_filters[]")
ROUTES = jmespath.compile(f"{_MANAGERS}.route_config.virtual_hosts[].routes[]")


def route_name(route: Mapping[str, Any]) -> str:
    """A route by its match, as ``declared_additions`` names one: ``prefix /``."""
    match = route.get("match") or {}
    return " ".join(f"{kind} {match[kind]}" for kind in sorted(match)) or "no match"


def _by_name(tree: Any) -> Any:
    """A copy in which each list item without a ``name`` takes its route match or its index as one, so that objdiff
    pairs every listener, filter chain, route, filter and cluster by name."""
    if isinstance(tree, Mapping):
        return {key: _by_name(value) for key, value in tree.items()}
    if not isinstance(tree, list) or not all(isinstance(item, Mapping) for item in tree):
        return tree
    named = [
        item if "name" in item else {"name": route_name(item) if "match" in item else str(i), **item}
        for i, item in enumerate(tree)
    ]
    return [_by_name(item) for item in named]


def _declared(path: tuple[Any, ...], additions: Iterable[tuple[str, ...]]) -> bool:
    """Whether ``path`` lies in a declared addition (its list, the item's name, then its fields)."""
    return any(
        path[i] == part and path[i + 1] == Named(name) and is_under(path[i + 2 :], tuple(rest))
        for part, name, *rest in additions
        for i in range(len(path) - 1)
    )


def generated_config_findings(generated: Any, computed: Any, generation: Generation) -> list[str]:
    """Where this stack's Envoy configuration lacks or changes what the chart generates, the declared additions
    aside: one line per element one side lacks and per field changed."""
    additions = list(declared_additions(generation.inference_cluster))
    order = [[str(f.get("name")) for f in HTTP_FILTERS.search(config) or []] for config in (generated, computed)]
    found = []
    if [name for name in order[1] if ("http_filters", name) not in additions] != order[0]:
        found.append(
            f"HTTP filters in another order than the chart's ({', '.join(order[0])}), the declared additions aside"
        )
    for change in (c for c in changes(_by_name(generated), _by_name(computed)) if not _declared(c.path, additions)):
        named = [i for i, segment in enumerate(change.path) if isinstance(segment, Named)]
        place = format_path(change.path[named[-1] - 1 :] if named else change.path)  # from the element's list on
        if isinstance(change.path[-1], Named) and change.before is ABSENT:  # an element one side lacks, whole
            found.append(f"the Envoy configuration has {place}, which the chart does not generate")
        elif isinstance(change.path[-1], Named):
            found.append(f"the Envoy configuration lacks the chart's {place}")
        else:
            before, after = format_value(change.before), format_value(change.after)
            found.append(f"the Envoy configuration changes the chart's {place} (chart: {before}, this stack: {after})")
    return found


def generated_config(renderer: ChartRenderer, expected: Expected) -> Any:
    """The chart's own Envoy configuration (``load_from_configmap: false``, and this stack's route timeout and
    load-balancing policy, the two values only it reads)."""
    computed = yaml.safe_load(expected.envoy_yaml)
    routes = {route_name(route): route for route in ROUTES.search(computed) or []}
    clusters = {c.get("name"): c for c in _get(computed, "static_resources").get("clusters") or []}
    envoy = dict(expected.values[CHART.envoy_values_key])
    envoy["external_config"] = {**envoy["external_config"], "load_from_configmap": False}
    envoy["grpc_route_timeout"] = _get(routes.get("prefix /"), "route").get("timeout", "0s")
    envoy["loadBalancerPolicy"] = _get(clusters, expected.generation.inference_cluster).get("lb_policy")
    own = CHART.envoy_config_map_name(expected.release_name)
    objects = renderer.render({**expected.values, CHART.envoy_values_key: envoy})
    return yaml.safe_load(_get(_find(objects, "ConfigMap", own), "data").get(CHART.envoy_config_key) or "{}")


# --------------------------------------------------------------------------------------------- ignored values


class ScanStopped(Exception):
    """The ignored-values scan ran out of its time budget; the message says how far it got."""


def ignored_values(
    renderer: ChartRenderer,
    values: dict[str, Any],
    baseline: str,
    workers: int,
    *,
    post_render: Callable[[str], str] | None = None,
    selected: Iterable[Leaf] | None = None,
    budget_seconds: float = SCAN_BUDGET_SECONDS,
    progress: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True),
) -> list[str]:
    """Values paths (of ``selected``, default every leaf) whose change leaves the render identical to ``baseline``.
    Past ``budget_seconds`` no render starts and ``ScanStopped`` says how far it got; progress every 10 s."""

    def ignored(leaf: Leaf) -> bool:
        try:
            variant = with_leaf(values, leaf.path, changed(leaf.value))
            return canonical(renderer.render(variant, post_render=post_render)) == baseline
        except ChartRenderError:
            return False  # the chart refuses the changed value: it read it

    every = list(leaves(values) if selected is None else selected)
    found, started = set(), time.monotonic()
    said = started
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, SCAN_WORKERS_MAX)))
    futures = {pool.submit(ignored, leaf): i for i, leaf in enumerate(every)}
    try:
        for tried, future in enumerate(as_completed(futures, timeout=budget_seconds), 1):
            found |= {futures[future]} if future.result() else set()
            if time.monotonic() - said >= PROGRESS_EVERY_SECONDS:
                said = time.monotonic()
                progress(f"chart conformance: {tried} of {len(every)} values re-rendered in {said - started:.0f} s")
    except TimeoutError:
        done = sum(future.done() and not future.cancelled() for future in futures)
        raise ScanStopped(
            f"the ignored-values scan stopped at its budget of {budget_seconds:g} s after re-rendering {done} of "
            f"{len(every)} values; the values not tried may be ignored by the chart"
        ) from None
    finally:
        pool.shutdown(cancel_futures=True)
    return [leaf.name for i, leaf in enumerate(every) if i in found]


def rendered_anyway(objects: list[dict[str, Any]], expected: Expected) -> set[str]:
    """Values paths whose text the objects they feed (of the section's component label, ``keda.*``: the ScaledObject;
    every object where none carries it) hold under the path's own key (``metricType: Value``): ignored, they ask for
    what the chart does anyway. A value rendered otherwise (``minReplicaCount`` 0 as 1) stays a finding."""
    row = expected.generation
    components = {"keda": "keda", CHART.envoy_values_key: CHART.envoy_component}
    components[row.inference_values_key] = row.inference_component
    fed: dict[str, set[tuple[str | int, Any]]] = {}
    for obj in objects:
        texts = {(leaf.path[-1], leaf.value) for leaf in leaves(obj) if isinstance(leaf.value, str) and leaf.path}
        fed.setdefault(str(_get(obj, "metadata", "labels").get(CHART.component_label, "")), set()).update(texts)
    every = set().union(*fed.values())
    return {
        leaf.name
        for leaf in leaves(expected.values)
        if leaf.value
        and isinstance(leaf.path[-1], str)
        and (leaf.path[-1], leaf.value) in fed.get(components.get(str(leaf.path[0]), ""), every)
    }


# --------------------------------------------------------------------------------------------- the check


def generation_mismatch(chart_dir: Path, expected: Generation) -> str | None:
    """Why the chart is not of the generation the stack was rendered for, or None when it is."""
    values_file = chart_dir / "values.yaml"
    if not values_file.is_file():
        return None  # nothing to tell a generation by, and Helm's render says the rest
    try:
        documents = load_outside_yaml(values_file.read_bytes())
        found = generation_of_values(documents[0] if documents else None)
    except (OSError, ValueError, UnknownGeneration) as error:
        return f"the chart's generation cannot be told from {values_file}: {error}"
    if found == expected:
        return None
    return (
        f"the chart is of the {found.name} generation (its values.yaml declares {found.inference_values_key}:, "
        f"objects <release>-{found.inference_component}, Envoy clusters {found.inference_cluster} and "
        f"{found.admission_cluster}), but the stack was rendered for the {expected.name} generation: render with "
        f"the chart release.chart names, whose generation is read from it"
    )


def default_workers() -> int:
    return max(2, min(os.cpu_count() or 2, SCAN_WORKERS_MAX))


def check(
    chart_dir: Path, expected: Expected, *, workers: int | None = None, budget_seconds: float = SCAN_BUDGET_SECONDS
) -> list[str]:
    """Every finding of the conformance check of ``chart_dir`` against what this stack expects (empty: conforms)."""
    mismatch = generation_mismatch(chart_dir, expected.generation)
    if mismatch is not None:
        return [mismatch]
    served, post_renderer = expected.served, ROOT / POSTRENDER
    try:
        with ChartRenderer(chart_dir, expected.release_name, expected.namespace, served, post_renderer) as renderer:
            return _check(renderer, expected, workers or default_workers(), budget_seconds)
    except ChartRenderError as error:
        return [f"the chart cannot be rendered: {error}"]


def _check(renderer: ChartRenderer, expected: Expected, workers: int, budget: float) -> list[str]:
    try:
        # The render that counts runs the post-renderer executable through Helm, exactly as an upgrade does.
        objects = renderer.render(expected.values)
        again = renderer.render(expected.values, post_render=patch)  # the same code in this process, for the scan
    except ChartRenderError as error:
        if CHART.external_config_guard in str(error):
            return [GUARD_FINDING + f" (the chart says: {error})"]
        return [f"the chart refuses this stack's values: {error}"]
    findings = contract_findings(objects, expected)
    if _get(expected.values, "scaleFromZero").get("enabled"):
        computed = yaml.safe_load(expected.envoy_yaml)
        findings += generated_config_findings(generated_config(renderer, expected), computed, expected.generation)
    baseline = canonical(objects)
    if canonical(again) != baseline:
        return [*findings, UNSTABLE_RENDER]
    try:
        ignored = ignored_values(renderer, expected.values, baseline, workers, post_render=patch, budget_seconds=budget)
    except ScanStopped as stopped:
        return [*findings, str(stopped)]
    fixed = rendered_anyway(objects, expected)
    return findings + [
        f"{path}: ignored by the chart (changing it changes nothing the chart renders)"
        for path in ignored
        if path not in fixed
    ]
