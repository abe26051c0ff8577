"""A local control plane on loopback: kwok's own ``kwokctl --runtime binary`` from the toolchain's binaries, its
files in the cluster's directory (docs/engine.md); and the process helpers the rehearsal uses too."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import EXIT_FINDING, EXIT_OK
from supersonic_interlink.chart import binaries
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.run import OFFLINE_ENV, SCRATCH_PROJECT_ENV

PASSPHRASE = "local-cluster-only"  # of the local cluster's own backend: it protects nothing real

LOOPBACK = "127.0.0.1"
NAME = "supersonic"  # kwokctl's cluster: its files are <directory>/clusters/supersonic
COMPONENTS = {name: name for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")}
COMPONENTS["kwok-controller"] = "kwok"
"""kwokctl's component (its pid and log files are named so) -> the toolchain binary it runs."""
SEED: list[dict[str, Any]] = list(yaml.safe_load_all(Path(__file__).with_name("local_cluster.yaml").read_text()))
"""kwokctl's configuration, kwok's Stage for LoadBalancer Services, the nodes, the PersistentVolume of ``cvmfs``."""
VIRTUAL_NODE = next(o["metadata"] for o in SEED if o.get("metadata", {}).get("name") == "interlink-hammer")
CVMFS_VOLUMES = 32
"""``cvmfs`` volumes, more than the e2e tier's namespaces: a claim left Pending makes Helm's ``--wait`` time out."""
KWOK_STARTS = 5
"""kwok 0.7.0 dies about once in ten starts ("concurrent map writes" in its CEL type registry), twice in a row seen
on a loaded machine: ``kwokctl start cluster`` starts it again, this often."""

REAPER = 'trap \'exec "$0" --name="$1" delete cluster --kubeconfig="$2"\' TERM; while sleep 1; do :; done'
"""Runs ``kwokctl delete cluster`` on SIGTERM, which the kernel sends when the cluster's starter dies."""


class ClusterError(Exception):
    """The control plane, or a process beside it, did not start or become ready; the message ends with its log."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def start_process(
    argv: Sequence[str], log_file: Path, *, env: Mapping[str, str] | None = None, tied: bool = False
) -> subprocess.Popen[bytes]:
    """``argv`` in a session of its own, its output appended to ``log_file``; ``tied``: SIGTERM when this one dies."""
    with log_file.open("ab") as out:
        return subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            # Only a prctl call between fork and exec: no lock a thread could hold is touched.
            preexec_fn=_die_with_parent if tied else None,  # noqa: PLW1509
        )


def log_tail(log_file: Path) -> str:
    tail = log_file.read_text(errors="replace")[-3000:] if log_file.is_file() else "(no log)"
    return f"{log_file.stem}'s log ({log_file}) ends:\n{tail}"


def wait_until(
    condition: Callable[[], Any],
    timeout: float,
    what: str,
    *,
    interval: float = 0.01,
    log_file: Path | None = None,
    process: subprocess.Popen[bytes] | None = None,
) -> Any:
    """``condition()`` once truthy; a ClusterError naming ``what`` after ``timeout``, or once ``process`` exits."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if process is not None and process.poll() is not None:
            problem = f"exited with {process.returncode} while waiting for {what}"
        elif time.monotonic() >= deadline:
            problem = f"timed out after {timeout:g} s waiting for {what}"
        else:
            time.sleep(interval)
            continue
        raise ClusterError(problem + (f"; {log_tail(log_file)}" if log_file is not None else ""))
    return result


