"""The Helm release's objects: its stored manifest against the live objects, by a server-side dry-run apply.

This is the comparison Flux's helm-controller makes with ``driftDetection`` (fluxcd/helm-controller
``internal/action/diff.go`` ``Diff`` at ``0f61a860``, v1.6.3; fluxcd/pkg ``ssa/jsondiff/unstructured.go``
``Unstructured`` at ``e2cfd1a2``): each object of
``helm get manifest``, with the metadata Helm adds at install (``app.kubernetes.io/managed-by: Helm``,
``meta.helm.sh/release-name``/``-namespace``), is applied with ``--dry-run=server --server-side --force-conflicts``
under a field manager that owns nothing, and the result is compared with the live object outside ``metadata`` and
``status`` and in labels and annotations. So a field is drift only where applying the manifest would change it;
defaults the API server fills are on both sides, and a field the manifest does not set is not drift (Flux and
Helm 3's three-way merge leave such a field alone too).

Where the API server refuses the dry-run apply (a Service port changed in place: the applied port is added beside
the changed one and the two share a name; ports without ``protocol``, which server-side apply keys by port and
protocol), the object is compared on the fields the manifest sets, each list of named items matched by name, and the
rows say the apply was refused and why. A field the API server defaults is never drift there either: the manifest is
also created with ``--dry-run=server`` (under a generated name, so nothing is touched), and a field where that
server-defaulted object agrees with the live one is not drift; where they differ, the defaulted value is what is
expected (``protocol: TCP``, not the manifest's null).

Everything is read with the pinned Helm v3 and kubectl (``supersonic_interlink/chart/binaries.py``) from the cluster
``KUBECONFIG`` names. ``observe`` reads; ``compare`` is pure (the unit tests give it recorded observations);
``correct`` writes.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from supersonic_interlink.chart.binaries import BinaryError, ensure
from supersonic_interlink.drift.report import RELEASE_PART, Ignored, Row
from supersonic_interlink.drift.rules import rule_for, sidecar_hold_annotation
from supersonic_interlink.objdiff import ABSENT, Named, changes, overlay, put

FIELD_MANAGER = "supersonic-drift"
"""Field manager of the dry-run applies (never used for a real apply, so it owns nothing: applying drops no field
that someone else set, only sets the manifest's) and of the correction's writes."""

HELM_LABELS = {"app.kubernetes.io/managed-by": "Helm"}
HELM_ANNOTATIONS = ("meta.helm.sh/release-name", "meta.helm.sh/release-namespace")

INVALID = " is invalid: "
"""How kubectl words the API server's 422 Invalid: the one refusal that says something about the object itself."""

BUSY_STATUSES = ("pending-install", "pending-upgrade", "pending-rollback", "uninstalling")


FIELD_COMPARED_KINDS = frozenset({"Role", "RoleBinding"})
"""Kinds compared on the manifest's fields instead of by a dry-run apply (see ``observe``)."""


class CannotCheck(Exception):
    """The cluster could not be read or the release is not in a state to compare against; the message says why."""


@dataclass
class ObjectObservation:
    manifest: dict[str, Any]
    """The object as the release's manifest holds it, with Helm's ownership metadata added."""
    live: dict[str, Any] | None
    """The live object (``None``: not on the cluster)."""
    dry_run: dict[str, Any] | None
    """What the API server answered to the dry-run apply of ``manifest``."""
    refused: str = ""
    """The API server's message when it refused the dry-run apply."""
    defaulted: dict[str, Any] | None = None
    """For a refused object: the manifest as a dry-run create returns it, every default the API server fills set."""

    @property
    def key(self) -> str:
        return _key(self.manifest)


@dataclass
class ReleaseObservation:
    release: str
    namespace: str
    revision: int
    status: str
    objects: list[ObjectObservation]

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> ReleaseObservation:
        fields = dict(document)
        fields["objects"] = [ObjectObservation(**o) for o in document["objects"]]
        return cls(**fields)


@dataclass(frozen=True)
class Tools:
    """The pinned Helm v3 and kubectl, against the cluster ``env``'s ``KUBECONFIG`` (the process's own otherwise)."""

    env: Mapping[str, str] | None = None

    def run(self, tool: str, *args: str, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        try:
            binary = ensure(tool)
        except BinaryError as error:
            raise CannotCheck(str(error)) from None
        try:
            return subprocess.run(
                [str(binary), *args],
                capture_output=True,
                text=True,
                input=input_text,
                timeout=120,
                check=False,
                env=None if self.env is None else {**os.environ, **self.env},
            )
        except subprocess.TimeoutExpired:
            raise CannotCheck(f"{tool} {' '.join(args[:3])} did not answer in 120 s") from None

    def read(self, tool: str, *args: str, input_text: str | None = None) -> str:
        done = self.run(tool, *args, input_text=input_text)
        if done.returncode != 0:
            raise CannotCheck(f"{tool} {' '.join(args)}: {(done.stderr or done.stdout).strip()}")
        return done.stdout


def with_helm_metadata(manifest: Mapping[str, Any], release: str, namespace: str) -> dict[str, Any]:
    """The object as Helm leaves it on the cluster: its ownership label and annotations added
    (helm-controller ``setHelmMetadata``; Helm's ``pkg/action`` sets the same at install and upgrade)."""
    result = copy.deepcopy(dict(manifest))
    metadata = result.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), **HELM_LABELS}
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        HELM_ANNOTATIONS[0]: release,
        HELM_ANNOTATIONS[1]: namespace,
    }
    return result


