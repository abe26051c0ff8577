"""How long `./supersonic diff hammer` takes, as a reviewer runs it after a `readyTimeoutSeconds` edit.

    python benchmarks/diff_time.py [--runs N] [--chart DIR]

Runs in a throwaway git checkout of the project (one commit on main, the edit uncommitted), a fresh interpreter per
run: the base rendered from `git archive` by its own code in a second process while the working tree renders in
this one, then both compared. Without the chart on disk (the committed stacks are unpinned) and with --chart DIR
(the test chart `conforming` by default: two Helm renders a side). Prints medians and spreads in seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from project_copies import edit, git_project
from timing import command_series, describe


def checkout(into: Path) -> Path:
    """A git checkout of the project (one commit on main) with hammer's wake timeout raised, uncommitted."""
    root = git_project(into)
    stack = root / "stacks" / "Pulumi.hammer.yaml"
    edit(stack, "readyTimeoutSeconds: 900", "readyTimeoutSeconds: 1200")
    edit(stack, "holdMinReplicasSeconds: 900", "holdMinReplicasSeconds: 1200")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--chart", type=Path, default=ROOT / "tests" / "charts" / "conforming")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        root = checkout(Path(temporary))
        diff = [sys.executable, "-m", "supersonic_interlink", "diff", "hammer"]
        render = [sys.executable, "-m", "supersonic_interlink", "render", "hammer"]
        rows = [
            ("render hammer (for scale)", command_series(render, root, args.runs)),
            ("diff hammer (chart unpinned: not compared)", command_series(diff, root, args.runs)),
            (
                f"diff hammer --chart {args.chart.name}",
                command_series([*diff, "--chart", str(args.chart)], root, args.runs),
            ),
        ]
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    for label, samples in rows:
        print(describe(label, samples, width=44, digits=2))


if __name__ == "__main__":
    main()
