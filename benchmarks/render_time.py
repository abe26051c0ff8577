"""How long `./supersonic render <stack>` takes, against the bare cost of importing Pulumi's SDKs.

    python benchmarks/render_time.py [--runs N] [--stack hammer]

Each run is a fresh interpreter, as a user runs it. Prints medians and spreads in seconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# What any evaluation of the program imports before it can register a resource.
TYPED_MODULES = (
    "import pulumi, pulumi_kubernetes.core.v1, pulumi_kubernetes.batch.v1, pulumi_kubernetes.rbac.v1, "
    "pulumi_kubernetes.helm.v3, pulumi_kubernetes.meta.v1"
)


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - start


def series(command: list[str], runs: int) -> list[float]:
    timed(command)  # warm the bytecode cache and the page cache
    return [timed(command) for _ in range(runs)]


def describe(label: str, samples: list[float]) -> str:
    return (
        f"{label:<38} median {statistics.median(samples):.3f} s   min {min(samples):.3f}   "
        f"max {max(samples):.3f}   (n={len(samples)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--stack", default="hammer")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as out:
        render = [python, "-m", "supersonic_interlink", "render"]
        rows = [
            (
                "python -c 'import pulumi, pulumi_kubernetes'",
                series([python, "-c", "import pulumi, pulumi_kubernetes"], args.runs),
            ),
            ("+ the typed modules the program uses", series([python, "-c", TYPED_MODULES], args.runs)),
            (f"render {args.stack}", series([*render, args.stack], args.runs)),
            (f"render {args.stack} --out DIR", series([*render, args.stack, "--out", out], args.runs)),
            (f"render {args.stack} --check", series([*render, args.stack, "--check"], args.runs)),
        ]
    for label, samples in rows:
        print(describe(label, samples))
    bare, typed, rendered = (statistics.median(rows[i][1]) for i in range(3))
    print(
        f"render over the bare import: +{rendered - bare:.3f} s; over importing the typed modules the program "
        f"needs anyway: +{rendered - typed:.3f} s; render / typed imports: {rendered / typed:.2f}x (target <= 1.25x)"
    )


if __name__ == "__main__":
    main()
