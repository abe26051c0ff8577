"""kwok Stages that play interLink's virtual node: a Triton pod is a Slurm job that waits ``QUEUE_DELAY``, runs, and
after ``JOB_TIME`` exits 255. kwok drops its default stages once given any (``pkg/kwok/cmd/root.go``): they come along.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from supersonic_interlink.engine import toolchain

QUEUE_DELAY = "rehearse.supersonic-interlink/queue-delay"
JOB_TIME = "rehearse.supersonic-interlink/job-time"
JOB_EXIT_CODE = 255
FAILED = "pod-container-running-failed"
JOB_END = {
    f"{FAILED}.stage.kwok.x-k8s.io/{key}": value
    for key, value in (("exit-code", str(JOB_EXIT_CODE)), ("reason", "Error"), ("message", "the Slurm job exited"))
}
"""The annotations kwok's chaos stage reads for the containers' termination."""
POD_STAGES = ("fast/pod-ready", "fast/pod-complete", "fast/pod-delete", f"chaos/{FAILED}")
"""kwok's default pod stages (``kustomize/stage/pod/fast``), and the chaos stage that fails a running pod."""


def kwok_pod_stages() -> dict[str, dict[str, Any]]:
    source = toolchain.module_source("kwok") / "kustomize" / "stage" / "pod"
    return {name: yaml.safe_load((source / f"{name}.yaml").read_text()) for name in POD_STAGES}


def _is(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def _annotation(name: str) -> str:
    return f'.metadata.annotations["{name}"]'


def rehearsal_stages(namespace: str, node: str) -> list[dict[str, Any]]:
    """kwok's defaults for every pod but those on ``node`` in ``namespace``; the queue and job stages for those."""
    kwok = kwok_pod_stages()
    ready = kwok["fast/pod-ready"]
    held = [_is(".metadata.namespace", "In", namespace), _is(".spec.nodeName", "In", node)]

    def narrowed(stage: dict[str, Any], name: str, *expressions: dict[str, Any]) -> dict[str, Any]:
        stage = copy.deepcopy(stage)
        stage["metadata"]["name"] = name
        stage["spec"]["selector"]["matchExpressions"] += expressions
        return stage

    def after(annotation: str) -> dict[str, Any]:
        return {"durationMilliseconds": 0, "durationFrom": {"jq": {"expression": _annotation(annotation)}}}

    queue = narrowed(ready, "rehearse-slurm-queue", *held, _is(_annotation(QUEUE_DELAY), "Exists"))
    queue["spec"]["delay"] = after(QUEUE_DELAY)
    failed = copy.deepcopy(kwok[f"chaos/{FAILED}"])
    failed["metadata"]["name"] = "rehearse-slurm-job-end"
    running = [_is(".metadata.deletionTimestamp", "DoesNotExist"), _is(".status.phase", "In", "Running")]
    failed["spec"] = {  # its selector (a label), delay and weight replaced by the held pods' and JOB_TIME
        "resourceRef": failed["spec"]["resourceRef"],
        "selector": {"matchExpressions": [*running, *held, _is(_annotation(JOB_TIME), "Exists")]},
        "delay": after(JOB_TIME),
        "next": failed["spec"]["next"],
    }
    failed["spec"]["next"]["statusTemplate"] += f'reason: "Error: {JOB_EXIT_CODE}"\n'
    return [
        narrowed(ready, "pod-ready", _is(".metadata.namespace", "NotIn", namespace)),
        narrowed(
            ready,
            "pod-ready-other-nodes",
            _is(".metadata.namespace", "In", namespace),
            _is(".spec.nodeName", "NotIn", node),
        ),
        queue,
        failed,
        kwok["fast/pod-complete"],
        kwok["fast/pod-delete"],
    ]


def go_duration(seconds: float) -> str:
    return f"{seconds:.3f}s"
