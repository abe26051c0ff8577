"""A rejected upgrade under the real engine and provider, in a namespace of its own: what Helm's record and the live
Envoy ConfigMaps say after it, and after the next correct ``up``. (The install and an accepted edit: test_drift.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_harness import Project, envoy_config_maps, existing_cvmfs_claim, hammer_like, helm_revisions, helm_status

from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.run import EngineError

pytestmark = pytest.mark.timeout(900)

STACK = "hammer-e2e"
RELEASE = "supersonic-interlink"
RAISED = {"readyTimeoutSeconds": 1200, "holdMinReplicasSeconds": 1200, "enabled": True}
# Namespace -> a ``cvmfs`` claim there before the install, what the refusal says, Helm's statuses after it.
REJECTED = {
    # The API server's own reason, naming the field; Helm rolls back to the last good release.
    "e2e-rejected-upgrade-rolls-back": (
        True,
        ("readinessProbe.periodSeconds", "must be greater than"),
        ["superseded", "failed", "deployed"],
    ),
    # Only the install revision in a fresh namespace holds the chart's kept claim (``lookup``), so Helm's rollback
    # to it fails and leaves the release failed (docs/engine.md: "A failed upgrade right after the first install").
    "e2e-first-upgrade-cannot-roll-back": (
        False,
        (f'no PersistentVolumeClaim with the name "{CHART.model_repository_claim}" found',),
        ["deployed", "superseded", "failed"],
    ),
}


@pytest.mark.parametrize("namespace", REJECTED)
def test_a_rejected_upgrade_keeps_the_old_config_map_and_the_next_correct_up_succeeds(
    project: Project, chart: Path, namespace: str
) -> None:
    claim, refusal, after_refusal = REJECTED[namespace]
    cluster = project.cluster
    cluster.kubectl("create", "namespace", namespace)
    if claim:
        existing_cvmfs_claim(project, namespace)
    project.write_stack(STACK, hammer_like(namespace, RELEASE, chart))
    project.run(STACK, "up")
    before_maps = envoy_config_maps(cluster, RELEASE, namespace)

    # A new Envoy config and a readiness probe the API server refuses, which the program passes to the chart as given.
    refused = hammer_like(namespace, RELEASE, chart, scaleFromZero=RAISED)
    refused["supersonic-interlink:triton"] = {
        **refused["supersonic-interlink:triton"],
        "readinessProbe": {"successThreshold": 3, "periodSeconds": -1},
    }
    project.write_stack(STACK, refused)
    with pytest.raises(EngineError) as failure:
        project.run(STACK, "up")
    assert all(part in str(failure.value) for part in refusal), str(failure.value)
    assert [status for _, status in helm_revisions(cluster, RELEASE, namespace)] == after_refusal
    status = helm_status(cluster, RELEASE, namespace)
    assert status["info"]["status"] == after_refusal[-1], status["info"]
    assert status["config"]["scaleFromZero"]["readyTimeoutSeconds"] == 900, "rolled back to the previous values"
    assert set(before_maps) <= set(envoy_config_maps(cluster, RELEASE, namespace)), "the old ConfigMap must stay"

    project.write_stack(STACK, hammer_like(namespace, RELEASE, chart, scaleFromZero=RAISED))
    project.run(STACK, "up")
    assert helm_revisions(cluster, RELEASE, namespace)[-1] == (4, "deployed")
    assert helm_status(cluster, RELEASE, namespace)["config"]["scaleFromZero"]["readyTimeoutSeconds"] == 1200
    assert set(envoy_config_maps(cluster, RELEASE, namespace)).isdisjoint(before_maps), "the old ConfigMap went last"
