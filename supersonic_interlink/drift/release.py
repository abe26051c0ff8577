"""The Helm release's objects: ``helm get manifest`` against the live objects by a server-side dry-run apply, as Flux's
``driftDetection`` compares; where the apply is refused, the fields the manifest sets (a null one is the server's)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import yaml

from supersonic_interlink.chart.binaries import ensure
from supersonic_interlink.drift.report import RELEASE_PART, Ignored, Report, Row, key, rule_for, sidecar_hold_annotation
from supersonic_interlink.objdiff import ABSENT, changes, overlay, put

FIELD_MANAGER = "supersonic-drift"
"""It owns nothing, so a dry-run apply under it drops no field."""
INVALID = " is invalid: "
"""kubectl's wording of a 422 Invalid, the one refusal about the object itself."""
BUSY_STATUSES = ("pending-install", "pending-upgrade", "pending-rollback", "uninstalling")
FIELD_COMPARED_KINDS = frozenset({"Role", "RoleBinding"})
"""Compared on the manifest's own fields: RBAC refuses a dry-run apply of one to a credential without its rights."""
APPLIED = ["configmaps", "services", "persistentvolumeclaims", "serviceaccounts", "deployments"]
READER_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]},
    {
        "apiGroups": ["", "apps", "batch", "rbac.authorization.k8s.io", "keda.sh"],
        "resources": [*APPLIED, "cronjobs", "roles", "rolebindings", "scaledobjects"],
        "verbs": ["get"],
    },
    {"apiGroups": ["", "apps", "keda.sh"], "resources": [*APPLIED, "scaledobjects"], "verbs": ["patch"]},
]
"""The Role ``./supersonic drift`` needs without ``--correct`` (docs/drift.md says why each right)."""


class CannotCheck(Exception):
    """The cluster could not be read or the release is not in a state to compare against."""


@dataclass
class ObjectObservation:
    manifest: dict[str, Any]
    """With Helm's ownership metadata."""
    live: dict[str, Any] | None
    dry_run: dict[str, Any] | None
    refused: str = ""
    """Why the API server refused the dry-run apply."""

    @property
    def key(self) -> str:
        return key(self.manifest)


@dataclass
class ReleaseObservation:
    release: str
    namespace: str
    revision: int
    objects: list[ObjectObservation]


