"""What the takeover upgrade does to the live release's objects, with every deletion it makes explained.

``render_sides`` renders the pinned chart twice with the real Helm v3 as an upgrade, with the project's post-renderer
(it stands for the live release's post-render patch too: both set the same trigger timeout): once with the live
values, once with this project's. Each side's ``lookup`` is answered from what the cluster holds at that moment: the
live objects given (the old Envoy ConfigMap, the ScaledObject whose ``minReplicaCount`` the chart keeps) and, on the
project's side, its own Envoy ConfigMap, which ``pulumi up`` creates before the upgrade.

``compare`` matches the renders object by object (``objdiff.compare_objects``). A Helm upgrade deletes every object
of the old release the new render lacks, except one marked ``helm.sh/resource-policy: keep`` and hooks (helm/helm
``pkg/kube/client.go``, ``update``). Each deletion must be declared with its reason (``EXPECTED_DELETIONS``); an
undeclared deletion is a finding, and so is a declaration under which nothing is deleted any more.
"""

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
from supersonic_interlink.objdiff import (
    ObjectKey,
    ObjectsDiff,
    compare_objects,
    format_path,
    index,
    markdown_cell,
    markdown_row,
    object_key,
    text_diff,
)
from supersonic_interlink.render.conformance import ROOT, Expected


@dataclass(frozen=True)
class ExpectedDeletion:
    """An object of the live release the upgrade deletes on purpose."""

    kind: str
    name: str
    """The object's name; ``{instance}`` stands for the chart's instance name (``CHART.instance_name``)."""
    why: str
    group: str = ""
    """API group (``policy``, ``rbac.authorization.k8s.io``); empty for the core group."""

    def key(self, release_name: str, namespace: str) -> ObjectKey:
        return ObjectKey(self.kind, self.name.format(instance=CHART.instance_name(release_name)), self.group, namespace)


EXPECTED_DELETIONS: tuple[ExpectedDeletion, ...] = ()
"""None: the takeover changes values, not the set of objects the live release runs, so nothing of it should go.
A deletion the pinned chart makes is a finding until it is declared here with the reason it is wanted."""


def generation_deletions(live: Generation, new: Generation) -> tuple[ExpectedDeletion, ...]:
    """What an upgrade that moves the chart generation deletes on purpose: the old generation's inference-server
    Deployment and headless Service, which the new chart renders under its own names in the same upgrade."""
    if live == new:
        return ()
    why = (
        f"The chart generation moves from {live.name} to {new.name}: replaced in the same upgrade by "
        f"`<release>-{new.inference_component}`. The running inference server and its Slurm job end; clients "
        "wait for the new one as for a cold start (docs/chart.md, Moving the generation)."
    )
    return tuple(
        ExpectedDeletion(kind, f"{{instance}}-{live.inference_component}", why, group)
        for kind, group in (("Deployment", "apps"), ("Service", ""))
    )


KEEP_ANNOTATION = ("helm.sh/resource-policy", "keep")
"""An object Helm never deletes, on upgrade or uninstall: it stays, no longer managed by the release."""
HOOK_ANNOTATION = "helm.sh/hook"
"""A hook is run by Helm at its point of the install or upgrade; it is not among the objects an upgrade deletes."""
FLUX_ORIGIN_LABELS = ("helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace")
"""Labels helm-controller's post-renderer adds to every object's ``metadata.labels`` (see docs/takeover.md)."""


# --------------------------------------------------------------------------------------------- live objects


class LiveObjectsError(ValueError):
    """A ``--live-object`` file cannot be served to the chart's lookup; the message says which file and why."""


@dataclass(frozen=True)
class LiveObject:
    """An object on the cluster the chart may look up, and the file it was read from."""

    manifest: dict[str, Any]
    source: str

    @property
    def key(self) -> ObjectKey:
        return object_key(self.manifest)


