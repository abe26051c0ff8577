"""What the takeover upgrade does to the live release's objects: the pinned chart rendered by Helm as an upgrade with
the live values and with the stack's, compared object by object, every deletion it makes declared with its reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supersonic_interlink.chart.helm import ChartRenderError, render_chart
from supersonic_interlink.chart.lookup_api import LookupApi, LookupApiError
from supersonic_interlink.components.supersonic_release import POSTRENDER
from supersonic_interlink.config.pulumi_yaml import YAMLInputError, load_outside_yaml
from supersonic_interlink.contract import CHART, Generation
from supersonic_interlink.objdiff import ObjectKey, ObjectsDiff, compare_objects, index, markdown_table, object_key
from supersonic_interlink.render.conformance import ROOT, Expected
from supersonic_interlink.takeover.values_diff import LiveInputError

EXPECTED_DELETIONS: dict[tuple[str, str, str], str] = {}
"""(kind, API group, name with ``{instance}``) the upgrade deletes on purpose, and why: none, it changes values."""
MOVED = (("Deployment", "apps"), ("Service", ""))


def declared_deletions(release: str, namespace: str, live: Generation, new: Generation) -> dict[ObjectKey, str]:
    """``EXPECTED_DELETIONS`` by key, and the old inference server a move of the chart generation replaces."""
    declared = dict(EXPECTED_DELETIONS)
    if live != new:
        why = f"The chart generation moves from {live.name} to {new.name}: replaced, a cold start (docs/chart.md)."
        declared |= {(kind, group, f"{{instance}}-{live.inference_component}"): why for kind, group in MOVED}
    instance = CHART.instance_name(release)
    return {ObjectKey(k, name.format(instance=instance), g, namespace): why for (k, g, name), why in declared.items()}


@dataclass(frozen=True)
class LiveObject:
    """An object on the cluster the chart may look up, and the file it was read from."""

    manifest: dict[str, Any]
    source: str


def load_live_objects(text: bytes | str, source: str, namespace: str) -> list[LiveObject]:
    """The objects of ``kubectl get -o yaml`` or a GitOps manifest; one without a namespace is put in ``namespace``."""
    manifests: list[Any] = []
    try:
        for document in load_outside_yaml(text):
            if isinstance(document, dict) and str(document.get("kind")).endswith("List") and "items" in document:
                if not isinstance(document["items"], list):
                    raise LiveInputError(f"{source}: a {document['kind']} whose items is not a list")
                manifests += document["items"]
            elif document is not None:
                manifests.append(document)
        found = []
        for number, manifest in enumerate(manifests, start=1):
            metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
            if not (isinstance(metadata, dict) and manifest.get("kind") and isinstance(metadata.get("name"), str)):
                raise LiveInputError(f"{source}: object {number} is not a Kubernetes object (no kind or metadata.name)")
            found.append(LiveObject({**manifest, "metadata": {"namespace": namespace, **metadata}}, source))
        LookupApi([o.manifest for o in found])  # checks each can be served; starts nothing
    except (YAMLInputError, LookupApiError) as error:
        raise LiveInputError(f"{source}: {error}") from None
    return found


LIVE, PROJECT = "the live values", "this stack's values"
STOOD_IN = "this stack's envoy.yaml was served under its name, so the Envoy configuration's change is not shown."
NO_FLOOR = "the lookup found none, so where the chart keeps the live minReplicaCount this shows the value set."


Sides = dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]
"""``LIVE`` and ``PROJECT``: the values of that render and the objects its stand-in API serves."""


def live_envoy_config_map(live_values: Mapping[str, Any]) -> tuple[str, str] | None:
    """(name, key) of the external Envoy ConfigMap the live values make the chart copy, or None."""
    external = (live_values.get(CHART.envoy_values_key) or {}).get("external_config") or {}
    if not external.get("load_from_configmap") or not external.get("configmap_name"):
        return None
    return str(external["configmap_name"]), str(external.get("configmap_key") or CHART.envoy_config_key)


def sides(
    expected: Expected, live_values: dict[str, Any], live_objects: Sequence[LiveObject]
) -> tuple[Sides, list[str]]:
    """The two renders' inputs, and notes on them; at the upgrade the stack's own ConfigMap exists too (``pulumi up``
    creates it first)."""
    namespace, served = expected.namespace, [o.manifest for o in live_objects]
    by_key = {object_key(o.manifest): o for o in live_objects}
    scaled = ObjectKey("ScaledObject", CHART.scaled_object_name(expected.release_name), "keda.sh", namespace)
    notes, live_served = [], list(served)
    envoy = live_envoy_config_map(live_values)
    if envoy is not None:
        config_map = by_key.get(ObjectKey("ConfigMap", envoy[0], "", namespace))
        if config_map is not None:
            notes.append(f"The live Envoy ConfigMap `{envoy[0]}` is the one in `{config_map.source}`.")
        else:
            metadata = {"name": envoy[0], "namespace": namespace}
            live_served.append(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {envoy[1]: expected.envoy_yaml}}
            )
            notes.append(f"**The live Envoy ConfigMap `{envoy[0]}` was not given** (`--live-object`): {STOOD_IN}")
    if scaled in by_key:
        floor = (by_key[scaled].manifest.get("spec") or {}).get("minReplicaCount", "not set")
        notes.append(
            f"The live ScaledObject `{scaled.name}` (minReplicaCount {floor}) is the one in `{by_key[scaled].source}`."
        )
    else:
        notes.append(f"No live ScaledObject `{scaled.name}` was given (`--live-object`): {NO_FLOOR}")
    return {LIVE: (live_values, live_served), PROJECT: (expected.values, served + expected.served)}, notes


class SideRefused(Exception):
    """Helm refused to render one side: which, then Helm's message."""


