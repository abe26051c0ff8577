"""``./supersonic cluster start|stop|env|status``: the local control plane on 127.0.0.1."""

from __future__ import annotations

from supersonic_interlink.cli import args as args_
from supersonic_interlink.engine.cluster import default_dir


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
    # lazy: the verb's package loads only when the verb runs (--help and completion build every parser)
    from supersonic_interlink.engine.cluster import run_cluster

    return run_cluster(args.action, (args.dir or default_dir()).resolve())