def load_live_objects(text: bytes | str, source: str, namespace: str) -> list[LiveObject]:
    """The objects in ``kubectl get -o yaml`` output (one object, a ``List``, or several documents) or in a manifest
    from the GitOps repository; one without a namespace is put in ``namespace`` (the Kustomization would)."""
    try:
        documents = load_outside_yaml(text)
    except YAMLInputError as error:
        raise LiveObjectsError(f"{source}: {error}") from None
    manifests: list[Any] = []
    for document in documents:
        if isinstance(document, dict) and str(document.get("kind", "")).endswith("List") and "items" in document:
            if not isinstance(document["items"] or [], list):
                raise LiveObjectsError(f"{source}: a {document['kind']} whose items is not a list")
            manifests.extend(document["items"] or [])
        elif document is not None:
            manifests.append(document)
    found = []
    for number, manifest in enumerate(manifests, start=1):
        metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
        if (
            not isinstance(metadata, dict)
            or not manifest.get("kind")
            or not metadata.get("name")
            or (not isinstance(metadata["name"], str))
        ):
            raise LiveObjectsError(f"{source}: object {number} is not a Kubernetes object (no kind or metadata.name)")
        found.append(LiveObject({**manifest, "metadata": {"namespace": namespace, **metadata}}, source))
    try:
        LookupApi([o.manifest for o in found])  # checks each can be served; starts nothing
    except LookupApiError as error:
        raise LiveObjectsError(f"{source}: {error}") from None
    return found


# --------------------------------------------------------------------------------------------- the two renders


@dataclass(frozen=True)
class Sides:
    """What each render is given: values and the objects its stand-in API serves."""

    release_name: str
    namespace: str
    live_values: dict[str, Any]
    live_served: list[dict[str, Any]]
    project_values: dict[str, Any]
    project_served: list[dict[str, Any]]
    notes: tuple[str, ...]
    """What the live side was served and where from, in the report's words."""


def live_envoy_config_map(live_values: Mapping[str, Any]) -> tuple[str, str] | None:
    """(name, key) of the external Envoy ConfigMap the live values make the chart copy, or None."""
    external = (live_values.get(CHART.envoy_values_key) or {}).get("external_config") or {}
    if not external.get("load_from_configmap") or not external.get("configmap_name"):
        return None
    return str(external["configmap_name"]), str(external.get("configmap_key") or CHART.envoy_config_key)


def sides(expected: Expected, live_values: dict[str, Any], live_objects: Sequence[LiveObject]) -> Sides:
    """The two renders' inputs. The live Envoy ConfigMap, if not among ``live_objects``, is stood in for by this
    stack's envoy.yaml under the live name (so the chart renders, and a note says the change is not shown)."""
    namespace, served = expected.namespace, [o.manifest for o in live_objects]
    by_key = {o.key: o for o in live_objects}
    scaled = CHART.scaled_object_name(expected.release_name)
    named = [ObjectKey("ScaledObject", scaled, "keda.sh", namespace)]
    notes, live_served = [], list(served)
    envoy = live_envoy_config_map(live_values)
    if envoy is not None:
        name, key = envoy
        named.append(ObjectKey("ConfigMap", name, "", namespace))
        if named[1] in by_key:
            notes.append(f"The live Envoy ConfigMap `{name}` is the one in `{by_key[named[1]].source}`.")
        else:
            metadata = {"name": name, "namespace": namespace}
            live_served.append(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {key: expected.envoy_yaml}}
            )
            notes.append(
                f"**The live Envoy ConfigMap `{name}` was not given**: this stack's envoy.yaml was served under its "
                "name, so the change of the Envoy configuration itself is not shown. Give it with `--live-object`."
            )
    live_scaled = by_key.get(named[0])
    if live_scaled is not None:
        floor = (live_scaled.manifest.get("spec") or {}).get("minReplicaCount", "not set")
        notes.append(
            f"The live ScaledObject `{scaled}` (minReplicaCount {floor}) is the one in `{live_scaled.source}`."
        )
    else:
        notes.append(
            f"No live ScaledObject `{scaled}` was given: the chart's lookup found none, so where the chart keeps the "
            "live minReplicaCount this shows the value set instead. Give it with `--live-object`."
        )
    others = [f"`{o.key}`" for o in live_objects if o.key not in named]
    if others:
        notes.append(f"Also served to the chart's lookup: {', '.join(others)}.")
    # At the upgrade the project's ConfigMap exists beside the live objects (pulumi up creates it first); served
    # last, it wins over a live object of the same name.
    return Sides(
        expected.release_name,
        namespace,
        live_values,
        live_served,
        expected.values,
        served + expected.served,
        tuple(notes),
    )


