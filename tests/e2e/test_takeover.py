"""Takeover rehearsal: a release installed the way Flux's helm-controller installs it, adopted by ``pulumi up``, and
the printed undo run on the state that leaves.

helm-controller (v1.4.5 ``internal/action/install.go``, ``internal/postrender/common_renderer.go``; v0.36.2
``internal/runner/runner.go``) post-renders two origin labels onto every object and nothing onto the release record;
with ``reconcileStrategy: Revision`` the chart version carries the commit (``<version>+<first 12 hex>``). The external
Envoy ConfigMap is a plain object Flux applies beside the release.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_harness import ROOT, Project, hammer_like, helm, helm_revisions, kubectl_json

from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.contract import CHART
from supersonic_interlink.render.stack import render
from supersonic_interlink.takeover.objects_diff import EXPECTED_DELETIONS
from supersonic_interlink.takeover.run import live_findings
from supersonic_interlink.takeover.run import run_objects as objects_command
from supersonic_interlink.takeover.steps import format_steps, names

pytestmark = pytest.mark.timeout(900)

STACK = "takeover-e2e"
RELEASE = "supersonic-interlink"
NAMESPACE = "e2e-takeover"
FLUX_LABELS = {"helm.toolkit.fluxcd.io/name": RELEASE, "helm.toolkit.fluxcd.io/namespace": "flux-system"}
COMMIT_12 = "0123456789ab"

POST_RENDERER = f"""#!{sys.executable}
# helm-controller's origin labels: every rendered object gets the HelmRelease's name and namespace.
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
for d in docs:
    d.setdefault("metadata", {{}}).setdefault("labels", {{}}).update({FLUX_LABELS!r})
