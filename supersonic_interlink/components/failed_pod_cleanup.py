"""FailedPodCleanup: a CronJob running ``scripts/cleanup-failed-pods.sh`` that deletes the release's Failed Triton
pods, keeping the newest; PodGC acts only above a cluster-wide threshold, and a Failed pod holds interLink's objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from supersonic_interlink import ROOT
from supersonic_interlink.config import Settings
from supersonic_interlink.contract import CHART, Generation

TYPE = "supersonic-interlink:index:FailedPodCleanup"
COMPONENT = "failed-pod-cleanup"
SCRIPT_PATH = ROOT / "scripts" / "cleanup-failed-pods.sh"

# The script's two requests: a LIST of the release's Failed pods and one DELETE of that collection.
ROLE_RULES = ({"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "deletecollection"]},)
# benchmarks/cleanup_5000.py: kubectl peaks at 335-414 MiB listing 5,000 Failed pods; GOMEMLIMIT below the limit
# makes its GC work harder instead of doubling the heap.
GO_MEMORY_LIMIT_MIB = 384
RUN_AS_ID = 65534  # nobody:nogroup, numeric so runAsNonRoot is verified without /etc/passwd
SCRATCH_PATH = "/tmp"  # kubectl's HOME and discovery cache, on an emptyDir: the root filesystem is read-only


def object_name(release_name: str) -> str:
    """``<release>-failed-pod-cleanup``; ``RELEASE_NAME_MAX`` keeps it within a CronJob name's 52 characters."""
    return f"{CHART.instance_name(release_name)}-{COMPONENT}"


def inference_pod_selector(generation: Generation, release_name: str) -> str:
    """The label selector of the release's inference-server pods, as kubectl's ``-l`` takes it."""
    return ",".join(f"{key}={value}" for key, value in generation.inference_pod_labels(release_name).items())


def object_labels(release_name: str) -> dict[str, str]:
    """Of every cleanup object and the cleaner's pods."""
    return {
        CHART.instance_label: CHART.instance_name(release_name),
        CHART.component_label: COMPONENT,
        "app.kubernetes.io/managed-by": "pulumi",
    }


def script_text() -> str:
    return SCRIPT_PATH.read_text()


def container_command(text: str) -> list[str]:
    """alpine/kubectl's entrypoint is kubectl, so the command names the shell."""
    return ["/bin/sh", "-c", text, "cleanup-failed-pods"]


def script_environment(settings: Settings) -> dict[str, str]:
    """The script's parameters (NAMESPACE comes from the downward API), kubectl's HOME and Go memory limit."""
    return {
        "SELECTOR": inference_pod_selector(settings.generation, settings.release.name),
        "KEEP": str(settings.cleanup.keep),
        "DRY_RUN": "true" if settings.cleanup.dryRun else "false",
        "GOMEMLIMIT": f"{GO_MEMORY_LIMIT_MIB}MiB",
        "HOME": SCRATCH_PATH,
        "KUBECACHEDIR": f"{SCRATCH_PATH}/.kube/cache",
    }


@dataclass(frozen=True)
class FailedPodCleanupArgs:
    release_name: str
    namespace: str
    enabled: bool
    image: pulumi.Input[str]
    schedule: pulumi.Input[str]
    environment: Mapping[str, pulumi.Input[str]]
    node_selector: pulumi.Input[Mapping[str, str]]
    tolerations: pulumi.Input[Sequence[Any]]


class FailedPodCleanup(pulumi.ComponentResource):
    """The CronJob with the least RBAC it needs; disabled, the component alone and ``cronjob_name`` None."""

    cronjob_name: pulumi.Output[str] | None

    def __init__(self, name: str, args: FailedPodCleanupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        self.cronjob_name = self._create(name, args) if args.enabled else None
        self.register_outputs({"cronjob_name": self.cronjob_name})

    def _create(self, name: str, args: FailedPodCleanupArgs) -> pulumi.Output[str]:
        labels = object_labels(args.release_name)
        metadata = {"name": object_name(args.release_name), "namespace": args.namespace, "labels": labels}
        child = pulumi.ResourceOptions(parent=self)
        account = k8s.core.v1.ServiceAccount(
            f"{name}-serviceaccount", metadata=metadata, automount_service_account_token=False, opts=child
        )
        rules = [{"api_groups": r["apiGroups"], "resources": r["resources"], "verbs": r["verbs"]} for r in ROLE_RULES]
        role = k8s.rbac.v1.Role(f"{name}-role", metadata=metadata, rules=rules, opts=child)
        account_name = account.metadata.name
        k8s.rbac.v1.RoleBinding(
            f"{name}-rolebinding",
            metadata=metadata,
            role_ref={"api_group": "rbac.authorization.k8s.io", "kind": "Role", "name": role.metadata.name},
            subjects=[{"kind": "ServiceAccount", "name": account_name, "namespace": args.namespace}],
            opts=child,
        )
        namespace_env = {"name": "NAMESPACE", "value_from": {"field_ref": {"field_path": "metadata.namespace"}}}
        container: k8s.core.v1.ContainerArgsDict = {
            "name": "cleanup",
            "image": args.image,
            "image_pull_policy": "IfNotPresent",
            "command": container_command(script_text()),
            "env": [namespace_env, *({"name": key, "value": value} for key, value in args.environment.items())],
            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "512Mi"}},
            "security_context": {
                "allow_privilege_escalation": False,
                "privileged": False,
                "read_only_root_filesystem": True,
                "capabilities": {"drop": ["ALL"]},
            },
            "volume_mounts": [{"name": "scratch", "mount_path": SCRATCH_PATH}],
        }
        pod_spec: k8s.core.v1.PodSpecArgsDict = {
            "service_account_name": account_name,
            "automount_service_account_token": True,
            "enable_service_links": False,
            "restart_policy": "Never",
            "node_selector": args.node_selector,
            "tolerations": args.tolerations,
            "security_context": {
                "run_as_non_root": True,
                "run_as_user": RUN_AS_ID,
                "run_as_group": RUN_AS_ID,
                "fs_group": RUN_AS_ID,
                "seccomp_profile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
            "volumes": [{"name": "scratch", "empty_dir": {"size_limit": "64Mi"}}],
        }
        job = {
            "backoff_limit": 0,  # the next scheduled run is the retry; a retried pod is one more Failed pod
            "active_deadline_seconds": 240,  # a hung run ends before the next one is due (every 5 min by default)
            "ttl_seconds_after_finished": 86400,  # a night's failures still readable in the morning
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        }
        cronjob = k8s.batch.v1.CronJob(
            f"{name}-cronjob",
            metadata=metadata,
            spec={
                "schedule": args.schedule,
                "concurrency_policy": "Forbid",
                "starting_deadline_seconds": 120,  # a run missed by this much is skipped, not started late
                "successful_jobs_history_limit": 1,  # its log records what was deleted
                "failed_jobs_history_limit": 3,
                "job_template": {"metadata": {"labels": labels}, "spec": job},
            },
            opts=child,
        )
        return cronjob.metadata.name
