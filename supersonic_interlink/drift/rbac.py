"""What ``./supersonic drift <stack>`` needs on the cluster without ``--correct``: a Role in the release namespace
(docs/drift.md; the end-to-end test runs the check as a ServiceAccount bound to exactly it). Secrets ``get``/``list``
for Helm's release record; ``get`` of every kind deployed; ``patch`` and ``create`` of the release's kinds, because
Kubernetes authorizes a dry-run apply as an apply and a dry-run create (the server's defaults where the apply is
refused) as a create. The check only ever sends ``dryRun=All`` writes. Roles and RoleBindings are compared on the
manifest's fields and need only ``get``: RBAC refuses even a dry-run apply of one to a credential that does not hold
what it grants.
"""

from __future__ import annotations

import re
from typing import Any

APPLIED = ["configmaps", "services", "persistentvolumeclaims", "serviceaccounts", "deployments"]
READER_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]},
    {
        "apiGroups": ["", "apps", "batch", "rbac.authorization.k8s.io", "keda.sh"],
        "resources": [*APPLIED, "cronjobs", "roles", "rolebindings", "scaledobjects"],
        "verbs": ["get"],
    },
    {"apiGroups": ["", "apps", "keda.sh"], "resources": [*APPLIED, "scaledobjects"], "verbs": ["patch", "create"]},
]
_FORBIDDEN = re.compile(
    r'cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"]+)" in API group "(?P<group>[^"]*)"'
    r'(?: in the namespace "(?P<namespace>[^"]+)"| at the cluster scope)'
)
"""The API server's refusal (k8s.io/apiserver ``responsewriters.forbiddenMessage``), as kubectl, Helm and the provider
pass it on."""


def reader_role(name: str, namespace: str) -> dict[str, Any]:
    metadata = {"name": name, "namespace": namespace}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": metadata, "rules": READER_RULES}


def missing_right(text: str) -> str | None:
    """One line naming the verb and resource a refused request lacked, and whether this Role grants it; None when
    ``text`` holds no refusal."""
    if (refused := _FORBIDDEN.search(text)) is None:
        return None
    verb, resource, group = refused["verb"], refused["resource"].split("/")[0], refused["group"]
    where = f"in namespace {refused['namespace']}" if refused["namespace"] else "at the cluster scope"
    granted = any(
        verb in rule["verbs"] and resource in rule["resources"] and group in rule["apiGroups"] for rule in READER_RULES
    )
    fix = (
        "bind the credential to drift's Role (docs/state-backend.md, Drift's credential)"
        if granted
        else "drift's Role (supersonic_interlink/drift/rbac.py) lacks it too: add it there"
    )
    return f"the credential may not {verb} {f'{resource}.{group}' if group else resource} {where}: {fix}"
