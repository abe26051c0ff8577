"""Latency Envoy adds to a unary inference call, on loopback: the deployed configuration against a direct call.

    .venv/bin/python benchmarks/envoy_latency.py [--calls N] [--sizes 1024,1048576]

The same stand-in Triton (tests/loopback.py) is called with tritonclient's ModelInfer, one call at a time, first
directly on its gRPC port, then through Envoy running the hammer stack's configuration (Lua filter, 32 MiB buffer,
retry policy, outlier detection). Prints p50/p99 of each and their difference per request size. Client, Envoy and
stand-in share this machine's CPUs, so the absolute numbers are the loopback's; the difference is the proxy's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import numpy as np
import tritonclient.grpc as triton_grpc
from loopback import MODEL, loopback_settings, loopback_stack, triton_client

from supersonic_interlink.contract import NEWEST


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def timed_calls(target: str, size: int, calls: int, warmup: int = 50) -> list[float]:
    client = triton_client(target)
    tensor = triton_grpc.InferInput("INPUT0", [size], "UINT8")
    tensor.set_data_from_numpy(np.zeros(size, dtype=np.uint8))
    for _ in range(warmup):
        client.infer(MODEL, [tensor])
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        client.infer(MODEL, [tensor])
        samples.append((time.perf_counter() - started) * 1e6)
    client.close()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per size and path")
    parser.add_argument("--sizes", default="1024,1048576,16777216", help="request payload sizes in bytes")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    settings = loopback_settings("hammer")
    print(f"{'payload':>10}  {'direct p50':>10} {'p99':>8}  {'envoy p50':>10} {'p99':>8}  {'added p50':>10} {'p99':>8}")
    with loopback_stack(settings) as stack:
        direct_target = f"127.0.0.1:{stack.triton.port}"
        for size in sizes:
            # Fewer calls for the large payloads, whose time is mostly the client's serialisation.
            calls = args.calls if size <= 1 << 16 else max(50, args.calls // (5 if size <= 1 << 20 else 30))
            direct = timed_calls(direct_target, size, calls)
            proxied = timed_calls(stack.envoy.target, size, calls)
            d50, d99 = percentile(direct, 50), percentile(direct, 99)
            e50, e99 = percentile(proxied, 50), percentile(proxied, 99)
            print(
                f"{size:>10}  {d50:>8.0f}us {d99:>6.0f}us  {e50:>8.0f}us {e99:>6.0f}us  "
                f"{e50 - d50:>8.0f}us {e99 - d99:>6.0f}us   ({calls} calls each, "
                f"mean {statistics.fmean(proxied) - statistics.fmean(direct):.0f}us)"
            )
        retried = stack.envoy.stat(f"cluster.{NEWEST.inference_cluster}.upstream_rq_retry")
        print(f"retries during the run: {retried} (0 expected: every call succeeded first time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
