"""A Triton restart under concurrent load, on loopback, for several circuit-breaker / retry-budget choices.

    .venv/bin/python benchmarks/envoy_restart.py [--clients N] [--outage SECONDS]

N clients each call ModelInfer in a loop (the stand-in takes 20 ms per call) through Envoy running the hammer
configuration with the deployed retry policy (15 retries, back-off 0.2-5 s). One second in, the stand-in Triton
dies (connections cut, new ones refused) while its DNS record stays, as when the process exits before the readiness
probe notices; it is back after the outage. Each variant changes only the Triton cluster's circuit breaker:

- envoy default: no thresholds, so max_retries 3 (Envoy's default);
- retry budget 20 %: retry_budget {budget_percent 20, min_retry_concurrency 3} (Envoy's documented defaults);
- retry budget 100 %: as many retries as active requests;
- chosen: the stack default, max_retries = max_requests = 1024.

Prints, per variant: clients that saw at least one failed call, calls failed of calls made (a failed client calls
again at once, so failures pile up fast), retries refused by the breaker (upstream_rq_retry_overflow), retries
made, and the longest successful call (how long a client was held riding out the outage).
"""

from __future__ import annotations

import argparse
import copy
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from loopback import infer, loopback_settings, loopback_stack, triton_client
from tritonclient.utils import InferenceServerException

from supersonic_interlink.config.envoy import build_envoy_config
from supersonic_interlink.contract import NEWEST

CLUSTER = f"cluster.{NEWEST.inference_cluster}"


def variant_config(base: dict, name: str) -> dict:
    config = copy.deepcopy(base)
    (cluster,) = [c for c in config["static_resources"]["clusters"] if c["name"] == NEWEST.inference_cluster]
    if name == "envoy default (max_retries 3)":
        del cluster["circuit_breakers"]
    elif name.startswith("retry budget"):
        percent = float(name.split()[2])
        cluster["circuit_breakers"] = {
            "thresholds": [
                {
                    "priority": "DEFAULT",
                    "retry_budget": {"budget_percent": {"value": percent}, "min_retry_concurrency": 3},
                    "track_remaining": True,
                }
            ]
        }
    return config


def run(name: str, clients: int, outage: float, duration: float) -> str:
    settings = loopback_settings("hammer", envoy={"dnsRefreshMs": 100})
    config = variant_config(build_envoy_config(settings), name)
    outcomes: list[tuple[int, bool, float]] = []
    lock = threading.Lock()
    with loopback_stack(settings, config=config) as stack:
        stack.triton.infer_delay_seconds = 0.02
        stop = time.monotonic() + duration

        def client_loop(index: int) -> None:
            client = triton_client(stack.envoy.target)
            while time.monotonic() < stop:
                started = time.monotonic()
                try:
                    infer(client, 64, timeout=120)
                    ok = True
                except InferenceServerException:
                    ok = False
                with lock:
                    outcomes.append((index, ok, time.monotonic() - started))
            client.close()

        threads = [threading.Thread(target=client_loop, args=(i,), daemon=True) for i in range(clients)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        stack.triton.crash()
        time.sleep(outage)
        stack.triton.come_up()
        for thread in threads:
            thread.join(duration + 120)
        overflow = stack.envoy.stat(f"{CLUSTER}.upstream_rq_retry_overflow")
        retries = stack.envoy.stat(f"{CLUSTER}.upstream_rq_retry")
    failed = sum(1 for _, ok, _ in outcomes if not ok)
    hit = len({i for i, ok, _ in outcomes if not ok})
    longest = max((t for _, ok, t in outcomes if ok), default=0.0)
    return (
        f"{name:<30} clients failed {hit:>3}/{clients}  calls failed {failed:>5}/{len(outcomes):<5}  "
        f"retries overflowed {overflow:>5}  retried {retries:>4}  longest successful call {longest:4.1f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--outage", type=float, default=2.0, help="seconds the stand-in Triton stays down")
    parser.add_argument("--duration", type=float, default=6.0, help="seconds the clients keep calling")
    args = parser.parse_args()
    print(
        f"{args.clients} concurrent clients, Triton down for {args.outage:g} s (still in DNS), "
        f"calls for {args.duration:g} s"
    )
    for name in (
        "envoy default (max_retries 3)",
        "retry budget 20 % (min 3)",
        "retry budget 100 % (min 3)",
        "chosen (max_retries 1024)",
    ):
        print(run(name, args.clients, args.outage, args.duration), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
