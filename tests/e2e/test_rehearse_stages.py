"""The rehearsal's kwok Stages: kwok's own default fast stages and its chaos stage for a failed container, read from
kwok's module at the version tools/kwok pins (Go and the module proxy, as the rest of this tier), narrowed and
combined into the rehearsal's Slurm queue and job end."""

from __future__ import annotations

from supersonic_interlink.engine.cluster import VIRTUAL_NODE
from supersonic_interlink.rehearse import stages


def _matches(stage: dict, pod: dict) -> bool:
    """kwok's matchExpressions for the keys these stages use (a few paths, In/NotIn/Exists/DoesNotExist)."""
    for expression in stage["spec"]["selector"]["matchExpressions"]:
        key = expression["key"]
        if key.startswith(".metadata.annotations["):
            name = key[len('.metadata.annotations["') : -2]
            value = pod["metadata"].get("annotations", {}).get(name)
        elif key == ".metadata.ownerReferences.[].kind":
            value = [o["kind"] for o in pod["metadata"].get("ownerReferences", [])] or None
        else:
            value = pod
            for part in key.strip(".").split("."):
                value = value.get(part) if isinstance(value, dict) else None
        operator = expression["operator"]
        values = expression.get("values", [])
        found = value if isinstance(value, list) else ([] if value is None else [value])
        if operator == "Exists" and not found:
            return False
        if operator == "DoesNotExist" and found:
            return False
        if operator == "In" and not set(found) & set(values):
            return False
        if operator == "NotIn" and set(found) & set(values):
            return False
    return True


def _pod(namespace: str, node: str, annotations: dict | None = None, **status: str) -> dict:
    return {
        "metadata": {"namespace": namespace, "annotations": annotations or {}},
        "spec": {"nodeName": node},
        "status": status,
    }


def test_kwok_holds_only_the_rehearsals_virtual_node_pods_and_runs_every_other_pod_as_before() -> None:
    node = VIRTUAL_NODE["name"]
    found = stages.rehearsal_stages("rehearse", node)
    names = [s["metadata"]["name"] for s in found]
    assert len(set(names)) == len(names), "kwok needs unique stage names"
    assert {"pod-complete", "pod-delete"} <= set(names), "kwok's default fast stages come along"

    def matching(pod: dict) -> list[str]:
        return [s["metadata"]["name"] for s in found if _matches(s, pod)]

    assert matching(_pod("elsewhere", node)) == ["pod-ready"], "another namespace's pods are Ready at once"
    assert matching(_pod("rehearse", "af-1")) == ["pod-ready-other-nodes"], "Envoy-side pods too"
    assert matching(_pod("rehearse", node)) == [], "a Triton pod without its queue delay waits"
    queued = _pod("rehearse", node, {stages.QUEUE_DELAY: "12.000s"})
    assert matching(queued) == ["rehearse-slurm-queue"]
    running = _pod("rehearse", node, {stages.QUEUE_DELAY: "1s", stages.JOB_TIME: "5s"}, phase="Running", podIP="x")
    assert matching(running) == ["rehearse-slurm-job-end"]
    failed = _pod("rehearse", node, {stages.QUEUE_DELAY: "1s", stages.JOB_TIME: "5s"}, phase="Failed", podIP="x")
    assert matching(failed) == [], "a failed job stays failed"


def test_the_queue_stage_waits_the_annotated_duration_then_applies_kwoks_own_ready_status() -> None:
    found = {s["metadata"]["name"]: s for s in stages.rehearsal_stages("rehearse", "interlink-hammer")}
    queue, ready = found["rehearse-slurm-queue"], found["pod-ready"]
    assert queue["spec"]["delay"]["durationFrom"] == {
        "jq": {"expression": f'.metadata.annotations["{stages.QUEUE_DELAY}"]'}
    }
    assert queue["spec"]["next"] == ready["spec"]["next"]
    template = found["rehearse-slurm-job-end"]["spec"]["next"]["statusTemplate"]
    exit_code = next(key for key in stages.JOB_END if key.endswith("/exit-code"))
    assert f'index $annotations "{exit_code}"' in template and stages.JOB_END[exit_code] == "255"
    assert "phase: Failed" in template and template.endswith('reason: "Error: 255"\n'), "as interLink reports it"
    assert stages.go_duration(17.25) == "17.250s"
