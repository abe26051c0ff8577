"""KEDA's real operator (built by ``toolchain`` from the module ``tools/keda`` pins) as a process against the local
control plane, for one namespace. What it needs, read in ``cmd/operator/main.go`` and ``pkg/util`` at the pinned
version: ``WATCH_NAMESPACE`` set (``pkg/util/watch.go``: unset is an error, empty means every namespace), so other
releases' ScaledObjects are left alone; ``KEDA_CLUSTER_OBJECT_NAMESPACE`` (``pkg/util/env_resolver.go``; otherwise read
from the in-cluster ServiceAccount mount) and ``POD_NAMESPACE``; ``--cert-dir`` with ``ca.crt``, ``tls.crt`` and
``tls.key``, which its gRPC metrics service loads as it starts (``pkg/metricsservice/utils/tls.go``) or the operator
exits, though nothing here connects to it (scaling between 0 and 1 is the operator's own loop, not the HPA's): links to
the API server's serving certificate for 127.0.0.1 (``apiserver.crt`` holds it followed by its CA, all ``ca.crt``
must add); its three listeners, which default to every interface, on free loopback ports.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from functools import partial
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
from supersonic_interlink.rehearse.loopback import answers

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


@contextlib.contextmanager
def keda_running(cluster: LocalCluster, namespace: str, directory: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The operator (built if not cached: about 25 minutes on two cores) watching ``namespace`` until the end."""
    executable = toolchain.ensure([OPERATOR], log=lambda _line: None)[OPERATOR]
    certs = link_certs(cluster, directory / "certs")
    cluster.kubectl("create", "namespace", CLUSTER_OBJECT_NAMESPACE, check=False)
    health = f"{LOOPBACK}:{free_port()}"
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
        f"--health-probe-bind-address={health}",
        f"--metrics-service-bind-address={LOOPBACK}:{free_port()}",
        "--zap-log-level=info",
    ]
    log_path = directory / "keda-operator.log"
    process = start_process(argv, log_path, env=env)
    ready = partial(answers, f"http://{health}/readyz")
    try:
        wait_until(
            ready,
            START_TIMEOUT_SECONDS,
            f"{OPERATOR} to report ready",
            interval=0.2,
            log_file=log_path,
            process=process,
        )
        yield process
    finally:
        stop_process(process)
