"""Does a chart do what this program's values ask of it? Rendered with the real Helm v3, as an install would.

The check renders the release (``helm.ChartRenderer``: ``helm template --dry-run=server`` against a stand-in API
serving the stack's Envoy ConfigMap, so the chart's ``lookup`` answers as on the cluster, with the project's
post-renderer) and names each way the result falls short:

- the chart refuses the values: its own ``fail`` message, verbatim;
- a name of the contract table (``contract.CHART``) the chart does not render: the Triton Deployment and its
  headless Service, the ScaledObject, the Envoy Deployment and Service, the Envoy configuration and the scale-from-
  zero Lua filter mounted where Envoy reads them from ConfigMaps the chart renders with those keys, the Envoy
  clusters the Lua filter calls, the admission sidecar on its port;
- the ScaledObject's ``minReplicaCount`` is not the one set, or its first trigger lacks the post-renderer's timeout;
- the chart's Envoy ConfigMap does not carry this stack's envoy.yaml (a trailing newline aside), the Envoy pods lack
  the checksum annotation, the Triton pods lack their labels, placement or annotations;
- the chart's own generated Envoy configuration (the same values with ``load_from_configmap: false``) has a
  listener, route, cluster or filter that this stack's configuration lacks or changes, other than the declared
  additions (``config.envoy.declared_additions``);
- a value the program passes that the chart ignores: each leaf of the values is changed on its own and the chart
  rendered again; identical output means the chart never reads it, and it is reported by its values path.

Pure in its inputs (the chart directory and what ``./supersonic render`` rendered); the re-renders run in parallel.
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import ROOT
from supersonic_interlink.chart.helm import ChartRenderer, ChartRenderError
from supersonic_interlink.config.envoy import declared_additions
from supersonic_interlink.contract import CHART, Generation, UnknownGeneration, generation_of_values
from supersonic_interlink.objdiff import ABSENT, changes, format_path, format_value, is_under

UNSTABLE_RENDER = (
    "the chart renders the same values differently each time (random or time-based output), so the values it "
    "ignores cannot be told from those it reads"
)
SCAN_BUDGET_SECONDS = 120.0
"""Longest the ignored-values scan may run: a render takes well under a second and the hammer stack has a few
hundred values, so a scan that runs longer has a slow chart (a template looping over a large input), and stops with
a finding instead of holding CI for minutes."""
SCAN_WORKERS_MAX = 8
"""Most Helm processes the scan runs at once, whatever the machine: each holds the whole chart in memory."""
PROGRESS_EVERY_SECONDS = 10.0
"""How often a long scan says how far it got (on standard error)."""
PROBE_KEY = "conformance-probe"
"""Key of the entry added to an empty object (and the item added to an empty list) to see whether it is read."""


def post_renderer_function() -> Callable[[str], str]:
    """What the project's post-renderer does to Helm's output, as a function of this process."""
    from supersonic_interlink.postrender import patch

    return patch


# --------------------------------------------------------------------------------------------- values leaves


@dataclass(frozen=True)
class Leaf:
    """One leaf of the values: its path as keys and indices, and its value (an empty object or list counts)."""

    path: tuple[str | int, ...]
    value: Any

    @property
    def name(self) -> str:
        """The values path as a reader writes it: ``triton.args[0]``, ``triton.nodeSelector["kubernetes.io/os"]``."""
        text = ""
        for part in self.path:
            if isinstance(part, int):
                text += f"[{part}]"
            elif "." in part or "/" in part or not part:
                text += f"[{json.dumps(part)}]"
            else:
                text += f".{part}" if text else part
        return text


def leaves(values: Any, path: tuple[str | int, ...] = ()) -> Iterator[Leaf]:
    """Every leaf of ``values``, depth first in key order."""
    if isinstance(values, Mapping) and values:
        for key, value in values.items():
            yield from leaves(value, (*path, key))
    elif isinstance(values, list) and values:
        for index, value in enumerate(values):
            yield from leaves(value, (*path, index))
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
    if isinstance(value, Mapping):
        return {PROBE_KEY: PROBE_KEY}
    if isinstance(value, list):
        return [PROBE_KEY]
    return PROBE_KEY  # null


def with_leaf(values: Any, path: tuple[str | int, ...], new: Any) -> Any:
    """A copy of ``values`` with the leaf at ``path`` replaced by ``new``."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(values, list):
        assert isinstance(head, int)
        return [with_leaf(v, rest, new) if i == head else v for i, v in enumerate(values)]
    return {k: with_leaf(v, rest, new) if k == head else v for k, v in values.items()}


