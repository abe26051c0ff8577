"""How long `./supersonic takeover objects <stack>` takes, as a user runs it, and how much of it is the two Helm
renders.

    python benchmarks/takeover_objects_time.py [--stack hammer] [--chart DIR] [--runs N]

DIR defaults to the conforming test chart (tests/charts/conforming); point it at a checkout of the real chart to measure
that. The live values are tests/fixtures/live-values-hammer.yaml; the live objects served to the chart's lookup are an
old Envoy ConfigMap and a ScaledObject written to a temporary file. Prints the median wall time of the whole command in
a fresh interpreter, of the program's evaluation alone (the render verb's evaluation; the first in a process imports the
Pulumi SDK), and of the command's one Helm render (with the post-renderer executable; the stored manifest it compares
against is the chart rendered with the live values), and the exit codes the command gave.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import describe

from supersonic_interlink import ROOT as PROJECT
from supersonic_interlink.chart.helm import render_chart
from supersonic_interlink.components.supersonic_release import POSTRENDER
from supersonic_interlink.render import stack as rendering
from supersonic_interlink.render.conformance import Expected
from supersonic_interlink.takeover.values_diff import load_live_values

LIVE_VALUES = ROOT / "tests" / "fixtures" / "live-values-hammer.yaml"


def live_objects(release: str, namespace: str) -> list[dict]:
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{release}-envoy-config-custom", "namespace": namespace},
            "data": {"envoy.yaml": "admin:\n  address: {socket_address: {address: 0.0.0.0, port_value: 9901}}\n"},
        },
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": f"{release}-keda-so", "namespace": namespace},
            "spec": {"minReplicaCount": 1, "maxReplicaCount": 10},
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="hammer")
    parser.add_argument("--chart", type=Path, default=ROOT / "tests" / "charts" / "conforming")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    evaluations = []
    for _ in range(args.runs):
        start = time.perf_counter()
        rendered = rendering.render(args.stack)
        evaluations.append(time.perf_counter() - start)
    expected = Expected.from_rendered(rendered)
    objects = live_objects(expected.release_name, expected.namespace)
    live = load_live_values(LIVE_VALUES.read_text(), str(LIVE_VALUES))

    def render(values: dict, served: list[dict]) -> list[dict]:
        name, namespace, post = expected.release_name, expected.namespace, PROJECT / POSTRENDER
        return render_chart(args.chart, name, namespace, values, served, post_renderer=post, is_upgrade=True)

    stored = render(live, objects)
    renders = []
    for _ in range(args.runs):
        start = time.perf_counter()
        render(expected.values, [*objects, *expected.served])
        renders.append(time.perf_counter() - start)

    with tempfile.TemporaryDirectory() as work:
        objects_file = Path(work) / "live-objects.yaml"
        objects_file.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
        manifest_file = Path(work) / "live-manifest.yaml"
        manifest_file.write_text(yaml.safe_dump_all(stored))
        command = [
            sys.executable,
            "-m",
            "supersonic_interlink",
            "takeover",
            "objects",
            args.stack,
            "--live",
            str(LIVE_VALUES),
            "--live-object",
            str(objects_file),
            "--live-manifest",
            str(manifest_file),
            "--chart",
            str(args.chart),
        ]
        whole, codes = [], set()
        for _ in range(args.runs):
            start = time.perf_counter()
            done = subprocess.run(command, cwd=ROOT, capture_output=True, timeout=300, check=False)
            whole.append(time.perf_counter() - start)
            codes.add(done.returncode)

    print(f"stack {args.stack}, chart {args.chart}")
    print(f"{'program evaluation (render), first in process':<52} {evaluations[0]:6.3f} s")
    print(describe("  again (modules imported)", evaluations[1:], width=52))
    print(describe("the Helm render, with post-renderer", renders, width=52))
    print(describe(f"./supersonic takeover objects {args.stack}, fresh interpreter", whole, width=52))
    print(f"  exit codes: {sorted(codes)}")


if __name__ == "__main__":
    main()
