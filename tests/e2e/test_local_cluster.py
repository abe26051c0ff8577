"""``./supersonic cluster``: kwokctl's control plane on loopback only, its files in the cluster's directory, and no
component left running once stopped or once the process that started a tied cluster dies (none kwokctl's default)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from e2e_harness import ROOT, run_supersonic

from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import COMPONENTS, KWOK_STARTS, LocalCluster, wait_until

pytestmark = pytest.mark.timeout(600)

ADDRESS_FLAG = re.compile(r"--[a-z-]*(address|urls?)=(.*)")


def ended(pids: dict[str, int]) -> bool:
    return not [pid for pid in pids.values() if Path(f"/proc/{pid}/exe").exists()]


def test_cluster_start_binds_loopback_writes_only_its_directory_and_stop_ends_every_component(tmp_path: Path) -> None:
    directory, home = tmp_path / "cluster", tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "SUPERSONIC_CACHE": str(toolchain.cache_dir())}  # the toolchain built already
    started = run_supersonic("cluster", "start", "--dir", str(directory), env=env)
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == str(directory / "kubeconfig")
    pids = LocalCluster(directory).pids()
    try:
        assert pids.keys() == COMPONENTS.keys()
        addresses = {
            (name, match[2])
            for name, pid in pids.items()
            for arg in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            if (match := ADDRESS_FLAG.fullmatch(arg))
        }
        assert {name for name, _ in addresses} == COMPONENTS.keys(), "every component was given an address"
        outside = [(name, arg) for name, arg in addresses if not re.fullmatch(r"(https?://)?127\.0\.0\.1(:\d+)?", arg)]
        assert not outside, f"kwokctl's default 0.0.0.0 was not overridden: {outside}"
        written = [path for path in (home / ".kwok", home / ".kube" / "config") if path.exists()]
        assert not written, "kwokctl's files and kubeconfig are in the cluster's directory, not the home"
        assert run_supersonic("cluster", "status", "--dir", str(directory), env=env).stdout.strip() == "running"
        again = run_supersonic("cluster", "start", "--dir", str(directory), env=env)
        assert "cluster: already running" in again.stderr, "a second start leaves the running cluster alone"
        assert LocalCluster(directory).pids() == pids, again.stderr
        exports = run_supersonic("cluster", "env", "--dir", str(directory), env=env).stdout
        assert f"export KUBECONFIG={directory / 'kubeconfig'}\n" in exports
    finally:
        stopped = run_supersonic("cluster", "stop", "--dir", str(directory), env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert ended(pids), f"a component outlived `cluster stop`: {pids}"
    status = run_supersonic("cluster", "status", "--dir", str(directory), env=env)
    assert (status.returncode, status.stdout.strip()) == (1, "stopped")


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from supersonic_interlink.engine.cluster import LocalCluster

    cluster = LocalCluster(Path(sys.argv[1]), tied=True)
    create = cluster._kwokctl

    def create_then_crash_kwok(*args):
        create(*args)
        if "create" in args:  # what kwok 0.7.0's start-up crash leaves: the cluster without kwok
            os.kill(cluster.pids()["kwok-controller"], signal.SIGKILL)

    cluster._kwokctl = create_then_crash_kwok
    cluster.start(log=lambda line: print(line, flush=True))
    print("pids", *(f"{name}={pid}" for name, pid in cluster.pids().items()), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_kwok_dead_after_start_is_started_again_and_a_tied_cluster_dies_with_its_process(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "cluster")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert child.returncode == -9, child.stdout + child.stderr
    assert f"cluster: kwok exited as it started; starting it again (start 2 of {KWOK_STARTS})" in child.stdout
    (line,) = [line for line in child.stdout.splitlines() if line.startswith("pids ")]
    pids = {name: int(pid) for name, _, pid in (item.partition("=") for item in line.split()[1:])}
    assert pids.keys() == COMPONENTS.keys(), "kwok ran again, with the rest, when the cluster was ready"
    # The process died without a teardown: the reaper tied to it runs `kwokctl delete cluster`.
    deleted = lambda: ended(pids) and not (tmp_path / "cluster" / "clusters" / "supersonic").exists()  # noqa: E731
    wait_until(deleted, 30, "every component to end, and the cluster deleted, after the process that started it died")
