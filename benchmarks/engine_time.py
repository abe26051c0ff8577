"""What the real engine costs on the local control plane, beside its floor and beside what Flux runs.

    .venv/bin/python benchmarks/engine_time.py [--runs N]

Prints (medians of N, default 5):
- the warm toolchain check (every binary cached) and the control plane's start;
- ``pulumi preview`` of a hammer-like stack, deployed, against ``pulumi preview`` of an empty Python program
  (same CLI, same inline-program driver, same backend): the floor the program cannot go under;
- a no-op ``pulumi up`` (``./supersonic pulumi up``: the gated preview, then up) against ``helm upgrade`` of the
  same chart with the same values and post-renderer and ``--wait`` (what Flux's helm-controller runs).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import pulumi
import yaml
from e2e_harness import Project, e2e_chart, hammer_like
from timing import show, timed

from supersonic_interlink.chart import binaries
from supersonic_interlink.engine import run as run_module
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import LocalCluster
from supersonic_interlink.engine.run import gated
from supersonic_interlink.render.stack import render


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs

    show("toolchain check, every binary cached", timed(lambda: toolchain.ensure(log=lambda _l: None), runs))
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        cluster = LocalCluster(root / "cluster", tied=True)
        started = time.perf_counter()
        cluster.start(log=lambda _l: None)
        print(
            f"control plane start (etcd, apiserver, controller-manager, scheduler, kwok, nodes, CRDs): "
            f"{time.perf_counter() - started:.1f} s"
        )
        try:
            chart = e2e_chart(root / "chart")
            project = Project.create(root / "project", cluster)
            cluster.kubectl("create", "namespace", "bench")
            project.write_stack("bench", hammer_like("bench", "supersonic-interlink", chart))
            engine = project.engine("bench")
            gated(engine, "up")

            program = show("pulumi preview, hammer-like stack (deployed)", timed(lambda: engine.run("preview"), runs))
            empty = Project.create(root / "empty", cluster)
            # The floor's project declares no config (this project's Pulumi.yaml requires the stack's keys).
            (empty.directory / "Pulumi.yaml").write_text("name: supersonic-interlink\nruntime: python\n")
            empty.write_stack("bench", {})
            original = run_module.program
            run_module.program = lambda: pulumi.export("nothing", 0)
            try:
                empty_engine = empty.engine("bench")
                empty_engine.run("up")
                floor = show(
                    "pulumi preview, empty Python program (the floor)", timed(lambda: empty_engine.run("preview"), runs)
                )
            finally:
                run_module.program = original
            print(f"preview / floor: {program / floor:.2f}x")

            noop = show(
                "no-op ./supersonic pulumi up (gated preview, then up)", timed(lambda: gated(engine, "up"), runs)
            )
            rendered = render("bench", project.cli_config("bench"))
            values = root / "values.yaml"
            values.write_text(yaml.safe_dump(rendered["release"]["values"]))
            helm = [
                str(binaries.ensure("helm")),
                f"--kubeconfig={cluster.kubeconfig}",
                "upgrade",
                "supersonic-interlink",
                str(chart),
                "-n",
                "bench",
                "-f",
                str(values),
                "--wait",
                "--timeout",
                "20m",
                "--post-renderer",
                str(ROOT / "postrender" / "keda-trigger-timeout"),
            ]
            upgrade = show(
                "helm upgrade, same chart, values and post-renderer, --wait (what Flux runs)",
                timed(lambda: subprocess.run(helm, check=True, capture_output=True), runs),
            )
            print(f"no-op up / helm upgrade: {noop / upgrade:.2f}x")
        finally:
            cluster.stop(log=lambda _l: None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
