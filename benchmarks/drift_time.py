"""How long ``./supersonic drift`` takes for a hammer-like stack on the local control plane.

    .venv/bin/python benchmarks/drift_time.py [--runs N]

Prints (medians of N, default 5), with the stack deployed and no drift, then with the e2e scenario's drift (one
object refused by the dry-run, so its objects are applied one by one):
- the whole check (``drift.check.observe`` + ``compare``: what ``./supersonic drift <stack>`` runs after Python
  starts);
- its two parts: the ``pulumi preview --refresh`` (the objects Pulumi manages) and the Helm release's part
  (``helm status``, ``helm get manifest``, one ``kubectl get`` and the dry-run apply);
- for scale, a plain ``pulumi preview`` of the same stack.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from e2e_harness import Project, e2e_chart, hammer_like
from timing import show, timed

from supersonic_interlink.contract import CHART
from supersonic_interlink.drift import release
from supersonic_interlink.drift.check import Tools, compare, deployed_release, observe
from supersonic_interlink.engine.cluster import LocalCluster

STACK, NAMESPACE, RELEASE = "bench", "bench", "supersonic-interlink"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        cluster = LocalCluster(root / "cluster", tied=True)
        cluster.start(log=lambda _l: None)
        try:
            project = Project.create(root / "project", cluster)
            cluster.kubectl("create", "namespace", NAMESPACE)
            project.write_stack(STACK, hammer_like(NAMESPACE, RELEASE, e2e_chart(root / "chart")))
            project.run(STACK, "up")
            engine = project.engine(STACK)
            engine.log = lambda _l: None
            tools = Tools(project.env)
            name, namespace = deployed_release(engine)

            def check() -> None:
                compare(observe(engine, tools))

            for state in ("no drift", "drifted"):
                if state == "drifted":
                    envoy = CHART.envoy_object_name(RELEASE)
                    cluster.kubectl("-n", NAMESPACE, "scale", f"deployment/{envoy}", "--replicas=3")
                    cluster.kubectl(
                        "-n", NAMESPACE, "patch", "service", CHART.envoy_service_name(RELEASE), "--type=json", "-p",
                        '[{"op": "replace", "path": "/spec/ports/0/port", "value": 8002}]',
                    )  # fmt: skip
                rows = len(compare(observe(engine, tools)).rows)
                print(f"-- {state} ({rows} drifted fields)")
                show("./supersonic drift: the whole check", timed(check, runs))
                show(
                    "  pulumi preview --refresh (Pulumi's objects)",
                    timed(lambda: engine.run("preview", refresh=True), runs),
                )
                show(
                    "  the Helm release's objects (dry-run apply)",
                    timed(lambda: release.observe(name, namespace, tools), runs),
                )
            show("plain pulumi preview, for scale", timed(lambda: engine.run("preview"), runs))
        finally:
            cluster.stop(log=lambda _l: None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
