"""The Role ``./supersonic drift`` needs without ``--correct`` (docs/drift.md says why each right), and a refused
request named as the right it lacked."""

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
"""k8s.io/apiserver ``responsewriters.forbiddenMessage``, as kubectl, Helm and the provider pass it on."""


def reader_role(name: str, namespace: str) -> dict[str, Any]:
    metadata = {"name": name, "namespace": namespace}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": metadata, "rules": READER_RULES}


def missing_right(text: str) -> str | None:
    """The verb and resource a refused request lacked, and whether this Role grants it; None without a refusal."""
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