class SideRefused(Exception):
    """Helm refused to render one side; ``side`` says which, the message is Helm's."""

    def __init__(self, side: str, message: str):
        super().__init__(message)
        self.side = side


def render_side(chart_dir: Path, given: Sides, side: str) -> list[dict[str, Any]]:
    """One side (``live`` or ``project``) rendered as an upgrade: the live objects are those of the release's last
    upgrade (Flux upgrades on every change), and the takeover is one. Raises ``SideRefused`` or ``BinaryError``."""
    live = side == "live"
    values, served = (given.live_values, given.live_served) if live else (given.project_values, given.project_served)
    try:
        return render_chart(
            chart_dir,
            given.release_name,
            given.namespace,
            values,
            served,
            post_renderer=ROOT / POSTRENDER,
            is_upgrade=True,
        )
    except ChartRenderError as error:
        raise SideRefused("the live values" if live else "this stack's values", str(error)) from None


def render_sides(chart_dir: Path, given: Sides) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(live render, project render), rendered at the same time. Raises ``SideRefused`` or ``BinaryError``."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        live, project = (pool.submit(render_side, chart_dir, given, side) for side in ("live", "project"))
        return live.result(), project.result()


# --------------------------------------------------------------------------------------------- the comparison


@dataclass(frozen=True)
class Deletion:
    key: ObjectKey
    why: str


@dataclass(frozen=True)
class ObjectsComparison:
    diff: ObjectsDiff
    """The live render against the project's: ``removed`` is what the upgrade deletes, ``added`` what it creates."""
    deleted: tuple[Deletion, ...]
    """Deleted by the upgrade, as declared."""
    unexplained: tuple[ObjectKey, ...]
    """Findings: deleted by the upgrade, and not declared."""
    left: tuple[Deletion, ...]
    """No longer rendered, but left on the cluster by Helm (kept, or a hook); ``why`` says which."""
    stale: tuple[ExpectedDeletion, ...]
    """Findings: declared deletions the upgrade no longer makes."""

    @property
    def has_findings(self) -> bool:
        return bool(self.unexplained or self.stale)


def _left_by_helm(manifest: Mapping[str, Any]) -> str:
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    name, value = KEEP_ANNOTATION
    if annotations.get(name) == value:
        return f"`{name}: {value}`: Helm leaves it in place, no longer part of the release"
    if HOOK_ANNOTATION in annotations:
        return f"a hook (`{HOOK_ANNOTATION}: {annotations[HOOK_ANNOTATION]}`): an upgrade does not delete hooks"
    return ""


def compare(
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    release_name: str,
    namespace: str,
    declared: Sequence[ExpectedDeletion] | None = None,
) -> ObjectsComparison:
    """The live render against the project's, what the upgrade no longer renders sorted by ``declared`` (default
    ``EXPECTED_DELETIONS``)."""
    diff, old = compare_objects(before, after, namespace), index(before, namespace)
    reasons = {d.key(release_name, namespace): d for d in (EXPECTED_DELETIONS if declared is None else declared)}
    deleted, unexplained, left = [], [], []
    for key in diff.removed:
        kept = _left_by_helm(old[key])
        if kept:
            left.append(Deletion(key, kept))
        elif key in reasons:
            deleted.append(Deletion(key, reasons[key].why))
        else:
            unexplained.append(key)
    used = {d.key for d in deleted}
    stale = tuple(d for k, d in reasons.items() if k not in used)
    return ObjectsComparison(diff, tuple(deleted), tuple(unexplained), tuple(left), stale)


