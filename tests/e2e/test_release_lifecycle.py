"""The release's life under the real engine and provider: install, a stack config edit, a rejected upgrade.

Each scenario deploys a hammer-like stack into a namespace of its own on the local control plane and asserts on
what an operator would check: the live objects, ``helm history``/``helm status`` (Helm's own release record, read by
the real Helm v3), and what ``pulumi preview`` says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from e2e_harness import Project, existing_cvmfs_claim, hammer_like, helm_history, helm_status, kubectl_json

from supersonic_interlink.components.envoy_config import TYPE as ENVOY_CONFIG_TYPE
from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.run import EngineError
from supersonic_interlink.render.stack import render

pytestmark = pytest.mark.timeout(900)

STACK = "hammer-e2e"
RELEASE = "supersonic-interlink"


def deploy(project: Project, namespace: str, chart: Path, **changes: Any) -> dict[str, Any]:
    """Write the stack and run ``pulumi up``; return what ``render`` says the stack deploys."""
    project.write_stack(STACK, hammer_like(namespace, RELEASE, chart, **changes))
    project.run(STACK, "up")
    return render(STACK, project.cli_config(STACK))


def live_envoy_config_maps(project: Project, namespace: str) -> dict[str, str]:
    """Name -> envoy.yaml of every Envoy ConfigMap this program made (the chart's own copy excluded)."""
    items = kubectl_json(project.cluster, "get", "configmap", "-n", namespace)["items"]
    prefix = f"{CHART.envoy_object_name(RELEASE)}-external-"
    return {
        i["metadata"]["name"]: i["data"][CHART.envoy_config_key]
        for i in items
        if i["metadata"]["name"].startswith(prefix)
    }


def envoy_checksum(project: Project, namespace: str) -> str:
    deployment = kubectl_json(project.cluster, "get", "deployment", CHART.envoy_object_name(RELEASE), "-n", namespace)
    return str(deployment["spec"]["template"]["metadata"]["annotations"]["checksum/envoy-config"])


def test_install_from_nothing_then_preview_expects_no_changes(project: Project, chart: Path) -> None:
    namespace = "e2e-install"
    project.cluster.kubectl("create", "namespace", namespace)

    # Step 1: pulumi up from nothing.
    rendered = deploy(project, namespace, chart)

    # Helm's record: one revision, deployed, after Helm's atomic wait (which Ready pods satisfied).
    history = helm_history(project.cluster, RELEASE, namespace)
    assert [(h["revision"], h["status"]) for h in history] == [(1, "deployed")], history
    # The Envoy pods Ready on the analysis-facility nodes, the Triton pods on the interLink virtual node: the
    # nodeSelector and tolerations the stack sets reached the pods the chart made.
    pods = kubectl_json(project.cluster, "get", "pods", "-n", namespace)["items"]
    by_component: dict[str, set[str]] = {}
    for pod in pods:
        component = pod["metadata"]["labels"].get("app.kubernetes.io/component", "")
        by_component.setdefault(component, set()).add(pod["spec"].get("nodeName", ""))
        ready = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
        assert ready.get("Ready") == "True", f"{pod['metadata']['name']} is not Ready: {pod['status']}"
    assert by_component.get("envoy") and by_component["envoy"] <= {"af-1", "af-2"}, by_component
    # The chart leaves Triton's replica count to KEDA, which does not run here: the Deployment's default one pod is
    # what shows the placement.
    assert by_component.get("triton") == {"interlink-hammer"}, by_component
    # Scale from zero as deployed: the ScaledObject KEDA reads lets Triton go to zero.
    scaled = kubectl_json(project.cluster, "get", "scaledobject", CHART.scaled_object_name(RELEASE), "-n", namespace)
    assert scaled["spec"]["minReplicaCount"] == 0, scaled["spec"]
    assert scaled["spec"]["triggers"][0]["metadata"]["timeout"] == "60000", "the post-renderer ran on the install"

    # The Envoy ConfigMap holds exactly what `render` writes for this stack.
    assert live_envoy_config_maps(project, namespace) == {
        rendered["release"]["values"][CHART.envoy_values_key]["external_config"]["configmap_name"]: rendered["envoy"]
    }
    # The CronJob and its RBAC are what `render` writes.
    for manifest in rendered["manifests"]:
        if manifest["kind"] == "ConfigMap":
            continue
        live = kubectl_json(
            project.cluster, "get", manifest["kind"].lower(), manifest["metadata"]["name"], "-n", namespace
        )
        for key in ("spec", "rules", "roleRef", "subjects"):
            if key in manifest:
                assert _subset(manifest[key], live[key]), f"{manifest['kind']} {key}: {manifest[key]} vs {live[key]}"

    # Step 2: the program is idempotent under the real provider.
    project.run(STACK, "preview", expect_no_changes=True)
    assert project.changes() == [], project.changes()


def test_ready_timeout_edit_replaces_the_config_map_only_after_the_upgrade(project: Project, chart: Path) -> None:
    namespace = "e2e-edit"
    project.cluster.kubectl("create", "namespace", namespace)
    deploy(project, namespace, chart)
    before_maps = live_envoy_config_maps(project, namespace)
    before_checksum = envoy_checksum(project, namespace)

    # Step 1: the stack edit an operator makes when cold starts time out.
    edited = {"readyTimeoutSeconds": 1200, "holdMinReplicasSeconds": 1200, "enabled": True}
    project.write_stack(STACK, hammer_like(namespace, RELEASE, chart, scaleFromZero=edited))
    project.run(STACK, "preview", diff=True)
    changed = {(op, kind) for op, kind, _name in project.changes()}
    assert ("update", HELM_RELEASE_TYPE) in changed, project.changes()
    config_map_ops = {op for op, kind, _name in project.changes() if kind == "kubernetes:core/v1:ConfigMap"}
    assert config_map_ops, "the Envoy configuration changed, so its ConfigMap must be new"
    others = {kind for _op, kind, _name in project.changes()} - {
        HELM_RELEASE_TYPE,
        "kubernetes:core/v1:ConfigMap",
        ENVOY_CONFIG_TYPE,
        "pulumi:pulumi:Stack",
    }
    assert not others, f"only the ConfigMap and the Release may change: {project.changes()}"

    # Step 2: up. The new ConfigMap exists before the upgrade reads it; the old one goes after it succeeded.
    project.run(STACK, "up")
    order = [(op, kind) for op, kind, _name in project.steps()]
    release_at = order.index(("update", HELM_RELEASE_TYPE))
    created_at = min(i for i, (op, kind) in enumerate(order) if kind.endswith("ConfigMap") and "create" in op)
    deleted_at = max(i for i, (op, kind) in enumerate(order) if kind.endswith("ConfigMap") and "delete" in op)
    assert created_at < release_at < deleted_at, order

    history = helm_history(project.cluster, RELEASE, namespace)
    assert [(h["revision"], h["status"]) for h in history] == [(1, "superseded"), (2, "deployed")], history
    after_maps = live_envoy_config_maps(project, namespace)
    assert len(after_maps) == 1 and set(after_maps).isdisjoint(before_maps), (before_maps.keys(), after_maps.keys())
    assert "1320s" in next(iter(after_maps.values())), "idle_timeout = readyTimeoutSeconds + 120"
    assert envoy_checksum(project, namespace) != before_checksum, "the Envoy pods roll to read the new config"


RAISED = {"readyTimeoutSeconds": 1200, "holdMinReplicasSeconds": 1200, "enabled": True}
REFUSED_PROBE = {"successThreshold": 3, "periodSeconds": -1}
"""A readiness probe the API server refuses (periodSeconds below 0) and the program lets through: the probe objects
are passed to the chart as given (Pulumi.yaml: "in the form the chart renders it"), and the chart renders the field."""


def with_refused_probe(config: dict[str, Any]) -> dict[str, Any]:
    triton = dict(config["supersonic-interlink:triton"])
    triton["readinessProbe"] = REFUSED_PROBE
    return {**config, "supersonic-interlink:triton": triton}


def test_rejected_upgrade_rolls_back_and_keeps_the_old_config_map(project: Project, chart: Path) -> None:
    namespace = "e2e-reject"
    project.cluster.kubectl("create", "namespace", namespace)
    existing_cvmfs_claim(project, namespace)
    deploy(project, namespace, chart)
    before_maps = live_envoy_config_maps(project, namespace)

    # Step 1: a new Envoy config and a value the API server refuses.
    project.write_stack(STACK, with_refused_probe(hammer_like(namespace, RELEASE, chart, scaleFromZero=RAISED)))
    with pytest.raises(EngineError) as failure:
        project.run(STACK, "up")
    message = str(failure.value)
    # Readable: the API server's own reason, naming the field.
    assert "readinessProbe.periodSeconds" in message and "must be greater than" in message, message

    # Helm is back at the last good release; the old ConfigMap the running Envoy reads is still there.
    status = helm_status(project.cluster, RELEASE, namespace)
    assert status["info"]["status"] == "deployed", status["info"]
    assert status["config"]["scaleFromZero"]["readyTimeoutSeconds"] == 900, "rolled back to the previous values"
    assert set(before_maps) <= set(live_envoy_config_maps(project, namespace)), "the old ConfigMap must stay"

    # Step 2: the next correct up succeeds.
    project.write_stack(STACK, hammer_like(namespace, RELEASE, chart, scaleFromZero=RAISED))
    project.run(STACK, "up")
    status = helm_status(project.cluster, RELEASE, namespace)
    assert status["info"]["status"] == "deployed"
    assert status["config"]["scaleFromZero"]["readyTimeoutSeconds"] == 1200
    assert set(live_envoy_config_maps(project, namespace)).isdisjoint(before_maps), "the old ConfigMap went last"


def test_a_rejected_first_upgrade_cannot_roll_back_to_an_install_that_created_the_cvmfs_claim(
    project: Project, chart: Path
) -> None:
    """The chart creates its ``cvmfs`` claim only when the namespace has none (``lookup``), and keeps it. So only
    the install revision of a release in a fresh namespace holds the claim, and Helm's rollback to that revision
    fails: the claim is in the target manifest, on the cluster, but not in the failed revision's manifest (Helm
    v3 ``kube.Client.Update``: "no <kind> with the name <name> found"). The release is left failed; the next
    correct ``up`` upgrades it again. docs/engine.md: "A failed upgrade right after the first install"."""
    namespace = "e2e-first-rollback"
    project.cluster.kubectl("create", "namespace", namespace)
    deploy(project, namespace, chart)
    before_maps = live_envoy_config_maps(project, namespace)

    project.write_stack(STACK, with_refused_probe(hammer_like(namespace, RELEASE, chart, scaleFromZero=RAISED)))
    with pytest.raises(EngineError) as failure:
        project.run(STACK, "up")
    helm_says = f'no PersistentVolumeClaim with the name "{CHART.model_repository_claim}" found'
    assert helm_says in str(failure.value), str(failure.value)
    history = helm_history(project.cluster, RELEASE, namespace)
    assert [h["status"] for h in history] == ["deployed", "superseded", "failed"], history
    assert set(before_maps) <= set(live_envoy_config_maps(project, namespace)), "the old ConfigMap must stay"

    project.write_stack(STACK, hammer_like(namespace, RELEASE, chart, scaleFromZero=RAISED))
    project.run(STACK, "up")
    history = helm_history(project.cluster, RELEASE, namespace)
    assert history[-1]["status"] == "deployed" and history[-1]["revision"] == 4, history
    assert helm_status(project.cluster, RELEASE, namespace)["config"]["scaleFromZero"]["readyTimeoutSeconds"] == 1200


def _subset(expected: Any, live: Any) -> bool:
    """Whether everything ``expected`` says is in ``live`` (the API server adds defaults, never removes)."""
    if isinstance(expected, dict):
        return isinstance(live, dict) and all(k in live and _subset(v, live[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(live, list) and len(expected) == len(live) and all(map(_subset, expected, live))
    return bool(expected == live or str(expected) == str(live))
