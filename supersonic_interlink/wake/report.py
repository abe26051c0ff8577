"""``./supersonic probe report``: a history of probes to a recommended ``readyTimeoutSeconds``, with its evidence.

docs/probe.md ("How the numbers are made") says why each rule is what it is.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from supersonic_interlink import EXIT_FINDING, EXIT_USAGE
from supersonic_interlink.config import PROJECT, ConfigError, Settings, deep_merge
from supersonic_interlink.config.envoy import repository_index_idle_timeout_seconds
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.rules import printable
from supersonic_interlink.config.stack_config import ROOT, load_stack_config, stack_file
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake.history import DEADLINE_EXCEEDED, NOT_READY, OUTCOMES, READY, REJECTED, Wake
from supersonic_interlink.wake.probe import lua_gave_up

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MARGIN = 0.20
"""Headroom over the p99 cold wake: mostly Hammer's Slurm queue, which drifts with the cluster's load week to week."""
TAIL_PERCENTILES, PERCENTILE_FOR_TIMEOUT = (90, 99), 99
SHOWN = {"min": 0, "median": 50, "p90": 90, "p99": 99, "max": 100}


def min_sample_for(percent: int) -> int:
    """Fewest values that give a nearest-rank ``percent``-th percentile (for the tail, one that is not the max)."""
    return math.ceil(100 / (100 - percent)) if percent in TAIL_PERCENTILES else 1


@dataclass(frozen=True)
class WakeTime:
    """A cold wake's time, or for a cut-off wake the time after which it was given up (a lower bound)."""

    seconds: float
    cut_off: bool = False

    def sort_key(self) -> tuple[bool, float]:
        return (self.cut_off, self.seconds)

    def record(self) -> float | dict[str, float]:
        return {"above": round(self.seconds, 3)} if self.cut_off else round(self.seconds, 3)


def wake_time(wake: Wake) -> WakeTime | None:
    """The wake time a cold probe gives the distribution; None when it failed in a way that measures nothing."""
    if wake.outcome in (READY, NOT_READY) and wake.wake_seconds is not None:
        return WakeTime(wake.wake_seconds)
    gave_up = lua_gave_up(wake.grpc_status, wake.elapsed_seconds, wake.ready_timeout_seconds)
    if wake.outcome == DEADLINE_EXCEEDED or (wake.outcome == REJECTED and gave_up):
        return WakeTime(wake.elapsed_seconds, cut_off=True)
    return None


