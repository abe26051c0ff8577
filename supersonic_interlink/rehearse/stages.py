"""kwok Stages that play interLink's virtual node: a Triton pod is a Slurm job that waits in the queue, runs, ends.

kwok loads its default "fast" pod stages only when its configuration has none of its own (``pkg/kwok/cmd/root.go``,
``getDefaultPodStages``), so they are read from kwok's module at the pinned version and come along, ``pod-ready``
narrowed to leave alone the pods on the virtual node in the rehearsal's namespace. Those go through two stages:
``rehearse-slurm-queue`` (annotated with ``QUEUE_DELAY``, a Go duration: Pending that long, then kwok's own
``pod-ready`` status; not annotated yet: Pending) and ``rehearse-slurm-job-end`` (Running and annotated with
``JOB_TIME``: Failed that long after it started, its containers terminated with exit code 255, as interLink's virtual
kubelet reports a Slurm job that exited 255).
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
"""kwok's default pod stages (``kustomize/stage/pod/fast``)."""

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


def _is(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def _annotation(name: str) -> str:
    return f'.metadata.annotations["{name}"]'


def rehearsal_stages(namespace: str, node: str) -> list[dict[str, Any]]:
    """Every pod stage kwok runs with: the fast defaults for every pod but those on ``node`` in ``namespace``, and
    the queue and job stages for those."""
    fast = fast_pod_stages()
    (ready,) = [stage for stage in fast if stage["metadata"]["name"] == "pod-ready"]
    held = [_is(".metadata.namespace", "In", namespace), _is(".spec.nodeName", "In", node)]

    def narrowed(name: str, *expressions: dict[str, Any]) -> dict[str, Any]:
        stage = copy.deepcopy(ready)
        stage["metadata"]["name"] = name
        stage["spec"]["selector"]["matchExpressions"] += expressions
        return stage

    queue = narrowed("rehearse-slurm-queue", *held, _is(_annotation(QUEUE_DELAY), "Exists"))
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
                    _is(".metadata.deletionTimestamp", "DoesNotExist"),
                    _is(".status.phase", "In", "Running"),
                    *held,
                    _is(_annotation(JOB_TIME), "Exists"),
                ]
            },
            "delay": {"durationMilliseconds": 0, "durationFrom": {"jq": {"expression": _annotation(JOB_TIME)}}},
            "next": {"statusTemplate": FAILED_STATUS},
        },
    }
    return [
        narrowed("pod-ready", _is(".metadata.namespace", "NotIn", namespace)),
        narrowed(
            "pod-ready-other-nodes", _is(".metadata.namespace", "In", namespace), _is(".spec.nodeName", "NotIn", node)
        ),
        queue,
        job_end,
        *(stage for stage in fast if stage is not ready),
    ]


def go_duration(seconds: float) -> str:
    """A duration as Go's ``time.ParseDuration`` reads it, to the millisecond."""
    return f"{seconds:.3f}s"
