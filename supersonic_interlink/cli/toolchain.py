"""``./supersonic toolchain build [NAME ...] | path NAME``: the engine toolchain, built from Go modules."""

from __future__ import annotations

import sys

from supersonic_interlink.cli import args as args_
from supersonic_interlink.engine.toolchain import BUILDS, ToolchainError, build_for, ensure, path

NAMES = [name for build in BUILDS for name in build.packages]


def parser() -> args_.Parser:
    parser = args_.Parser(
        prog="./supersonic toolchain",
        description="The Pulumi CLI, provider and local control plane, built from the Go modules under tools/ and "
        "cached.",
        epilog="example: ./supersonic toolchain build pulumi pulumi-resource-kubernetes",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser(
        "build",
        prog="./supersonic toolchain build",
        help="build what is missing from the cache (every binary without NAME), a line per binary",
    )
    build.add_argument("names", nargs="*", metavar="NAME", help=f"binaries: {', '.join(NAMES)}")
    where = commands.add_parser(
        "path", prog="./supersonic toolchain path", help="where NAME's binary is (built or not)"
    )
    where.add_argument("name", metavar="NAME", choices=NAMES, help=f"one of: {', '.join(NAMES)}")
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "path":
            print(path(args.name))
            return 0
        for name in args.names:
            build_for(name)
    except ToolchainError as err:
        print(f"toolchain: {err}", file=sys.stderr)
        return 2
    try:
        ensure(args.names or None, log=lambda line: print(line, flush=True))
    except ToolchainError as err:
        print(f"toolchain: {err}", file=sys.stderr)
        return 1
    return 0
