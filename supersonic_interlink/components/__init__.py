"""One ComponentResource per module; helpers they share live here."""

from __future__ import annotations

import pulumi_kubernetes as k8s


def created_name(metadata: k8s.meta.v1.outputs.ObjectMeta) -> str:
    """The name of an object a component created: every one is created with ``metadata.name`` set."""
    if metadata.name is None:
        raise ValueError("a created object has no metadata.name")
    return metadata.name