def canonical(objects: list[dict[str, Any]]) -> str:
    """The rendered objects, independent of document order, for an exact comparison."""
    return json.dumps(sorted(json.dumps(o, sort_keys=True) for o in objects))


# --------------------------------------------------------------------------------------------- rendered objects


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    return next((o for o in objects if o.get("kind") == kind and (o.get("metadata") or {}).get("name") == name), None)


def _pod_spec(deployment: Mapping[str, Any]) -> dict[str, Any]:
    return ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}


def _pod_metadata(deployment: Mapping[str, Any]) -> dict[str, Any]:
    return ((deployment.get("spec") or {}).get("template") or {}).get("metadata") or {}


def mounted_key(deployment: Mapping[str, Any], container: str, file_path: str) -> tuple[str, str] | None:
    """(ConfigMap name, key) that provides ``file_path`` in ``container`` of the Deployment's pods, or None."""
    spec = _pod_spec(deployment)
    found = next((c for c in spec.get("containers") or [] if c.get("name") == container), None)
    if found is None:
        return None
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    for mount in found.get("volumeMounts") or []:
        mount_path = str(mount.get("mountPath", "")).rstrip("/")
        config_map = (volumes.get(mount.get("name")) or {}).get("configMap")
        if not config_map:
            continue
        if mount.get("subPath"):
            relative = str(mount["subPath"]) if file_path == mount_path else None
        elif file_path.startswith(mount_path + "/"):
            relative = file_path[len(mount_path) + 1 :]
        else:
            relative = None
        if relative is None:
            continue
        items = config_map.get("items")
        if items:
            key = next((i.get("key") for i in items if posixpath.normpath(str(i.get("path"))) == relative), None)
        else:
            key = relative if "/" not in relative else None
        if key is not None:
            return str(config_map.get("name")), str(key)
    return None


# --------------------------------------------------------------------------------------------- the check


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
    """The chart generation the stack was rendered for (from its ``release.chart``)."""

    @classmethod
    def from_rendered(cls, rendered: Mapping[str, Any]) -> Expected:
        release = rendered["release"]
        values = release["values"]
        config_map = values[CHART.envoy_values_key]["external_config"]["configmap_name"]
        served = [m for m in rendered["manifests"] if m["kind"] == "ConfigMap" and m["metadata"]["name"] == config_map]
        # A render tree read back from disk (the diff's base side) carries no generation: its values name it.
        generation = rendered.get("generation") or generation_of_values(values)
        return cls(release["name"], release["namespace"], values, rendered["envoy"], served, generation)


def _section(values: Mapping[str, Any], *path: str) -> dict[str, Any]:
    for key in path:
        values = values.get(key) or {}
    return dict(values)


def contract_findings(objects: list[dict[str, Any]], expected: Expected) -> list[str]:
    """What the rendered objects lack that this stack's values and the contract table require."""
    review = _Review(objects, expected)
    review.inference_server()
    review.scaled_object()
    review.envoy()
    return review.findings


