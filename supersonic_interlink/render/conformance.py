"""Does a chart do what this program's values ask of it? Rendered with the real Helm v3 as an install would; each way
it falls short is one finding (docs/chart.md)."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jmespath
import yaml

from supersonic_interlink import ROOT
from supersonic_interlink.chart.helm import ChartRenderer, ChartRenderError
from supersonic_interlink.components.supersonic_release import POSTRENDER
from supersonic_interlink.config.envoy import declared_additions
from supersonic_interlink.config.values import CONFIG_CHECKSUM_ANNOTATION
from supersonic_interlink.contract import CHART, Generation, generation_of_values
from supersonic_interlink.objdiff import ABSENT, Named, changes, format_path, format_value, is_under
from supersonic_interlink.postrender import TRIGGER_TIMEOUT_MS


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
        if items := config_map.get("items"):
            key = next((i.get("key") for i in items if posixpath.normpath(str(i.get("path"))) == relative), None)
        else:
            key = relative if "/" not in relative else None
        if key is not None:
            return str(config_map.get("name")), str(key)
    return None


@dataclass(frozen=True)
class Expected:
    """What this stack expects of the chart's render, taken from what ``./supersonic render`` rendered."""

    release_name: str
    namespace: str
    values: dict[str, Any]  # exactly as Helm receives them
    envoy_yaml: str
    served: list[dict[str, Any]]  # what the stand-in API serves: the stack's Envoy ConfigMap
    generation: Generation

    @classmethod
    def from_rendered(cls, rendered: Mapping[str, Any]) -> Expected:
        release, values = rendered["release"], rendered["release"]["values"]
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
        if obj and (have := _get(obj, *parents).get(last)) != wanted:
            found.append(
                f"{obj['kind']} {obj['metadata']['name']}: {format_path(path)} is {have!r}, not {wanted!r} ({why})"
            )

    def mounted_text(deployment: dict[str, Any], path: str, what: str) -> tuple[str, str, str] | None:
        source = mounted_key(deployment, CHART.envoy_container, path)
        data = _get(_find(objects, "ConfigMap", source[0]), "data") if source else {}
        if source is None or source[1] not in data:
            found.append(
                f"{what}: {path} in container {CHART.envoy_container} of {deployment['metadata']['name']} is no key "
                f"of a ConfigMap the chart renders (mounted from: {'/'.join(source) if source else 'none'})"
            )
            return None
        return source[0], source[1], str(data[source[1]])

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
        timeout = _get((_get(scaled, "spec").get("triggers") or [{}])[0], "metadata").get("timeout")
        if scaled and timeout != TRIGGER_TIMEOUT_MS:
            found.append(
                f"ScaledObject {scaled['metadata']['name']}: first trigger's metadata.timeout is {timeout!r}, not "
                f"{TRIGGER_TIMEOUT_MS!r} (the post-renderer's)"
            )

    need("Service", CHART.envoy_service_name(release), "the Envoy Service clients connect to")
    envoy = need("Deployment", CHART.envoy_object_name(release), "Envoy")
    if not envoy:
        return found
    checksum = _get(values, CHART.envoy_values_key, "annotations").get(CONFIG_CHECKSUM_ANNOTATION)
    if checksum is not None:
        annotation = (*pod, "metadata", "annotations", CONFIG_CHECKSUM_ANNOTATION)
        expect(envoy, annotation, checksum, "a changed configuration would not roll Envoy")
    config = mounted_text(envoy, CHART.envoy_config_path, "Envoy configuration")
    own = CHART.envoy_config_map_name(release)
    if config and (config[0] != own or config[2].rstrip("\n") != expected.envoy_yaml.rstrip("\n")):
        found.append(
            f"Envoy configuration: key {config[1]!r} of ConfigMap {config[0]} is not this stack's envoy.yaml in "
            f"ConfigMap {own} (the chart copies the external ConfigMap's key {CHART.envoy_config_key!r} into it)"
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
    sidecar = f"spec.template.spec.containers[?name=='{CHART.admission_container}'].ports[].containerPort"
    if CHART.admission_port not in (jmespath.search(sidecar, envoy) or []):
        found.append(
            f"Deployment {envoy['metadata']['name']}: no {CHART.admission_container} sidecar listening on port "
            f"{CHART.admission_port} (scale from zero has nothing to wake the inference server)"
        )
    return found


_MANAGERS = "static_resources.listeners[].filter_chains[].filters[].typed_config"
HTTP_FILTERS = jmespath.compile(f"{_MANAGERS}.http_filters[]")
ROUTES = jmespath.compile(f"{_MANAGERS}.route_config.virtual_hosts[].routes[]")


def route_name(route: Mapping[str, Any]) -> str:
    """A route by its match, as ``declared_additions`` names one: ``prefix /``."""
    match = route.get("match") or {}
    return " ".join(f"{kind} {match[kind]}" for kind in sorted(match)) or "no match"


def _by_name(tree: Any) -> Any:
    """A copy in which each list item without a ``name`` is named by its route match or index, for objdiff."""
    if isinstance(tree, Mapping):
        return {key: _by_name(value) for key, value in tree.items()}
    if not isinstance(tree, list) or not all(isinstance(item, Mapping) for item in tree):
        return tree
    return [
        _by_name(item if "name" in item else {"name": route_name(item) if "match" in item else str(i), **item})
        for i, item in enumerate(tree)
    ]


def _declared(path: tuple[Any, ...], additions: Iterable[tuple[str, ...]]) -> bool:
    """Whether ``path`` lies in a declared addition (its list, the item's name, then its fields)."""
    return any(
        path[i] == part and path[i + 1] == Named(name) and is_under(path[i + 2 :], tuple(rest))
        for part, name, *rest in additions
        for i in range(len(path) - 1)
    )


def generated_config_findings(generated: Any, computed: Any, generation: Generation) -> list[str]:
    """Each element or field the chart generates that this stack's Envoy configuration lacks or changes (the
    declared additions aside), and the HTTP filters' order."""
    additions = list(declared_additions(generation.inference_cluster))
    order = [[str(f.get("name")) for f in HTTP_FILTERS.search(config) or []] for config in (generated, computed)]
    reordered = f"HTTP filters in another order than the chart's ({', '.join(order[0])}), the declared additions aside"
    found = [reordered] if [name for name in order[1] if ("http_filters", name) not in additions] != order[0] else []
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


def check(chart_dir: Path, expected: Expected) -> list[str]:
    """Every finding of the conformance check of ``chart_dir`` against what this stack expects (empty: conforms)."""
    served, post_renderer = expected.served, ROOT / POSTRENDER
    try:
        with ChartRenderer(chart_dir, expected.release_name, expected.namespace, served, post_renderer) as renderer:
            try:
                objects = renderer.render(expected.values)  # the post-renderer run through Helm, as on upgrade
            except ChartRenderError as error:
                return [f"the chart refuses this stack's values: {error}"]
            found = contract_findings(objects, expected)
            if _get(expected.values, "scaleFromZero").get("enabled"):
                computed = yaml.safe_load(expected.envoy_yaml)
                found += generated_config_findings(generated_config(renderer, expected), computed, expected.generation)
            return found
    except ChartRenderError as error:
        return [f"the chart cannot be rendered: {error}"]
