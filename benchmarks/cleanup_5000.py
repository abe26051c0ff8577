"""Benchmark: the cleanup script against a backlog of 5,000 Failed Triton pods, in the busybox setup of the tests.

    .venv/bin/python benchmarks/cleanup_5000.py [--pods N]

The real script (busybox sh, busybox applets only, the hammer stack's container environment) is measured twice:

1. end to end against the stand-in kubectl, which selects and sorts like the API server and kubectl, run after run
   as the schedule would until a run finds nothing to delete: runs needed (a run deletes at most
   MAX_DELETIONS_PER_RUN), wall time, kubectl invocations, API requests, the size of the delete command;
2. the first run's full list replayed by a busybox-only ``kubectl`` (``cat`` of the stand-in's answer), so the
   process tree is busybox alone and its peak resident set size is the script's own (shell, awk), not Python's.

It prints what a per-pod approach would cost for the same backlog: descheduler's RemoveFailedPods evicts each
match with its own request, and a shell loop would start kubectl once per pod. kubectl's own memory and the API
server's time cannot be measured without a cluster; docs/cleanup.md discusses them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import kubectl_standin
from busybox_harness import FakeNamespace, busybox_path, make_bin

from components.failed_pod_cleanup import (
    MAX_DELETIONS_PER_RUN,
    container_command,
    script_environment,
    script_text,
)
from supersonic_interlink.contract import CHART
from supersonic_interlink.settings import load_settings
from supersonic_interlink.stack_config import load_stack_config

STACK = "hammer"
BYSTANDERS = 500
"""Pods the selection must pass over: Running Triton pods and another release's Failed ones."""


def backlog(settings, count: int) -> list[dict]:
    release = settings.release.name
    start = datetime(2025, 6, 1, tzinfo=UTC)
    pods = []
    for i in range(count):
        suffix = hashlib.sha256(str(i).encode()).hexdigest()[:5]
        created = (start + timedelta(minutes=2 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        pods.append(
            kubectl_standin.pod(
                f"{CHART.inference_object_name(release)}-7c9d8f6b5-{suffix}",
                created=created,
                phase="Failed",
                labels=CHART.inference_pod_labels(release),
                namespace=settings.namespace,
                container_reason="Error",
                exit_code=255,
            )
        )
    for i in range(BYSTANDERS):
        created = (start + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        running = i % 2 == 0
        pods.append(
            kubectl_standin.pod(
                f"bystander-{i}",
                created=created,
                phase="Running" if running else "Failed",
                labels=CHART.inference_pod_labels(release if running else "supersonic-gpu"),
                namespace=settings.namespace,
            )
        )
    return pods


def run_measured(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, float, int, str]:
    """Exit status, wall seconds, peak RSS in KiB of the largest process in ``argv``'s tree, and its output.

    ``busybox time`` starts the tree and reports its rusage: measured from here, a child forked from this Python
    process would be charged this process's own resident set at its fork.
    """
    usage_file = cwd / "usage.txt"
    started = time.perf_counter()
    result = subprocess.run(
        [busybox_path(), "time", "-v", "-o", str(usage_file), *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.perf_counter() - started
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", usage_file.read_text())
    if peak is None:
        raise RuntimeError(f"busybox time reported no peak RSS:\n{usage_file.read_text()}")
    return result.returncode, seconds, int(peak.group(1)), result.stdout + result.stderr


def replay_bin(directory: Path, response: Path, log: Path) -> Path:
    """Busybox applet links and a busybox ``kubectl`` that answers every list with ``response``."""
    make_bin(directory)
    kubectl = directory / "kubectl"
    kubectl.unlink()
    kubectl.write_text(
        f"#!{busybox_path()} sh\n"
        "case $1 in\n"
        f"  get) cat '{response}' ;;\n"
        f"  delete) echo \"delete $#\" >> '{log}' ;;\n"
        "  *) exit 1 ;;\n"
        "esac\n"
    )
    kubectl.chmod(0o755)
    return directory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=5000, help="Failed Triton pods in the backlog (default 5000)")
    args = parser.parse_args(argv)
    settings = load_settings(load_stack_config(STACK))
    environment = {**script_environment(settings), "NAMESPACE": settings.namespace}
    keep = settings.cleanup.keep
    pods = backlog(settings, args.pods)
    triton_prefix = CHART.inference_object_name(settings.release.name)

    with tempfile.TemporaryDirectory(prefix="cleanup-bench-") as scratch:
        root = Path(scratch)
        (root / "e2e").mkdir()
        bin_dir = make_bin(root / "bin")
        namespace = FakeNamespace(root / "e2e", bin_dir, pods)
        runs = []
        # Scheduled runs until one finds nothing to delete (bounded: the cap guarantees progress).
        for _ in range(args.pods // MAX_DELETIONS_PER_RUN + 3):
            run = namespace.run(environment)
            if run.returncode != 0:
                print(run.stdout, run.stderr, sep="\n", file=sys.stderr)
                return 1
            runs.append(run)
            if not run.deleted_names():
                break
        deleted = sum(len(r.deleted_names()) for r in runs)
        left = [p for p in runs[-1].remaining if p["metadata"]["name"].startswith(triton_prefix)]
        assert deleted == args.pods - keep and len(left) == keep, f"deleted {deleted}, {len(left)} left"
        assert len(runs[-1].remaining) == len(pods) - deleted, "a bystander was deleted"
        first = runs[0]
        first_delete = [c for c in first.calls if c[0] == "delete"][0]

        # The first run's list (the whole backlog), replayed with busybox alone.
        fresh = root / "fresh.json"
        kubectl_standin.write_state(fresh, pods)
        answer = subprocess.run(
            [sys.executable, kubectl_standin.__file__, *first.calls[0]],
            capture_output=True,
            env={kubectl_standin.STATE_ENV: str(fresh)},
            timeout=120,
            check=True,
        )
        response = root / "list-response.txt"
        response.write_bytes(answer.stdout)
        replay_log = root / "replay.log"
        replay = replay_bin(root / "replay-bin", response, replay_log)
        command = container_command(script_text())
        status, replay_seconds, peak_kib, replay_out = run_measured(
            [busybox_path(), "sh", *command[1:]], {"PATH": str(replay), **environment}, root
        )
        if status != 0:
            print(replay_out, file=sys.stderr)
            return 1
        replay_deletes = len(replay_log.read_text().splitlines())
        # What the same measurement reports for a process that does nothing: the floor to read the peak against.
        _, _, floor_kib, _ = run_measured([busybox_path(), "true"], {"PATH": str(replay)}, root)

    invocations = sum(len(r.calls) for r in runs)
    delete_calls = sum(r.verbs().count("delete") for r in runs)
    with_deletions = sum(1 for r in runs if r.deleted_names())
    version = subprocess.run([busybox_path()], capture_output=True, text=True, timeout=30).stdout.split()[1]
    print(
        f"cleanup benchmark: {args.pods} Failed Triton pods (+{BYSTANDERS} bystanders), stack {STACK} "
        f"(keep {keep}, at most {MAX_DELETIONS_PER_RUN} per run), busybox {version}"
    )
    print(
        f"  runs to clear the backlog: {with_deletions} deleting + 1 finding nothing "
        f"({with_deletions * 5} min at the default 5-minute schedule); deleted {deleted}, kept {len(left)}"
    )
    print(
        f"  wall time per run (stand-in kubectl, end to end): first {first.seconds:.2f} s, "
        f"max {max(r.seconds for r in runs):.2f} s, all {sum(r.seconds for r in runs):.2f} s"
    )
    print(
        f"  kubectl invocations: {invocations} over {len(runs)} runs ({len(runs)} list + {delete_calls} delete; "
        f"never more than 1 list + 1 delete per run); largest delete command "
        f"{sum(len(a) + 1 for a in first_delete) / 1024:.1f} KiB"
    )
    print(
        f"  API requests: {len(runs)} LIST + {deleted} DELETE = {len(runs) + deleted} (kubectl sends one DELETE "
        f"per named pod; --sort-by lists unchunked)"
    )
    print(
        f"  script alone on the full {args.pods}-pod list ({response_size(answer.stdout)}), busybox-only replay: "
        f"{replay_seconds:.3f} s wall, peak RSS {peak_kib / 1024:.1f} MiB (`busybox true` measures "
        f"{floor_kib / 1024:.1f} MiB the same way), {replay_deletes} delete call"
    )
    print(
        f"  per-pod approach for the same backlog: descheduler RemoveFailedPods = {deleted + keep} eviction "
        f"requests (no keep-newest; plus its cluster-wide pod list/watch); a kubectl-per-pod loop = "
        f"{1 + deleted} kubectl invocations, each with its own start-up and discovery"
    )
    print(
        json.dumps(
            {
                "pods": args.pods,
                "keep": keep,
                "max_per_run": MAX_DELETIONS_PER_RUN,
                "runs": len(runs),
                "deleted": deleted,
                "first_run_seconds": round(first.seconds, 3),
                "total_seconds": round(sum(r.seconds for r in runs), 3),
                "kubectl_invocations": invocations,
                "delete_calls": delete_calls,
                "api_requests": len(runs) + deleted,
                "replay_seconds": round(replay_seconds, 3),
                "replay_peak_rss_kib": peak_kib,
                "floor_rss_kib": floor_kib,
                "per_pod_eviction_requests": deleted + keep,
                "per_pod_kubectl_invocations": 1 + deleted,
            }
        )
    )
    return 0


def response_size(data: bytes) -> str:
    return f"{len(data) / 1024:.0f} KiB"


if __name__ == "__main__":
    sys.exit(main())