def stop_process(process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """SIGTERM to the process group ``process`` leads, SIGKILL after ``timeout``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout)
            return


def default_dir() -> Path:
    return toolchain.cache_dir() / "cluster"


def pulumi_env(home: Path, backend: str, passphrase: str) -> dict[str, str]:
    """The Pulumi CLI run offline, with a private home."""
    return {
        "PULUMI_HOME": str(home),
        "PULUMI_BACKEND_URL": backend,
        "PULUMI_CONFIG_PASSPHRASE": passphrase,
        **OFFLINE_ENV,
    }


def kwokctl_config(paths: Mapping[str, Path], pod_stages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``SEED``'s kwokctl configuration with the local binary in ``paths`` for each it would download (kwokctl links
    a local path: ``pkg/kwokctl/runtime/file.go`` EnsureBinary), then the LoadBalancer Stage and ``pod_stages``."""
    options = {**SEED[0]["options"], "kubeVersion": toolchain.version(toolchain.build_for("kube-apiserver"))}
    for component, binary in [*COMPONENTS.items(), ("kubectl", "kubectl")]:
        first, *rest = component.split("-")
        options[first + "".join(part.title() for part in rest) + "Binary"] = str(paths[binary])
    return [{**SEED[0], "options": options}, SEED[1], *pod_stages]


@dataclass
class LocalCluster:
    """The control plane rooted at ``directory``: kwokctl's files, the kubeconfig, the Pulumi home and backend."""

    directory: Path
    tied: bool = False
    """Stop every component when the process that started the cluster dies (a test session killed)."""
    pod_stages: list[dict[str, Any]] = field(default_factory=list)
    """kwok pod Stages instead of its default ones: the rehearsal's Slurm queue."""
    _reaper: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.kubeconfig = self.directory / "kubeconfig"
        self.workdir = self.directory / "clusters" / NAME
        pki = self.workdir / "pki"
        self.ca_certificate, self.serving_certificate, self.serving_key = (
            pki / f for f in ("ca.crt", "admin.crt", "admin.key")
        )
        self.pulumi_home, self.backend_dir = self.directory / "pulumi-home", self.directory / "backend"

    def env(self) -> dict[str, str]:
        """What a shell needs to run kubectl, helm and the Pulumi CLI (a built one, if any) on this cluster."""
        built = [toolchain.path("pulumi")] if toolchain.path("pulumi").is_file() else []
        bins = [str(b.parent) for b in [*built, *(binaries.path(n) for n in ("kubectl", "helm"))]]
        return {
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": os.pathsep.join([*bins, os.environ.get("PATH", "")]),
            **pulumi_env(self.pulumi_home, f"file://{self.backend_dir}", PASSPHRASE),
            # A stack created on this backend gets an encryption salt written into its file: not into stacks/.
            SCRATCH_PROJECT_ENV: str(self.directory / "project"),
        }

    def pids(self) -> dict[str, int]:
        """The components that run: a pid in kwokctl's files counts only while it runs the component's binary."""
        found = {}
        for component in COMPONENTS:
            with contextlib.suppress(OSError, ValueError):
                pid = int((self.workdir / "pids" / f"{component}.pid").read_text())
                if _exe(pid) == str((self.workdir / "bin" / component).resolve()):
                    found[component] = pid
        return found

    def running(self) -> bool:
        return self.pids().keys() == COMPONENTS.keys()

    def _log(self, component: str) -> Path:
        return self.workdir / "logs" / f"{component}.log"

    def _kwokctl(self, *args: str) -> None:
        command = [str(toolchain.path("kwokctl")), f"--name={NAME}", *args]
        env = {**os.environ, "KWOK_WORKDIR": str(self.directory)}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise ClusterError(f"kwokctl {' '.join(args)} failed: {done.stderr.strip()[-3000:]}")

    def start(self, *, log: Callable[[str], None] = print, timeout: float = 120.0) -> None:
        if self.running():
            log(f"cluster: already running ({self.kubeconfig})")
            return
        self.stop(log=lambda _line: None)
        started = time.monotonic()
        paths = {**toolchain.ensure([*COMPONENTS.values(), "kwokctl"], log=log), "kubectl": binaries.ensure("kubectl")}
        for directory in (self.directory, self.backend_dir, self.pulumi_home):
            directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "kwok.yaml"  # the file kwokctl reads first from KWOK_WORKDIR in any case
        config.write_text(yaml.safe_dump_all(kwokctl_config(paths, self.pod_stages), sort_keys=False))
        try:
            if self.tied:
                argv = ["/bin/sh", "-c", REAPER, str(paths["kwokctl"]), NAME, str(self.kubeconfig)]
                env = {**os.environ, "KWOK_WORKDIR": str(self.directory)}
                self._reaper = start_process(argv, self.directory / "reaper.log", env=env, tied=True)
            self._kwokctl(f"--config={config}", "create", "cluster", f"--kubeconfig={self.kubeconfig}")
            ready = lambda: self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0  # noqa: E731
            self._wait("the API server", "kube-apiserver", timeout, ready)
            self._seed(timeout, log)
        except BaseException:
            self.stop(log=lambda _line: None, keep_logs=True)
            raise
        log(f"cluster: ready in {time.monotonic() - started:.1f} s (KUBECONFIG={self.kubeconfig})")

    def tool(
        self, name: str, *args: str, input_text: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        command = [str(binaries.ensure(name)), f"--kubeconfig={self.kubeconfig}", *args]
        done = subprocess.run(command, capture_output=True, text=True, input=input_text, timeout=timeout)
        if check and done.returncode != 0:
            raise ClusterError(f"{name} {' '.join(args)} failed: {done.stderr.strip()}")
        return done

    def kubectl(self, *args: str, input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        return self.tool("kubectl", *args, input_text=input_text, check=check)

    def _wait(self, what: str, component: str, timeout: float, ready: Callable[[], bool]) -> None:
        wait_until(ready, timeout, what, interval=0.2, log_file=self._log(component))

    def _jsonpath(self, target: str, path: str) -> str:
        return str(self.kubectl("get", target, "-o", f"jsonpath={path}", check=False).stdout.strip())

    def _seed(self, timeout: float, log: Callable[[str], None]) -> None:
        """The nodes, KEDA's CRDs from its Go module, ``cvmfs`` volumes; then wait until pods can run."""
        nodes = [o for o in SEED if o["kind"] == "Node"]
        storage_class, volume = CHART.model_repository_storage_class, SEED[-1]
        volumes = [
            {**volume, "metadata": {"name": f"{storage_class}-{i}"}}
            | {"spec": {**volume["spec"], "storageClassName": storage_class, "hostPath": {"path": f"/nonexistent/{i}"}}}
            for i in range(1, CVMFS_VOLUMES + 1)
        ]
        crds = toolchain.module_source("keda") / "config" / "crd" / "bases"
        self.kubectl(
            "apply", "--server-side", "-f", "-", "-f", str(crds), input_text=yaml.safe_dump_all(nodes + volumes)
        )
        # Polled, not `kubectl wait`: a condition or jsonpath wait fails at once on status.conditions still null.
        established = '{.status.conditions[?(@.type=="Established")].status}'
        crd = "crd/scaledobjects.keda.sh"
        self._wait("the KEDA CRDs", "kube-apiserver", timeout, lambda: self._jsonpath(crd, established) == "True")
        ready, starts = '{.items[*].status.conditions[?(@.type=="Ready")].status}', [1]

        def nodes_ready() -> bool:
            if "kwok-controller" not in self.pids():
                if starts[0] == KWOK_STARTS:
                    raise ClusterError(f"kwok exited, {KWOK_STARTS} times; {log_tail(self._log('kwok-controller'))}")
                starts[0] += 1
                log(f"cluster: kwok exited as it started; starting it again (start {starts[0]} of {KWOK_STARTS})")
                self._kwokctl("start", "cluster")
            return self._jsonpath("nodes", ready).split() == ["True"] * len(nodes)

        self._wait("kwok's nodes", "kwok-controller", timeout, nodes_ready)
        default = lambda: self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0  # noqa: E731
        self._wait("the default ServiceAccount", "kube-controller-manager", timeout, default)
        log(f"cluster: nodes {', '.join(n['metadata']['name'] for n in nodes)}; KEDA CRDs")

    def stop(self, *, log: Callable[[str], None] = print, keep_logs: bool = False, timeout: float = 20.0) -> None:
        """``kwokctl delete cluster`` and its Pulumi state; with ``keep_logs`` only ``kwokctl stop cluster``."""
        if self._reaper is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._reaper.pid, signal.SIGKILL)  # it would run the delete below a second time
            self._reaper.wait()
            self._reaper = None
        running = self.pids()
        if self.workdir.is_dir():
            self._kwokctl(
                *(["stop", "cluster"] if keep_logs else ["delete", "cluster", f"--kubeconfig={self.kubeconfig}"])
            )
        # kwokctl sends SIGKILL and does not wait (pkg/utils/exec/cmd.go KillProcess): waited for here.
        wait_until(lambda: not any(map(_exe, running.values())), timeout, "the components to end")
        if running:
            log(f"cluster: stopped {', '.join(running)}")
        if not keep_logs:
            # A state left behind would say a (protected) release exists on the next, empty, cluster.
            self.kubeconfig.unlink(missing_ok=True)
            for data in ("backend", "project"):
                shutil.rmtree(self.directory / data, ignore_errors=True)


def _die_with_parent() -> None:
    """Linux prctl PR_SET_PDEATHSIG: SIGTERM when the parent exits."""
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)


def _exe(pid: int) -> str | None:
    """The binary process ``pid`` runs; None once it has ended (a zombie runs none)."""
    with contextlib.suppress(OSError):
        return os.readlink(f"/proc/{pid}/exe")
    return None


def run_cluster(action: str, directory: Path) -> int:
    cluster = LocalCluster(directory)
    try:
        if action == "start":
            cluster.start(log=lambda line: print(line, file=sys.stderr, flush=True))
            print(cluster.kubeconfig)
        elif action == "stop":
            cluster.stop(log=lambda line: print(line, file=sys.stderr))
        elif action == "status":
            print("running" if cluster.running() else "stopped")
            return EXIT_OK if cluster.running() else EXIT_FINDING
        elif not cluster.running():
            print(f"cluster: not running in {directory}; start it with ./supersonic cluster start", file=sys.stderr)
            return EXIT_FINDING
        else:
            print("".join(f"export {key}={shlex.quote(value)}\n" for key, value in cluster.env().items()), end="")
    except (ClusterError, toolchain.ToolchainError, binaries.BinaryError) as err:
        print(f"cluster: {err}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK
