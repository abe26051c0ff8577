"""Before the takeover's import step: is the live release Flux's, stopped, on this stack's chart, with no Helm
operation in flight? Pure: ``run.live_findings`` reads the objects; ``takeover steps --live`` refuses on a finding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from supersonic_interlink.config import Settings


@dataclass(frozen=True)
class Finding:
    check: str
    problem: str


def release_of(helm_release: dict[str, Any]) -> tuple[str, str]:
    """(Helm release name, namespace) helm-controller makes of a HelmRelease (fluxcd/helm-controller ``GetReleaseName``,
    ``GetReleaseNamespace``, v0.36.2 and v1.4.5)."""
    meta, spec = helm_release["metadata"], helm_release.get("spec") or {}
    target = spec.get("targetNamespace")
    name = spec.get("releaseName") or (f"{target}-{meta['name']}" if target else meta["name"])
    return name, target or meta["namespace"]


def check(
    helm_releases: list[dict[str, Any]],
    repositories: list[dict[str, Any]],
    helm_status: dict[str, Any],
    settings: Settings,
) -> list[Finding]:
    """Exactly one HelmRelease manages the release, suspended (deleted unsuspended, it uninstalls the release), with
    the stack's chart from a GitRepository, ``reconcileStrategy: Revision``; ``helm status`` is deployed."""
    rel, ns, chart = settings.release.name, settings.namespace, settings.release.chart
    managing = [hr for hr in helm_releases if release_of(hr) == (rel, ns)]
    findings: list[Finding] = []

    def fail(check: str, problem: str) -> None:
        findings.append(Finding(check, problem))

    if len(managing) != 1:
        names = ", ".join(f"{hr['metadata']['namespace']}/{hr['metadata']['name']}" for hr in managing) or "none"
        fail("HelmRelease", f"expected exactly one HelmRelease managing {ns}/{rel}, found {names}")
    else:
        meta, spec = managing[0]["metadata"], managing[0].get("spec") or {}
        where = f"HelmRelease {meta['namespace']}/{meta['name']}"
        live = (spec.get("chart") or {}).get("spec") or {}
        source = live.get("sourceRef") or {}
        repo_ns = source.get("namespace") or meta["namespace"]
        kind, name, strategy = source.get("kind"), source.get("name"), live.get("reconcileStrategy")
        repo = next(
            (r for r in repositories if r["metadata"].items() >= {"name": name, "namespace": repo_ns}.items()), None
        )
        url = (repo or {}).get("spec", {}).get("url")
        urls = {str(u).rstrip("/").removesuffix(".git").lower() for u in (url, chart.git)}  # the same repository
        if spec.get("suspend") is not True:
            fail("suspend", f"{where} is not suspended (spec.suspend: {spec.get('suspend')!r}); step 3 first")
        if strategy != "Revision":
            fail(
                "reconcileStrategy",
                f"{where}: spec.chart.spec.reconcileStrategy is {strategy!r}, not 'Revision': no commit to pin",
            )
        if str(live.get("chart")).strip("./") != str(chart.path).strip("./"):
            fail("chart", f"{where}: chart {live.get('chart')!r}, the stack's is {str(chart.path)!r}")
        if kind != "GitRepository":
            fail("source", f"{where}: the chart comes from a {kind}, not a GitRepository")
        elif not repo:
            fail("source", f"{where}: GitRepository {repo_ns}/{name} not found")
        elif len(urls) != 1:
            fail("source", f"GitRepository {repo_ns}/{name}: url {url!r}, the stack's chart is {chart.git!r}")
    if (status := str(helm_status["info"]["status"])) != "deployed":
        why = "not deployed"
        if status.startswith("pending-"):
            why = 'a Helm operation is in flight or was interrupted (docs/takeover.md, "An interrupted up")'
        revision = helm_status.get("version")
        fail("helm status", f"release {ns}/{rel} is {status} (revision {revision}): {why}")
    return findings
