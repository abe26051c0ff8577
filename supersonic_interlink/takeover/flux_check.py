"""Before the import step of the takeover: is the live release really Flux's, stopped, on this stack's chart, and
with no Helm operation in flight? ``takeover steps --live`` refuses to print the import step while one fails.

``check`` judges what ``command.live_findings`` read from the cluster ``KUBECONFIG`` names with the pinned kubectl
and Helm (pure: the tests give it objects):

- the HelmRelease that manages the stack's release. helm-controller names the Helm release ``spec.releaseName``,
  else ``<spec.targetNamespace>-<name>`` with a target namespace, else ``<name>``, and installs it into
  ``spec.targetNamespace`` or the HelmRelease's own namespace (fluxcd/helm-controller ``GetReleaseName``,
  ``GetReleaseNamespace``, v0.36.2 and v1.4.5). Exactly one may match;
- ``spec.suspend: true`` (deleting or pruning it unsuspended uninstalls the release, docs/takeover.md);
- the chart: a ``GitRepository`` source whose URL is the stack's chart repository, the chart path the stack's, and
  ``reconcileStrategy: Revision`` (without it the live chart version carries no commit, so the live chart cannot
  be matched to a commit to pin);
- ``helm status``: deployed, not ``pending-*`` (an operation in flight, or an interrupted one: docs/takeover.md,
  "An interrupted up") and not failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from supersonic_interlink.config import Settings


@dataclass(frozen=True)
class Finding:
    check: str
    problem: str


def release_of(helm_release: dict[str, Any]) -> tuple[str, str]:
    """(Helm release name, namespace) that helm-controller makes of a HelmRelease."""
    meta, spec = helm_release.get("metadata") or {}, helm_release.get("spec") or {}
    target = spec.get("targetNamespace") or ""
    name = spec.get("releaseName") or (f"{target}-{meta.get('name')}" if target else str(meta.get("name")))
    return name, target or str(meta.get("namespace"))


def _normal_url(url: str) -> str:
    return url.rstrip("/").removesuffix(".git").lower()


def check(
    helm_releases: list[dict[str, Any]],
    repositories: list[dict[str, Any]],
    helm_status: dict[str, Any] | None,
    settings: Settings,
) -> list[Finding]:
    wanted = (settings.release.name, settings.namespace)
    managing = [hr for hr in helm_releases if release_of(hr) == wanted]
    findings: list[Finding] = []
    if len(managing) != 1:
        names = ", ".join(f"{hr['metadata']['namespace']}/{hr['metadata']['name']}" for hr in managing) or "none"
        findings.append(
            Finding("HelmRelease", f"expected exactly one HelmRelease managing {wanted[1]}/{wanted[0]}, found {names}")
        )
    else:
        hr = managing[0]
        where = f"HelmRelease {hr['metadata']['namespace']}/{hr['metadata']['name']}"
        spec = hr.get("spec") or {}
        if spec.get("suspend") is not True:
            findings.append(
                Finding("suspend", f"{where} is not suspended (spec.suspend: {spec.get('suspend')!r}); step 3 first")
            )
        chart = (spec.get("chart") or {}).get("spec") or {}
        source = chart.get("sourceRef") or {}
        git = settings.release.chart
        if chart.get("reconcileStrategy") != "Revision":
            findings.append(
                Finding(
                    "reconcileStrategy",
                    f"{where}: spec.chart.spec.reconcileStrategy is {chart.get('reconcileStrategy')!r}, not 'Revision':"
                    " the live chart version carries no commit to pin",
                )
            )
        if git.kind == "git" and str(chart.get("chart", "")).strip("./") != str(git.path).strip("./"):
            findings.append(
                Finding("chart", f"{where}: chart {chart.get('chart')!r}, the stack's is {str(git.path)!r}")
            )
        if source.get("kind") != "GitRepository":
            findings.append(
                Finding("source", f"{where}: the chart comes from a {source.get('kind')}, not a GitRepository")
            )
        else:
            repo_ns = source.get("namespace") or hr["metadata"]["namespace"]
            repo = next(
                (
                    r
                    for r in repositories
                    if (r["metadata"]["name"], r["metadata"]["namespace"]) == (source.get("name"), repo_ns)
                ),
                None,
            )
            if repo is None:
                findings.append(Finding("source", f"{where}: GitRepository {repo_ns}/{source.get('name')} not found"))
            elif git.kind == "git" and _normal_url(str((repo.get("spec") or {}).get("url", ""))) != _normal_url(
                str(git.git)
            ):
                findings.append(
                    Finding(
                        "source",
                        f"GitRepository {repo_ns}/{source.get('name')}: url {repo['spec'].get('url')!r}, the stack's "
                        f"chart is {git.git!r}",
                    )
                )
    if helm_status is None:
        findings.append(Finding("helm status", f"no Helm release {wanted[1]}/{wanted[0]}"))
    else:
        status = str((helm_status.get("info") or {}).get("status"))
        if status != "deployed":
            findings.append(
                Finding(
                    "helm status",
                    f"release {wanted[1]}/{wanted[0]} is {status} (revision {helm_status.get('version')}): "
                    + (
                        'a Helm operation is in flight or was interrupted (docs/takeover.md, "An interrupted up")'
                        if status.startswith("pending-")
                        else "not deployed"
                    ),
                )
            )
    return findings
