"""The end-to-end tier: one local control plane for the whole session, a project directory per scenario."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_harness import REHEARSAL_NAMESPACE, Project, e2e_chart, providers

from supersonic_interlink.engine.cluster import COMPONENTS, LocalCluster
from supersonic_interlink.rehearse.run import VIRTUAL_NODE_NAME, rehearsal_stages


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # A SIGTERM (a CI timeout) ends the session through pytest's own interrupt handling, so teardown runs; and the
    # components die with this process even if it cannot.
    signal.signal(signal.SIGTERM, _interrupt)
    local = LocalCluster(
        tmp_path_factory.mktemp("cluster"),
        tied=True,
        pod_stages=rehearsal_stages(REHEARSAL_NAMESPACE, VIRTUAL_NODE_NAME),
    )
    lines: list[str] = []
    try:
        local.start(log=lines.append)
    except Exception:
        print("\n".join(lines))
        raise
    try:
        yield local
    finally:
        components = local.pids()
        local.stop(log=lines.append)
        # kwokctl detaches the components from this session: none may outlive it.
        assert components.keys() == COMPONENTS.keys(), f"the components still ran at the end: {components}"
        assert not [pid for pid in components.values() if Path(f"/proc/{pid}/exe").exists()], "a component outlived"
        # The CLI starts providers in process groups of their own; none may outlive the session.
        for pid in providers(local.pulumi_home):
            os.kill(pid, signal.SIGKILL)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return e2e_chart(tmp_path_factory.mktemp("chart"))


@pytest.fixture
def project(tmp_path: Path, cluster: LocalCluster) -> Project:
    return Project.create(tmp_path / "project", cluster)
