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

    ./supersonic cluster start [--dir DIR]   # prints where its kubeconfig is
    ./supersonic cluster env   [--dir DIR]   # export lines for eval
    ./supersonic cluster stop  [--dir DIR]
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink.chart import binaries
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine import toolchain

SCRATCH_PROJECT_ENV = "SUPERSONIC_SCRATCH_PROJECT"

ADMIN_USER = "admin"
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

CVMFS_VOLUMES = 12
"""PersistentVolumes of class ``cvmfs``: one per namespace that installs the chart (it claims ``cvmfs`` there)."""

KWOK_MANAGED = "kwok.x-k8s.io/node"
KWOK_STARTS = 3
KWOK_SETTLE_SECONDS = 3.0
"""How long kwok must keep running after its start to count as started (its start-up race strikes within one s)."""
"""Annotation kwok selects the nodes it simulates by."""

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
    """The control plane could not start or be reached; the message says which part and where its log is."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def default_dir() -> Path:
    return toolchain.cache_dir() / "cluster"


# ---------------------------------------------------------------------------------------------------- certificates


def _write_pki(pki: Path) -> None:
    """A CA, the API server's serving certificate, an admin client certificate (group system:masters) and the
    ServiceAccount token signing key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    pki.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def write_key(name: str, k: ec.EllipticCurvePrivateKey) -> None:
        (pki / name).write_bytes(
            k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )
        (pki / name).chmod(0o600)

    def name(cn: str, org: str | None = None) -> x509.Name:
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        if org:
            attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
        return x509.Name(attrs)

    ca_key = key()
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("supersonic-local-ca"))
        .issuer_name(name("supersonic-local-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    write_key("ca.key", ca_key)
    (pki / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    def leaf(filename: str, subject: x509.Name, usage: x509.ObjectIdentifier, sans: list[x509.GeneralName]) -> None:
        k = key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca.subject)
            .public_key(k.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        write_key(f"{filename}.key", k)
        (pki / f"{filename}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    from cryptography.x509.oid import ExtendedKeyUsageOID

    first_service_ip = ipaddress.IPv4Network(SERVICE_CIDR)[1]
    leaf(
        "apiserver",
        name("kube-apiserver"),
        ExtendedKeyUsageOID.SERVER_AUTH,
        [
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes"),
            x509.DNSName("kubernetes.default"),
            x509.DNSName("kubernetes.default.svc"),
            x509.DNSName("kubernetes.default.svc.cluster.local"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(first_service_ip),
        ],
    )
    leaf("admin", name(ADMIN_USER, "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH, [])
    write_key("sa.key", key())
    sa_key = serialization.load_pem_private_key((pki / "sa.key").read_bytes(), None)
    (pki / "sa.pub").write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )


def write_kubeconfig(path: Path, server: str, pki: Path) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [
            {
                "name": ADMIN_USER,
                "user": {"client-certificate": str(pki / "admin.crt"), "client-key": str(pki / "admin.key")},
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": ADMIN_USER}}],
        "current-context": "local",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)


# ------------------------------------------------------------------------------------------------------- processes


@dataclass
class Component:
    name: str
    argv: list[str]


@dataclass
class LocalCluster:
    """The control plane rooted at ``directory`` (pki, etcd data, logs, kubeconfig, pids, Pulumi backend)."""

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
    def pulumi_home(self) -> Path:
        return self.directory / "pulumi-home"

    @property
    def backend_dir(self) -> Path:
        return self.directory / "backend"

    def env(self) -> dict[str, str]:
        """What a shell or a test needs to run kubectl, helm and the Pulumi CLI against this cluster, offline."""
        bins = [str(toolchain.path("pulumi").parent), *(str(binaries.path(n).parent) for n in ("kubectl", "helm"))]
        return {
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": os.pathsep.join([*bins, os.environ.get("PATH", "")]),
            **pulumi_env(self.pulumi_home, f"file://{self.backend_dir}", PASSPHRASE),
            # `./supersonic pulumi` then runs in a scratch copy of the project here: creating a stack on this
            # throwaway backend writes an encryption salt into the stack file, which must not touch stacks/.
            SCRATCH_PROJECT_ENV: str(self.directory / "project"),
        }

    def running(self) -> bool:
        """Every component this cluster started still runs."""
        if not self.state_file.is_file():
            return False
        recorded = json.loads(self.state_file.read_text()).get("pids", {})
        alive = self._pids()
        return bool(recorded) and set(alive) == set(recorded) and all(_alive(pid) for pid in alive.values())

    def _pids(self) -> dict[str, int]:
        """The components this cluster started that still run: a pid is trusted only while it runs the binary
        recorded for it (after a reboot, a recorded pid may be any other process)."""
        if not self.state_file.is_file():
            return {}
        state = json.loads(self.state_file.read_text())
        exes = state.get("exes", {})
        found = {}
        for name, pid in state.get("pids", {}).items():
            try:
                if os.readlink(f"/proc/{int(pid)}/exe") == exes.get(name):
                    found[name] = int(pid)
            except OSError:
                continue
        return found

    # ---------------------------------------------------------------------------------------------------- start

    def start(self, *, log: Callable[[str], None] = print, timeout: float = 120.0) -> None:
        if self.running():
            log(f"cluster: already running ({self.kubeconfig})")
            return
        self.stop(log=lambda _line: None)
        started = time.monotonic()
        paths = toolchain.ensure(
            ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "pulumi"], log=log
        )
        kubectl = binaries.ensure("kubectl")
        self.directory.mkdir(parents=True, exist_ok=True)
        pki = self.directory / "pki"
        _write_pki(pki)
        for sub in ("logs", "etcd"):
            (self.directory / sub).mkdir(exist_ok=True)
        self.backend_dir.mkdir(exist_ok=True)
        self.pulumi_home.mkdir(exist_ok=True)

        etcd_client, etcd_peer, api_port = free_port(), free_port(), free_port()
        server = f"https://127.0.0.1:{api_port}"
        write_kubeconfig(self.kubeconfig, server, pki)
        kubeconfig = str(self.kubeconfig)
        etcd_url = f"http://127.0.0.1:{etcd_client}"
        peer_url = f"http://127.0.0.1:{etcd_peer}"
        pids: dict[str, int] = {}
        exes: dict[str, str] = {}

        def launch(component: Component) -> subprocess.Popen[bytes]:
            with (self.directory / "logs" / f"{component.name}.log").open("ab") as out:
                proc = subprocess.Popen(
                    component.argv,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    # Only a prctl call between fork and exec: no lock a thread could hold is touched.
                    preexec_fn=_die_with_parent if self.tied else None,  # noqa: PLW1509
                )
            pids[component.name] = proc.pid
            exes[component.name] = component.argv[0]
            self.state_file.write_text(json.dumps({"pids": pids, "exes": exes, "server": server}, indent=2))
            return proc

        try:
            launch(
                Component(
                    "etcd",
                    [
                        str(paths["etcd"]),
                        "--name=local",
                        f"--data-dir={self.directory / 'etcd'}",
                        f"--listen-client-urls={etcd_url}",
                        f"--advertise-client-urls={etcd_url}",
                        f"--listen-peer-urls={peer_url}",
                        f"--initial-advertise-peer-urls={peer_url}",
                        f"--initial-cluster=local={peer_url}",
                        "--unsafe-no-fsync=true",
                    ],
                )
            )
            _wait(lambda: _http_ok(f"{etcd_url}/health"), timeout, "etcd", self._log("etcd"))
            launch(
                Component(
                    "kube-apiserver",
                    [
                        str(paths["kube-apiserver"]),
                        f"--etcd-servers={etcd_url}",
                        f"--cert-dir={pki}",
                        f"--tls-cert-file={pki / 'apiserver.crt'}",
                        f"--tls-private-key-file={pki / 'apiserver.key'}",
                        f"--client-ca-file={pki / 'ca.crt'}",
                        f"--secure-port={api_port}",
                        "--bind-address=127.0.0.1",
                        "--advertise-address=127.0.0.1",
                        f"--service-cluster-ip-range={SERVICE_CIDR}",
                        "--allow-privileged=true",
                        "--authorization-mode=RBAC",
                        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                        f"--service-account-key-file={pki / 'sa.pub'}",
                        f"--service-account-signing-key-file={pki / 'sa.key'}",
                    ],
                )
            )
            _wait(
                lambda: self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0,
                timeout,
                "kube-apiserver",
                self._log("kube-apiserver"),
            )
            launch(
                Component(
                    "kube-controller-manager",
                    [
                        str(paths["kube-controller-manager"]),
                        f"--kubeconfig={kubeconfig}",
                        "--leader-elect=false",
                        "--secure-port=0",
                        "--use-service-account-credentials=true",
                        f"--service-account-private-key-file={pki / 'sa.key'}",
                        f"--root-ca-file={pki / 'ca.crt'}",
                        f"--cluster-cidr={POD_CIDR}",
                        "--controllers=*",
                    ],
                )
            )
            launch(
                Component(
                    "kube-scheduler",
                    [
                        str(paths["kube-scheduler"]),
                        f"--kubeconfig={kubeconfig}",
                        "--leader-elect=false",
                        "--secure-port=0",
                    ],
                )
            )
            kwok_config = self.directory / "kwok.yaml"
            kwok_config.write_text(yaml.safe_dump_all([LOAD_BALANCER_STAGE, *self.pod_stages], sort_keys=False))
            kwok = Component(
                "kwok",
                [
                    str(paths["kwok"]),
                    f"--kubeconfig={kubeconfig}",
                    f"--config={kwok_config}",
                    f"--manage-nodes-with-annotation-selector={KWOK_MANAGED}=fake",
                    "--node-lease-duration-seconds=40",
                    f"--cidr={POD_CIDR}",
                    "--node-ip=127.0.0.1",
                    f"--server-address=127.0.0.1:{free_port()}",
                ],
            )
            # kwok 0.7.0 sometimes dies as it starts its stage controllers together ("fatal error: concurrent map
            # writes" in its CEL type registry, seen here about once in ten starts): it is started again.
            for attempt in range(1, KWOK_STARTS + 1):
                proc = launch(kwok)
                deadline = time.monotonic() + KWOK_SETTLE_SECONDS
                while proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.1)
                if proc.poll() is None:
                    break
                log(f"cluster: kwok exited as it started (attempt {attempt} of {KWOK_STARTS}); starting it again")
            else:
                raise ClusterError(f"kwok exited as it started, {KWOK_STARTS} times; see {self._log('kwok')}")
            self._seed(kubectl, timeout, log)
        except BaseException:
            self.stop(log=lambda _line: None, keep_logs=True)
            raise
        log(f"cluster: ready in {time.monotonic() - started:.1f} s at {server} (KUBECONFIG={self.kubeconfig})")

    def _log(self, component: str) -> Path:
        return self.directory / "logs" / f"{component}.log"

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

    def _seed(self, kubectl: Path, timeout: float, log: Callable[[str], None]) -> None:
        """Nodes, KEDA's CRDs, and a pool of PersistentVolumes; then wait until pods can be scheduled and run."""
        del kubectl
        docs: list[dict[str, Any]] = [_node(spec) for spec in [*PLAIN_NODES, *AF_NODES, VIRTUAL_NODE]]
        docs += keda_crds()
        # Static volumes, as the CVMFS CSI driver's class provides on Geddes: each namespace's `cvmfs` claim binds.
        storage_class = CHART.model_repository_storage_class
        docs += [_persistent_volume(f"{storage_class}-{index}", storage_class) for index in range(1, CVMFS_VOLUMES + 1)]
        self.kubectl("apply", "--server-side", "-f", "-", input_text=yaml.safe_dump_all(docs))
        # Polled here: `kubectl wait` fails at once when it reads the CRD before its conditions exist.
        established = '{.status.conditions[?(@.type=="Established")].status}'
        _wait(
            lambda: (
                self.kubectl(
                    "get", "crd/scaledobjects.keda.sh", "-o", f"jsonpath={established}", check=False
                ).stdout.strip()
                == "True"
            ),
            timeout,
            "the KEDA CRDs",
            self._log("kube-apiserver"),
        )
        ready = '{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}'
        nodes = sum(1 for d in docs if d["kind"] == "Node")
        _wait(
            lambda: (
                self.kubectl("get", "nodes", "-o", f"jsonpath={ready}", check=False).stdout.split() == ["True"] * nodes
            ),
            timeout,
            "kwok's nodes",
            self._log("kwok"),
        )
        # Pods are admitted only once the namespace's default ServiceAccount exists (the controller-manager
        # makes it): wait for the one in "default" as a sign that controller is running.
        _wait(
            lambda: self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0,
            timeout,
            "kube-controller-manager",
            self._log("kube-controller-manager"),
        )
        log(f"cluster: nodes {', '.join(d['metadata']['name'] for d in docs if d['kind'] == 'Node')}; KEDA CRDs")

    # ----------------------------------------------------------------------------------------------------- stop

    def stop(self, *, log: Callable[[str], None] = print, keep_logs: bool = False, timeout: float = 20.0) -> None:
        """Stop every process this cluster started (newest first) and remove its data; with ``keep_logs``
        leave the directory for reading."""
        pids = self._pids()
        for name in reversed(list(pids)):
            _terminate(pids[name], timeout)
        if pids:
            log(f"cluster: stopped {', '.join(reversed(list(pids)))}")
        if self.state_file.exists():
            self.state_file.unlink()
        if not keep_logs:
            import shutil

            # The cluster's data goes, and with it the Pulumi state that described it: a state left behind would
            # say a (protected) release exists on the next, empty, cluster.
            for data in ("etcd", "backend", "project"):
                shutil.rmtree(self.directory / data, ignore_errors=True)


def pulumi_env(home: Path, backend: str, passphrase: str) -> dict[str, str]:
    """The Pulumi CLI run offline: a private home, the plugins installed from local binaries only, no update check."""
    from supersonic_interlink.engine.run import OFFLINE_ENV

    return {
        "PULUMI_HOME": str(home),
        "PULUMI_BACKEND_URL": backend,
        "PULUMI_CONFIG_PASSPHRASE": passphrase,
        **OFFLINE_ENV,
    }


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


def keda_crds() -> list[dict[str, Any]]:
    """KEDA's own CRD manifests, read from its Go module at the version ``tools/keda/go.mod`` pins."""
    source = toolchain.module_source("keda")
    docs = []
    for path in sorted((source / "config" / "crd" / "bases").glob("*.yaml")):
        docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    if not any(d.get("metadata", {}).get("name") == "scaledobjects.keda.sh" for d in docs):
        raise ClusterError(f"no scaledobjects.keda.sh CRD in {source}/config/crd/bases")
    return docs


def _die_with_parent() -> None:
    """In the child before exec: the kernel sends SIGTERM when the parent exits (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this process counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _terminate(pid: int, timeout: float) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    return
            except ChildProcessError:
                if not _alive(pid):
                    return
            time.sleep(0.05)


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _wait(ready: Callable[[], bool], timeout: float, what: str, log_file: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    tail = log_file.read_text(errors="replace")[-3000:] if log_file.is_file() else "(no log)"
    raise ClusterError(f"{what} was not ready within {timeout:.0f} s; its log ({log_file}) ends:\n{tail}")


@contextmanager
def running(directory: Path, *, log: Callable[[str], None] = print) -> Iterator[LocalCluster]:
    cluster = LocalCluster(directory)
    cluster.start(log=log)
    try:
        yield cluster
    finally:
        cluster.stop(log=log)