def _items(text: str) -> list[dict[str, Any]]:
    if not text.strip():
        return []
    document = json.loads(text)
    return list(document.get("items") or []) if document.get("kind") == "List" else [document]


def _key(obj: Mapping[str, Any]) -> str:
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


def _dry_run(tools: Tools, objects: list[dict[str, Any]], namespace: str) -> subprocess.CompletedProcess[str]:
    return tools.run(
        "kubectl",
        "apply",
        "--server-side",
        "--dry-run=server",
        "--force-conflicts",
        f"--field-manager={FIELD_MANAGER}",
        "-n",
        namespace,
        "-o",
        "json",
        "-f",
        "-",
        input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
    )


def _dry_run_create(tools: Tools, manifest: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The manifest as the API server defaults it: a dry-run create under a generated name (the real name exists)."""
    probe = copy.deepcopy(dict(manifest))
    metadata = probe["metadata"]
    metadata["generateName"] = f"{str(metadata.pop('name'))[:40]}-"
    done = tools.run(
        "kubectl", "create", "--dry-run=server", "-n", namespace, "-o", "json", "-f", "-", input_text=json.dumps(probe)
    )
    if done.returncode != 0:
        raise CannotCheck(
            f"dry-run create of {_key(manifest)} (its server defaults, the apply being refused): "
            f"{(done.stderr or done.stdout).strip()}"
        )
    return dict(json.loads(done.stdout))


def observe(release: str, namespace: str, tools: Tools) -> ReleaseObservation:
    """Read the release's record and manifest, the live objects, and the dry-run apply of each object."""
    status = json.loads(tools.read("helm", "status", release, "-n", namespace, "-o", "json"))
    state = str((status.get("info") or {}).get("status", ""))
    revision = int(status.get("version") or 0)
    if state in BUSY_STATUSES:
        raise CannotCheck(
            f"release {namespace}/{release} is {state} (revision {revision}): a Helm operation is in flight or was "
            "interrupted, so its manifest is not what runs; see docs/takeover.md, An interrupted up"
        )
    documents = [d for d in yaml.safe_load_all(tools.read("helm", "get", "manifest", release, "-n", namespace)) if d]
    manifests = [with_helm_metadata(d, release, namespace) for d in documents]
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests})
    live = {
        _key(o): o
        for o in _items(
            tools.read(
                "kubectl", "get", "-n", namespace, "--ignore-not-found", "-o", "json", "-f", "-", input_text=listed
            )
        )
    }
    # A deleted object is drift as it is. A Role or RoleBinding is compared on the manifest's own fields: the API
    # server refuses even a dry-run apply of one to a credential that does not hold what it grants (RBAC's escalation
    # check), and the server defaults nothing in them that the manifest sets.
    present = [m for m in manifests if _key(m) in live and m.get("kind") not in FIELD_COMPARED_KINDS]
    answered: dict[str, dict[str, Any]] = {}
    refused: dict[str, str] = {}
    together = _dry_run(tools, present, namespace) if present else None
    if together is not None and together.returncode == 0:
        answered = {_key(o): o for o in _items(together.stdout)}
    elif together is not None:
        # One object refused fails the whole call without output: ask again object by object.
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda one: _dry_run(tools, [one], namespace), present))
        for manifest, alone in zip(present, answers, strict=True):
            if alone.returncode == 0:
                answered.update({_key(o): o for o in _items(alone.stdout)})
            elif INVALID in alone.stderr:
                refused[_key(manifest)] = alone.stderr.strip()
            else:
                # Forbidden, unreachable, an unknown kind: no answer, not drift.
                raise CannotCheck(f"dry-run apply of {_key(manifest)}: {(alone.stderr or alone.stdout).strip()}")
    unanswered = [_key(m) for m in present if _key(m) not in answered and _key(m) not in refused]
    if unanswered:
        raise CannotCheck(f"kubectl answered no dry-run apply for {', '.join(unanswered)}")
    defaulted = {_key(m): _dry_run_create(tools, m, namespace) for m in present if _key(m) in refused}
    objects = [
        ObjectObservation(m, live.get(_key(m)), answered.get(_key(m)), refused.get(_key(m), ""), defaulted.get(_key(m)))
        for m in manifests
    ]
    return ReleaseObservation(release, namespace, revision, state, objects)