class _Review:
    """One pass over a render, collecting findings."""

    def __init__(self, objects: list[dict[str, Any]], expected: Expected):
        self.objects = objects
        self.expected = expected
        self.release = expected.release_name
        self.values = expected.values
        self.findings: list[str] = []

    def need(self, kind: str, name: str, what: str) -> dict[str, Any] | None:
        found = _find(self.objects, kind, name)
        if found is None:
            self.findings.append(f"no {kind} {name} ({what}) in what the chart renders")
        return found

    def mounted_text(self, deployment: dict[str, Any], file_path: str, what: str) -> tuple[str, str, str] | None:
        """(ConfigMap, key, text) of ``file_path`` in the Envoy container, from a ConfigMap the chart renders; a
        finding and None if it is not there."""
        source = mounted_key(deployment, CHART.envoy_container, file_path)
        name = deployment["metadata"]["name"]
        if source is None:
            self.findings.append(
                f"{what}: no ConfigMap is mounted at {file_path} in container {CHART.envoy_container} of {name}"
            )
            return None
        config_map_name, key = source
        config_map = _find(self.objects, "ConfigMap", config_map_name)
        if config_map is None:
            self.findings.append(
                f"{what}: {file_path} in {name} is mounted from ConfigMap {config_map_name}, which the chart does "
                f"not render"
            )
            return None
        data = config_map.get("data") or {}
        if key not in data:
            self.findings.append(
                f"{what}: {file_path} in {name} is key {key!r} of ConfigMap {config_map_name}, which has no such "
                f"key (keys: {', '.join(sorted(data)) or 'none'})"
            )
            return None
        return config_map_name, key, str(data[key])

    def inference_server(self) -> None:
        generation = self.expected.generation
        name = generation.inference_object_name(self.release)
        deployment = self.need("Deployment", name, "the inference server")
        service = self.need("Service", name, "the inference server's headless Service")
        cluster_ip = ((service or {}).get("spec") or {}).get("clusterIP")
        if service is not None and cluster_ip != "None":
            self.findings.append(f"Service {name} is not headless (clusterIP {cluster_ip!r}, not 'None')")
        if deployment is None:
            return
        wanted = _section(self.values, generation.inference_values_key)
        metadata, spec = _pod_metadata(deployment), _pod_spec(deployment)
        labels = metadata.get("labels") or {}
        for key, value in generation.inference_pod_labels(self.release).items():
            if labels.get(key) != value:
                self.findings.append(f"Deployment {name}: pods lack label {key}={value} (the cleanup selects by it)")
        annotations = metadata.get("annotations") or {}
        for key, value in (wanted.get("annotations") or {}).items():
            if annotations.get(key) != value:
                self.findings.append(f"Deployment {name}: pods lack annotation {key}: {value!r}")
        node_selector = spec.get("nodeSelector") or {}
        for key, value in (wanted.get("nodeSelector") or {}).items():
            if node_selector.get(key) != value:
                self.findings.append(f"Deployment {name}: pods lack nodeSelector {key}: {value!r}")
        for toleration in wanted.get("tolerations") or []:
            if toleration not in (spec.get("tolerations") or []):
                self.findings.append(
                    f"Deployment {name}: pods lack toleration {json.dumps(toleration, sort_keys=True)}"
                )

    def scaled_object(self) -> None:
        keda = _section(self.values, "keda")
        if not keda.get("enabled"):
            return
        name = CHART.scaled_object_name(self.release)
        scaled = self.need("ScaledObject", name, "KEDA's autoscaling of the inference server")
        if scaled is None:
            return
        spec = scaled.get("spec") or {}
        if spec.get("minReplicaCount") != keda.get("minReplicaCount"):
            self.findings.append(
                f"ScaledObject {name}: minReplicaCount is {spec.get('minReplicaCount')!r}, "
                f"not the {keda.get('minReplicaCount')!r} set in keda.minReplicaCount"
            )
        inference = self.expected.generation.inference_object_name(self.release)
        if (spec.get("scaleTargetRef") or {}).get("name") != inference:
            self.findings.append(f"ScaledObject {name} does not scale Deployment {inference}")
        timeout = (((spec.get("triggers") or [{}])[0]).get("metadata") or {}).get("timeout")
        from supersonic_interlink.postrender import TRIGGER_TIMEOUT_MS as wanted

        if timeout != wanted:
            self.findings.append(
                f"ScaledObject {name}: first trigger's metadata.timeout is {timeout!r}, not {wanted!r} "
                f"(the post-renderer's)"
            )

    def envoy(self) -> None:
        from supersonic_interlink.config.values import CONFIG_CHECKSUM_ANNOTATION

        if not _section(self.values, CHART.envoy_values_key).get("enabled", True):
            return
        self.need("Service", CHART.envoy_service_name(self.release), "the Envoy Service clients connect to")
        envoy = self.need("Deployment", CHART.envoy_object_name(self.release), "Envoy")
        if envoy is None:
            return
        name = envoy["metadata"]["name"]
        checksum = _section(self.values, CHART.envoy_values_key, "annotations").get(CONFIG_CHECKSUM_ANNOTATION)
        carried = (_pod_metadata(envoy).get("annotations") or {}).get(CONFIG_CHECKSUM_ANNOTATION)
        if checksum is not None and carried != checksum:
            self.findings.append(
                f"Deployment {name}: pods carry {CONFIG_CHECKSUM_ANNOTATION} {carried!r}, not {checksum!r} "
                f"(a changed configuration would not roll Envoy)"
            )
        config = self.mounted_text(envoy, CHART.envoy_config_path, "Envoy configuration")
        if config is not None:
            config_map, key, text = config
            own = CHART.envoy_config_map_name(self.release)
            if config_map != own:
                self.findings.append(
                    f"Envoy configuration: {CHART.envoy_config_path} comes from ConfigMap {config_map}, not {own}"
                )
            if text.rstrip("\n") != self.expected.envoy_yaml.rstrip("\n"):
                self.findings.append(
                    f"Envoy configuration: key {key!r} of ConfigMap {config_map} is not this stack's envoy.yaml "
                    f"(the chart did not copy the external ConfigMap's key {CHART.envoy_config_key!r})"
                )
        if not _section(self.values, "scaleFromZero").get("enabled"):
            return
        lua = self.mounted_text(envoy, CHART.lua_filter_path, "scale-from-zero Lua filter")
        generation = self.expected.generation
        for cluster in (generation.admission_cluster, CHART.admin_cluster, generation.inference_cluster):
            if lua is not None and cluster not in lua[2]:
                self.findings.append(
                    f"scale-from-zero Lua filter: never names the Envoy cluster {cluster}, which this stack's "
                    f"envoy.yaml defines for it to call"
                )
        containers = _pod_spec(envoy).get("containers") or []
        sidecar = next((c for c in containers if c.get("name") == CHART.admission_container), None)
        if sidecar is None:
            self.findings.append(
                f"Deployment {name}: no {CHART.admission_container} sidecar (scale from zero has nothing to wake "
                f"Triton)"
            )
        elif CHART.admission_port not in [p.get("containerPort") for p in sidecar.get("ports") or []]:
            self.findings.append(
                f"Deployment {name}: the {CHART.admission_container} sidecar does not listen on port "
                f"{CHART.admission_port}"
            )