@dataclass(frozen=True)
class Tools:
    """The pinned Helm v3 and kubectl, with ``env`` over the process's environment."""

    env: Mapping[str, str] | None = None

    def run(self, tool: str, *args: str, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        env = None if self.env is None else {**os.environ, **self.env}
        return subprocess.run(
            [str(ensure(tool)), *args], capture_output=True, text=True, input=input_text, timeout=120, env=env
        )

    def read(self, tool: str, *args: str, input_text: str | None = None) -> str:
        return stdout(self.run(tool, *args, input_text=input_text), f"{tool} {' '.join(args)}")


def reader_role(name: str, namespace: str) -> dict[str, Any]:
    metadata = {"name": name, "namespace": namespace}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": metadata, "rules": READER_RULES}


def stdout(done: subprocess.CompletedProcess[str], what: str) -> str:
    if done.returncode != 0:
        raise CannotCheck(f"{what}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def _listed(objects: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})


def _items(text: str) -> dict[str, dict[str, Any]]:
    document: dict[str, Any] = json.loads(text) if text.strip() else {"kind": "List"}
    return {key(o): o for o in (document.get("items") or [] if document.get("kind") == "List" else [document])}


def with_helm_metadata(manifest: Mapping[str, Any], release: str, namespace: str) -> dict[str, Any]:
    """The object as Helm leaves it on the cluster (helm-controller ``setHelmMetadata``)."""
    helm = {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace}
    return overlay(manifest, {"metadata": {"labels": {"app.kubernetes.io/managed-by": "Helm"}, "annotations": helm}})


def _dry_run(tools: Tools, objects: list[dict[str, Any]], namespace: str) -> subprocess.CompletedProcess[str]:
    flags = ("--server-side", "--dry-run=server", "--force-conflicts", f"--field-manager={FIELD_MANAGER}")
    return tools.run("kubectl", "apply", *flags, "-n", namespace, "-o", "json", "-f", "-", input_text=_listed(objects))


def _set_fields(value: Any) -> Any:
    """``value`` without its nulls: a null the manifest sets is the field left to the API server's default."""
    if isinstance(value, dict):
        return {k: _set_fields(v) for k, v in value.items() if v is not None}
    return [_set_fields(v) for v in value] if isinstance(value, list) else value


def observe(release: str, namespace: str, tools: Tools) -> ReleaseObservation:
    """The release's record and manifest, the live objects, and the dry-run apply of each."""
    status = json.loads(tools.read("helm", "status", release, "-n", namespace, "-o", "json"))
    state, revision = str((status.get("info") or {}).get("status", "")), int(status.get("version") or 0)
    if state in BUSY_STATUSES:
        raise CannotCheck(
            f"release {namespace}/{release} is {state} (revision {revision}): a Helm operation is in flight or was "
            "interrupted (docs/takeover.md, An interrupted up)"
        )
    documents = yaml.safe_load_all(tools.read("helm", "get", "manifest", release, "-n", namespace))
    manifests = [with_helm_metadata(d, release, namespace) for d in documents if d]
    get = ("get", "-n", namespace, "--ignore-not-found", "-o", "json", "-f", "-")
    live = _items(tools.read("kubectl", *get, input_text=_listed(manifests)))
    present = [m for m in manifests if key(m) in live and m.get("kind") not in FIELD_COMPARED_KINDS]
    together = _dry_run(tools, present, namespace) if present else None
    answered = _items(together.stdout) if together is not None and together.returncode == 0 else {}
    refused: dict[str, str] = {}
    if together is not None and together.returncode != 0:  # one refusal fails the whole call: ask object by object
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda one: _dry_run(tools, [one], namespace), present))
        for manifest, alone in zip(present, answers, strict=True):
            if alone.returncode != 0 and INVALID in alone.stderr:
                refused[key(manifest)] = alone.stderr.strip()
            else:  # forbidden, unreachable, an unknown kind: no answer, not drift
                answered |= _items(stdout(alone, f"dry-run apply of {key(manifest)}"))
    objects = [ObjectObservation(m, live.get(k := key(m)), answered.get(k), refused.get(k, "")) for m in manifests]
    return ReleaseObservation(release, namespace, revision, objects)


def compare(observed: ReleaseObservation, found: Report) -> None:
    hold = sidecar_hold_annotation(item.manifest for item in observed.objects if item.manifest)
    for item in observed.objects:
        found.objects.append(item.key)
        if (live := item.live) is None:
            found.rows.append(Row(RELEASE_PART, item.key, (), "present (in the release's manifest)", ABSENT, "deleted"))
            continue
        field_compared = item.refused or item.manifest.get("kind") in FIELD_COMPARED_KINDS
        expected = overlay(live, _set_fields(item.manifest)) if field_compared else item.dry_run or {}
        note = f"dry-run apply refused: {item.refused.splitlines()[-1].split(INVALID)[-1]}" if item.refused else ""
        for change in changes(live, expected):
            if rule := rule_for(live, observed.release, change.path, is_object=True, hold=hold):
                found.ignored.append(Ignored(RELEASE_PART, item.key, change.path, rule.name))
            else:
                found.rows.append(Row(RELEASE_PART, item.key, change.path, change.after, change.before, note))


def correct(observed: ReleaseObservation, rows: list[Row], tools: Tools, log: Callable[[str], None] = print) -> None:
    """A deleted object created from the manifest; a changed one replaced by the live object with each drifted field
    set back (a PUT with the live ``resourceVersion``: a change made meanwhile fails it)."""
    for item in observed.objects:
        if not (drifted := [row for row in rows if row.part == RELEASE_PART and row.object == item.key]):
            continue
        if item.live is None:
            verb, desired, line = "create", item.manifest, "created from the release's manifest"
        else:
            verb, desired, line = "replace", copy.deepcopy(item.live), f"{', '.join(r.field for r in drifted)} set back"
            desired["metadata"].pop("managedFields", None)  # left out, the API server keeps them
            for row in drifted:
                put(desired, row.path, copy.deepcopy(row.expected))
        flags = (f"--field-manager={FIELD_MANAGER}", "-n", observed.namespace, "-f", "-")
        stdout(tools.run("kubectl", verb, *flags, input_text=json.dumps(desired)), f"kubectl {verb} {item.key}")
        log(f"drift: {item.key}: {line}")
