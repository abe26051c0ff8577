"""Runs the cleanup script as the CronJob's container does, in a real busybox, against the stand-in kubectl.

The container is alpine/kubectl: busybox ash and applets, plus kubectl. Here the shell is Debian's busybox and
PATH holds only links to its applets and the stand-in ``kubectl`` (Debian's busybox prefers GNU tools it finds on
PATH, so nothing else may be there). Applets the change request found missing in the image are left out too.
The tests and ``benchmarks/cleanup_5000.py`` share this.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubectl_standin

from components.failed_pod_cleanup import container_command, script_text

# alpine/kubectl:1.34.1 has no `tac` (checked in the image by the change request), Debian's busybox does.
MISSING_IN_IMAGE = frozenset({"tac"})
RUN_TIMEOUT_SECONDS = 60


def busybox_path() -> str:
    found = shutil.which("busybox") or ("/usr/bin/busybox" if Path("/usr/bin/busybox").exists() else None)
    if found is None:
        raise RuntimeError("busybox is not installed: `apt-get install busybox` (dev.sh test and CI install it)")
    return found


def make_bin(directory: Path) -> Path:
    """A directory of busybox applet links (less the image's missing ones) and the stand-in kubectl."""
    busybox = busybox_path()
    directory.mkdir(parents=True, exist_ok=True)
    listing = subprocess.run(
        [busybox, "--list"], capture_output=True, text=True, check=True, timeout=RUN_TIMEOUT_SECONDS
    ).stdout.split()
    for applet in listing:
        if applet not in MISSING_IN_IMAGE:
            (directory / applet).symlink_to(busybox)
    kubectl_standin.install(directory)
    return directory


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    calls: list[list[str]]
    """Every kubectl call's argv, in order."""
    remaining: list[dict[str, Any]]
    """The pods left in the stand-in's state after the run."""
    seconds: float

    def verbs(self) -> list[str]:
        return [call[0] for call in self.calls]

    def deleted_names(self) -> list[str]:
        return [
            arg.split("/", 1)[1]
            for call in self.calls
            if call[0] == "delete"
            for arg in call[1:]
            if arg.startswith("pod/")
        ]

    def remaining_names(self) -> set[str]:
        return {p["metadata"]["name"] for p in self.remaining}


class FakeNamespace:
    """A state file of pods the stand-in serves, and the runs of the script against it."""

    def __init__(self, root: Path, bin_dir: Path, pods: Iterable[dict[str, Any]]):
        self.root = root
        self.bin_dir = bin_dir
        self.state = root / "pods.json"
        kubectl_standin.write_state(self.state, pods)

    def run(self, environment: Mapping[str, str], *, namespace: str = "cms", fail: Iterable[str] = ()) -> Run:
        """Run the container's command with the container's environment (plus the downward API's NAMESPACE)."""
        log = self.root / f"calls-{time.monotonic_ns()}.jsonl"
        command = container_command(script_text())
        assert command[0] == "/bin/sh", "the container runs the script with the image's /bin/sh (busybox ash)"
        env = {
            "PATH": str(self.bin_dir),
            "NAMESPACE": namespace,
            **environment,
            kubectl_standin.STATE_ENV: str(self.state),
            kubectl_standin.LOG_ENV: str(log),
            kubectl_standin.FAIL_ENV: ",".join(fail),
        }
        started = time.perf_counter()
        result = subprocess.run(
            [busybox_path(), "sh", *command[1:]],
            env=env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_SECONDS,
        )
        seconds = time.perf_counter() - started
        return Run(
            result.returncode,
            result.stdout,
            result.stderr,
            kubectl_standin.read_calls(log),
            kubectl_standin.read_state(self.state),
            seconds,
        )
