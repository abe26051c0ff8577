"""How long the Helm post-renderer takes on a large release: many small documents and one ScaledObject.

    python benchmarks/postrender_throughput.py [--megabytes 50] [--runs 1] [--parse-every-document] [--script PATH]

Builds a stream of small Helm-style documents (ConfigMaps with a ``# Source:`` comment, about 250 bytes each) of
the given size with the chart's ScaledObject last, pipes it through the post-renderer as Helm does (a fresh
interpreter, manifests on stdin) and prints the seconds per run and the throughput. ``--script`` runs another
copy of ``supersonic_interlink/postrender.py`` (an older revision, to compare). Checks that the output is the input with
only the ScaledObject changed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

SMALL = """---
# Source: supersonic/templates/generated/configmap-{n}.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: supersonic-interlink-generated-{n}
  labels:
    app.kubernetes.io/instance: supersonic-interlink
data:
  value: "{n}"
"""

# A backslash escape makes a document one the post-renderer must parse (an escape could spell ScaledObject).
ESCAPED = '  pattern: "^[0-9]+\\\\.[0-9]+$"\n'


SCALED_OBJECT = """---
# Source: supersonic/templates/keda/so.yaml
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: supersonic-interlink-keda-so
spec:
  scaleTargetRef:
    name: supersonic-interlink-triton
  triggers:
  - type: prometheus
    metadata:
      serverAddress: http://prometheus-server.cms.svc.cluster.local:9090
      threshold: "20"
"""


def stream_of(megabytes: float, parse_every_document: bool) -> tuple[bytes, int]:
    target = int(megabytes * 1024 * 1024)
    parts: list[str] = []
    size = 0
    while size < target:
        part = SMALL.format(n=len(parts)) + (ESCAPED if parse_every_document else "")
        parts.append(part)
        size += len(part)
    return ("".join(parts) + SCALED_OBJECT).encode(), len(parts) + 1


MODULE = ROOT / "supersonic_interlink" / "postrender.py"


def run_once(script: Path, stream: bytes) -> tuple[float, bytes]:
    start = time.perf_counter()
    command = (
        [sys.executable, str(script)] if script != MODULE else [sys.executable, "-m", "supersonic_interlink.postrender"]
    )
    result = subprocess.run(command, input=stream, capture_output=True, check=False, timeout=1800, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"the post-renderer failed: {result.stderr.decode()[-2000:]}")
    return elapsed, result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=50)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--parse-every-document",
        action="store_true",
        help="give every small document a backslash escape, so each one goes through the YAML parser",
    )
    parser.add_argument("--script", type=Path, default=MODULE, help="another revision's post-renderer file to compare")
    args = parser.parse_args()
    stream, count = stream_of(args.megabytes, args.parse_every_document)
    samples = []
    for _ in range(args.runs):
        elapsed, output = run_once(args.script, stream)
        samples.append(elapsed)
    head = stream[: -len(SCALED_OBJECT)]
    patched = yaml.safe_load(output[len(head) :]) if output.startswith(head) else None
    if not patched or patched["spec"]["triggers"][0]["metadata"].get("timeout") != "60000":
        raise SystemExit("the output is not the input with the ScaledObject patched")
    megabytes = len(stream) / 1024 / 1024
    median = statistics.median(samples)
    script = args.script.relative_to(ROOT) if args.script.is_relative_to(ROOT) else args.script
    parsed = " (every one parsed)" if args.parse_every_document else ""
    print(
        f"{script}: {megabytes:.1f} MB, {count} documents{parsed}: median {median:.2f} s "
        f"(min {min(samples):.2f}, max {max(samples):.2f}, n={len(samples)}), {megabytes / median:.1f} MB/s"
    )


if __name__ == "__main__":
    main()
