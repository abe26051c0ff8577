"""kwok Stages that play interLink's virtual node for a rehearsal: a Triton pod is a Slurm job that waits in the
queue, runs, and ends.

kwok (``tools/kwok``) loads its default "fast" pod stages only when its configuration has no pod stage of its own
(``pkg/kwok/cmd/root.go``, ``getDefaultPodStages``), so a configuration that adds stages must bring them too. They
are read from kwok's module at the pinned version, and ``pod-ready`` is narrowed so that it leaves alone the pods
on the virtual node in the rehearsal's namespace. Those pods go through two stages instead:

``rehearse-slurm-queue``
    a pod annotated with ``QUEUE_DELAY`` (a Go duration, e.g. ``27.5s``) waits that long Pending, then becomes
    Running and Ready with kwok's own ``pod-ready`` status (``delay.durationFrom`` with a JQ expression; kwok reads
    a duration string as a duration). A pod not yet annotated matches nothing and stays Pending.
``rehearse-slurm-job-end``
    a Running pod annotated with ``JOB_TIME`` fails that long after it started: phase Failed, its containers
    terminated with exit code 255, as interLink's virtual kubelet reports a Slurm job that exited 255.

The rehearsal annotates each new Triton pod with a delay drawn from ``--queue-delay`` (``delays.py``).
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from supersonic_interlink.engine import toolchain

QUEUE_DELAY = "rehearse.supersonic-interlink/queue-delay"
JOB_TIME = "rehearse.supersonic-interlink/job-time"
JOB_EXIT_CODE = 255
FAST_POD_STAGES = ("pod-ready", "pod-complete", "pod-delete")
"""kwok's default pod stages (``kustomize/stage/pod/fast``), the ones it loads when given none."""

FAILED_STATUS = f"""{{{{ $now := Now }}}}
conditions:
- lastTransitionTime: {{{{ $now | Quote }}}}
  status: "False"
  type: Ready
- lastTransitionTime: {{{{ $now | Quote }}}}
  status: "False"
  type: ContainersReady
containerStatuses:
{{{{ range .spec.containers }}}}
- image: {{{{ .image | Quote }}}}
  name: {{{{ .name | Quote }}}}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: {JOB_EXIT_CODE}
      reason: Error
      finishedAt: {{{{ $now | Quote }}}}
{{{{ end }}}}
phase: Failed
reason: "Error: {JOB_EXIT_CODE}"
message: the Slurm job exited with code {JOB_EXIT_CODE}
"""


def fast_pod_stages() -> list[dict[str, Any]]:
    """kwok's default pod stages, as its module at the pinned version ships them."""
    source = toolchain.module_source("kwok") / "kustomize" / "stage" / "pod" / "fast"
    stages = [yaml.safe_load((source / f"{name}.yaml").read_text()) for name in FAST_POD_STAGES]
    for stage in stages:
        if stage.get("kind") != "Stage" or stage["spec"]["resourceRef"] != {"apiGroup": "v1", "kind": "Pod"}:
            raise ValueError(f"{source}: {stage.get('metadata', {}).get('name')} is not a pod Stage")
    return stages


def _expression(key: str, operator: str, values: list[str] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        found["values"] = values
    return found


def _annotation(name: str) -> str:
    return f'.metadata.annotations["{name}"]'


def rehearsal_stages(namespace: str, node: str) -> list[dict[str, Any]]:
    """Every pod stage kwok runs with: the fast defaults for every pod but those on ``node`` in ``namespace``, and
    the queue and job stages for those."""
    fast = fast_pod_stages()
    by_name = {stage["metadata"]["name"]: stage for stage in fast}
    ready = by_name["pod-ready"]
    held = [_expression(".metadata.namespace", "In", [namespace]), _expression(".spec.nodeName", "In", [node])]

    elsewhere = copy.deepcopy(ready)
    elsewhere["spec"]["selector"]["matchExpressions"].append(_expression(".metadata.namespace", "NotIn", [namespace]))
    other_nodes = copy.deepcopy(ready)
    other_nodes["metadata"]["name"] = "pod-ready-other-nodes"
    other_nodes["spec"]["selector"]["matchExpressions"] += [
        _expression(".metadata.namespace", "In", [namespace]),
        _expression(".spec.nodeName", "NotIn", [node]),
    ]
    queue = copy.deepcopy(ready)
    queue["metadata"]["name"] = "rehearse-slurm-queue"
    queue["spec"]["selector"]["matchExpressions"] += [*held, _expression(_annotation(QUEUE_DELAY), "Exists")]
    queue["spec"]["delay"] = {
        "durationMilliseconds": 0,
        "durationFrom": {"jq": {"expression": _annotation(QUEUE_DELAY)}},
    }
    job_end = {
        "apiVersion": ready["apiVersion"],
        "kind": "Stage",
        "metadata": {"name": "rehearse-slurm-job-end"},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {
                "matchExpressions": [
                    _expression(".metadata.deletionTimestamp", "DoesNotExist"),
                    _expression(".status.phase", "In", ["Running"]),
                    *held,
                    _expression(_annotation(JOB_TIME), "Exists"),
                ]
            },
            "delay": {"durationMilliseconds": 0, "durationFrom": {"jq": {"expression": _annotation(JOB_TIME)}}},
            "next": {"statusTemplate": FAILED_STATUS},
        },
    }
    return [elsewhere, other_nodes, queue, job_end, *(s for s in fast if s["metadata"]["name"] != "pod-ready")]


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.ParseDuration`` reads it, to the millisecond."""
    return f"{seconds:.3f}s"
