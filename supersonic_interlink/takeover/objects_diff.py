"""What the takeover upgrade does to the live release's objects: the pinned chart rendered by Helm as an upgrade with
the live values and with the stack's, compared object by object, every deletion it makes declared with its reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from supersonic_interlink.chart.lookup_api import LookupApi, LookupApiError
from supersonic_interlink.config.pulumi_yaml import YAMLInputError, load_outside_yaml
from supersonic_interlink.contract import CHART, Generation
from supersonic_interlink.objdiff import ObjectKey, ObjectsDiff, compare_objects, markdown_table, object_key
from supersonic_interlink.render.conformance import Expected
from supersonic_interlink.takeover.values_diff import Declared, LiveInputError, report, sort_declared

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


def load_live_objects(text: bytes | str, source: str, namespace: str, served: bool = True) -> list[LiveObject]:
    """The objects of ``kubectl get -o yaml`` (a List) or a manifest; those ``served`` to the chart's lookup are put in
    ``namespace`` if they name none, and must be ones the stand-in API serves."""
    try:
        documents = [d for d in load_outside_yaml(text) if d is not None]
        listed = [d["items"] if isinstance(d, dict) and isinstance(d.get("items"), list) else [d] for d in documents]
        found = []
        for number, manifest in enumerate((m for items in listed for m in items), start=1):
            metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
            if not (isinstance(metadata, dict) and isinstance(metadata.get("name"), str)):
                raise LiveInputError(f"{source}: object {number} is not a Kubernetes object (no kind or metadata.name)")
            placed = {**manifest, "metadata": {"namespace": namespace, **metadata}} if served else manifest
            found.append(LiveObject(placed, source))
        LookupApi([o.manifest for o in found] if served else [])  # checks each can be served; starts nothing
    except (YAMLInputError, LookupApiError) as error:
        raise LiveInputError(f"{source}: {error}") from None
    return found


def notes(expected: Expected, live_objects: Sequence[LiveObject]) -> list[str]:
    """What the chart's lookup was served, and where the live ScaledObject it reads was not among it."""
    found = [f"The chart's lookup was served `{object_key(o.manifest)}` from `{o.source}`." for o in live_objects]
    scaled = ObjectKey("ScaledObject", CHART.scaled_object_name(expected.release_name), "keda.sh", expected.namespace)
    if scaled not in {object_key(o.manifest) for o in live_objects}:
        found.append(
            f"**No live ScaledObject `{scaled.name}` was given** (`--live-object`): where the chart keeps the live "
            "minReplicaCount, this shows the stack's."
        )
    return found


@dataclass(frozen=True)
class ObjectsComparison:
    diff: ObjectsDiff
    """The stored manifest against the project's render: ``removed`` is what the upgrade deletes, ``added`` creates."""
    deletions: Declared
    left: tuple[tuple[ObjectKey, str], ...]
    """No longer rendered, but left on the cluster by Helm (kept, or a hook), with which."""


def compare(
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    namespace: str,
    declared: Mapping[ObjectKey, str],
) -> ObjectsComparison:
    """A Helm upgrade deletes every object of the stored manifest the new render lacks, except one marked
    ``helm.sh/resource-policy: keep`` and hooks (helm/helm ``pkg/kube/client.go``, ``update``); each other deletion is
    either ``declared`` or unexplained."""
    diff, old = compare_objects(before, after, namespace), {object_key(m, namespace): m for m in before}
    deleted, left = [], []
    for key in diff.removed:
        annotations = old[key].get("metadata", {}).get("annotations") or {}
        kept, hook = annotations.get("helm.sh/resource-policy") == "keep", annotations.get("helm.sh/hook")
        if kept or hook:
            left.append((key, "`helm.sh/resource-policy: keep`" if kept else f"a hook (`helm.sh/hook: {hook}`)"))
        else:
            deleted.append(key)
    explained = sort_declared(deleted, declared, lambda key: key if key in declared else None)
    return ObjectsComparison(diff, explained, tuple(left))


def as_json(comparison: ObjectsComparison) -> dict[str, Any]:
    """``removed`` is what the upgrade deletes, ``added`` what it creates, ``before`` the stored side (docs/json.md)."""
    c = comparison.deletions
    return {
        **comparison.diff.as_json(),
        "deleted": [{"object": str(key), "why": why} for key, why in c.explained],
        "unexplained": [str(key) for key in c.undeclared],
        "left": [{"object": str(key), "why": why} for key, why in comparison.left],
        "stale": [{"object": str(key), "why": why} for key, why in c.stale],
    }


HERE = "`supersonic_interlink/takeover/objects_diff.py`"


def markdown(comparison: ObjectsComparison, stack: str, notes: Sequence[str]) -> str:
    diff, c, left = comparison.diff, comparison.deletions, comparison.left
    deleted = [*c.explained, *((key, f"**not explained** (a finding: declare it in {HERE})") for key in c.undeclared)]
    body = [*(f"- {n}" for n in notes), "", "**Deleted by the upgrade:**", ""]
    body += ["| object | why |", "|---|---|", *(f"| `{k}` | {w} |" for k, w in deleted)] if deleted else ["*(none)*"]
    if left:
        body += ["", "**No longer rendered, left on the cluster by Helm** (hooks and kept objects):", ""]
        body += [f"- `{key}`: {why}" for key, why in left]
    body += ["", "**Created:**", "", *([f"- `{key}`" for key in diff.added] or ["*(none)*"])]
    for change in diff.changed:
        table = markdown_table(["field", "live", "this stack"], [(x,) for x in change.changes])
        body += ["", f"**Changed `{change.key}`:**", "", *table]
    counts = (
        f"{len(deleted)} deleted ({len(c.undeclared)} unexplained), {len(diff.added)} created, "
        f"{len(diff.changed)} changed, {len(diff.unchanged)} unchanged, {len(left)} left by Helm, {len(c.stale)} stale."
    )
    stale = [(str(key), why) for key, why in c.stale]
    return report(f"Objects: the live release → stack `{stack}`", body, stale, HERE, counts)
