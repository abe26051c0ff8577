"""A local Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
kwok's simulated nodes, from the binaries ``toolchain`` builds.

Shaped like controller-runtime's envtest: one object starts everything on free 127.0.0.1 ports, writes a
kubeconfig and stops everything it started. Unlike a bare API server it has what a Helm ``--wait`` and a Pulumi
delete need: the controller-manager (ReplicaSets, the garbage collector that clears ``foregroundDeletion``, PV
binding, ServiceAccounts, CronJobs), the scheduler, and kwok, which registers nothing itself but marks pods on the
nodes created here Running and Ready, and gives LoadBalancer Services an ingress address (a kwok Stage).

The nodes: ordinary ones labelled and tainted like Geddes' analysis-facility nodes (where Envoy and the cleanup
run), and the interLink virtual node ``interlink-hammer`` with the label and taint interLink gives it. KEDA's
real CRDs come from its Go module (``tools/keda``), at the version pinned there.

Every process is started, waited for and stopped by ``start_process``, ``wait_until`` and ``stop_process``, which
the rehearsal also runs KEDA's operator and Envoy with.

    ./supersonic cluster start [--dir DIR]   # prints where its kubeconfig is
    ./supersonic cluster env   [--dir DIR]   # export lines for eval
    ./supersonic cluster stop  [--dir DIR]
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink.chart import binaries
from supersonic_interlink.chart.lookup_api import write_loopback_kubeconfig
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.run import OFFLINE_ENV

SCRATCH_PROJECT_ENV = "SUPERSONIC_SCRATCH_PROJECT"

PASSPHRASE = "local-cluster-only"
"""The passphrase of stacks on the local cluster's own backend. It protects nothing real: that backend is a
folder beside the cluster and holds only what the local cluster runs."""

SERVICE_CIDR = "10.0.0.0/24"
POD_CIDR = "10.244.0.0/16"

VIRTUAL_NODE: dict[str, Any] = {
    "name": "interlink-hammer",
    "labels": {
        "kubernetes.io/hostname": "interlink-hammer",
        "kubernetes.io/os": "virtual-kubelet",
        "type": "virtual-kubelet",
    },
    "taints": [{"key": "virtual-node.interlink/no-schedule", "value": "true", "effect": "NoSchedule"}],
}
"""interLink's virtual node as DOMAIN.md describes it: its own hostname label, ``kubernetes.io/os`` of a virtual
kubelet, and the NoSchedule taint only pods that tolerate offloading pass."""

AF_NODES: list[dict[str, Any]] = [
    {
        "name": f"af-{index}",
        "labels": {"kubernetes.io/hostname": f"af-{index}", "kubernetes.io/os": "linux", "cms-af-prod": "true"},
        "taints": [{"key": "hub.jupyter.org/dedicated", "value": "cms-af", "effect": "NoSchedule"}],
    }
    for index in (1, 2)
]
"""Analysis-facility nodes like Geddes': where the hammer stack puts Envoy and the cleanup."""

PLAIN_NODES: list[dict[str, Any]] = [
    {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux"}, "taints": []}
]

CVMFS_VOLUMES = 32
"""PersistentVolumes of class ``cvmfs``: one per namespace that installs the chart (it claims ``cvmfs`` there). A
claim left Pending makes Helm's ``--wait`` run into its timeout, so there are more than the e2e tier's namespaces."""

KWOK_MANAGED = "kwok.x-k8s.io/node"
"""Annotation kwok selects the nodes it simulates by."""
KWOK_STARTS = 3
KWOK_SETTLE_SECONDS = 3.0
"""How long kwok must keep running after its start to count as started (its start-up race strikes within one s)."""

LOAD_BALANCER_STAGE = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Stage",
    "metadata": {"name": "service-load-balancer"},
    "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Service"},
        "selector": {
            "matchExpressions": [
                {"key": ".spec.type", "operator": "In", "values": ["LoadBalancer"]},
                {"key": ".status.loadBalancer.ingress", "operator": "DoesNotExist"},
            ]
        },
        "next": {"statusTemplate": "loadBalancer:\n  ingress:\n  - ip: 127.0.0.1\n"},
    },
}
"""Stands in for a load-balancer controller (MetalLB on Geddes): Helm's --wait holds a LoadBalancer Service until
it has an ingress address."""


