"""Runs the cleanup script as the CronJob's container does (docs/cleanup.md): busybox sh with only its applets and
the real kubectl 1.34 on PATH (Debian's busybox prefers GNU tools it finds there), a fresh HOME, the stand-in API
server. The tests and ``benchmarks/cleanup_5000.py`` share this."""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kube_api_standin import KubeApiStandIn, Recorded

from supersonic_interlink.chart import binaries
from supersonic_interlink.components.failed_pod_cleanup import container_command, script_text

# alpine/kubectl:1.34.1 has no `tac` (checked in the image by the change request), Debian's busybox does.
MISSING_IN_IMAGE = frozenset({"tac"})
RUN_TIMEOUT_SECONDS = 120


def busybox_path() -> str:
    found = shutil.which("busybox") or ("/usr/bin/busybox" if Path("/usr/bin/busybox").exists() else None)
    if found is None:
        raise RuntimeError("busybox is not installed: `apt-get install busybox` (./supersonic test and CI install it)")
    return found


@functools.cache
def kubectl_path() -> Path:
    """The real kubectl 1.34.5, verified (``binaries.ensure`` hashes it, so once per process)."""
    return binaries.ensure("kubectl")


def make_bin(directory: Path) -> Path:
    """A directory of busybox applet links (less the image's missing ones) and a link to the real kubectl."""
    busybox = busybox_path()
    directory.mkdir(parents=True, exist_ok=True)
    listing = subprocess.run(
        [busybox, "--list"], capture_output=True, text=True, check=True, timeout=RUN_TIMEOUT_SECONDS
    ).stdout.split()
    for applet in listing:
        if applet not in MISSING_IN_IMAGE:
            (directory / applet).symlink_to(busybox)
    (directory / "kubectl").symlink_to(kubectl_path())
    return directory


def run_script(
    environment: Mapping[str, str],
    bin_dir: Path,
    kubeconfig: Path,
    scratch: Path,
    *,
    text: str | None = None,
    timing: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """The container's command run by busybox sh with ``environment`` (the component's and the downward API's
    NAMESPACE), only ``bin_dir`` on PATH, and a fresh HOME and discovery cache in ``scratch`` (the Job's emptyDir)."""
    command = container_command(script_text() if text is None else text)
    assert command[0] == "/bin/sh", "the container runs the script with the image's /bin/sh (busybox ash)"
    env = {
        "PATH": str(bin_dir),
        **environment,
        "HOME": str(scratch),
        "KUBECACHEDIR": str(scratch / ".kube" / "cache"),
        "KUBECONFIG": str(kubeconfig),
    }
    return subprocess.run(
        [*timing, busybox_path(), "sh", *command[1:]],
        env=env,
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
        check=False,
    )


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    requests: list[Recorded]
    """Every request the API server received during the run, in order."""
    before: frozenset[str]
    after: frozenset[str]
    """Names of every pod in the API server before and after the run."""
    seconds: float

    @property
    def deleted(self) -> set[str]:
        return set(self.before - self.after)

    def verbs(self) -> list[str]:
        return [r.verb for r in self.requests]

    def pod_requests(self) -> list[Recorded]:
        """The requests on pods: everything but kubectl's discovery of the API."""
        return [r for r in self.requests if r.verb != "discovery"]


class Cluster:
    """The stand-in API server and the runs of the script against it."""

    def __init__(self, root: Path, bin_dir: Path, server: KubeApiStandIn, *, namespace: str = "cms"):
        self.root = root
        self.bin_dir = bin_dir
        self.server = server
        self.kubeconfig = server.kubeconfig(root / "kubeconfig", namespace)

    def run(
        self,
        environment: Mapping[str, str],
        *,
        namespace: str = "cms",
        text: str | None = None,
        usage_file: Path | None = None,
    ) -> Run:
        """Run the container's command with its environment (plus the downward API's NAMESPACE). ``text`` replaces
        the script (a benchmark runs an earlier one); ``usage_file`` gets ``busybox time -v``'s resource usage (its
        peak RSS is the largest process's)."""
        timing = [] if usage_file is None else [busybox_path(), "time", "-v", "-o", str(usage_file)]
        scratch = Path(tempfile.mkdtemp(prefix="run-", dir=self.root))
        before = frozenset(self.server.names())
        start = len(self.server.requests)
        started = time.perf_counter()
        result = run_script(
            {"NAMESPACE": namespace, **environment}, self.bin_dir, self.kubeconfig, scratch, text=text, timing=timing
        )
        seconds = time.perf_counter() - started
        shutil.rmtree(scratch, ignore_errors=True)
        return Run(
            result.returncode,
            result.stdout,
            result.stderr,
            self.server.requests_since(start),
            before,
            frozenset(self.server.names()),
            seconds,
        )
