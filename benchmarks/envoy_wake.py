"""Wake overhead on loopback: from the stand-in Triton becoming ready to the held RepositoryIndex being answered.

    .venv/bin/python benchmarks/envoy_wake.py [--trials N]

A RepositoryIndex is sent to Envoy (the hammer configuration) while no Triton is up; the admission stand-in's
/wake brings the stand-in Triton up after a random delay (its server listening, then its DNS record published, as a
pod turns ready). The overhead is the time from that publication to the client's answer: Envoy's next DNS refresh
plus the Lua filter's next membership check, which it paces with the sidecar's /sleep. Measured twice: with the
deployed numbers (dnsRefreshMs 1000, /sleep about 1 s like the chart's sidecar), and with both at 50 ms to show
what the rest (Lua, httpCall, the route, Triton's answer) costs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from loopback import loopback_settings, loopback_stack, triton_client


def trial(dns_refresh_ms: int, sleep_seconds: float, wake_delay: float) -> float:
    settings = loopback_settings(
        "hammer", scale_from_zero={"readyTimeoutSeconds": 60}, envoy={"dnsRefreshMs": dns_refresh_ms}
    )
    published: list[float] = []
    with loopback_stack(settings, ready=False, sleep_seconds=sleep_seconds) as stack:

        def wake() -> None:
            time.sleep(wake_delay)
            stack.triton.come_up()
            published.append(time.monotonic())

        stack.admission.on_wake = lambda: threading.Thread(target=wake, daemon=True).start()
        client = triton_client(stack.envoy.target)
        client.get_model_repository_index(client_timeout=60)
        answered = time.monotonic()
        client.close()
    return answered - published[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(1)
    for label, refresh_ms, sleep_s in (
        ("deployed: DNS refresh 1 s, /sleep 1 s", 1000, 1.0),
        ("fast: DNS refresh 50 ms, /sleep 50 ms", 50, 0.05),
    ):
        overheads = [trial(refresh_ms, sleep_s, rng.uniform(0.5, 1.5)) * 1000 for _ in range(args.trials)]
        overheads.sort()
        print(
            f"{label}: ready -> answered over {args.trials} wakes: min {overheads[0]:.0f} ms, "
            f"median {statistics.median(overheads):.0f} ms, max {overheads[-1]:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
