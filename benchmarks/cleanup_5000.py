"""Benchmark: the cleanup script against a backlog of 5,000 Failed Triton pods, before and after the single
deletecollection, in the setup of the tests: busybox sh with busybox applets only, the real kubectl 1.34.5, and the
stand-in API server on loopback.

    .venv/bin/python benchmarks/cleanup_5000.py [--pods N] [--before-runs N]

After: the script as it is, run after run as the schedule would until a run finds nothing to delete. Before: the
script as it was at BEFORE_COMMIT (a list, then `kubectl delete pod/<name>...` of at most 500 names a run), read
from git; a run of it spends about 100 s in kubectl's client-side rate limit, so by default one run is measured and
the rest of the backlog's runs are counted from it (each deletes the same 500); ``--before-runs 10`` measures all.

For each run: API requests by kind (as the stand-in recorded them), wall time of the whole run (busybox, kubectl and
the stand-in's own answering, which is reported apart), and the peak resident set size of its largest process
(kubectl), from ``busybox time -v`` (whose figure is corrected: it treats Linux's KiB as pages, four times too
much), and its CPU time. The pods are shaped like the release's real Triton pods (annotations, managed
fields, the container spec and an interLink Failed status), so the list kubectl decodes is about the real size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from busybox_harness import Cluster, Run, busybox_path, kubectl_path, make_bin
from kube_api_standin import JSONObject, kube_api_standin, pod

from supersonic_interlink.components.failed_pod_cleanup import script_environment
from supersonic_interlink.config import Settings, load_settings
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.contract import NEWEST

STACK = "hammer"
BYSTANDERS = 500
"""Pods the selection must pass over: Running Triton pods of the release and another release's Failed ones."""
BEFORE_COMMIT = "84bd63ae7027c109dabd3df3fe1b09611c777d40"
"""The last commit with the per-pod delete: MAX_DELETE names a run, one DELETE request each."""
BEFORE_MAX_DELETE = 500


