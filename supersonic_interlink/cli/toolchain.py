"""``./supersonic toolchain build [NAME ...] | path NAME``: the engine toolchain, built from Go modules."""

from __future__ import annotations

import sys

from supersonic_interlink.engine.toolchain import BUILDS, USAGE, ToolchainError, build_for, ensure, path


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]) or (argv[:1] in (["build"], ["path"]) and argv[1:2] in (["-h"], ["--help"])):
        print(USAGE.format(names=", ".join(n for b in BUILDS for n in b.packages)))
        return 0
    if len(argv) >= 1 and argv[0] == "path" and len(argv) == 2:
        try:
            print(path(argv[1]))
        except ToolchainError as err:
            print(f"toolchain: {err}", file=sys.stderr)
            return 2
        return 0
    if argv and argv[0] == "build":
        try:
            for name in argv[1:]:
                build_for(name)
        except ToolchainError as err:
            print(f"toolchain: {err}", file=sys.stderr)
            return 2
        try:
            ensure(argv[1:] or None, log=lambda line: print(line, flush=True))
        except ToolchainError as err:
            print(f"toolchain: {err}", file=sys.stderr)
            return 1
        return 0
    print(USAGE.format(names=", ".join(n for b in BUILDS for n in b.packages)), file=sys.stderr)
    return 2