sys.stdout.write(yaml.safe_dump_all(docs))
"""


# A CRD that accepts any HelmRelease: Flux's own CRDs are not to be had here (the module proxy serves no
# fluxcd/helm-controller), and the check reads only fields both API versions share.
ANY_OBJECT = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
STAND_IN_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "helmreleases.helm.toolkit.fluxcd.io"},
    "spec": {
        "group": "helm.toolkit.fluxcd.io",
        "names": {
            "kind": "HelmRelease",
            "plural": "helmreleases",
            "singular": "helmrelease",
            "listKind": "HelmReleaseList",
        },
        "scope": "Namespaced",
        "versions": [{"name": "v2beta1", "served": True, "storage": True, "schema": ANY_OBJECT}],
    },
}


def flux_helm_release(suspend: bool) -> dict[str, Any]:
    """Flux's HelmRelease as DOMAIN.md describes the live one (in the test's namespace)."""
    chart = {"chart": "helm/supersonic", "reconcileStrategy": "Revision", "sourceRef": {"kind": "GitRepository"}}
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2beta1",
        "kind": "HelmRelease",
        "metadata": {"name": RELEASE, "namespace": NAMESPACE},
        "spec": {"suspend": suspend, "interval": "1m", "timeout": "20m", "chart": {"spec": chart}},
    }


def flux_style_chart(chart: Path, into: Path) -> Path:
    """The chart as source-controller hands it over with reconcileStrategy Revision: the commit in the version."""
    copy = into / "flux-chart"
    shutil.copytree(chart, copy)
    meta = yaml.safe_load((copy / "Chart.yaml").read_text())
    meta["version"] = f"{meta['version'].split('+')[0]}+{COMMIT_12}"
    (copy / "Chart.yaml").write_text(yaml.safe_dump(meta))
    return copy


def release_objects(project: Project) -> dict[tuple[str, str], str]:
    """(kind, name) -> uid of every object of the release in the namespace."""
    found = {}
    for kind in ("deployments", "services", "configmaps", "scaledobjects", "serviceaccounts", "roles", "rolebindings"):
        for item in kubectl_json(project.cluster, "get", kind, "-n", NAMESPACE)["items"]:
            annotations = item["metadata"].get("annotations") or {}
            if annotations.get("meta.helm.sh/release-name") == RELEASE:
                found[(item["kind"], item["metadata"]["name"])] = item["metadata"]["uid"]
    return found


def test_adopting_a_flux_installed_release_upgrades_it_in_place(
    project: Project, chart: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = project.cluster
    cluster.kubectl("create", "namespace", NAMESPACE)
    live_values = yaml.safe_load((ROOT / "tests" / "fixtures" / "live-values-hammer.yaml").read_text())
    envoy = live_values[CHART.envoy_values_key]["external_config"]

    # Step 1: what Flux runs today. The external Envoy ConfigMap (a plain object), then helm install.
    stack = hammer_like(NAMESPACE, RELEASE, chart)
    project.write_stack(STACK, stack)
    rendered = render(STACK, project.cli_config(STACK))
    literal = f"--from-literal={envoy.get('configmap_key', CHART.envoy_config_key)}={rendered['envoy']}"
    cluster.kubectl("create", "configmap", envoy["configmap_name"], "-n", NAMESPACE, literal)
    post_renderer = tmp_path / "flux-origin-labels"
    post_renderer.write_text(POST_RENDERER)
    post_renderer.chmod(0o755)
    values_file = tmp_path / "live-values.yaml"
    values_file.write_text(yaml.safe_dump(live_values))
    # As helm-controller installs: --wait, a 5 min timeout, no --atomic, CRDs skipped, its post-renderer.
    flags = ["-f", str(values_file), "--wait", "--timeout", "5m", "--skip-crds", "--post-renderer", str(post_renderer)]
    helm(cluster, "install", RELEASE, str(flux_style_chart(chart, tmp_path)), "-n", NAMESPACE, *flags)
    before = release_objects(project)
    assert before, "the Flux-style install made the release's objects"
    labelled = kubectl_json(cluster, "get", "deployment", CHART.envoy_object_name(RELEASE), "-n", NAMESPACE)
    assert FLUX_LABELS.items() <= labelled["metadata"]["labels"].items(), "installed as helm-controller does"

    # Step 2: the checks before the import step (`takeover steps --live`), on Flux's objects as they stand.
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    cluster.kubectl("apply", "-f", "-", input_text=json.dumps(STAND_IN_CRD))
    cluster.kubectl("wait", "--for=condition=Established", "crd/helmreleases.helm.toolkit.fluxcd.io", "--timeout=60s")
    settings = settings_from_config(project.cli_config(STACK))
    cluster.kubectl("apply", "-f", "-", input_text=json.dumps(flux_helm_release(suspend=False)))
    assert [f.split(" (")[0] for f in live_findings(settings)] == [
        f"suspend: HelmRelease {NAMESPACE}/{RELEASE} is not suspended"
    ], "Flux still acts on the release: the import must wait"
    cluster.kubectl("apply", "-f", "-", input_text=json.dumps(flux_helm_release(suspend=True)))
    assert live_findings(settings) == [], "suspended and deployed: the import may go"

    # Step 3: the runbook's comparison, from the cluster: the stored manifest against this stack's render.
    adopting = dict(stack)
    adopting["supersonic-interlink:release"] = {**stack["supersonic-interlink:release"], "adopt": True}
    project.write_stack(STACK, adopting)
    report = tmp_path / "takeover-objects.md"
    code = objects_command(
        STACK,
        settings_from_config(project.cli_config(STACK)),
        lambda: render(STACK, project.cli_config(STACK)),
        live=None,
        chart=chart,
        out=report,
        from_cluster=True,
    )
    text = report.read_text()
    assert code == 0, text
    assert "the live release's stored manifest (`helm get manifest`, revision 1)" in text
    assert "**Deleted by the upgrade:**\n\n*(none)*" in text, text
    assert '| `metadata.labels["helm.toolkit.fluxcd.io/name"]` |' in text, "the upgrade drops Flux's origin labels"

    # Step 4: adopt. One `pulumi up` imports the live release and upgrades it.
    project.run(STACK, "up")
    ops = {(op, kind) for op, kind, _name in project.changes()}
    assert any(kind == HELM_RELEASE_TYPE and op.startswith("import") for op, kind in ops), ops
    assert not any("delete" in op or "replace" in op for op, kind in ops if "Release" in kind), ops

    # Helm's record: the Flux revision kept, one upgrade on top; never an uninstall and reinstall.
    assert helm_revisions(cluster, RELEASE, NAMESPACE) == [(1, "superseded"), (2, "deployed")]
    after = release_objects(project)
    # Nothing deleted that the runbook does not list (it lists none), and the workloads are the same objects.
    deleted = set(before) - set(after)
    assert deleted == {(kind, name.format(instance=RELEASE)) for kind, _, name in EXPECTED_DELETIONS}, deleted
    for kind, name in before:
        if kind == "Deployment":
            assert after[(kind, name)] == before[(kind, name)], f"{name} was recreated, not upgraded"

    # Step 5: after the takeover the program is idempotent.
    project.run(STACK, "preview", expect_no_changes=True)
    assert project.changes() == []

    # Step 6: step 4's undo as `takeover steps` prints it, against the real CLI and the state the takeover left.
    settings = settings_from_config(project.cli_config(STACK))
    plan = names(STACK, settings)
    printed = format_steps(STACK, settings).splitlines()
    command = next(line for line in printed if line.startswith("- pulumi state delete"))[2:].split("   (")[0]

    def shell(line: str) -> subprocess.CompletedProcess[str]:
        run = ["/bin/sh", "-c", line]
        return subprocess.run(run, cwd=project.directory, env=project.env, capture_output=True, text=True, timeout=120)

    unforced = shell(shlex.join(word for word in shlex.split(command) if word != "--force"))
    assert unforced.returncode != 0 and "protected" in unforced.stdout + unforced.stderr, (
        "without --force the CLI refuses: the undo would stop in the middle of a rollback"
    )
    forced = shell(command)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    exported = json.loads(project.pulumi("stack", "export", stack=STACK).stdout)
    left = [r["urn"] for r in exported["deployment"]["resources"]]
    assert plan["release_urn"] not in left and plan["component_urn"] in left, left
    assert helm_revisions(cluster, RELEASE, NAMESPACE) == [(1, "superseded"), (2, "deployed")], "not uninstalled"
