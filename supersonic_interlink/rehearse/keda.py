"""KEDA's real operator (``tools/keda``'s pin) against the local control plane for one namespace: ``WATCH_NAMESPACE``
(``pkg/util/watch.go``), and ``--cert-dir`` certificates its metrics service loads or exits
(``pkg/metricsservice/utils/tls.go``): the API server's own."""

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


@contextlib.contextmanager
def keda_running(cluster: LocalCluster, namespace: str, directory: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The operator (built if not cached: about 25 minutes on two cores) watching ``namespace``."""
    executable = toolchain.ensure([OPERATOR], log=lambda _line: None)[OPERATOR]
    certs = directory / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    links = {"ca.crt": cluster.ca_certificate, "tls.crt": cluster.serving_certificate, "tls.key": cluster.serving_key}
    for name, target in links.items():
        (certs / name).unlink(missing_ok=True)
        (certs / name).symlink_to(target)
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
    log = directory / "keda-operator.log"
    process = start_process(argv, log, env=env)
    try:
        ready = partial(answers, f"http://{health}/readyz")
        wait_until(ready, START_TIMEOUT_SECONDS, f"{OPERATOR} to be ready", interval=0.2, log_file=log, process=process)
        yield process
    finally:
        stop_process(process)
