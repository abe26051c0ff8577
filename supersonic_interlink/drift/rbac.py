"""What ``./supersonic drift <stack>`` needs on the cluster, without ``--correct``: a Role in the release namespace.

- ``get``/``list`` of Secrets: Helm keeps its release record in Secrets (``helm status``, ``helm get manifest``, and
  the provider's refresh of the Release read them); ``pulumi preview`` needs the same.
- ``get`` of every kind the program and the chart deploy: the live objects, and the refresh.
- ``patch`` of every kind in the release's manifest: the server-side dry-run apply is authorized like a real apply
  (Kubernetes authorizes a dry-run request exactly as the request itself), so RBAC cannot grant the check less than
  a patch. The check only ever sends ``dryRun=All`` patches; a deleted object is not applied. Roles and RoleBindings
  (the chart's admission sidecar has them) are not applied at all: RBAC refuses even a dry-run apply of one to a
  credential that does not hold what it grants, so they are compared on the manifest's fields and need only ``get``.
- ``create`` of the same kinds: where the API server refuses the dry-run apply (Service ports without
  ``protocol``), the check learns the server's defaults from a ``dryRun=All`` create of the manifest under a
  generated name, which is authorized as a create. ``--correct`` needs ``update`` and ``create`` on the same kinds,
  and what ``pulumi up`` needs.

The end-to-end test runs the check with a ServiceAccount bound to exactly this Role (tests/e2e/test_drift.py).
"""

from __future__ import annotations

import re
from typing import Any

READER_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]},
    {
        "apiGroups": ["", "apps", "batch", "rbac.authorization.k8s.io", "keda.sh"],
        "resources": [
            "configmaps",
            "services",
            "persistentvolumeclaims",
            "serviceaccounts",
            "deployments",
            "cronjobs",
            "roles",
            "rolebindings",
            "scaledobjects",
        ],
        "verbs": ["get"],
    },
    {
        "apiGroups": ["", "apps", "keda.sh"],
        "resources": [
            "configmaps",
            "services",
            "persistentvolumeclaims",
            "serviceaccounts",
            "deployments",
            "scaledobjects",
        ],
        "verbs": ["patch", "create"],
    },
]


def reader_role(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": READER_RULES,
    }


_FORBIDDEN = re.compile(
    r'cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"]+)" in API group "(?P<group>[^"]*)"'
    r'(?: in the namespace "(?P<namespace>[^"]+)"| at the cluster scope)'
)
"""The API server's refusal (k8s.io/apiserver ``responsewriters.forbiddenMessage``), as kubectl, Helm and the provider
pass it on."""


def missing_right(text: str) -> str | None:
    """One line naming the verb and resource a refused request lacked, and whether this Role grants it; None when
    ``text`` holds no refusal."""
    refused = _FORBIDDEN.search(text)
    if refused is None:
        return None
    verb, resource, group = refused["verb"], refused["resource"].split("/")[0], refused["group"]
    where = f"in namespace {refused['namespace']}" if refused["namespace"] else "at the cluster scope"
    named = f"{resource}.{group}" if group else resource
    granted = any(
        verb in rule["verbs"] and resource in rule["resources"] and group in rule["apiGroups"] for rule in READER_RULES
    )
    fix = (
        "bind the credential to drift's Role (docs/state-backend.md, Drift's credential)"
        if granted
        else "drift's Role (supersonic_interlink/drift/rbac.py) lacks it too: add it there"
    )
    return f"the credential may not {verb} {named} {where}: {fix}"
