"""KEDA's real operator (``keda-operator``, built by ``toolchain`` from the module ``tools/keda`` pins), run as a
process against the local control plane for one namespace.

What it needs, read in ``cmd/operator/main.go`` and ``pkg/util`` at the pinned version:

- ``WATCH_NAMESPACE`` must be set (``pkg/util/watch.go``: unset is an error, empty means every namespace): the
  rehearsal's namespace, so ScaledObjects of other releases on the same cluster are left alone;
- ``KEDA_CLUSTER_OBJECT_NAMESPACE`` (``pkg/util/env_resolver.go``; otherwise read from the in-cluster
  ServiceAccount mount, which a process has not) and ``POD_NAMESPACE`` (the leader-election namespace);
- ``--cert-dir`` holding ``ca.crt``, ``tls.crt`` and ``tls.key`` (``pkg/metricsservice/utils/tls.go``): its gRPC
  metrics service serves with them even though nothing here asks it (the metrics API server and the admission
  webhooks are not run: scaling between 0 and 1 is the operator's own scale loop, not the HPA's);
- its three listeners (metrics, health probes, metrics service) default to every interface: they are put on
  free loopback ports.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import LocalCluster, free_port
from supersonic_interlink.rehearse.loopback import LOOPBACK, stop_process

OPERATOR = "keda-operator"
CLUSTER_OBJECT_NAMESPACE = "keda"
START_TIMEOUT_SECONDS = 60.0


class KedaError(Exception):
    """The operator could not start; the message ends with its log."""


def write_certs(directory: Path) -> None:
    """A CA and a serving certificate for loopback, as the operator's ``--cert-dir`` wants them."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rehearsal-keda-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, OPERATOR)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(LOOPBACK))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (directory / "ca.crt").write_bytes(ca.public_bytes(pem))
    (directory / "tls.crt").write_bytes(cert.public_bytes(pem))
    (directory / "tls.key").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (directory / "tls.key").chmod(0o600)


@dataclass
class KedaOperator:
    process: subprocess.Popen[bytes]
    log_path: Path
    health_port: int

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def healthy(self) -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{self.health_port}/readyz", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False


def binary() -> Path:
    """The operator's binary, built (about 25 minutes on two cores) if it is not in the cache."""
    return toolchain.ensure([OPERATOR], log=lambda _line: None)[OPERATOR]


@contextlib.contextmanager
def keda_running(cluster: LocalCluster, namespace: str, directory: Path) -> Iterator[KedaOperator]:
    """The operator watching ``namespace`` of ``cluster`` until the block ends."""
    executable = binary()
    certs = directory / "certs"
    write_certs(certs)
    cluster.kubectl("create", "namespace", CLUSTER_OBJECT_NAMESPACE, check=False)
    health_port = free_port()
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "WATCH_NAMESPACE": namespace,
        "KEDA_CLUSTER_OBJECT_NAMESPACE": CLUSTER_OBJECT_NAMESPACE,
        "POD_NAMESPACE": CLUSTER_OBJECT_NAMESPACE,
    }
    argv = [
        str(executable),
        "--leader-elect=false",
        f"--cert-dir={certs}",
        f"--ca-dir={certs}",
        f"--metrics-bind-address={LOOPBACK}:{free_port()}",
        f"--health-probe-bind-address={LOOPBACK}:{health_port}",
        f"--metrics-service-bind-address={LOOPBACK}:{free_port()}",
        "--zap-log-level=info",
    ]
    log_path = directory / "keda-operator.log"
    with log_path.open("ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    operator = KedaOperator(process, log_path, health_port)
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not operator.healthy():
            if process.poll() is not None or time.monotonic() > deadline:
                raise KedaError(
                    f"keda-operator did not become ready; its log ({log_path}) ends:\n{operator.log()[-3000:]}"
                )
            time.sleep(0.2)
        yield operator
    finally:
        stop_process(process)