# --------------------------------------------------------------------------------------------- generated Envoy config


def _route_key(route: Mapping[str, Any]) -> str:
    """A route by its match, as a reader names it: ``path /inference...`` or ``prefix /``."""
    match = route.get("match") or {}
    return " ".join(f"{kind} {match[kind]}" for kind in sorted(match)) or "no match"


def _by(items: Any, key: Callable[[Mapping[str, Any]], str]) -> dict[str, Any]:
    return {key(item): item for item in items or [] if isinstance(item, Mapping)}


def envoy_parts(config: Any) -> dict[str, Any]:
    """An Envoy bootstrap as the parts a reader compares: admin, each listener (its connection manager's fields
    apart from routes and filters), each route by its match, each HTTP filter by name, each cluster by name."""
    config = config if isinstance(config, Mapping) else {}
    resources = config.get("static_resources") or {}
    parts: dict[str, Any] = {"admin": config.get("admin", ABSENT), "listeners": {}, "routes": {}, "http_filters": {}}
    filter_order: list[str] = []
    for written in resources.get("listeners") or []:
        listener = dict(written)
        chains = listener.pop("filter_chains", None) or []
        managers = [f for chain in chains for f in chain.get("filters") or [] if "typed_config" in f]
        manager = dict((managers[0] if managers else {}).get("typed_config") or {})
        route_config = manager.pop("route_config", None) or {}
        filters = manager.pop("http_filters", None) or []
        hosts = route_config.get("virtual_hosts") or []
        listener["http_connection_manager"] = manager
        listener["route_config"] = {
            "name": route_config.get("name", ABSENT),
            "virtual_hosts": {h.get("name"): {k: v for k, v in h.items() if k != "routes"} for h in hosts},
        }
        parts["listeners"][listener.get("name")] = listener
        for host in hosts:
            parts["routes"].update(_by(host.get("routes"), _route_key))
        parts["http_filters"].update(_by(filters, lambda f: str(f.get("name"))))
        filter_order += [str(f.get("name")) for f in filters]
    parts["clusters"] = _by(resources.get("clusters"), lambda c: str(c.get("name")))
    parts["http_filter_order"] = filter_order
    return parts


