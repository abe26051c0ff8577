"""FailedPodCleanup: a CronJob that deletes the release's Failed Triton pods, keeping the newest for diagnosis.

interLink marks a Triton pod Failed when its Slurm job exits non-zero; the ReplicaSet replaces it and the Failed
pod stays, holding interLink's shadow wstunnel objects, until something deletes it. PodGC acts only above the
cluster-wide threshold and ``ttlSecondsAfterFinished`` is a Job field, so nothing else will. This component owns the
ServiceAccount, the namespaced Role (pods: list, deletecollection; nothing else), its RoleBinding and the CronJob, all
in the release namespace and named ``<release>-failed-pod-cleanup``. The work itself is
``scripts/cleanup-failed-pods.sh``, read into the container's command; its parameters are environment variables
computed here, so the script text is the same for every stack and the values show in the manifest. A stack with
``cleanup.enabled: false`` gets the component and no objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from supersonic_interlink import ROOT
from supersonic_interlink.components import created_name
from supersonic_interlink.config import Settings
from supersonic_interlink.contract import CHART, Generation

TYPE = "supersonic-interlink:index:FailedPodCleanup"

COMPONENT = "failed-pod-cleanup"
"""Suffix of every object name and value of the component label on them (ours, not the chart's)."""

SCRIPT_PATH = ROOT / "scripts" / "cleanup-failed-pods.sh"
SCRIPT_NAME = "cleanup-failed-pods"
"""``$0`` of the script under ``sh -c``, so its messages name it."""
CONTAINER_NAME = "cleanup"

# The Role's whole grant: the script makes two requests on pods, a LIST of the release's Failed pods and one
# DELETE of that collection (``deletecollection``), both in the release namespace. It never reads or deletes a pod by
# name, so neither ``get`` nor ``delete`` is granted. No other resource, no cluster scope, no wildcard.
ROLE_RULES = ({"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "deletecollection"]},)

# A run takes seconds. If the controller was down past this at a scheduled time, that run is skipped rather than
# started late next to the following one; it also stops the controller from counting missed runs since forever.
STARTING_DEADLINE_SECONDS = 120
# The last successful run's Job keeps its log (the record of what was deleted); the last three failed runs stay
# for diagnosis, as the cleaner itself does for Triton's Failed pods.
SUCCESSFUL_JOBS_HISTORY_LIMIT = 1
FAILED_JOBS_HISTORY_LIMIT = 3
# No retry inside a Job: the next scheduled run is the retry, and a retried pod would be one more Failed pod.
BACKOFF_LIMIT = 0
# Below the default 5-minute interval, so a hung run (an API call that never returns) ends before the next is due
# and concurrencyPolicy Forbid never skips a run because of it. Covers scheduling and the image pull.
ACTIVE_DEADLINE_SECONDS = 240
# Finished Jobs (and their pods and logs) are gone a day later at the latest; the history limits bound their count
# before that. A day leaves a night's failures readable in the morning.
TTL_SECONDS_AFTER_FINISHED = 86400

# kubectl is the whole footprint, and its list is most of it: `kubectl get` holds every listed pod decoded, about three
# times over (the answer, the list it composes, the template's copy), whether it lists in chunks or not.
# benchmarks/cleanup_5000.py, 5,000 Failed pods of 3.5 KiB: the earlier script's list peaked at 293 MiB, so the
# earlier 256 MiB limit would have killed every run on that backlog and it would never have cleared; this script
# peaks at 335-414 MiB, 427-431 MiB for 10,000, and 47 MiB with nothing to list. GOMEMLIMIT, below the container
# limit, makes kubectl's garbage collector work harder as the heap nears it instead of letting it grow to twice the
# live data. The request stays what a usual run of a few pods needs.
MEMORY_LIMIT_MIB = 512
GO_MEMORY_LIMIT_MIB = 384
RESOURCES = {
    "requests": {"cpu": "10m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": f"{MEMORY_LIMIT_MIB}Mi"},
}
# nobody:nogroup, a numeric UID so runAsNonRoot can be verified without reading /etc/passwd in the image.
RUN_AS_ID = 65534
# kubectl writes its discovery cache under HOME; the root filesystem is read-only, so both live on an emptyDir.
SCRATCH_PATH = "/tmp"
SCRATCH_SIZE_LIMIT = "64Mi"


def object_name(release_name: str) -> str:
    """``<release>-failed-pod-cleanup``; ``RELEASE_NAME_MAX`` keeps it within a CronJob name's 52 characters."""
    return f"{CHART.instance_name(release_name)}-{COMPONENT}"


def inference_pod_selector(generation: Generation, release_name: str) -> str:
    """The label selector of the release's inference-server pods, as kubectl's ``-l`` takes it."""
    return ",".join(f"{key}={value}" for key, value in generation.inference_pod_labels(release_name).items())


def object_labels(release_name: str) -> dict[str, str]:
    """Labels of every cleanup object and of the cleaner's pods: the release's instance, our own component."""
    return {
        CHART.instance_label: CHART.instance_name(release_name),
        CHART.component_label: COMPONENT,
        "app.kubernetes.io/managed-by": "pulumi",
    }


def script_text() -> str:
    return SCRIPT_PATH.read_text()


def container_command(text: str) -> list[str]:
    """alpine/kubectl's entrypoint is kubectl, so the command names the shell."""
    return ["/bin/sh", "-c", text, SCRIPT_NAME]


def script_environment(settings: Settings) -> dict[str, str]:
    """The script's parameters (NAMESPACE comes from the downward API), kubectl's writable places and its Go
    runtime's memory limit."""
    cleanup = settings.cleanup
    return {
        "SELECTOR": inference_pod_selector(settings.generation, settings.release.name),
        "KEEP": str(cleanup.keep),
        "DRY_RUN": "true" if cleanup.dryRun else "false",
        "GOMEMLIMIT": f"{GO_MEMORY_LIMIT_MIB}MiB",
        "HOME": SCRATCH_PATH,
        "KUBECACHEDIR": f"{SCRATCH_PATH}/.kube/cache",
    }


@dataclass(frozen=True)
class FailedPodCleanupArgs:
    """What the CronJob is made of; each value a Pulumi secret when the ``cleanup`` key was set with ``--secret``."""

    release_name: str
    namespace: str
    enabled: bool
    """False: the component and no objects."""
    image: pulumi.Input[str]
    schedule: pulumi.Input[str]
    environment: Mapping[str, pulumi.Input[str]]
    """``script_environment``."""
    node_selector: pulumi.Input[Mapping[str, str]]
    tolerations: pulumi.Input[Sequence[Any]]


class FailedPodCleanup(pulumi.ComponentResource):
    """The CronJob that clears the release's Failed Triton pods, with the least RBAC it needs."""

    cronjob_name: pulumi.Output[str] | None
    """Name of the CronJob; None when the stack disables the cleanup."""
    service_account_name: pulumi.Output[str] | None
    """Name of the ServiceAccount the cleaner runs as; None when disabled."""

    def __init__(self, name: str, args: FailedPodCleanupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        self.cronjob_name = None
        self.service_account_name = None
        if args.enabled:
            self._create(name, args)
        self.register_outputs({"cronjob_name": self.cronjob_name, "service_account_name": self.service_account_name})

    def _create(self, name: str, args: FailedPodCleanupArgs) -> None:
        labels = object_labels(args.release_name)
        metadata = {"name": object_name(args.release_name), "namespace": args.namespace, "labels": labels}
        child = pulumi.ResourceOptions(parent=self)
        # Only the cleaner's pods get this account's token, and they ask for it themselves.
        account = k8s.core.v1.ServiceAccount(
            f"{name}-serviceaccount", metadata=metadata, automount_service_account_token=False, opts=child
        )
        rules = [{"api_groups": r["apiGroups"], "resources": r["resources"], "verbs": r["verbs"]} for r in ROLE_RULES]
        role = k8s.rbac.v1.Role(f"{name}-role", metadata=metadata, rules=rules, opts=child)
        account_name = account.metadata.apply(created_name)
        k8s.rbac.v1.RoleBinding(
            f"{name}-rolebinding",
            metadata=metadata,
            role_ref={
                "api_group": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": role.metadata.apply(created_name),
            },
            subjects=[{"kind": "ServiceAccount", "name": account_name, "namespace": args.namespace}],
            opts=child,
        )
        namespace_env = {"name": "NAMESPACE", "value_from": {"field_ref": {"field_path": "metadata.namespace"}}}
        container: k8s.core.v1.ContainerArgsDict = {
            "name": CONTAINER_NAME,
            "image": args.image,
            "image_pull_policy": "IfNotPresent",
            "command": container_command(script_text()),
            "env": [namespace_env, *({"name": key, "value": value} for key, value in args.environment.items())],
            "resources": RESOURCES,
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
            # The one pod that needs the API token: the account itself does not mount it elsewhere.
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
            "volumes": [{"name": "scratch", "empty_dir": {"size_limit": SCRATCH_SIZE_LIMIT}}],
        }
        job = {
            "backoff_limit": BACKOFF_LIMIT,
            "active_deadline_seconds": ACTIVE_DEADLINE_SECONDS,
            "ttl_seconds_after_finished": TTL_SECONDS_AFTER_FINISHED,
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        }
        cronjob = k8s.batch.v1.CronJob(
            f"{name}-cronjob",
            metadata=metadata,
            spec={
                "schedule": args.schedule,
                "concurrency_policy": "Forbid",
                "starting_deadline_seconds": STARTING_DEADLINE_SECONDS,
                "successful_jobs_history_limit": SUCCESSFUL_JOBS_HISTORY_LIMIT,
                "failed_jobs_history_limit": FAILED_JOBS_HISTORY_LIMIT,
                "job_template": {"metadata": {"labels": labels}, "spec": job},
            },
            opts=child,
        )
        self.service_account_name = account.metadata.apply(created_name)
        self.cronjob_name = cronjob.metadata.apply(created_name)
