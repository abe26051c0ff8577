"""KEDA's real operator (``keda-operator``, built by ``toolchain`` from the module ``tools/keda`` pins), run as a
process against the local control plane for one namespace.

What it needs, read in ``cmd/operator/main.go`` and ``pkg/util`` at the pinned version:

- ``WATCH_NAMESPACE`` must be set (``pkg/util/watch.go``: unset is an error, empty means every namespace): the
  rehearsal's namespace, so ScaledObjects of other releases on the same cluster are left alone;
- ``KEDA_CLUSTER_OBJECT_NAMESPACE`` (``pkg/util/env_resolver.go``; otherwise read from the in-cluster
  ServiceAccount mount, which a process has not) and ``POD_NAMESPACE`` (the leader-election namespace);
- ``--cert-dir`` holding ``ca.crt``, ``tls.crt`` and ``tls.key`` (``pkg/metricsservice/utils/tls.go``): its gRPC
  metrics service loads them as it starts, and the operator exits if it cannot, though nothing here connects to it
  (the metrics API server and the admission webhooks are not run: scaling between 0 and 1 is the operator's own
  scale loop, not the HPA's). So they are links to the serving certificate the API server made for 127.0.0.1 in
  the cluster's ``pki/`` (``apiserver.crt`` holds it followed by its CA, which is all ``ca.crt`` must add);
- its three listeners (metrics, health probes, metrics service) default to every interface: they are put on
  free loopback ports.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import (
    LOOPBACK,
    LocalCluster,
    free_port,
    start_process,
    stop_process,
    wait_until,
)

OPERATOR = "keda-operator"
CLUSTER_OBJECT_NAMESPACE = "keda"
START_TIMEOUT_SECONDS = 60.0


def link_certs(cluster: LocalCluster, directory: Path) -> Path:
    """``directory`` holding the operator's ``ca.crt``, ``tls.crt`` and ``tls.key``: links to the API server's own."""
    directory.mkdir(parents=True, exist_ok=True)
    certs = {"ca.crt": cluster.ca_certificate, "tls.crt": cluster.serving_certificate, "tls.key": cluster.serving_key}
    for name, target in certs.items():
        (directory / name).unlink(missing_ok=True)
        (directory / name).symlink_to(target)
    return directory


@dataclass
class KedaOperator:
    process: subprocess.Popen[bytes]
    log_path: Path
    health_port: int

    def healthy(self) -> bool:
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
    certs = link_certs(cluster, directory / "certs")
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
    operator = KedaOperator(start_process(argv, log_path, env=env), log_path, health_port)
    try:
        wait_until(
            operator.healthy,
            START_TIMEOUT_SECONDS,
            "keda-operator to report ready",
            interval=0.2,
            log_file=log_path,
            process=operator.process,
        )
        yield operator
    finally:
        stop_process(operator.process)
