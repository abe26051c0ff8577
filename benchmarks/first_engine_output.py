"""Benchmark: how long ``./supersonic pulumi preview`` takes to its first engine output on a machine that has the
Pulumi CLI and the provider installed, against a cold build of both from their Go modules.

    .venv/bin/python benchmarks/first_engine_output.py [--runs N] [--build-log FILE]

Installed: the built CLI copied onto PATH as ``pulumi`` (as the official one is installed), the provider put into a
fresh Pulumi home by ``pulumi plugin install --file``, an empty toolchain cache and no ``go`` on PATH, a file
backend. Each run is a fresh ``python -m supersonic_interlink pulumi preview hammer``; two times are taken: the
project's first line (``engine: pulumi CLI ...``) and the CLI's own first line (``Previewing update ...``). The run
is stopped there (no cluster is needed for that much).

Cold: the same command with no CLI and no provider anywhere starts by building both. Such a build is not run here
(it takes tens of minutes on two cores); its times are read from a toolchain build log's ``built in`` lines
(``--build-log``, written by ``./supersonic toolchain build``), and the installed path's time is added to them.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV

PROVIDER = toolchain.version(toolchain.build_for("pulumi-resource-kubernetes"))


def machine(directory: Path) -> dict[str, str]:
    """The environment of a machine with the CLI and provider installed, and nothing to build with."""
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    shutil.copy2(toolchain.path("pulumi"), bin_dir / "pulumi")
    for sub in ("cache", "home", "backend"):
        (directory / sub).mkdir()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SUPERSONIC_CACHE": str(directory / "cache"),
        "PULUMI_HOME": str(directory / "home"),
        "PULUMI_BACKEND_URL": f"file://{directory / 'backend'}",
        "PULUMI_CONFIG_PASSPHRASE": "benchmark-only",
        SCRATCH_PROJECT_ENV: str(directory / "project"),
    }
    provider = str(toolchain.path("pulumi-resource-kubernetes"))
    subprocess.run(
        [str(bin_dir / "pulumi"), "plugin", "install", "resource", "kubernetes", PROVIDER, "--file", provider],
        env=env,
        check=True,
        capture_output=True,
    )
    return env


def first_lines(env: dict[str, str]) -> tuple[float, float]:
    """Seconds to the project's ``engine:`` line and to the CLI's first line after it."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "supersonic_interlink", "pulumi", "preview", "hammer"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    ours = cli = None
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if ours is None and line.startswith("engine: "):
                ours = time.perf_counter() - started
            elif ours is not None and line.strip():
                cli = time.perf_counter() - started
                break
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    if ours is None or cli is None:
        raise SystemExit("the preview printed no engine line, or nothing after it")
    return ours, cli


def built_seconds(log: Path) -> dict[str, int]:
    found = re.findall(r"toolchain: (\S+) v\S+ built in (?:(\d+) s|(\d+)m(\d\d)s)", log.read_text())
    return {name: int(s) if s else int(m) * 60 + int(ss) for name, s, m, ss in found}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--build-log", type=Path, help="a toolchain build log with the cold build's times")
    args = parser.parse_args()
    for name in ("pulumi", "pulumi-resource-kubernetes"):
        if not toolchain.path(name).is_file():
            raise SystemExit(f"{name} is not built yet: ./supersonic toolchain build {name}")
    ours, cli = [], []
    with tempfile.TemporaryDirectory() as scratch:
        env = machine(Path(scratch))
        first_lines(env)  # warms the page cache and creates the stack in the backend
        for _ in range(args.runs):
            a, b = first_lines(env)
            ours.append(a)
            cli.append(b)
    print(f"installed CLI, first project line: median {statistics.median(ours):.2f} s (n={len(ours)})")
    print(f"installed CLI, first CLI line:     median {statistics.median(cli):.2f} s (n={len(cli)})")
    if args.build_log:
        built = built_seconds(args.build_log)
        cli_s, provider_s = built.get("pulumi", 0), built.get("pulumi-resource-kubernetes", 0)
        after = cli_s + provider_s + statistics.median(cli)
        print(f"cold build, from {args.build_log}: pulumi {cli_s} s + provider {provider_s} s")
        print(f"cold build, first CLI line after about {after:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
