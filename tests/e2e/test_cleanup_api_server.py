"""The cleanup script against the real kube-apiserver: its selectors, evaluated by the API server itself, delete this
release's Failed inference-server pods but the newest and no bystander, as tests/kube_api_standin.py (the unit tier's)
selects them. Run as the container runs it (busybox sh, the real kubectl, the component's environment) with the admin
kubeconfig; what the Job's own ServiceAccount may do is test_cleanup_authorizer.py's subject."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from busybox_harness import make_bin, run_script
from e2e_harness import kubectl_json, unscheduled_pod

from supersonic_interlink.components.failed_pod_cleanup import object_labels, script_environment
from supersonic_interlink.config import PROJECT, load_settings
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.contract import CHART, NEWEST
from supersonic_interlink.engine.cluster import LocalCluster, wait_until

pytestmark = pytest.mark.timeout(300)

GENERATION = NEWEST
"""The hammer stack's (unpinned: the newest); the script takes its selector as given."""
RELEASE = "supersonic-interlink"  # the hammer stack's release, whose selector the component computes
NAMESPACE = "e2e-cleanup-direct"
OTHER_NAMESPACE = "e2e-cleanup-direct-other"


def make_pod(cluster: LocalCluster, namespace: str, name: str, labels: dict[str, str], phase: str) -> None:
    """Create a pod and set its phase through the status subresource, as interLink's virtual kubelet does."""
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input_text=yaml.safe_dump(unscheduled_pod(name, labels)))
    if phase != "Pending":
        status = json.dumps({"status": {"phase": phase, "reason": "Error: 1"}})
        cluster.kubectl("patch", "pod", name, "-n", namespace, "--subresource=status", "--type=merge", "-p", status)


def wait_for_default_service_account(cluster: LocalCluster, namespace: str) -> None:
    """A pod is admitted only once the controller-manager has made the namespace's default ServiceAccount."""
    get = ("get", "serviceaccount", "default", "-n", namespace)
    wait_until(
        lambda: cluster.kubectl(*get, check=False).returncode == 0, 60, f"{namespace}'s ServiceAccount", interval=0.5
    )


def pod_names(cluster: LocalCluster, namespace: str) -> set[str]:
    return {item["metadata"]["name"] for item in kubectl_json(cluster, "get", "pods", "-n", namespace)["items"]}


def run_cleanup(cluster: LocalCluster, bin_dir: Path, scratch: Path, **cleanup: Any) -> subprocess.CompletedProcess:
    """The container's command and environment for the hammer stack (``cleanup`` overridden), on the control plane."""
    config = load_stack_config("hammer")
    config[f"{PROJECT}:cleanup"] = json.dumps(cleanup)
    scratch.mkdir()
    environment = {"NAMESPACE": NAMESPACE, **script_environment(load_settings(config))}
    return run_script(environment, bin_dir, cluster.kubeconfig, scratch)


def test_the_api_server_deletes_the_releases_failed_pods_but_the_newest_and_no_bystander(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    for namespace in (NAMESPACE, OTHER_NAMESPACE):
        cluster.kubectl("create", "namespace", namespace)
        wait_for_default_service_account(cluster, namespace)
    triton = GENERATION.inference_pod_labels(RELEASE)
    bystanders = {
        "triton-running": (triton, "Running"),
        "triton-pending": (triton, "Pending"),
        "triton-succeeded": (triton, "Succeeded"),
        "triton-unknown": (triton, "Unknown"),
        "other-release-failed": (GENERATION.inference_pod_labels("supersonic-gpu"), "Failed"),
        "envoy-failed": ({**triton, CHART.component_label: CHART.envoy_component}, "Failed"),
        "other-chart-failed": ({**triton, CHART.name_label: "not-supersonic"}, "Failed"),
        "cleaner-failed": (object_labels(RELEASE), "Failed"),
        "unlabelled-failed": ({}, "Failed"),
    }

    # Step 1: the bystanders, three Failed pods of this release a second apart (creation times' resolution), and one
    # in another namespace.
    for name, (labels, phase) in bystanders.items():
        make_pod(cluster, NAMESPACE, name, labels, phase)
    failed = ["triton-failed-oldest", "triton-failed-middle", "triton-failed-newest"]
    for index, name in enumerate(failed):
        if index:
            time.sleep(1.1)
        make_pod(cluster, NAMESPACE, name, triton, "Failed")
    make_pod(cluster, OTHER_NAMESPACE, "triton-failed-elsewhere", triton, "Failed")
    made = pod_names(cluster, NAMESPACE)
    assert made == set(bystanders) | set(failed), "the pods are there to be selected"
    bin_dir = make_bin(tmp_path / "bin")

    # Step 2: a dry run deletes nothing and names what it would delete.
    dry = run_cleanup(cluster, bin_dir, tmp_path / "dry", keep=1, dryRun=True)
    assert dry.returncode == 0, dry.stderr
    assert pod_names(cluster, NAMESPACE) == made, "a dry run deletes nothing"
    named = {line.split()[2] for line in dry.stdout.splitlines() if line.startswith("would delete pod/")}
    assert named == {"pod/triton-failed-oldest", "pod/triton-failed-middle"}, dry.stdout
    assert "cleanup (dry run): deleted 0, would delete 2, kept 1" in dry.stdout, dry.stdout

    # Step 3: the real run: the API server selects this release's Failed pods, minus the kept one by name.
    done = run_cleanup(cluster, bin_dir, tmp_path / "run", keep=1)
    assert done.returncode == 0, done.stderr
    assert made - pod_names(cluster, NAMESPACE) == {"triton-failed-oldest", "triton-failed-middle"}, done.stdout
    assert "cleanup: deleted 2, kept 1" in done.stdout

    # Step 4: run again: only the kept pod matches, and nothing goes.
    again = run_cleanup(cluster, bin_dir, tmp_path / "again", keep=1)
    assert again.returncode == 0, again.stderr
    assert pod_names(cluster, NAMESPACE) == set(bystanders) | {"triton-failed-newest"}, again.stdout

    # Step 5: keep 0 deletes the last Failed pod of the release (a phase-only field selector) and still no bystander.
    none_kept = run_cleanup(cluster, bin_dir, tmp_path / "keep-0", keep=0)
    assert none_kept.returncode == 0, none_kept.stderr
    assert pod_names(cluster, NAMESPACE) == set(bystanders), none_kept.stdout
    assert pod_names(cluster, OTHER_NAMESPACE) == {"triton-failed-elsewhere"}, "another namespace is never touched"
