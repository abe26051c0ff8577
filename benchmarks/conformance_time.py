"""How long the chart conformance check takes for a stack, and what it spends the time on.

    python benchmarks/conformance_time.py [--stack hammer] [--chart DIR] [--runs N]

DIR defaults to the conforming test chart (tests/charts/conforming); point it at a checkout of the real chart to
measure that. Prints the median wall time of one Helm render, of the whole check (the render, the contract checks
and the render of the chart's own Envoy configuration), and of
`./supersonic render <stack> --check --chart DIR` in a fresh interpreter, as a user runs it, and the CPU time the check
uses (this process and the Helm and post-renderer processes it starts): on a shared machine the wall time
depends on the other load, the CPU time hardly does, and CPU time / cores is the wall time the check needs at best.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import describe

from supersonic_interlink.chart.helm import ChartRenderer
from supersonic_interlink.components.supersonic_release import POSTRENDER
from supersonic_interlink.render import conformance
from supersonic_interlink.render import stack as rendering


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its finished children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="hammer")
    parser.add_argument("--chart", type=Path, default=ROOT / "tests" / "charts" / "conforming")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    expected = conformance.Expected.from_rendered(rendering.render(args.stack, chart_dir=args.chart))
    print(f"stack {args.stack}, chart {args.chart}, {os.cpu_count()} cores")

    renders = []
    with ChartRenderer(
        args.chart, expected.release_name, expected.namespace, expected.served, ROOT / POSTRENDER
    ) as renderer:
        renderer.render(expected.values)
        for _ in range(args.runs * 3):
            start = time.perf_counter()
            renderer.render(expected.values)
            renders.append(time.perf_counter() - start)
    print(describe("one helm template --dry-run=server + post-render", renders, width=52))

    checks, cpu, found = [], [], []
    for _ in range(args.runs):
        before = cpu_seconds()
        start = time.perf_counter()
        found = conformance.check(args.chart, expected)
        checks.append(time.perf_counter() - start)
        cpu.append(cpu_seconds() - before)
    print(describe("conformance.check (in process)", checks, width=52))
    print(describe("  CPU time it uses (all processes)", cpu, width=52))
    print(f"  findings: {len(found)}; load average now {os.getloadavg()[0]:.1f}")

    cli = [sys.executable, "-m", "supersonic_interlink"]
    command = [*cli, "render", args.stack, "--check", "--chart", str(args.chart)]
    whole = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, capture_output=True, timeout=300, check=False)
        whole.append(time.perf_counter() - start)
    print(describe(f"./supersonic render {args.stack} --check --chart DIR", whole, width=52))


if __name__ == "__main__":
    main()
