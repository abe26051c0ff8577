"""The cleanup CronJob under the real API server's RBAC authorizer, with the token of the ServiceAccount it runs as.

kwok runs no containers, so a stand-in kubelet runs the container's command: busybox (the image's userland) and the
real kubectl 1.34, with the environment the CronJob's Job declares and, in place of the in-cluster service-account
mount, a kubeconfig holding a token the API server issued for the Job's ServiceAccount: same identity, same requests.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from busybox_harness import busybox_path, make_bin
from e2e_harness import Project, hammer_like, kubectl_json, unscheduled_pod

from supersonic_interlink.contract import TRITON
from supersonic_interlink.engine.cluster import LocalCluster

pytestmark = pytest.mark.timeout(900)

STACK = "cleanup-e2e"
RELEASE = "supersonic-interlink"
NAMESPACE = "e2e-cleanup"
OTHER_NAMESPACE = "e2e-cleanup-other"


def make_pods(cluster: LocalCluster, namespace: str, specs: list[tuple[str, dict[str, str], str]]) -> None:
    """Create pods in order (a second apart, so creation times order them) and set each one's phase through the
    status subresource, as interLink's virtual kubelet does."""
    for index, (name, labels, phase) in enumerate(specs):
        if index:
            time.sleep(1.1)
        cluster.kubectl("apply", "-n", namespace, "-f", "-", input_text=yaml.safe_dump(unscheduled_pod(name, labels)))
        if phase != "Pending":
            status = json.dumps({"status": {"phase": phase, "reason": "Error: 1"}})
            cluster.kubectl("patch", "pod", name, "-n", namespace, "--subresource=status", "--type=merge", "-p", status)


def pod_names(cluster: LocalCluster, namespace: str) -> set[str]:
    return {p["metadata"]["name"] for p in kubectl_json(cluster, "get", "pods", "-n", namespace)["items"]}


def token_kubeconfig(cluster: LocalCluster, service_account: str, path: Path) -> Path:
    """The cluster's own kubeconfig with the ServiceAccount's token for its user: same server, same CA."""
    token = cluster.kubectl("create", "token", service_account, "-n", NAMESPACE).stdout.strip()
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    (user,) = config["users"]
    user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    return path


def run_container(container: dict[str, Any], kubeconfig: Path, bin_dir: Path, scratch: Path) -> Any:
    """Run a container of a pod template as its kubelet would, env resolved (the downward API's namespace)."""
    scratch.mkdir()
    env = {"PATH": str(bin_dir), "HOME": str(scratch), "KUBECONFIG": str(kubeconfig)}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
        elif item.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[item["name"]] = NAMESPACE
        else:
            raise AssertionError(f"the stand-in kubelet cannot resolve {item}")
    command = [*container["command"], *container.get("args", [])]
    assert command[0] == "/bin/sh", command
    return subprocess.run(
        [busybox_path(), "sh", *command[1:]], env=env, cwd=scratch, capture_output=True, text=True, timeout=120
    )


def test_cleanup_may_delete_only_pods_of_its_namespace_and_deletes_failed_triton_pods_but_the_newest(
    project: Project, chart: Path, tmp_path: Path
) -> None:
    cluster = project.cluster
    for namespace in (NAMESPACE, OTHER_NAMESPACE):
        cluster.kubectl("create", "namespace", namespace)
    project.write_stack(STACK, hammer_like(NAMESPACE, RELEASE, chart))
    project.run(STACK, "up")
    cronjobs = kubectl_json(cluster, "get", "cronjobs", "-n", NAMESPACE)["items"]
    cronjob = next(c for c in cronjobs if c["metadata"]["name"].startswith(RELEASE))
    job_spec = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    account = job_spec["serviceAccountName"]
    subject = f"system:serviceaccount:{NAMESPACE}:{account}"

    # Step 1: what the real authorizer lets the cleanup's ServiceAccount do.
    def can(*args: str) -> bool:
        return cluster.kubectl("auth", "can-i", *args, f"--as={subject}", check=False).stdout.strip() == "yes"

    # One LIST and one DELETE of the collection (docs/cleanup.md): not even a single pod's get or delete.
    allowed = {("list", "pods", "-n", NAMESPACE), ("deletecollection", "pods", "-n", NAMESPACE)}
    refused = {
        *((verb, "pods", "-n", NAMESPACE) for verb in ("get", "delete", "create", "patch")),
        *((verb, "pods", "-n", OTHER_NAMESPACE) for verb in ("list", "delete", "deletecollection")),
        ("update", "pods/status", "-n", NAMESPACE),
        ("delete", "deployments", "-n", NAMESPACE),
        ("list", "secrets", "-n", NAMESPACE),
        ("delete", "configmaps", "-n", NAMESPACE),
        ("list", "pods", "--all-namespaces"),
        ("delete", "nodes"),
    }
    assert {a for a in allowed if not can(*a)} == set(), "the cleanup needs exactly these"
    assert {a for a in refused if can(*a)} == set(), "the cleanup's ServiceAccount may do nothing else"

    # Step 2: Failed pods of this release (three), a Running one, another release's and another namespace's.
    triton = TRITON.inference_pod_labels(RELEASE)
    make_pods(cluster, OTHER_NAMESPACE, [("triton-elsewhere", triton, "Failed")])
    make_pods(
        cluster,
        NAMESPACE,
        [
            ("triton-failed-oldest", triton, "Failed"),
            ("other-release-failed", TRITON.inference_pod_labels("another-release"), "Failed"),
            ("triton-failed-middle", triton, "Failed"),
            ("triton-running", triton, "Running"),
            ("triton-failed-newest", triton, "Failed"),
        ],
    )
    before = pod_names(cluster, NAMESPACE)

    # Step 3: the real script, as the CronJob's container, with the ServiceAccount's token.
    bin_dir = make_bin(tmp_path / "bin")
    kubeconfig = token_kubeconfig(cluster, account, tmp_path / "sa-kubeconfig")
    done = run_container(job_spec["containers"][0], kubeconfig, bin_dir, tmp_path / "run-1")
    assert done.returncode == 0, done.stderr
    made = {n for n in before if n.startswith(("triton-", "other-release-"))}
    assert made - pod_names(cluster, NAMESPACE) == {"triton-failed-oldest", "triton-failed-middle"}, done.stdout
    assert "triton-elsewhere" in pod_names(cluster, OTHER_NAMESPACE), "another namespace is never touched"

    # Step 4: a Job made from the CronJob, as an operator starts one by hand, runs the same.
    # A second after the newest of step 2: creation times have one-second resolution, and a tie is broken by name.
    time.sleep(1.1)
    make_pods(cluster, NAMESPACE, [("triton-failed-later", triton, "Failed")])
    cluster.kubectl("create", "job", f"--from=cronjob/{cronjob['metadata']['name']}", "manual-run", "-n", NAMESPACE)
    job_pod = kubectl_json(cluster, "get", "job", "manual-run", "-n", NAMESPACE)["spec"]["template"]["spec"]
    assert job_pod["serviceAccountName"] == account
    before = pod_names(cluster, NAMESPACE)
    done = run_container(job_pod["containers"][0], kubeconfig, bin_dir, tmp_path / "run-2")
    assert done.returncode == 0, done.stderr
    # Only the pods this test made count: the CronJob's own scheduled Jobs come and go beside them.
    deleted = {n for n in before - pod_names(cluster, NAMESPACE) if n.startswith(("triton-", "other-release-"))}
    assert deleted == {"triton-failed-newest"}, (deleted, done.stdout)
    assert {"triton-running", "other-release-failed", "triton-failed-later"} <= pod_names(cluster, NAMESPACE)
