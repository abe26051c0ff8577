"""A release installed from nothing is what ``render`` writes and is idempotent; drift made on it with kubectl is found
by ``./supersonic drift`` by object and field, and nothing else, then corrected; then a stack edit upgrades it.

``SUPERSONIC_RECORD_DRIFT=tests/fixtures/drift ./supersonic e2e -k drift`` re-records what each check read from the
API server (``clean.json``, ``drifted.json``), which the unit tests (tests/test_drift.py) compare.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_harness import Project, e2e_chart, envoy_config_maps, hammer_like, helm_revisions, kubectl_json
from pydantic import TypeAdapter

from supersonic_interlink import contract
from supersonic_interlink.components.envoy_config import TYPE as ENVOY_CONFIG_TYPE
from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.contract import CHART
from supersonic_interlink.drift.check import Observed, Tools, check, compare, observe
from supersonic_interlink.drift.release import READER_RULES, CannotCheck, reader_role
from supersonic_interlink.drift.report import PULUMI_PART, RELEASE_PART
from supersonic_interlink.engine.run import Engine
from supersonic_interlink.render.stack import render

pytestmark = pytest.mark.timeout(600)

STACK = "drift-e2e"
RELEASE = "supersonic-interlink"
NAMESPACE = "e2e-drift"
ENVOY = CHART.envoy_object_name(RELEASE)
TRITON = contract.TRITON.inference_object_name(RELEASE)
SCALED_OBJECT = CHART.scaled_object_name(RELEASE)
SERVICE = CHART.envoy_service_name(RELEASE)
ENVOY_COPY = CHART.envoy_config_map_name(RELEASE)
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def record(observed: Observed, name: str) -> None:
    """Write what the check read, when recording is asked for."""
    directory = os.environ.get("SUPERSONIC_RECORD_DRIFT")
    if directory:
        recording = TypeAdapter(Observed).dump_python(observed, mode="json")
        Path(directory, f"{name}.json").write_text(json.dumps(recording, indent=1, sort_keys=True) + "\n")


def reader_env(project: Project, name: str = "drift-reader", rules: list[Any] | None = None) -> dict[str, str]:
    """The project's environment as a ServiceAccount bound to the drift check's Role (or to ``rules``)."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": NAMESPACE}}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
    }
    role = reader_role(name, NAMESPACE) if rules is None else {**reader_role(name, NAMESPACE), "rules": rules}
    documents = {"apiVersion": "v1", "kind": "List", "items": [account, role, binding]}
    project.cluster.kubectl("apply", "-f", "-", input_text=json.dumps(documents))
    token = project.cluster.kubectl("-n", NAMESPACE, "create", "token", name).stdout.strip()
    config = yaml.safe_load(project.cluster.kubeconfig.read_text())
    config["users"] = [{"name": name, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = name
    path = project.directory / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return {**project.env, "KUBECONFIG": str(path)}


def envoy_checksum(project: Project) -> str:
    deployment = kubectl_json(project.cluster, "get", "deployment", ENVOY, "-n", NAMESPACE)
    return str(deployment["spec"]["template"]["metadata"]["annotations"]["checksum/envoy-config"])


@pytest.mark.timeout(900)  # the install's checks and an upgrade besides the drift
def test_install_then_kubectl_drift_is_reported_by_field_and_nothing_else_then_corrected_then_an_edit_upgrades(
    project: Project, chart: Path
) -> None:
    project.cluster.kubectl("create", "namespace", NAMESPACE)
    project.write_stack(STACK, hammer_like(NAMESPACE, RELEASE, chart))
    project.run(STACK, "up")
    rendered = render(STACK, project.cli_config(STACK))
    engine = project.engine(STACK)
    tools = Tools(project.env)
    cron_job = str(engine.workspace_stack().outputs()["cleanupCronJob"].value)
    role = cron_job  # the cleanup's CronJob, ServiceAccount, Role and RoleBinding share one name

    # Step 1: the install. Helm's record: one revision, deployed, after Helm's atomic wait (which Ready pods satisfied).
    assert helm_revisions(project.cluster, RELEASE, NAMESPACE) == [(1, "deployed")]
    # The Envoy pods Ready on the analysis-facility nodes, the Triton pods on the interLink virtual node: the
    # nodeSelector and tolerations the stack sets reached the pods the chart made.
    by_component: dict[str, set[str]] = {}
    for pod in kubectl_json(project.cluster, "get", "pods", "-n", NAMESPACE)["items"]:
        component = pod["metadata"]["labels"].get("app.kubernetes.io/component", "")
        by_component.setdefault(component, set()).add(pod["spec"].get("nodeName", ""))
        ready = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
        assert ready.get("Ready") == "True", f"{pod['metadata']['name']} is not Ready: {pod['status']}"
    assert by_component.get("envoy") and by_component["envoy"] <= {"af-1", "af-2"}, by_component
    # KEDA does not run here: the Deployment's default one Triton pod is what shows the placement.
    assert by_component.get("triton") == {"interlink-hammer"}, by_component
    # Scale from zero as deployed: the ScaledObject KEDA reads lets Triton go to zero.
    scaled = kubectl_json(project.cluster, "get", "scaledobject", SCALED_OBJECT, "-n", NAMESPACE)
    assert scaled["spec"]["minReplicaCount"] == 0, scaled["spec"]
    assert scaled["spec"]["triggers"][0]["metadata"]["timeout"] == "60000", "the post-renderer ran on the install"
    # The Envoy ConfigMap, the CronJob and its RBAC are what `render` writes for this stack.
    before_maps = envoy_config_maps(project.cluster, RELEASE, NAMESPACE)
    assert before_maps == {
        rendered["release"]["values"][CHART.envoy_values_key]["external_config"]["configmap_name"]: rendered["envoy"]
    }
    for manifest in (m for m in rendered["manifests"] if m["kind"] != "ConfigMap"):
        live = kubectl_json(
            project.cluster, "get", manifest["kind"].lower(), manifest["metadata"]["name"], "-n", NAMESPACE
        )
        for key in ("spec", "rules", "roleRef", "subjects"):
            if key in manifest:
                assert _subset(manifest[key], live[key]), f"{manifest['kind']} {key}: {manifest[key]} vs {live[key]}"
    # The program is idempotent under the real provider.
    project.run(STACK, "preview", expect_no_changes=True)
    assert project.changes() == [], project.changes()

    # Step 2: nor is there drift.
    observed = observe(engine, tools)
    record(observed, "clean")
    clean = compare(observed)
    assert clean.rows == [], [(r.object, r.field) for r in clean.rows]
    assert {f"Deployment/{ENVOY}", f"Service/{SERVICE}", f"CronJob/{cron_job}"} <= set(clean.objects)

    # Step 3: drift an operator makes with kubectl, then what KEDA's HPA (the scale subresource) and the admission
    # sidecar (a merge patch of the ScaledObject, cfg/admission-server.py) do at run time.
    role_patch = '[{"op": "add", "path": "/rules/0/verbs/-", "value": "update"}]'
    port_patch = '[{"op": "replace", "path": "/spec/ports/0/port", "value": 8002}]'
    for edit in (
        ["set", "image", f"deployment/{ENVOY}", f"{CHART.envoy_container}=envoyproxy/envoy:v1.40.0"],
        ["scale", f"deployment/{ENVOY}", "--replicas=3"],
        ["patch", "configmap", ENVOY_COPY, "--type=merge", "-p", '{"data": {"envoy.yaml": "edited\\n"}}'],
        ["delete", "cronjob", cron_job],
        ["patch", "role", role, "--type=json", "-p", role_patch],
        ["patch", "service", SERVICE, "--type=json", "-p", port_patch],
        ["patch", "deployment", TRITON, "--subresource=scale", "--type=merge", "-p", '{"spec": {"replicas": 2}}'],
        ["patch", "scaledobject", SCALED_OBJECT, "--type=merge", "-p", '{"spec": {"minReplicaCount": 1}}'],
    ):
        project.cluster.kubectl("-n", NAMESPACE, *edit)

    observed = observe(engine, tools)
    record(observed, "drifted")
    drifted = compare(observed)
    # The same check with only the Role docs/drift.md gives the drift check (READER_RULES).
    reader = reader_env(project)
    as_reader = compare(observe(Engine(STACK, work_dir=project.directory, env=reader, log=print), Tools(reader)))
    assert sorted((r.object, str(r.field)) for r in as_reader.rows) == sorted(
        (r.object, str(r.field)) for r in drifted.rows
    )
    # With the preview's read-only rights (no patch), the check stops on one line naming the right missing.
    read_only = reader_env(project, "drift-read-only", [r for r in READER_RULES if "patch" not in r["verbs"]])
    with pytest.raises(CannotCheck) as refused:
        observe(Engine(STACK, work_dir=project.directory, env=read_only, log=print), Tools(read_only))
    line = str(refused.value)
    assert "cannot patch resource" in line and f'in the namespace "{NAMESPACE}"' in line, line
    found = {(row.part, row.object, row.field): (row.expected, row.live) for row in drifted.rows}
    assert set(found) == {
        (RELEASE_PART, f"Deployment/{ENVOY}", f"spec.template.spec.containers[name={CHART.envoy_container}].image"),
        (RELEASE_PART, f"Deployment/{ENVOY}", "spec.replicas"),
        (RELEASE_PART, f"ConfigMap/{ENVOY_COPY}", f'data["{CHART.envoy_config_key}"]'),
        (RELEASE_PART, f"Service/{SERVICE}", "spec.ports[name=grpc].port"),
        (PULUMI_PART, f"CronJob/{cron_job}", "(the object)"),
        (PULUMI_PART, f"Role/{role}", "rules"),
    }, "each drift named by object and field, and nothing else (not Triton's replicas, not the ScaledObject)"
    assert found[(RELEASE_PART, f"Deployment/{ENVOY}", "spec.replicas")] == (1, 3)
    assert found[(RELEASE_PART, f"Service/{SERVICE}", "spec.ports[name=grpc].port")] == (8001, 8002)
    ignored = {(i.object, i.rule) for i in drifted.ignored}
    assert (f"ScaledObject/{SCALED_OBJECT}", "admission-min-replicas") in ignored, "ignored by its rule, not unseen"

    # Step 4: correct, then the same check again.
    before, after = check(engine, tools, fix=True, log=project.output.append)
    assert before.drift and after is not None
    assert after.rows == [], [(r.object, r.field, r.expected, r.live) for r in after.rows]
    envoy = kubectl_json(project.cluster, "get", "deployment", ENVOY, "-n", NAMESPACE)
    assert envoy["spec"]["replicas"] == 1
    assert envoy["spec"]["template"]["spec"]["containers"][0]["image"] != "envoyproxy/envoy:v1.40.0"
    service = kubectl_json(project.cluster, "get", "service", SERVICE, "-n", NAMESPACE)
    assert sorted(p["port"] for p in service["spec"]["ports"]) == [CHART.envoy_grpc_port, CHART.envoy_admin_port]
    kubectl_json(project.cluster, "get", "cronjob", cron_job, "-n", NAMESPACE)  # there again
    restored = kubectl_json(project.cluster, "get", "role", role, "-n", NAMESPACE)
    assert "update" not in restored["rules"][0]["verbs"], "the edited Role is the program's again"
    # What others own at run time keeps its live value; the release gets no new Helm revision.
    triton = kubectl_json(project.cluster, "get", "deployment", TRITON, "-n", NAMESPACE)
    assert triton["spec"]["replicas"] == 2, "the correction must not undo KEDA's scaling"
    scaled = kubectl_json(project.cluster, "get", "scaledobject", SCALED_OBJECT, "-n", NAMESPACE)
    assert scaled["spec"]["minReplicaCount"] == 1, "nor a wake the admission sidecar holds"
    assert helm_revisions(project.cluster, RELEASE, NAMESPACE) == [(1, "deployed")], "no Helm upgrade"

    # Step 5: the stack edit an operator makes when cold starts time out: only the ConfigMap and the Release change.
    before_checksum = envoy_checksum(project)
    raised = {"readyTimeoutSeconds": 1200, "holdMinReplicasSeconds": 1200, "enabled": True}
    project.write_stack(STACK, hammer_like(NAMESPACE, RELEASE, chart, scaleFromZero=raised))
    project.run(STACK, "preview", diff=True)
    changed = {(op, kind) for op, kind, _name in project.changes()}
    assert ("update", HELM_RELEASE_TYPE) in changed, project.changes()
    assert {op for op, kind in changed if kind == CONFIG_MAP}, "the Envoy configuration changed: a new ConfigMap"
    others = {kind for _op, kind in changed} - {HELM_RELEASE_TYPE, CONFIG_MAP, ENVOY_CONFIG_TYPE, "pulumi:pulumi:Stack"}
    assert not others, f"only the ConfigMap and the Release may change: {project.changes()}"
    # The new ConfigMap exists before the upgrade reads it; the old one goes after it succeeded.
    project.run(STACK, "up")
    order = [(op, kind) for op, kind, _name in project.steps()]
    release_at = order.index(("update", HELM_RELEASE_TYPE))
    created_at = min(i for i, (op, kind) in enumerate(order) if kind.endswith("ConfigMap") and "create" in op)
    deleted_at = max(i for i, (op, kind) in enumerate(order) if kind.endswith("ConfigMap") and "delete" in op)
    assert created_at < release_at < deleted_at, order
    assert helm_revisions(project.cluster, RELEASE, NAMESPACE) == [(1, "superseded"), (2, "deployed")]
    after_maps = envoy_config_maps(project.cluster, RELEASE, NAMESPACE)
    assert len(after_maps) == 1 and set(after_maps).isdisjoint(before_maps), (before_maps.keys(), after_maps.keys())
    assert "1320s" in next(iter(after_maps.values())), "idle_timeout = readyTimeoutSeconds + 120"
    assert envoy_checksum(project) != before_checksum, "the Envoy pods roll to read the new config"


def test_service_ports_the_api_server_gives_a_protocol_are_no_drift_right_after_up(
    project: Project, tmp_path: Path
) -> None:
    # The published chart's Envoy Service, with its default values, renders its ports without protocol.
    chart = e2e_chart(tmp_path / "chart", "ports-without-protocol")
    namespace = "e2e-drift-protocol"
    project.cluster.kubectl("create", "namespace", namespace)
    project.write_stack(STACK, hammer_like(namespace, RELEASE, chart))
    project.run(STACK, "up")
    service = kubectl_json(project.cluster, "get", "service", SERVICE, "-n", namespace)
    assert {p["name"]: p.get("protocol") for p in service["spec"]["ports"]} == dict.fromkeys(
        ("grpc", "admin", "http", "metrics"), "TCP"
    ), "the API server filled the protocol the chart left out"

    observed = observe(project.engine(STACK), Tools(project.env))
    report = compare(observed)
    assert report.rows == [], [(r.object, r.field, r.expected, r.live, r.note) for r in report.rows]
    item = next(o for o in observed.release.objects if o.key == f"Service/{SERVICE}")
    # Server-side apply keys ports by port and protocol: the null protocols make it refuse the dry-run apply
    # ("spec.ports[3]: Duplicate value"), so the comparison ran on the fields the manifest sets.
    assert "Duplicate value" in item.refused, item.refused


def _subset(expected: Any, live: Any) -> bool:
    """Whether everything ``expected`` says is in ``live`` (the API server adds defaults, never removes)."""
    if isinstance(expected, dict):
        return isinstance(live, dict) and all(k in live and _subset(v, live[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(live, list) and len(expected) == len(live) and all(map(_subset, expected, live))
    return bool(expected == live or str(expected) == str(live))
