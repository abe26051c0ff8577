"""FailedPodCleanup under the mock engine: what the real program registers for the cleanup, and that it validates."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import ROOT, stack_config, stack_settings

from supersonic_interlink import contract
from supersonic_interlink.components.failed_pod_cleanup import (
    COMPONENT,
    TYPE,
    container_command,
    inference_pod_selector,
    object_labels,
    object_name,
    script_text,
)
from supersonic_interlink.config import CLEANUP_KEEP_MAX, RELEASE_NAME_MAX, ConfigError
from supersonic_interlink.contract import CHART
from supersonic_interlink.render.checks import KUBERNETES_VERSIONS, kubernetes_findings
from supersonic_interlink.render.evaluate import Evaluation, Registered, evaluate

SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CRONJOB = "kubernetes:batch/v1:CronJob"
CLEANUP_TYPES = (SERVICE_ACCOUNT, ROLE, ROLE_BINDING, CRONJOB)
RELEASE = "supersonic-interlink"
NAME = f"{RELEASE}-failed-pod-cleanup"


def cleanup_children(evaluation: Evaluation) -> list[Registered]:
    return [r for r in evaluation.resources if r.parent.endswith(f"${TYPE}::cleanup")]


def pod_spec(evaluation: Evaluation) -> dict[str, Any]:
    return evaluation.one(CRONJOB).inputs["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def container(evaluation: Evaluation) -> dict[str, Any]:
    containers = pod_spec(evaluation)["containers"]
    assert len(containers) == 1, "one container: the cleaner"
    return containers[0]


def env_of(evaluation: Evaluation) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(evaluation)["env"]}


@pytest.fixture(scope="module")
def hammer() -> Evaluation:
    return evaluate(stack_config("hammer"), "hammer")


def test_the_component_owns_four_objects_named_after_the_release_in_its_namespace(hammer: Evaluation) -> None:
    assert hammer.one(TYPE).name == "cleanup"
    children = cleanup_children(hammer)
    assert sorted(r.type for r in children) == sorted(CLEANUP_TYPES), "exactly these four, each parented to it"
    assert sorted(r.name for r in children) == sorted(
        f"cleanup-{role}" for role in ("serviceaccount", "role", "rolebinding", "cronjob")
    )
    for registered in children:
        metadata = registered.inputs["metadata"]
        assert metadata["name"] == NAME, f"{registered.type} is named from the release"
        assert metadata["namespace"] == "cms", f"{registered.type} lives in the release namespace"
        assert metadata["labels"] == object_labels(RELEASE)
    assert hammer.outputs["cleanupCronJob"] == NAME, "the export names the CronJob"
    assert len(object_name("r" * RELEASE_NAME_MAX)) <= 52, "the API server rejects a CronJob name over 52 characters"


def test_the_role_is_least_privilege_and_bound_to_the_account_only_the_cleaner_mounts(hammer: Evaluation) -> None:
    rules = hammer.one(ROLE).inputs["rules"]
    assert rules == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "deletecollection"]}], (
        "least privilege: list pods and delete a collection of them, never read or delete a pod by name"
    )
    assert not any("ClusterRole" in r.type for r in hammer.resources), "the cleanup needs no cluster-scoped RBAC"
    for registered in (hammer.one(ROLE), hammer.one(ROLE_BINDING)):
        assert "*" not in repr(registered.inputs), f"{registered.type}: no wildcard in any rule or reference"
    binding = hammer.one(ROLE_BINDING).inputs
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAME, "namespace": "cms"}]
    assert pod_spec(hammer)["serviceAccountName"] == NAME, "the Job pods run as the bound account"
    assert hammer.one(SERVICE_ACCOUNT).inputs["automountServiceAccountToken"] is False
    assert pod_spec(hammer)["automountServiceAccountToken"] is True, "kubectl needs the token in its own pod"


def test_the_cronjob_runs_the_script_with_the_images_shell_one_bounded_job_at_a_time(hammer: Evaluation) -> None:
    spec = hammer.one(CRONJOB).inputs["spec"]
    assert spec["schedule"] == "*/5 * * * *", "the default cadence from Pulumi.yaml"
    assert spec["concurrencyPolicy"] == "Forbid", "two cleaners at once would race over the same pods"
    assert spec["startingDeadlineSeconds"] == 120, "a run missed by more than two minutes is skipped"
    assert spec["successfulJobsHistoryLimit"] == 1
    assert spec["failedJobsHistoryLimit"] == 3, "a few failed runs stay for diagnosis, never a pile"
    job = spec["jobTemplate"]["spec"]
    assert job["backoffLimit"] == 0, "the next scheduled run is the retry"
    assert job["activeDeadlineSeconds"] == 240, "a hung run ends before the next is due (every 5 min)"
    assert job["ttlSecondsAfterFinished"] == 86400, "finished Jobs are removed a day later"
    assert pod_spec(hammer)["restartPolicy"] == "Never"
    command = container(hammer)["command"]
    assert command == container_command(script_text()), "the script text is read from its file into the command"
    assert command[:2] == ["/bin/sh", "-c"], "alpine/kubectl's entrypoint is kubectl, so the shell is named"
    assert command[2] == script_text() and "kubectl delete --raw" in command[2]
    assert container(hammer)["image"] == "alpine/kubectl:1.34.1", "the pinned image from Pulumi.yaml"


def test_the_script_parameters_are_in_the_container_environment(hammer: Evaluation) -> None:
    env = env_of(hammer)
    assert env["NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}, "the pod's own namespace"
    assert env["SELECTOR"] == (
        "app.kubernetes.io/name=supersonic,app.kubernetes.io/instance=supersonic-interlink,"
        "app.kubernetes.io/component=inference-server"
    ), "exactly this release's inference-server pods, by the labels the newest chart puts on them (hammer is unpinned)"
    assert env["KEEP"] == "1" and env["DRY_RUN"] == "false", "defaults from Pulumi.yaml, as strings"
    assert "MAX_DELETE" not in env, "one request deletes any backlog: there is no per-run cap to pass"
    assert env["HOME"] == "/tmp" and env["KUBECACHEDIR"].startswith("/tmp/"), "kubectl writes on the emptyDir"


@pytest.mark.parametrize(
    ("generation", "component"), [(contract.TRITON, "triton"), (contract.INFERENCE_SERVER, "inference-server")]
)
def test_the_selector_is_the_chart_generations_inference_pod_labels(generation, component) -> None:
    selector = inference_pod_selector(generation, RELEASE)
    assert dict(part.split("=", 1) for part in selector.split(",")) == {
        "app.kubernetes.io/name": "supersonic",
        "app.kubernetes.io/instance": "supersonic-interlink",
        "app.kubernetes.io/component": component,
    }, "the chart's inference pod labels, written out so a wrong contract table cannot agree with itself"


def test_keep_and_dry_run_come_from_the_stack(run_stack) -> None:
    env = env_of(run_stack(cleanup={"keep": 0, "dryRun": True, "schedule": "*/10 * * * *"}))
    assert env["KEEP"] == "0", "keep: 0 is allowed and reaches the script"
    assert env["DRY_RUN"] == "true"
    other = env_of(run_stack("geddes-gpu"))
    assert other["KEEP"] == "2", "the geddes-gpu stack keeps two"
    assert other["SELECTOR"] == inference_pod_selector(contract.NEWEST, "supersonic-gpu"), "each stack cleans its own"


def test_the_cleaner_pod_is_not_selected_runs_on_the_af_nodes_is_hardened_and_capped(hammer: Evaluation) -> None:
    labels = hammer.one(CRONJOB).inputs["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    wanted = contract.NEWEST.inference_pod_labels(RELEASE)
    assert any(labels.get(key) != value for key, value in wanted.items()), "the cleaner never selects itself"
    assert labels[CHART.component_label] == COMPONENT != wanted[CHART.component_label]
    spec = pod_spec(hammer)
    assert spec["nodeSelector"] == {"cms-af-prod": "true"}, "beside Envoy, never on the interLink virtual node"
    assert spec["tolerations"] == [
        {"key": "hub.jupyter.org/dedicated", "operator": "Equal", "value": "cms-af", "effect": "NoSchedule"}
    ]
    pod_security = spec["securityContext"]
    assert pod_security["runAsNonRoot"] is True
    assert isinstance(pod_security["runAsUser"], int) and pod_security["runAsUser"] > 0, "a numeric non-root UID"
    assert pod_security["runAsGroup"] > 0 and pod_security["fsGroup"] > 0
    assert pod_security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["enableServiceLinks"] is False, "no Service environment variables in the cleaner"
    security = container(hammer)["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    mounts = {m["name"]: m["mountPath"] for m in container(hammer)["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert mounts == {"scratch": "/tmp"} and "emptyDir" in volumes["scratch"], "a read-only root: HOME on an emptyDir"
    resources = container(hammer)["resources"]
    assert set(resources) == {"requests", "limits"}
    assert resources["requests"] == {"cpu": "10m", "memory": "64Mi"}
    assert resources["limits"] == {"cpu": "200m", "memory": "512Mi"}, (
        "capped, so a runaway cleaner cannot crowd Envoy; 512Mi holds kubectl's list of a 5,000-pod backlog "
        "(measured peak 335-414 MiB in benchmarks/cleanup_5000.py)"
    )


def test_a_disabled_stack_creates_no_cleanup_objects(run_stack) -> None:
    evaluation = run_stack(cleanup={"enabled": False})
    assert cleanup_children(evaluation) == [], "cleanup.enabled: false creates nothing"
    assert not [r for r in evaluation.resources if r.type in CLEANUP_TYPES], "no SA, Role, RoleBinding or CronJob"
    assert evaluation.outputs["cleanupCronJob"] is None, "the export is there, and empty"
    assert evaluation.one(TYPE).name == "cleanup", "the component itself is still registered (attributes assigned)"


def test_the_cleanup_manifests_pass_strict_validation_on_kubernetes_1_30_to_1_34_and_a_typo_fails(hammer) -> None:
    manifests = [r.inputs for r in cleanup_children(hammer)]
    assert len(manifests) == 4
    assert [v.rsplit(".", 1)[0] for v in KUBERNETES_VERSIONS] == ["1.30", "1.31", "1.32", "1.33", "1.34"]
    assert kubernetes_findings(manifests) == [], "every cleanup object is valid on every supported Kubernetes"
    broken = copy.deepcopy(hammer.one(CRONJOB).inputs)
    broken["spec"]["concurrencypolicy"] = broken["spec"].pop("concurrencyPolicy")
    findings = kubernetes_findings([broken], versions=("1.34.0",))
    assert findings and "concurrencypolicy" in findings[0], "strict mode rejects an unknown field"
    unknown = {**hammer.one(CRONJOB).inputs, "apiVersion": "batch/v1beta1"}
    assert kubernetes_findings([unknown], versions=("1.34.0",)), "a removed apiVersion is a finding, not a pass"


def test_the_keep_bound_in_settings_is_the_cleanup_scripts_own() -> None:
    assert "KEEP_MAX=20\n" in (ROOT / "scripts" / "cleanup-failed-pods.sh").read_text(), "the script's bound"
    assert CLEANUP_KEEP_MAX == 20, "a stack must be refused before deploy what the script would refuse at 3 a.m."
    with pytest.raises(ConfigError, match=r"cleanup.keep = 21: expected a whole number from 0 to 20"):
        stack_settings("hammer", cleanup={"keep": 21})
