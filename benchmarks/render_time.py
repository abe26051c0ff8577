"""How long `./supersonic render <stack>` takes, against the bare cost of importing Pulumi's SDKs.

    python benchmarks/render_time.py [--runs N] [--stack hammer]

Each run is a fresh interpreter, as a user runs it. Prints medians and spreads in seconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from timing import command_series, describe

ROOT = Path(__file__).resolve().parent.parent


# What any evaluation of the program imports before it can register a resource.
TYPED_MODULES = (
    "import pulumi, pulumi_kubernetes.core.v1, pulumi_kubernetes.batch.v1, pulumi_kubernetes.rbac.v1, "
    "pulumi_kubernetes.helm.v3, pulumi_kubernetes.meta.v1"
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
                command_series([python, "-c", "import pulumi, pulumi_kubernetes"], ROOT, args.runs),
            ),
            ("+ the typed modules the program uses", command_series([python, "-c", TYPED_MODULES], ROOT, args.runs)),
            (f"render {args.stack}", command_series([*render, args.stack], ROOT, args.runs)),
            (f"render {args.stack} --out DIR", command_series([*render, args.stack, "--out", out], ROOT, args.runs)),
            (f"render {args.stack} --check", command_series([*render, args.stack, "--check"], ROOT, args.runs)),
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