class ClusterError(Exception):
    """The control plane, or a process run beside it (the KEDA operator, Envoy), did not start or become ready in
    time; the message says which and how its log ends."""


LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def start_process(
    argv: Sequence[str], log_file: Path, *, env: Mapping[str, str] | None = None, tied: bool = False
) -> subprocess.Popen[bytes]:
    """``argv`` started in a session of its own (``stop_process`` stops its whole group), its output appended to
    ``log_file``; with ``tied`` the kernel sends it SIGTERM when this process dies."""
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
    """Poll ``condition`` until it returns something truthy, and return that; a ClusterError naming ``what``, and
    ending with ``log_file``'s tail, once ``timeout`` has passed or as soon as ``process`` has exited."""
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


def stop_process(process: subprocess.Popen[bytes] | int, timeout: float = 20.0) -> None:
    """SIGTERM to the process group ``process`` leads (``start_process`` makes each a leader), SIGKILL after
    ``timeout``; a child of this process is reaped."""
    pid = process if isinstance(process, int) else process.pid

    def ended() -> bool:
        if not isinstance(process, int):
            return process.poll() is not None
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return _exe(pid) is None

    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ended():
                return
            time.sleep(0.05)


def default_dir() -> Path:
    return toolchain.cache_dir() / "cluster"


def pulumi_env(home: Path, backend: str, passphrase: str) -> dict[str, str]:
    """The Pulumi CLI run offline: a private home, the plugins installed from local binaries only, no update check."""
    return {
        "PULUMI_HOME": str(home),
        "PULUMI_BACKEND_URL": backend,
        "PULUMI_CONFIG_PASSPHRASE": passphrase,
        **OFFLINE_ENV,
    }