def compare(observed: ReleaseObservation) -> tuple[list[Row], list[Ignored], list[str]]:
    """Rows of drift, what the rules ignored, and every object compared."""
    rows: list[Row] = []
    ignored: list[Ignored] = []
    hold = sidecar_hold_annotation(item.manifest for item in observed.objects if item.manifest)
    for item in observed.objects:
        if item.live is None:
            rows.append(Row(RELEASE_PART, item.key, (), "present (in the release's manifest)", ABSENT, "deleted"))
            continue
        live = item.live
        if item.refused:
            expected = overlay(live, item.manifest)
            reason = item.refused.splitlines()[-1]
            note = f"dry-run apply refused: {reason.split(INVALID)[-1]}"
        elif item.manifest.get("kind") in FIELD_COMPARED_KINDS:
            expected = overlay(live, item.manifest)
            note = "compared on the manifest's fields (RBAC objects are not dry-run applied)"
        else:
            expected = item.dry_run or {}
            note = ""
        for change in changes(live, expected):
            wanted = change.after
            if item.refused and item.defaulted is not None:
                # What the server makes of the manifest's value there (a default filled, a quantity normalized).
                wanted = value_at(item.defaulted, change.path)
                if wanted is ABSENT:
                    wanted = change.after
                elif _equal(wanted, change.before):
                    continue
            rule = rule_for(live, observed.release, change.path, is_object=True, hold_annotation=hold)
            if rule is not None:
                ignored.append(Ignored(RELEASE_PART, item.key, change.path, rule.name))
            else:
                rows.append(Row(RELEASE_PART, item.key, change.path, wanted, change.before, note))
    return rows, ignored, [item.key for item in observed.objects]


def value_at(tree: Any, path: tuple[Any, ...]) -> Any:
    """The value at an ``objdiff`` path (keys, list indexes, named items), ``ABSENT`` where there is none."""
    for segment in path:
        if isinstance(segment, Named):
            found = (
                [i for i in tree if isinstance(i, Mapping) and i.get("name") == segment.name]
                if isinstance(tree, list)
                else []
            )
            if len(found) != 1:
                return ABSENT
            tree = found[0]
        elif isinstance(segment, int):
            if not isinstance(tree, list) or not 0 <= segment < len(tree):
                return ABSENT
            tree = tree[segment]
        else:
            if not isinstance(tree, Mapping) or segment not in tree:
                return ABSENT
            tree = tree[segment]
    return tree


def _equal(a: Any, b: Any) -> bool:
    return not changes(a, b)


def correct(observed: ReleaseObservation, rows: list[Row], tools: Tools) -> list[str]:
    """Bring each drifted object back: a deleted one created from the manifest, a changed one replaced by the live
    object with each drifted field set to what applying the manifest makes it (a PUT carrying the live
    ``resourceVersion``: a change made meanwhile fails it instead of being overwritten). Fields the rules ignore
    keep their live values. Returns one line per object written."""
    done: list[str] = []
    by_object: dict[str, list[Row]] = {}
    for row in rows:
        if row.part == RELEASE_PART:
            by_object.setdefault(row.object, []).append(row)
    for item in observed.objects:
        drifted = by_object.get(item.key)
        if not drifted:
            continue
        if item.live is None:
            _write(tools, "create", item.manifest, observed.namespace)
            done.append(f"{item.key}: created from the release's manifest")
            continue
        desired = copy.deepcopy(item.live)
        desired["metadata"].pop("managedFields", None)  # left out, the API server keeps them as they are
        for row in drifted:
            put(desired, row.path, copy.deepcopy(row.expected))
        _write(tools, "replace", desired, observed.namespace)
        done.append(f"{item.key}: {', '.join(row.field for row in drifted)} set back")
    return done


def _write(tools: Tools, verb: str, obj: Mapping[str, Any], namespace: str) -> None:
    done = tools.run(
        "kubectl", verb, f"--field-manager={FIELD_MANAGER}", "-n", namespace, "-f", "-", input_text=json.dumps(obj)
    )
    if done.returncode != 0:
        raise CannotCheck(f"kubectl {verb} {_key(obj)}: {(done.stderr or done.stdout).strip()}")