def triton_pod(settings: Settings, name: str, created: str, *, phase: str, release: str) -> JSONObject:
    """A Triton pod about the size the API server returns for the release's: chart labels, interLink's Slurm
    annotations, the ReplicaSet owner, two managed-field entries, the container as the chart renders it and, when
    Failed, the status interLink leaves."""
    labels = NEWEST.inference_pod_labels(release)
    item = pod(name, created=created, phase=phase, labels=labels, namespace=settings.namespace)
    metadata = item["metadata"]
    metadata["labels"]["pod-template-hash"] = "7c9d8f6b5"
    metadata["annotations"] = {
        "slurm-job.vk.io/singularity-options": "--unsquash --bind /cvmfs --no-home --compat",
        "slurm-job.vk.io/flags": "--uid=616617 -A cms --gres=gpu:1 --time=0-04:00:00",
        "interlink.virtual-kubelet.io/wstunnel-timeout": "5m",
        "interlink.eu/wstunnel-extra-ports": "8000:http:TCP,8001:grpc:TCP,8002:metrics:TCP",
    }
    metadata["generateName"] = name.rsplit("-", 1)[0] + "-"
    metadata["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": name.rsplit("-", 1)[0],
            "uid": "4f1c2b9e-0d7a-4c55-9e0b-6a1f3c2d8e71",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    fields: dict[str, JSONObject] = {f"f:{key}": {} for key in ("metadata", "spec", "status")}
    metadata["managedFields"] = [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": created,
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {f"f:{k}": {} for k in labels}}, **fields}},
        {"manager": "virtual-kubelet", "operation": "Update", "apiVersion": "v1", "time": created,
         "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": {f"f:{k}": {} for k in ("conditions", "containerStatuses", "phase", "podIP")}}},
    ]  # fmt: skip
    item["spec"] = {
        "containers": [
            {
                "name": "triton",
                "image": "/cvmfs/unpacked.cern.ch/nvcr.io/nvidia/tritonserver:24.11-py3",
                "command": ["/bin/sh", "-c"],
                "args": [
                    (
                        "/opt/tritonserver/bin/tritonserver --model-repository=/cvmfs/cms.cern.ch/el9_amd64_gcc13/cms/"
                        "cmssw/CMSSW_16_0_0_pre4/external/el9_amd64_gcc13/data/RecoBTag/Combined/data/models/ "
                        "--allow-gpu-metrics=true --log-verbose=0 --strict-model-config=false --exit-timeout-secs=60"
                    )
                ],
                "ports": [
                    {"name": n, "containerPort": p, "protocol": "TCP"}
                    for n, p in (("http", 8000), ("grpc", 8001), ("metrics", 8002))
                ],
                "resources": {"limits": {"cpu": "2", "memory": "8G"}, "requests": {"cpu": "2", "memory": "8G"}},
                "volumeMounts": [{"name": "model-repository", "mountPath": "/cvmfs"}],
                "readinessProbe": {"grpc": {"port": 8001}, "periodSeconds": 10, "successThreshold": 3},
                "startupProbe": {"httpGet": {"path": "/v2/health/ready", "port": "http"}, "periodSeconds": 5,
                                 "failureThreshold": 60},
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "nodeName": "interlink-hammer",
        "nodeSelector": {"kubernetes.io/hostname": "interlink-hammer"},
        "tolerations": [{"key": "virtual-node.interlink/no-schedule", "operator": "Exists"}],
        "volumes": [{"name": "model-repository", "persistentVolumeClaim": {"claimName": "cvmfs"}}],
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
    }  # fmt: skip
    status: dict[str, Any] = {
        "phase": phase,
        "hostIP": "10.5.0.17",
        "podIP": "10.244.3.41",
        "startTime": created,
        "qosClass": "Guaranteed",
        "conditions": [
            {"type": t, "status": "False" if phase == "Failed" else "True", "lastTransitionTime": created}
            for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
    }
    if phase == "Failed":
        status["containerStatuses"] = [
            {
                "name": "triton",
                "image": "/cvmfs/unpacked.cern.ch/nvcr.io/nvidia/tritonserver:24.11-py3",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": {"terminated": {"exitCode": 255, "reason": "Error", "startedAt": created,
                                         "finishedAt": created}},
            }
        ]  # fmt: skip
    item["status"] = status
    return item


def backlog(settings: Settings, count: int) -> tuple[list[JSONObject], list[JSONObject]]:
    """``count`` Failed Triton pods of the release, one every two minutes, and the bystanders."""
    release = settings.release.name
    start = datetime(2025, 6, 1, tzinfo=UTC)

    def created(minutes: int) -> str:
        return (start + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")

    failed = [
        triton_pod(
            settings,
            f"{NEWEST.inference_object_name(release)}-7c9d8f6b5-{hashlib.sha256(str(i).encode()).hexdigest()[:8]}",
            created(2 * i),
            phase="Failed",
            release=release,
        )
        for i in range(count)
    ]
    others = [
        triton_pod(
            settings,
            f"bystander-{i}",
            created(i),
            phase="Running" if i % 2 == 0 else "Failed",
            release=release if i % 2 == 0 else "supersonic-gpu",
        )
        for i in range(BYSTANDERS)
    ]
    return failed, others


@dataclass(frozen=True)
class Measured:
    run: Run
    peak_kib: int
    cpu_seconds: float

    @property
    def requests(self) -> Counter[str]:
        return Counter(r.verb for r in self.run.requests)

    @property
    def standin_seconds(self) -> float:
        return sum(r.seconds for r in self.run.requests)

    def describe(self) -> str:
        kinds = self.requests
        parts = [f"{kinds[v]} {label}" for v, label in LABELS.items() if kinds[v]]
        return (
            f"{len(self.run.requests)} API requests ({' + '.join(parts)}), deleted {len(self.run.deleted)}, "
            f"wall {self.run.seconds:.2f} s (of it the stand-in answering {self.standin_seconds:.2f} s), "
            f"CPU {self.cpu_seconds:.2f} s, peak RSS {self.peak_kib / 1024:.0f} MiB"
        )


LABELS = {
    "discovery": "discovery",
    "list": "LIST",
    "deletecollection": "DELETE collection",
    "delete": "DELETE pod",
    "get": "GET pod",
    "unknown": "other",
}


def measured_run(cluster: Cluster, environment: dict[str, str], scratch: Path, text: str | None = None) -> Measured:
    usage = scratch / "usage.txt"
    run = cluster.run(environment, text=text, usage_file=usage)
    if run.returncode != 0:
        raise RuntimeError(f"the run failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    report = usage.read_text()
    found = {
        key: re.search(rf"{re.escape(key)}: ([\d.]+)", report)
        for key in ("Maximum resident set size (kbytes)", "Page size (bytes)", "User time (seconds)",
                    "System time (seconds)")
    }  # fmt: skip
    if not all(found.values()):
        raise RuntimeError(f"busybox time reported too little:\n{report}")
    value = {key: float(match.group(1)) for key, match in found.items() if match}
    # busybox time converts ru_maxrss from pages to KiB, but Linux reports it in KiB already: undo the conversion.
    peak_kib = int(value["Maximum resident set size (kbytes)"] * 1024 / value["Page size (bytes)"])
    return Measured(run, peak_kib, value["User time (seconds)"] + value["System time (seconds)"])


def before_text() -> str:
    result = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{BEFORE_COMMIT}:scripts/cleanup-failed-pods.sh"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the earlier script is read from git history ({BEFORE_COMMIT}): {result.stderr.strip()}")
    return result.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=5000, help="Failed Triton pods in the backlog (default 5000)")
    parser.add_argument(
        "--before-runs", type=int, default=1, help="runs of the earlier script to measure (default 1; 0 skips it)"
    )
    args = parser.parse_args(argv)
    settings = load_settings(load_stack_config(STACK))
    environment = script_environment(settings)
    keep = settings.cleanup.keep
    failed, others = backlog(settings, args.pods)
    everything = failed + others
    failed_names = {p["metadata"]["name"] for p in failed}
    newest = {max(failed, key=lambda p: p["metadata"]["creationTimestamp"])["metadata"]["name"]} if keep else set()
    pod_kib = len(json.dumps(failed[0], separators=(",", ":"))) / 1024

    with tempfile.TemporaryDirectory(prefix="cleanup-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        bin_dir = make_bin(scratch / "bin")

        after: list[Measured] = []
        with kube_api_standin(everything) as server:
            cluster = Cluster(scratch, bin_dir, server, namespace=settings.namespace)
            for _ in range(3):
                after.append(measured_run(cluster, environment, scratch))
                if not after[-1].run.deleted:
                    break
            left = server.names()
        assert failed_names & left == newest, "after: everything but the newest goes"
        assert {p["metadata"]["name"] for p in others} <= left, "after: a bystander was deleted"

        before: list[Measured] = []
        if args.before_runs > 0:
            text = before_text()
            old_environment = {k: v for k, v in environment.items() if k != "GOMEMLIMIT"}
            old_environment["MAX_DELETE"] = str(BEFORE_MAX_DELETE)
            with kube_api_standin(everything) as server:
                cluster = Cluster(scratch, bin_dir, server, namespace=settings.namespace)
                for _ in range(args.before_runs):
                    before.append(measured_run(cluster, old_environment, scratch, text))
                    if not before[-1].run.deleted:
                        break
            assert all(not (m.run.deleted - failed_names) for m in before), "before: a bystander was deleted"

    busybox = subprocess.run([busybox_path()], capture_output=True, text=True, timeout=30, check=False).stdout.split()[
        1
    ]
    kubectl = json.loads(
        subprocess.run(
            [str(kubectl_path()), "version", "--client", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    )["clientVersion"]["gitVersion"]
    deleting = [m for m in after if m.run.deleted]
    print(
        f"cleanup benchmark: {args.pods} Failed Triton pods (+{BYSTANDERS} bystanders, {pod_kib:.1f} KiB each as "
        f"the API serves them), stack {STACK} (keep {keep}); busybox {busybox}, kubectl {kubectl}, stand-in API"
    )
    print(f"after: {len(deleting)} run clears the backlog, then {len(after) - len(deleting)} that finds nothing")
    for i, m in enumerate(after, 1):
        print(f"  run {i}: {m.describe()}")
    result: dict[str, Any] = {
        "pods": args.pods,
        "keep": keep,
        "pod_kib": round(pod_kib, 2),
        "after_runs_deleting": len(deleting),
        "after_requests_per_run": [len(m.run.requests) for m in after],
        "after_pod_requests_per_run": [len(m.run.pod_requests()) for m in after],
        "after_seconds": [round(m.run.seconds, 3) for m in after],
        "after_standin_seconds": [round(m.standin_seconds, 3) for m in after],
        "after_peak_rss_kib": [m.peak_kib for m in after],
        "after_cpu_seconds": [round(m.cpu_seconds, 2) for m in after],
    }
    measured = [m for m in before if m.run.deleted]
    if measured:
        runs_needed = math.ceil((args.pods - keep) / BEFORE_MAX_DELETE)
        per_run = sum(len(m.run.requests) for m in measured) / len(measured)
        seconds = sum(m.run.seconds for m in measured) / len(measured)
        print(
            f"before ({BEFORE_COMMIT[:7]}, at most {BEFORE_MAX_DELETE} a run): {runs_needed} run(s) clear the backlog "
            f"({runs_needed * 5} min at the 5-minute schedule); {len(measured)} measured:"
        )
        for i, m in enumerate(before, 1):
            print(f"  run {i}: {m.describe()}")
        print(
            f"  {runs_needed} run(s): about {per_run * runs_needed:.0f} API requests and "
            f"{seconds * runs_needed:.0f} s of runs"
            + (" (counted from the measured runs: each deletes the same number)" if len(measured) < runs_needed else "")
        )
        result |= {
            "before_runs_needed": runs_needed,
            "before_runs_measured": len(measured),
            "before_requests_per_run": [len(m.run.requests) for m in before],
            "before_seconds": [round(m.run.seconds, 3) for m in before],
            "before_standin_seconds": [round(m.standin_seconds, 3) for m in before],
            "before_peak_rss_kib": [m.peak_kib for m in before],
            "before_cpu_seconds": [round(m.cpu_seconds, 2) for m in before],
        }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