# --------------------------------------------------------------------------------------------- the report


def as_json(comparison: ObjectsComparison) -> dict[str, Any]:
    """``removed`` is what the upgrade deletes, ``added`` what it creates, ``before`` the live side (docs/json.md)."""
    return {
        **comparison.diff.as_json(),
        "deleted": [{"object": str(d.key), "why": d.why} for d in comparison.deleted],
        "unexplained": [str(key) for key in comparison.unexplained],
        "left": [{"object": str(d.key), "why": d.why} for d in comparison.left],
        "stale": [{"kind": d.kind, "name": d.name, "why": d.why} for d in comparison.stale],
    }


HERE = "`supersonic_interlink/takeover/objects_diff.py`"


def markdown(comparison: ObjectsComparison, stack: str, notes: Sequence[str] = ()) -> str:
    """The report for the pull request: what was rendered, deleted, created, changed (a multi-line text, the Envoy
    configuration, as a diff under its table), then any findings."""
    diff, c = comparison.diff, comparison
    lines = [f"#### Objects: the live release → stack `{stack}`", "", *(f"- {note}" for note in notes)]
    lines += ["", "**Deleted by the upgrade:**", ""] if notes else ["**Deleted by the upgrade:**", ""]
    if c.deleted or c.unexplained:
        lines += ["| object | why |", "|---|---|", *(f"| `{d.key}` | {d.why} |" for d in c.deleted)]
        lines += [
            f"| `{key}` | **not explained** (a finding: declare it with its reason in {HERE}, or change the stack so "
            "the upgrade keeps it) |"
            for key in c.unexplained
        ]
    else:
        lines.append("*(none)*")
    if c.left:
        lines += ["", "**No longer rendered, left on the cluster by Helm:**", ""]
        lines += [f"- `{d.key}`: {d.why}" for d in c.left]
    lines += ["", "**Created:**", "", *([f"- `{key}`" for key in diff.added] or ["*(none)*"]), ""]
    for change in diff.changed:
        texts = [x for x in change.changes if any(isinstance(v, str) and "\n" in v for v in (x.before, x.after))]
        lines += [f"**Changed `{change.key}`:**", "", "| field | live | this stack |", "|---|---|---|"]
        lines += [
            f"| {markdown_cell(format_path(x.path))} | *(text: see below)* | *(text: see below)* |"
            if x in texts
            else markdown_row(x)
            for x in change.changes
        ]
        lines.append("")
        for x in texts:
            diff_lines = text_diff(x.before, x.after)
            lines += [f"`{format_path(x.path)}`:", "", "```diff", "--- live", "+++ this stack", *diff_lines, "```", ""]
    if c.stale:
        lines += [f"**Declared deletions the upgrade no longer makes** (findings: remove them from {HERE}):", ""]
        lines += [f"- `{d.kind}` `{d.name}`: {d.why}" for d in c.stale] + [""]
    labels = " and ".join(f"`{label}`" for label in FLUX_ORIGIN_LABELS)
    lines.append(
        f"Not shown: every object of the live release also carries helm-controller's labels {labels}; the upgrade "
        "removes them from each object's `metadata.labels` (no selector, no pod template).\n\n"
        f"{len(c.deleted) + len(c.unexplained)} deleted ({len(c.unexplained)} unexplained), {len(diff.added)} created, "
        f"{len(diff.changed)} changed, {len(diff.unchanged)} unchanged, {len(c.left)} left by Helm, {len(c.stale)} "
        "stale."
    )
    return "\n".join(lines) + "\n"
