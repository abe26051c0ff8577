"""What ``./supersonic drift <stack>`` needs on the cluster, without ``--correct``: a Role in the release namespace.

- ``get``/``list`` of Secrets: Helm keeps its release record in Secrets (``helm status``, ``helm get manifest``, and
  the provider's refresh of the Release read them); ``pulumi preview`` needs the same.
- ``get`` of every kind the program and the chart deploy: the live objects, and the refresh.
- ``patch`` of every kind in the release's manifest: the server-side dry-run apply is authorized like a real apply
  (Kubernetes authorizes a dry-run request exactly as the request itself), so RBAC cannot grant the check less than
  a patch. The check only ever sends ``dryRun=All`` patches; a deleted object is not applied.
- ``create`` of the same kinds: where the API server refuses the dry-run apply (Service ports without
  ``protocol``), the check learns the server's defaults from a ``dryRun=All`` create of the manifest under a
  generated name, which is authorized as a create. ``--correct`` needs ``update`` and ``create`` on the same kinds,
  and what ``pulumi up`` needs.

The end-to-end test runs the check with a ServiceAccount bound to exactly this Role (tests/e2e/test_drift.py).
"""

from __future__ import annotations

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
        "resources": ["configmaps", "services", "persistentvolumeclaims", "deployments", "scaledobjects"],
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