def percentile(times: Sequence[WakeTime], percent: int) -> WakeTime | None:
    """Nearest-rank percentile of sorted ``times``, rank ceil(q * n) in integer arithmetic (``0.99 * 100`` is
    99.00000000000001 in floating point); None when there are too few values for it."""
    return None if len(times) < min_sample_for(percent) else times[max(1, -(-percent * len(times) // 100)) - 1]


def covered(times: Iterable[WakeTime], timeout: float) -> int:
    return sum(not t.cut_off and t.seconds <= timeout for t in times)


def timeouts(settings: Settings) -> dict[str, int]:
    """The wake timeout and what is derived from it, as the program would deploy them."""
    # lazy: the component's module loads Pulumi, which `./supersonic probe` never needs otherwise
    from supersonic_interlink.components.supersonic_release import release_timeout_seconds

    return {
        "ready_timeout_seconds": settings.scaleFromZero.readyTimeoutSeconds,
        "hold_min_replicas_seconds": settings.scaleFromZero.holdMinReplicasSeconds,
        "idle_timeout_seconds": repository_index_idle_timeout_seconds(settings),
        "helm_timeout_seconds": release_timeout_seconds(settings),
    }


def _recommend(
    times: Sequence[WakeTime], current: Mapping[str, int] | None, config: Mapping[str, str] | None
) -> dict[str, Any] | str:
    """The recommended timeout and what moves with it, or why there is none."""
    if not times:
        return "no cold wakes to recommend from"
    p99 = percentile(times, PERCENTILE_FOR_TIMEOUT)
    basis_name, basis = (f"p{PERCENTILE_FOR_TIMEOUT}", p99) if p99 is not None else ("max", times[-1])
    if basis.cut_off:
        return (
            f"the {basis_name} cold wake was cut off after {basis.seconds:.1f} s, so how long it would have taken "
            f"is not known: raise readyTimeoutSeconds (and holdMinReplicasSeconds) and probe again"
        )
    ready, derived = max(60, math.ceil(basis.seconds * (1 + MARGIN) / 60) * 60), {}  # to the next whole minute
    if config is not None and current is not None:
        # The hold counts from the wake's start: keep what it gives beyond the slowest allowed wake.
        hold = ready + max(0, current["hold_min_replicas_seconds"] - current["ready_timeout_seconds"])
        key, changed = f"{PROJECT}:scaleFromZero", {"readyTimeoutSeconds": ready, "holdMinReplicasSeconds": hold}
        merged = json.dumps(deep_merge(json.loads(config.get(key, "{}")), changed))
        derived = timeouts(settings_from_config({**config, key: merged}))
    return {
        "basis": basis_name,
        "basis_seconds": round(basis.seconds, 3),
        "margin": MARGIN,
        "provisional": p99 is None,
        # the chance that the largest of n wakes lies above the true p99, 1 - 0.99^n
        "max_above_p99_probability": None if p99 is not None else 1 - (PERCENTILE_FOR_TIMEOUT / 100) ** len(times),
        "covered": covered(times, ready),
        **derived,
        "ready_timeout_seconds": ready,
    }


@dataclass(frozen=True)
class StackReport:
    """One stack's cold wake times (measured ones ascending, then the cut-off ones) and its ``--json`` record."""

    times: tuple[WakeTime, ...]
    record: dict[str, Any]


def build_report(stack: str, wakes: Sequence[Wake], config: Mapping[str, str] | None = None) -> StackReport:
    """The report for one stack's probes (all of them this stack's, at least one); ``config`` replaces the stack
    file's config map (the tests' short timeouts)."""
    cold = [w for w in wakes if w.cold is True]
    times = tuple(sorted(filter(None, map(wake_time, cold)), key=WakeTime.sort_key))
    current, source, problem = None, f"the given config of {stack}", None
    try:
        if config is None:
            config, source = load_stack_config(stack), str(stack_file(stack).relative_to(ROOT))
        current = timeouts(settings_from_config(config))
    except ConfigError as error:
        problem = error.problems[0]
    stats: dict[str, Any] = {
        "samples": len(times),
        "cut_off": sum(t.cut_off for t in times),
        "failed": len(cold) - len(times),
        **{f"p{percent}_needs": min_sample_for(percent) for percent in TAIL_PERCENTILES},
        **{name: None if (v := percentile(times, percent)) is None else v.record() for name, percent in SHOWN.items()},
    }
    recommended = _recommend(times, current, config)
    return StackReport(
        times,
        {
            "kind": "report",
            "stack": stack,
            "probes": len(wakes),
            "cold": len(cold),
            "warm": sum(w.cold is False for w in wakes),
            "first_started_at": min(w.started_at for w in wakes).isoformat(),
            "last_started_at": max(w.started_at for w in wakes).isoformat(),
            "cold_outcomes": {outcome: sum(w.outcome == outcome for w in cold) for outcome in OUTCOMES},
            "wake_seconds": stats,
            "current": current
            and {"source": source, "covered": covered(times, current["ready_timeout_seconds"]), **current},
            "config_problem": problem,
            "recommended": recommended if isinstance(recommended, dict) else None,
            "no_recommendation": recommended if isinstance(recommended, str) else None,
        },
    )


def describe(report: StackReport) -> str:
    """The report for one stack for a terminal or a pull request: its ``--json`` record as YAML."""
    return yaml.safe_dump(report.record, sort_keys=False, width=120)


def figure(reports: Sequence[StackReport]) -> Figure:
    """Each stack's cold-wake histogram, cut-off wakes hatched, the p99, current and recommended timeouts marked; a
    bare ``Figure`` on the Agg canvas (no pyplot state)."""
    # lazy: matplotlib takes longer to import than the rest of the probe, and only --png needs it
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5 * len(reports)), layout="constrained")
    FigureCanvasAgg(fig)
    for ax, report in zip(fig.subplots(len(reports), 1, squeeze=False)[:, 0], reports, strict=True):
        r, samples, p99 = report.record, len(report.times), percentile(report.times, PERCENTILE_FOR_TIMEOUT)
        marks = [] if p99 is None else [(f"p99 {'>' if p99.cut_off else ''}{p99.seconds:.1f} s", p99.seconds, ":")]
        for name, x, style in (("current", r["current"], "--"), ("recommended", r["recommended"], "-")):
            if x is not None:
                at = x["ready_timeout_seconds"]
                marks.append((f"{name} readyTimeoutSeconds {at}: covers {x['covered']} of {samples}", at, style))
        measured, cut = ([t.seconds for t in report.times if t.cut_off is c] for c in (False, True))
        right = 1.08 * max([t.seconds for t in report.times] + [x for _, x, _ in marks], default=1)
        labels = [f"measured cold wakes ({len(measured)})", f"cut off: took longer than this ({len(cut)})"]
        *_, bars = ax.hist([measured, cut], bins=30, range=(0, right), stacked=True, label=labels)
        for bar in bars[1]:
            bar.set_hatch("//")
        for label, x, style in marks:
            ax.axvline(x, color="black", linestyle=style, linewidth=2, label=label)
        ax.set(xlabel="wake time: RepositoryIndex sent to answered (s)", ylabel="cold wakes")
        title = f"stack {r['stack']}: {samples} cold wakes, {r['first_started_at'][:10]} to {r['last_started_at'][:10]}"
        ax.set_title(title + ("" if r["recommended"] else "; no recommendation"))
        # below the axes: the marks run the full height, so no corner inside is free of them
        ax.legend(loc="upper left", bbox_to_anchor=(0, -0.2), fontsize="small", frameon=False)
    return fig


def run_report(
    args: argparse.Namespace, stack_configs: Mapping[str, Mapping[str, str]] | None, stdout: TextIO, stderr: TextIO
) -> int:
    """``./supersonic probe report FILE``: the damaged lines on stderr, each stack's report, the picture."""
    try:
        history = wake_history.read(args.file)
    except OSError as error:
        print(f"probe report: cannot read {str(args.file)!r}: {error.strerror}", file=stderr)
        return EXIT_USAGE
    for damaged in history.damaged:
        print(f"{printable(str(args.file))}:{damaged.line}: line skipped: {damaged.reason}", file=stderr)
    chosen: dict[str, list[Wake]] = {}  # per stack, in the order stacks first appear
    for wake in history.wakes:
        if args.stack in (None, wake.stack) and (args.since is None or wake.started_at >= args.since):
            chosen.setdefault(wake.stack, []).append(wake)
    if not chosen:
        which = f" of stack {args.stack}" if args.stack else ""
        which += f" since {args.since.isoformat()}" if args.since else ""
        print(f"probe report: no probe records{which} in {str(args.file)!r}", file=stderr)
        return EXIT_FINDING
    reports = [build_report(stack, wakes, (stack_configs or {}).get(stack)) for stack, wakes in chosen.items()]
    texts = [json.dumps(report.record) if args.json else describe(report) for report in reports]
    print(("\n" if args.json else "---\n").join(texts), file=stdout, end="\n" if args.json else "")
    if history.damaged and not args.json:
        print(f"\n{len(history.damaged)} line(s) of {args.file} skipped (listed on stderr)", file=stdout)
    if args.png is not None:
        try:
            figure(reports).savefig(args.png, format="png")
        except OSError as error:
            print(f"probe report: --png {str(args.png)!r}: cannot write: {error.strerror}", file=stderr)
            return EXIT_USAGE
        print(f"probe report: wrote {args.png}", file=stderr)
    return 0