def generated_config_findings(generated: Any, computed: Any, generation: Generation) -> list[str]:
    """Where this stack's Envoy configuration lacks or changes what the chart generates, the declared additions
    taken out: one line per field, naming the listener, route, cluster or filter."""
    additions = declared_additions(generation.inference_cluster)
    theirs, ours = envoy_parts(generated), envoy_parts(computed)
    added_filters = {path[1] for path in additions if path[0] == "http_filters"}
    found = []
    if [f for f in ours.pop("http_filter_order") if f not in added_filters] != theirs.pop("http_filter_order"):
        found.append(
            f"HTTP filters in another order than the chart's ({', '.join(envoy_parts(generated)['http_filter_order'])}"
            f"), the declared additions aside"
        )
    singular = {"listeners": "listener", "routes": "route", "http_filters": "HTTP filter", "clusters": "cluster"}
    for part in ("admin", *singular):
        elements = (
            {"": (theirs[part], ours[part])}
            if part == "admin"
            else {
                key: (theirs[part].get(key, ABSENT), ours[part].get(key, ABSENT))
                for key in {**theirs[part], **ours[part]}
            }
        )
        for key, (before, after) in elements.items():
            place = (part, key) if key else (part,)
            name = f"{singular[part]} {key}" if key else part
            if any(is_under(place, declared) for declared in additions):
                continue
            if before is ABSENT or after is ABSENT:
                found.append(
                    f"the Envoy configuration has {name}, which the chart does not generate"
                    if before is ABSENT
                    else f"the Envoy configuration lacks the chart's {name}"
                )
                continue
            fields = [
                f"{format_path(change.path)} (chart: {format_value(change.before)}, this stack: "
                f"{format_value(change.after)})"
                for change in changes(before, after)
                if not any(is_under((*place, *change.path), declared) for declared in additions)
            ]
            if fields:
                found.append(f"the Envoy configuration changes the chart's {name}: {'; '.join(fields)}")
    return found


def generated_values(values: Mapping[str, Any], computed: Mapping[str, Any], generation: Generation) -> dict[str, Any]:
    """The stack's values with the chart generating its own Envoy configuration: ``load_from_configmap: false``, and
    the two values only that configuration reads (route timeout, load-balancing policy) as this stack's."""
    parts = envoy_parts(computed)
    envoy = dict(values[CHART.envoy_values_key])
    envoy["external_config"] = {**envoy["external_config"], "load_from_configmap": False}
    envoy["grpc_route_timeout"] = (parts["routes"].get("prefix /") or {}).get("route", {}).get("timeout", "0s")
    envoy["loadBalancerPolicy"] = (parts["clusters"].get(generation.inference_cluster) or {}).get("lb_policy")
    return {**values, CHART.envoy_values_key: envoy}


def generated_config(renderer: ChartRenderer, expected: Expected) -> tuple[Any, str | None]:
    """(the chart's own generated Envoy configuration, None), or (None, why there is none to compare with)."""
    computed = yaml.safe_load(expected.envoy_yaml)
    try:
        objects = renderer.render(generated_values(expected.values, computed, expected.generation))
    except ChartRenderError as error:
        return None, f"the chart refuses to generate its own Envoy configuration from these values: {error}"
    own = _find(objects, "ConfigMap", CHART.envoy_config_map_name(expected.release_name)) or {}
    text = (own.get("data") or {}).get(CHART.envoy_config_key)
    try:
        generated = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError as error:
        return None, f"the chart's generated Envoy configuration is not YAML: {' '.join(str(error).split())}"
    if not isinstance(generated, dict) or "static_resources" not in generated:
        return None, (
            f"with load_from_configmap false the chart generates no Envoy configuration in ConfigMap "
            f"{CHART.envoy_config_map_name(expected.release_name)} to compare this stack's with"
        )
    return generated, None


