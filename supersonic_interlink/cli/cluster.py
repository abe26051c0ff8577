"""``./supersonic cluster start|stop|env|status``: the local control plane on 127.0.0.1."""

from __future__ import annotations

import sys

from supersonic_interlink.chart import binaries
from supersonic_interlink.cli import args as args_
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import ClusterError, LocalCluster, default_dir


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic cluster",
        description="A local Kubernetes control plane on 127.0.0.1 (etcd, kube-apiserver, controller-manager, "
        "scheduler, kwok nodes incl. the interLink virtual node).",
        epilog='example: ./supersonic cluster start && eval "$(./supersonic cluster env)" && kubectl get nodes',
    )
    parser.add_argument("action", choices=["start", "stop", "env", "status"])
    parser.add_argument("--dir", type=args_.path, default=None, help=f"where its files live (default {default_dir()})")
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    cluster = LocalCluster((args.dir or default_dir()).resolve())
    try:
        if args.action == "start":
            cluster.start(log=lambda line: print(line, file=sys.stderr, flush=True))
            print(cluster.kubeconfig)
        elif args.action == "stop":
            cluster.stop(log=lambda line: print(line, file=sys.stderr))
        elif args.action == "status":
            print("running" if cluster.running() else "stopped")
            return 0 if cluster.running() else 1
        else:
            if not cluster.running():
                print(
                    f"cluster: not running in {cluster.directory}; start it with ./supersonic cluster start",
                    file=sys.stderr,
                )
                return 1
            import shlex

            for key, value in cluster.env().items():
                print(f"export {key}={shlex.quote(value)}")
    except (ClusterError, toolchain.ToolchainError, binaries.BinaryError) as err:
        print(f"cluster: {err}", file=sys.stderr)
        return 1
    return 0
