"""The rehearsal's kwok Stages: kwok's own default fast stages, read from kwok's module at the version tools/kwok pins
(Go and the module proxy, as the rest of this tier), narrowed into the rehearsal's Slurm queue."""

from __future__ import annotations

from supersonic_interlink.engine.cluster import VIRTUAL_NODE
from supersonic_interlink.rehearse.run import QUEUE_DELAY, rehearsal_stages


def _matches(stage: dict, pod: dict) -> bool:
    """kwok's matchExpressions for the keys these stages use (a few paths, In/NotIn/Exists/DoesNotExist)."""
    for expression in stage["spec"]["selector"]["matchExpressions"]:
        key = expression["key"]
        if key.startswith(".metadata.annotations["):
            value = pod["metadata"].get("annotations", {}).get(key[len('.metadata.annotations["') : -2])
        else:
            value = pod
            for part in key.strip(".").split("."):
                value = value.get(part) if isinstance(value, dict) else None
        found = value if isinstance(value, list) else ([] if value is None else [value])
        common = [v for v in found if v in expression.get("values", [])]
        holds = {"Exists": bool(found), "DoesNotExist": not found, "In": bool(common), "NotIn": not common}
        if not holds[expression["operator"]]:
            return False
    return True


def _pod(namespace: str, node: str, annotations: dict | None = None) -> dict:
    return {"metadata": {"namespace": namespace, "annotations": annotations or {}}, "spec": {"nodeName": node}}


def test_kwok_holds_only_the_rehearsals_virtual_node_pods_and_runs_every_other_pod_as_before() -> None:
    node = VIRTUAL_NODE["name"]
    found = rehearsal_stages("rehearse", node)
    names = [s["metadata"]["name"] for s in found]
    assert len(set(names)) == len(names), "kwok needs unique stage names"
    assert {"pod-complete", "pod-delete"} <= set(names), "kwok's default fast stages come along"

    def matching(pod: dict) -> list[str]:
        return [s["metadata"]["name"] for s in found if _matches(s, pod)]

    assert matching(_pod("elsewhere", node)) == ["pod-ready"], "another namespace's pods are Ready at once"
    assert matching(_pod("rehearse", "af-1")) == ["pod-ready-other-nodes"], "Envoy-side pods too"
    assert matching(_pod("rehearse", node)) == [], "a Triton pod without its queue delay waits"
    assert matching(_pod("rehearse", node, {QUEUE_DELAY: "12.000s"})) == ["rehearse-slurm-queue"]


def test_the_queue_stage_waits_the_annotated_duration_then_applies_kwoks_own_ready_status() -> None:
    found = {s["metadata"]["name"]: s for s in rehearsal_stages("rehearse", "interlink-hammer")}
    queue, ready = found["rehearse-slurm-queue"], found["pod-ready"]
    assert queue["spec"]["delay"]["durationFrom"] == {"jq": {"expression": f'.metadata.annotations["{QUEUE_DELAY}"]'}}
    assert queue["spec"]["next"] == ready["spec"]["next"]