@dataclass
class LocalCluster:
    """The control plane rooted at ``directory`` (certificates, etcd data, logs, kubeconfig, pids, Pulumi backend)."""

    directory: Path
    tied: bool = False
    """Stop every component when the process that started the cluster dies (a test session killed without its
    teardown); ``./supersonic cluster start`` leaves them running until ``stop``."""
    pod_stages: list[dict[str, Any]] = field(default_factory=list)
    """kwok pod Stages to run instead of kwok's defaults (which it loads only when given no pod stage): the
    rehearsal's Slurm queue (``supersonic_interlink.rehearse.stages``). Empty: kwok's default fast pod stages."""

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.directory / "cluster.json"

    @property
    def pki(self) -> Path:
        """The API server's ``--cert-dir``: the serving certificate and CA it makes for itself (``apiserver.crt``,
        the certificate followed by its CA, for 127.0.0.1; ``apiserver.key``) and the admin token file."""
        return self.directory / "pki"

    @property
    def pulumi_home(self) -> Path:
        return self.directory / "pulumi-home"

    @property
    def backend_dir(self) -> Path:
        return self.directory / "backend"

    def env(self) -> dict[str, str]:
        """What a shell or a test needs to run kubectl, helm and the Pulumi CLI against this cluster, offline."""
        # A built Pulumi CLI goes on PATH only if there is one: an operator's own `pulumi` is found there otherwise.
        built = [toolchain.path("pulumi")] if toolchain.path("pulumi").is_file() else []
        bins = [str(b.parent) for b in [*built, *(binaries.path(n) for n in ("kubectl", "helm"))]]
        return {
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": os.pathsep.join([*bins, os.environ.get("PATH", "")]),
            **pulumi_env(self.pulumi_home, f"file://{self.backend_dir}", PASSPHRASE),
            # `./supersonic pulumi` then runs in a scratch copy of the project here: creating a stack on this
            # throwaway backend writes an encryption salt into the stack file, which must not touch stacks/.
            SCRATCH_PROJECT_ENV: str(self.directory / "project"),
        }

    def _state(self) -> dict[str, Any]:
        return json.loads(self.state_file.read_text()) if self.state_file.is_file() else {}

    def _pids(self) -> dict[str, int]:
        """The components this cluster started that still run: a pid counts only while it runs the binary recorded
        for it (after a reboot a recorded pid may be any other process; a zombie runs none)."""
        state = self._state()
        return {name: pid for name, pid in state.get("pids", {}).items() if _exe(pid) == state["exes"].get(name)}

    def running(self) -> bool:
        """Every component this cluster started still runs."""
        recorded = self._state().get("pids", {})
        return bool(recorded) and self._pids().keys() == recorded.keys()

    def _log(self, component: str) -> Path:
        return self.directory / "logs" / f"{component}.log"

    # ---------------------------------------------------------------------------------------------------- start

    def start(self, *, log: Callable[[str], None] = print, timeout: float = 120.0) -> None:
        if self.running():
            log(f"cluster: already running ({self.kubeconfig})")
            return
        self.stop(log=lambda _line: None)
        started = time.monotonic()
        paths = toolchain.ensure(
            ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"], log=log
        )
        binaries.ensure("kubectl")
        # The API server makes its own serving certificate and CA in --cert-dir when it is given none (writing
        # apiserver.crt, the certificate followed by its CA, before it listens); its key also signs ServiceAccount
        # tokens. The directory is emptied first, so every start has fresh ones. The admin is a static token in
        # group system:masters.
        certs = self.pki
        shutil.rmtree(certs, ignore_errors=True)
        for sub in (certs, self.directory / "logs", self.directory / "etcd", self.backend_dir, self.pulumi_home):
            sub.mkdir(parents=True, exist_ok=True)
        token = secrets.token_urlsafe(32)
        tokens = certs / "tokens.csv"
        tokens.touch(mode=0o600)
        tokens.write_text(f'{token},admin,admin,"system:masters"\n')
        ca, key = certs / "apiserver.crt", certs / "apiserver.key"
        api_port = free_port()
        server = f"https://127.0.0.1:{api_port}"
        write_loopback_kubeconfig(self.kubeconfig, server, user={"token": token}, certificate_authority=ca)
        kubeconfig = f"--kubeconfig={self.kubeconfig}"
        etcd_url, peer_url = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
        processes: dict[str, subprocess.Popen[bytes]] = {}

        def launch(name: str, *args: str) -> subprocess.Popen[bytes]:
            processes[name] = start_process([str(paths[name]), *args], self._log(name), tied=self.tied)
            pids = {n: p.pid for n, p in processes.items()}
            exes = {n: str(paths[n]) for n in processes}
            self.state_file.write_text(json.dumps({"pids": pids, "exes": exes, "server": server}, indent=2))
            return processes[name]

        try:
            launch(
                "etcd",
                "--name=local",
                f"--data-dir={self.directory / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=local={peer_url}",
                "--unsafe-no-fsync=true",
            )
            launch(
                "kube-apiserver",
                f"--etcd-servers={etcd_url}",
                f"--cert-dir={certs}",
                f"--token-auth-file={tokens}",
                f"--secure-port={api_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={key}",
                f"--service-account-signing-key-file={key}",
            )

            # The API server waits for etcd itself; its /readyz includes etcd's health.
            def api_ready() -> bool:
                exited = [name for name, process in processes.items() if process.poll() is not None]
                if exited:
                    tails = "\n".join(log_tail(self._log(name)) for name in exited)
                    raise ClusterError(f"{', '.join(exited)} exited as the API server came up; {tails}")
                return self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0

            self._wait("the API server", "kube-apiserver", timeout, api_ready)
            launch(
                "kube-controller-manager",
                kubeconfig,
                "--leader-elect=false",
                "--secure-port=0",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={key}",
                f"--root-ca-file={ca}",
                f"--cluster-cidr={POD_CIDR}",
                "--controllers=*",
            )
            launch("kube-scheduler", kubeconfig, "--leader-elect=false", "--secure-port=0")
            kwok_config = self.directory / "kwok.yaml"
            kwok_config.write_text(yaml.safe_dump_all([LOAD_BALANCER_STAGE, *self.pod_stages], sort_keys=False))
            kwok_args = (
                kubeconfig,
                f"--config={kwok_config}",
                f"--manage-nodes-with-annotation-selector={KWOK_MANAGED}=fake",
                "--node-lease-duration-seconds=40",
                f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1",
                f"--server-address=127.0.0.1:{free_port()}",
            )
            # kwok 0.7.0 sometimes dies as it starts its stage controllers together ("fatal error: concurrent map
            # writes" in its CEL type registry, seen here about once in ten starts): it is started again.
            for attempt in range(1, KWOK_STARTS + 1):
                try:
                    launch("kwok", *kwok_args).wait(KWOK_SETTLE_SECONDS)
                except subprocess.TimeoutExpired:
                    break  # still running: started
                log(f"cluster: kwok exited as it started (attempt {attempt} of {KWOK_STARTS}); starting it again")
            else:
                raise ClusterError(f"kwok exited as it started, {KWOK_STARTS} times; {log_tail(self._log('kwok'))}")
            self._seed(timeout, log)
        except BaseException:
            self.stop(log=lambda _line: None, keep_logs=True)
            raise
        log(f"cluster: ready in {time.monotonic() - started:.1f} s at {server} (KUBECONFIG={self.kubeconfig})")

    def tool(
        self, name: str, *args: str, input_text: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        """The pinned ``kubectl`` or ``helm`` against this cluster; with ``check``, a failure is a ClusterError."""
        done = subprocess.run(
            [str(binaries.ensure(name)), f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            input=input_text,
            timeout=timeout,
        )
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
        """Nodes, KEDA's CRDs (from its Go module at the version ``tools/keda/go.mod`` pins), and a pool of
        PersistentVolumes; then wait until pods can be scheduled and run."""
        nodes = [_node(spec) for spec in [*PLAIN_NODES, *AF_NODES, VIRTUAL_NODE]]
        crds = toolchain.module_source("keda") / "config" / "crd" / "bases"
        # Static volumes, as the CVMFS CSI driver's class provides on Geddes: each namespace's `cvmfs` claim binds.
        storage_class = CHART.model_repository_storage_class
        volumes = [
            _persistent_volume(f"{storage_class}-{index}", storage_class) for index in range(1, CVMFS_VOLUMES + 1)
        ]
        seed = yaml.safe_dump_all([*nodes, *volumes])
        self.kubectl("apply", "--server-side", "-f", "-", "-f", str(crds), input_text=seed)
        # Polled, not `kubectl wait`: a condition or jsonpath wait fails at once on status.conditions still null.
        established = '{.status.conditions[?(@.type=="Established")].status}'
        self._wait(
            "the KEDA CRDs",
            "kube-apiserver",
            timeout,
            lambda: self._jsonpath("crd/scaledobjects.keda.sh", established) == "True",
        )
        ready = '{.items[*].status.conditions[?(@.type=="Ready")].status}'
        self._wait(
            "kwok's nodes", "kwok", timeout, lambda: self._jsonpath("nodes", ready).split() == ["True"] * len(nodes)
        )
        # Pods are admitted only once the namespace's default ServiceAccount exists (the controller-manager
        # makes it): the one in "default" is the sign that controller is running.
        self._wait(
            "the default ServiceAccount",
            "kube-controller-manager",
            timeout,
            lambda: self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0,
        )
        log(f"cluster: nodes {', '.join(n['metadata']['name'] for n in nodes)}; KEDA CRDs")

    # ----------------------------------------------------------------------------------------------------- stop

    def stop(self, *, log: Callable[[str], None] = print, keep_logs: bool = False, timeout: float = 20.0) -> None:
        """Stop every process this cluster started (newest first) and remove its data; with ``keep_logs``
        leave the directory for reading."""
        pids = self._pids()
        for name in reversed(list(pids)):
            stop_process(pids[name], timeout)
        if pids:
            log(f"cluster: stopped {', '.join(reversed(list(pids)))}")
        self.state_file.unlink(missing_ok=True)
        if not keep_logs:
            # The cluster's data goes, and with it the Pulumi state that described it: a state left behind would
            # say a (protected) release exists on the next, empty, cluster.
            for data in ("etcd", "backend", "project"):
                shutil.rmtree(self.directory / data, ignore_errors=True)


def _node(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec["name"], "labels": spec["labels"], "annotations": {KWOK_MANAGED: "fake"}},
        "spec": {"taints": spec["taints"]},
        "status": {
            "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
        },
    }


def _persistent_volume(name: str, storage_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "100Gi"},
            "accessModes": ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": storage_class,
            "hostPath": {"path": f"/nonexistent/{name}"},
        },
    }


def _die_with_parent() -> None:
    """In the child before exec: the kernel sends SIGTERM when the parent exits (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)


def _exe(pid: int) -> str | None:
    """The binary process ``pid`` runs; None once it has ended (a zombie runs none)."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