class ScanStopped(Exception):
    """The ignored-values scan ran out of its time budget; the message says how far it got."""


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def ignored_values(
    renderer: ChartRenderer,
    values: dict[str, Any],
    baseline: str,
    workers: int,
    *,
    post_render: Callable[[str], str] | None = None,
    selected: Iterable[Leaf] | None = None,
    budget_seconds: float = SCAN_BUDGET_SECONDS,
    progress: Callable[[str], None] = _say,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Values paths whose change leaves the render identical to ``baseline`` (the canonical baseline render).

    ``post_render``: the post-renderer's own function, run in this process for each re-render (see
    ``ChartRenderer.render_text``); it halves the processes the re-renders start. ``selected``: the leaves to try
    (default: every leaf of ``values``). Past ``budget_seconds`` no further render starts, those running are waited
    for, and ``ScanStopped`` says how many of how many values were tried; every ``PROGRESS_EVERY_SECONDS`` the count so
    far goes to ``progress``.
    """

    def same_as_baseline(leaf: Leaf) -> bool:
        variant = with_leaf(values, leaf.path, changed(leaf.value))
        try:
            return canonical(renderer.render(variant, post_render=post_render)) == baseline
        except ChartRenderError:
            return False  # the chart refuses the changed value: it read it

    every = list(leaves(values) if selected is None else selected)
    started = clock()
    said = started
    results: dict[int, bool] = {}
    limit = max(1, min(workers, SCAN_WORKERS_MAX))
    with ThreadPoolExecutor(max_workers=limit) as pool:
        queue = iter(enumerate(every))
        running: dict[Future[bool], int] = {}
        stopped = False
        while True:
            while not stopped and len(running) < limit:
                item = next(queue, None)
                if item is None:
                    break
                running[pool.submit(same_as_baseline, item[1])] = item[0]
            if not running:
                break
            done, _ = wait(running, timeout=1.0, return_when=FIRST_COMPLETED)
            for future in done:
                results[running.pop(future)] = future.result()
            now = clock()
            if not stopped and now - started > budget_seconds:
                stopped = True
            if now - said >= PROGRESS_EVERY_SECONDS:
                said = now
                progress(
                    f"chart conformance: {len(results)} of {len(every)} values re-rendered in {now - started:.0f} s"
                )
    if stopped:
        raise ScanStopped(
            f"the ignored-values scan stopped at its budget of {budget_seconds:g} s after re-rendering {len(results)} "
            f"of {len(every)} values (each render of this chart takes about "
            f"{(clock() - started) / max(1, len(results)):.1f} s); the values not tried may be ignored by the chart"
        )
    return [leaf.name for i, leaf in enumerate(every) if results.get(i)]


GUARD_FINDING = (
    "this commit still refuses scaleFromZero.enabled with envoy.external_config.load_from_configmap, so it cannot "
    "load this program's Envoy configuration: pin a commit that has dropped that guard (42b2b933 is the first "
    "known one: docs/chart.md)"
)


def generation_mismatch(chart_dir: Path, expected: Generation) -> str | None:
    """Why the chart is not of the generation the stack was rendered for, or None when it is."""
    from supersonic_interlink.config.pulumi_yaml import load_outside_yaml

    values_file = chart_dir / "values.yaml"
    if not values_file.is_file():
        return None  # a chart without values: nothing to tell a generation by, and Helm's render says the rest
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
    chart_dir: Path,
    expected: Expected,
    *,
    post_renderer: Path | None = None,
    helm: Path | None = None,
    workers: int | None = None,
    budget_seconds: float = SCAN_BUDGET_SECONDS,
) -> list[str]:
    """Every finding of the conformance check of ``chart_dir`` against what this stack expects (empty: conforms).

    ``post_renderer``: the executable Helm runs on each render; by default the project's own, which the
    re-renders of the ignored-values scan run as a function in this process instead (the same code).
    """
    from supersonic_interlink.components.supersonic_release import POSTRENDER

    mismatch = generation_mismatch(chart_dir, expected.generation)
    if mismatch is not None:
        return [mismatch]
    in_process = None
    if post_renderer is None:
        post_renderer, in_process = ROOT / POSTRENDER, post_renderer_function()
    with ExitStack() as stack:
        try:
            renderer = stack.enter_context(
                ChartRenderer(
                    chart_dir, expected.release_name, expected.namespace, expected.served, post_renderer, helm=helm
                )
            )
        except ChartRenderError as error:
            return [f"the chart cannot be rendered: {error}"]
        try:
            # The render that counts runs the post-renderer executable through Helm, exactly as an upgrade does.
            objects = renderer.render(expected.values)
            again = renderer.render(expected.values, post_render=in_process)
        except ChartRenderError as error:
            if CHART.external_config_guard in str(error):
                return [GUARD_FINDING + f" (the chart says: {error})"]
            return [f"the chart refuses this stack's values: {error}"]
        findings = contract_findings(objects, expected)
        if _section(expected.values, "scaleFromZero").get("enabled"):
            generated, missing = generated_config(renderer, expected)
            findings += (
                [missing]
                if missing
                else generated_config_findings(generated, yaml.safe_load(expected.envoy_yaml), expected.generation)
            )
        baseline = canonical(objects)
        if canonical(again) != baseline:
            return [*findings, UNSTABLE_RENDER]
        try:
            ignored = ignored_values(
                renderer,
                expected.values,
                baseline,
                workers or default_workers(),
                post_render=in_process,
                budget_seconds=budget_seconds,
            )
        except ScanStopped as stopped:
            return [*findings, str(stopped)]
    pairs_of = component_pairs(objects, expected)
    fixed = {leaf.name for leaf in leaves(expected.values) if rendered_anyway(leaf, pairs_of(leaf))}
    findings += [
        f"{path}: ignored by the chart (changing it changes nothing the chart renders)"
        for path in ignored
        if path not in fixed
    ]
    return findings


def _scalars(tree: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) of a mapping entry in ``tree`` whose value is a string."""
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            if isinstance(value, str):
                yield str(key), value
            else:
                yield from _scalars(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from _scalars(item)


def component_pairs(objects: list[dict[str, Any]], expected: Expected) -> Callable[[Leaf], set[tuple[str, Any]]]:
    """For a leaf, the ``(key, text)`` pairs of the objects its values section feeds: those whose component label is the
    section's (``keda.*``: the ScaledObject), or every object where none carries it."""
    components = {
        "keda": "keda",
        CHART.envoy_values_key: CHART.envoy_component,
        expected.generation.inference_values_key: expected.generation.inference_component,
    }
    by_component: dict[str, set[tuple[str, Any]]] = {}
    for obj in objects:
        component = str(((obj.get("metadata") or {}).get("labels") or {}).get(CHART.component_label, ""))
        by_component.setdefault(component, set()).update(_scalars(obj))
    every = set().union(*by_component.values()) if by_component else set()

    def pairs(leaf: Leaf) -> set[tuple[str, Any]]:
        section = leaf.path[0] if leaf.path else None
        return by_component.get(components.get(str(section), ""), every) if section in components else every

    return pairs


def rendered_anyway(leaf: Leaf, rendered: set[tuple[str, Any]]) -> bool:
    """Whether the objects the leaf feeds (their ``(key, text)`` pairs: ``component_pairs``) carry the leaf's text under
    the leaf's own key (``metricType: Value`` in a ScaledObject's trigger): an ignored value of that kind asks for what
    the chart does anyway, so it is no finding. A value the chart ignores and renders otherwise (``minReplicaCount`` 0
    rendered as 1) stays one."""
    key = leaf.path[-1] if leaf.path else None
    if not isinstance(key, str) or not isinstance(leaf.value, str) or not leaf.value:
        return False
    return (key, leaf.value) in rendered