def render_sides(
    chart_dir: Path, expected: Expected, given: Sides, sides: Sequence[str] = (LIVE, PROJECT)
) -> list[list[dict[str, Any]]]:
    """Each side rendered as an upgrade (Flux upgrades on every change), at the same time."""

    def render(side: str) -> list[dict[str, Any]]:
        name, namespace, (values, served) = expected.release_name, expected.namespace, given[side]
        try:
            return render_chart(
                chart_dir, name, namespace, values, served, post_renderer=ROOT / POSTRENDER, is_upgrade=True
            )
        except ChartRenderError as error:
            raise SideRefused(f"{side}: {error}") from None

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(render, sides))


@dataclass(frozen=True)
class ObjectsComparison:
    diff: ObjectsDiff
    """The live render against the project's: ``removed`` is what the upgrade deletes, ``added`` what it creates."""
    deleted: tuple[tuple[ObjectKey, str], ...]
    unexplained: tuple[ObjectKey, ...]
    left: tuple[tuple[ObjectKey, str], ...]
    """No longer rendered, but left on the cluster by Helm (kept, or a hook), with which."""
    stale: tuple[tuple[ObjectKey, str], ...]

    @property
    def has_findings(self) -> bool:
        return bool(self.unexplained or self.stale)


def compare(
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    namespace: str,
    declared: Mapping[ObjectKey, str],
) -> ObjectsComparison:
    """The live render against the project's. A Helm upgrade deletes every object of the old release the new render
    lacks, except one marked ``helm.sh/resource-policy: keep`` and hooks (helm/helm ``pkg/kube/client.go``,
    ``update``); each other deletion is either ``declared`` or unexplained."""
    diff, old = compare_objects(before, after, namespace), index(before, namespace)
    deleted, unexplained, left = [], [], []
    for key in diff.removed:
        annotations = old[key].get("metadata", {}).get("annotations") or {}
        kept, hook = annotations.get("helm.sh/resource-policy") == "keep", annotations.get("helm.sh/hook")
        if kept or hook:
            left.append((key, "`helm.sh/resource-policy: keep`" if kept else f"a hook (`helm.sh/hook: {hook}`)"))
        elif key in declared:
            deleted.append((key, declared[key]))
        else:
            unexplained.append(key)
    stale = tuple((key, why) for key, why in declared.items() if key not in diff.removed)
    return ObjectsComparison(diff, tuple(deleted), tuple(unexplained), tuple(left), stale)


def as_json(comparison: ObjectsComparison) -> dict[str, Any]:
    """``removed`` is what the upgrade deletes, ``added`` what it creates, ``before`` the live side (docs/json.md)."""
    c = comparison

    def pairs(found: tuple[tuple[ObjectKey, str], ...]) -> list[dict[str, str]]:
        return [{"object": str(key), "why": why} for key, why in found]

    return {
        **c.diff.as_json(),
        "deleted": pairs(c.deleted),
        "unexplained": [str(key) for key in c.unexplained],
        "left": pairs(c.left),
        "stale": pairs(c.stale),
    }


HERE = "`supersonic_interlink/takeover/objects_diff.py`"


def markdown(comparison: ObjectsComparison, stack: str, notes: Sequence[str]) -> str:
    """The report for the pull request."""
    diff, c = comparison.diff, comparison
    lines = [f"#### Objects: the live release → stack `{stack}`", "", *(f"- {n}" for n in notes), ""]
    deleted = [*c.deleted, *((key, f"**not explained** (a finding: declare it in {HERE})") for key in c.unexplained)]
    lines += ["**Deleted by the upgrade:**", "", *(["| object | why |", "|---|---|"] if deleted else ["*(none)*"])]
    lines += [f"| `{key}` | {why} |" for key, why in deleted]
    if c.left:
        left = "**No longer rendered, left on the cluster by Helm** (Helm deletes neither hooks nor kept objects):"
        lines += ["", left, "", *(f"- `{k}`: {why}" for k, why in c.left)]
    lines += ["", "**Created:**", "", *([f"- `{key}`" for key in diff.added] or ["*(none)*"]), ""]
    for change in diff.changed:
        table = markdown_table(["field", "live", "this stack"], [(x,) for x in change.changes])
        lines += [f"**Changed `{change.key}`:**", "", *table, ""]
    if c.stale:
        lines += [f"**Declared deletions the upgrade no longer makes** (findings: remove them from {HERE}):", ""]
        lines += [f"- `{key}`: {why}" for key, why in c.stale] + [""]
    lines.append(
        "Not shown: every object of the live release also carries helm-controller's labels "
        "`helm.toolkit.fluxcd.io/name` and `helm.toolkit.fluxcd.io/namespace`; the upgrade removes them from each "
        "object's `metadata.labels` (no selector, no pod template).\n\n"
        f"{len(deleted)} deleted ({len(c.unexplained)} unexplained), {len(diff.added)} created, "
        f"{len(diff.changed)} changed, {len(diff.unchanged)} unchanged, {len(c.left)} left by Helm, {len(c.stale)} "
        "stale."
    )
    return "\n".join(lines) + "\n"
