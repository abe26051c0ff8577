"""An ``up`` killed while Helm waits leaves the release ``pending-upgrade``; what recovers it (docs/takeover.md, "An
interrupted up"). Helm waits on an Envoy pod no node takes; the driver, the CLI and the provider die together, as with
a lost CI runner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e_harness import (
    ROOT,
    Project,
    existing_cvmfs_claim,
    hammer_like,
    helm,
    helm_history,
    helm_status,
    kubectl_json,
    providers,
)

from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.run import EngineError, gated

pytestmark = pytest.mark.timeout(900)

STACK = "interrupted-e2e"
RELEASE = "supersonic-interlink"
NAMESPACE = "e2e-interrupted"

DRIVER = """
import sys
sys.path[:0] = [{root!r}, {root!r} + "/tests"]
from pathlib import Path
from e2e_harness import Project
from supersonic_interlink.engine.cluster import LocalCluster
project = Project(Path({project!r}), LocalCluster(Path({cluster!r})))
project.engine({stack!r}).run("up")
"""


def test_a_killed_up_leaves_pending_upgrade_and_a_rollback_then_up_recovers(project: Project, chart: Path) -> None:
    cluster = project.cluster
    cluster.kubectl("create", "namespace", NAMESPACE)
    existing_cvmfs_claim(project, NAMESPACE)  # a rollback to the install then works (docs/engine.md)
    good = hammer_like(NAMESPACE, RELEASE, chart)
    project.write_stack(STACK, good)
    gated(project.engine(STACK), "up")

    # Step 1: an upgrade Helm waits on, killed mid-wait.
    stranded = dict(good)
    stranded["supersonic-interlink:envoy"] = {**good["supersonic-interlink:envoy"], "nodeSelector": {"no-such": "node"}}
    project.write_stack(STACK, stranded)
    script = DRIVER.format(root=str(ROOT), project=str(project.directory), cluster=str(cluster.directory), stack=STACK)
    already = set(providers(cluster.pulumi_home))
    driver = subprocess.Popen(
        [sys.executable, "-c", script],
        env={**os.environ, **project.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while helm_status(cluster, RELEASE, NAMESPACE)["info"]["status"] != "pending-upgrade":
            assert time.monotonic() < deadline, "the upgrade never started"
            time.sleep(0.5)
        time.sleep(2)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        # The provider has a process group of its own, so outlives the driver's; any new one is this run's.
        for pid in set(providers(cluster.pulumi_home)) - already:
            os.kill(pid, signal.SIGKILL)
    assert helm_status(cluster, RELEASE, NAMESPACE)["info"]["status"] == "pending-upgrade"

    # Step 2: the killed CLI left its lock on the stack; `pulumi cancel` (the CLI's own word for it) lifts it.
    project.write_stack(STACK, good)
    with pytest.raises(EngineError, match="the stack is currently locked"):
        project.run(STACK, "up")
    done = project.pulumi("cancel", "--yes", stack=STACK)
    assert done.returncode == 0, done.stdout + done.stderr
    # The hazard: the killed update never recorded its inputs, so an up of the good stack sees nothing to do
    # while Helm holds the half-applied upgrade, pending.
    project.run(STACK, "up")
    assert project.changes() == [], "the engine sees no difference"
    assert helm_status(cluster, RELEASE, NAMESPACE)["info"]["status"] == "pending-upgrade"
    assert _envoy_node_selector(project) == {"no-such": "node"}, "the stranded Envoy spec is live"

    # Step 3: the recovery: roll back to the last deployed revision with the pinned Helm, refresh, then up.
    deployed = [h["revision"] for h in helm_history(cluster, RELEASE, NAMESPACE) if h["status"] == "deployed"]
    helm(cluster, "rollback", RELEASE, str(max(deployed)), "-n", NAMESPACE, "--wait", "--timeout", "2m")
    assert helm_status(cluster, RELEASE, NAMESPACE)["info"]["status"] == "deployed"
    assert _envoy_node_selector(project) == {"cms-af-prod": "true"}
    project.run(STACK, "refresh")
    project.run(STACK, "preview", expect_no_changes=True)
    history = helm_history(cluster, RELEASE, NAMESPACE)
    last = history[-1]
    assert (last["revision"], last["status"], last["description"]) == (3, "deployed", "Rollback to 1"), history


def _envoy_node_selector(project: Project) -> dict[str, str]:
    deployment = kubectl_json(project.cluster, "get", "deployment", CHART.envoy_object_name(RELEASE), "-n", NAMESPACE)
    return dict(deployment["spec"]["template"]["spec"].get("nodeSelector") or {})
