"""``./supersonic stack new NAME --namespace NS --release REL --node NODE [--from STACK]``: a new cluster's stack.

Writes stacks/Pulumi.NAME.yaml from STACK's (default hammer) with NAME's own namespace, release name, virtual node
and load-metric selectors, none of STACK's comments or secrets, then renders and checks it. An existing file is never
overwritten (exit 2).
"""

from __future__ import annotations

from supersonic_interlink.cli import args as args_


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic stack",
        description=__doc__.split("\n\n")[0],
        epilog="example: ./supersonic stack new anvil --namespace cms --release sonic-anvil --node interlink-anvil",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{new}")
    new = commands.add_parser("new", prog="./supersonic stack new", help="write and check a new stack file")
    new.add_argument("name", metavar="NAME", type=args_.name, help="the new stack's name")
    new.add_argument("--namespace", required=True, type=args_.name, help="the release's namespace on that cluster")
    new.add_argument("--release", required=True, type=args_.name, help="the Helm release name")
    new.add_argument("--node", required=True, type=args_.name, help="the interLink virtual node Triton runs on")
    new.add_argument("--from", dest="source", default="hammer", type=args_.name, help="the stack to start from")
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    # lazy: the verb's package loads only when the verb runs (--help and completion build every parser)
    from supersonic_interlink.render.new_stack import run

    return run(args.name, namespace=args.namespace, release=args.release, node=args.node, source=args.source)
