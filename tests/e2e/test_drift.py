"""Drift made with kubectl on the local control plane, found by ``./supersonic drift`` by object and field, and
nothing else; then corrected, and the same check is clean.

With ``SUPERSONIC_RECORD_DRIFT=DIR`` the scenario also writes what each check read from the API server (the release's
manifest, the live objects, the dry-run applies, the preview's refresh) to ``DIR/clean.json`` and
``DIR/drifted.json``: the recordings the unit tests (tests/test_drift.py) compare. Re-record with
``SUPERSONIC_RECORD_DRIFT=tests/fixtures/drift ./supersonic e2e -k drift``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_harness import Project, e2e_chart, hammer_like, helm_history, kubectl_json
from pydantic import TypeAdapter

from supersonic_interlink import contract
from supersonic_interlink.contract import CHART
from supersonic_interlink.drift.check import Observed, Tools, check, compare, observe
from supersonic_interlink.drift.release import READER_RULES, CannotCheck, reader_role
from supersonic_interlink.drift.report import PULUMI_PART, RELEASE_PART
from supersonic_interlink.engine.run import Engine

pytestmark = pytest.mark.timeout(600)

STACK = "drift-e2e"
RELEASE = "supersonic-interlink"
NAMESPACE = "e2e-drift"
ENVOY = CHART.envoy_object_name(RELEASE)
TRITON = contract.TRITON.inference_object_name(RELEASE)
SCALED_OBJECT = CHART.scaled_object_name(RELEASE)
SERVICE = CHART.envoy_service_name(RELEASE)
ENVOY_COPY = CHART.envoy_config_map_name(RELEASE)


def record(observed: Observed, name: str) -> None:
    """Write what the check read, when recording is asked for."""
    directory = os.environ.get("SUPERSONIC_RECORD_DRIFT")
    if directory:
        recording = TypeAdapter(Observed).dump_python(observed, mode="json")
        Path(directory, f"{name}.json").write_text(json.dumps(recording, indent=1, sort_keys=True) + "\n")


def reader_env(project: Project, name: str = "drift-reader", rules: list[Any] | None = None) -> dict[str, str]:
    """The project's environment with a kubeconfig whose user is a ServiceAccount bound to the drift check's Role
    (or to ``rules``)."""
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


def kubectl(project: Project, *args: str) -> None:
    project.cluster.kubectl("-n", NAMESPACE, *args)


def test_kubectl_drift_is_reported_by_field_and_nothing_else_then_corrected(project: Project, chart: Path) -> None:
    project.cluster.kubectl("create", "namespace", NAMESPACE)
    project.write_stack(STACK, hammer_like(NAMESPACE, RELEASE, chart))
    project.run(STACK, "up")
    engine = project.engine(STACK)
    tools = Tools(project.env)
    cron_job = str(engine.workspace_stack().outputs()["cleanupCronJob"].value)
    role = cron_job  # the cleanup's CronJob, ServiceAccount, Role and RoleBinding share one name

    # Step 1: right after `pulumi up`, no drift.
    observed = observe(engine, tools)
    record(observed, "clean")
    clean = compare(observed)
    assert clean.rows == [], [(r.object, r.field) for r in clean.rows]
    assert {f"Deployment/{ENVOY}", f"Service/{SERVICE}", f"CronJob/{cron_job}"} <= set(clean.objects)

    # Step 2: drift an operator makes with kubectl, and what KEDA and the admission sidecar do at run time.
    kubectl(project, "set", "image", f"deployment/{ENVOY}", f"{CHART.envoy_container}=envoyproxy/envoy:v1.40.0")
    kubectl(project, "scale", f"deployment/{ENVOY}", "--replicas=3")
    kubectl(project, "patch", "configmap", ENVOY_COPY, "--type=merge", "-p", '{"data": {"envoy.yaml": "edited\\n"}}')
    kubectl(project, "delete", "cronjob", cron_job)
    kubectl(
        project,
        "patch",
        "role",
        role,
        "--type=json",
        "-p",
        '[{"op": "add", "path": "/rules/0/verbs/-", "value": "update"}]',
    )
    kubectl(
        project,
        "patch",
        "service",
        SERVICE,
        "--type=json",
        "-p",
        '[{"op": "replace", "path": "/spec/ports/0/port", "value": 8002}]',
    )
    # KEDA's HPA writes the scale subresource; the sidecar merge-patches the ScaledObject (cfg/admission-server.py).
    kubectl(
        project, "patch", "deployment", TRITON, "--subresource=scale", "--type=merge", "-p", '{"spec": {"replicas": 2}}'
    )
    kubectl(project, "patch", "scaledobject", SCALED_OBJECT, "--type=merge", "-p", '{"spec": {"minReplicaCount": 1}}')

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

    # Step 3: correct, then the same check again.
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
    assert [h["status"] for h in helm_history(project.cluster, RELEASE, NAMESPACE)] == ["deployed"]


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
