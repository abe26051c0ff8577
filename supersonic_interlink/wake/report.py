"""``./supersonic probe report``: a history of probes to a recommended ``readyTimeoutSeconds``, with its evidence.

docs/probe.md ("How the numbers are made") says why each rule is what it is.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import TYPE_CHECKING, Any, TextIO

from supersonic_interlink import EXIT_FINDING, EXIT_USAGE
from supersonic_interlink.config import PROJECT, ConfigError, Settings, deep_merge
from supersonic_interlink.config.envoy import repository_index_idle_timeout_seconds
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import ROOT, load_stack_config, stack_file
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake.history import DEADLINE_EXCEEDED, NOT_READY, OUTCOMES, READY, REJECTED, UNREACHABLE
from supersonic_interlink.wake.probe import lua_gave_up

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MARGIN = 0.20
"""Headroom over the p99 cold wake: mostly Hammer's Slurm queue, which drifts with the cluster's load week to week."""
ROUND_TO_SECONDS = 60
TAIL_PERCENTILES, PERCENTILE_FOR_TIMEOUT = (90, 99), 99
SHOWN = (("min", 0), ("median", 50), ("p90", 90), ("p99", 99), ("max", 100))
DERIVED = (
    ("scaleFromZero.readyTimeoutSeconds", "ready_timeout_seconds", ""),
    ("scaleFromZero.holdMinReplicasSeconds", "hold_min_replicas_seconds", ""),
    ("RepositoryIndex idle_timeout (derived)", "idle_timeout_seconds", " s"),
    ("Helm timeout (derived)", "helm_timeout_seconds", " s"),
)
"""The wake timeout and what moves with it: the text report's label, the ``--json`` key, the unit shown."""


def min_sample_for(percent: int) -> int:
    """Fewest values for which the nearest-rank ``percent``-th percentile is not simply the largest."""
    return math.ceil(100 / (100 - percent))


def nearest_rank(count: int, percent: int) -> int:
    """1-based nearest rank in integer arithmetic (``0.99 * 100`` is 99.00000000000001 in floating point)."""
    return max(1, -(-percent * count // 100))


@dataclass(frozen=True)
class WakeTime:
    """A cold wake's time, or for a cut-off wake the time after which it was given up (a lower bound)."""

    seconds: float
    cut_off: bool = False

    def sort_key(self) -> tuple[bool, float]:
        return (self.cut_off, self.seconds)

    def show(self) -> str:
        return f"> {self.seconds:.1f} s (cut off)" if self.cut_off else f"{self.seconds:.1f} s"

    def record(self) -> float | dict[str, float]:
        return {"above": round(self.seconds, 3)} if self.cut_off else round(self.seconds, 3)


def wake_time(wake: wake_history.Wake) -> WakeTime | None:
    """The wake time a cold probe gives the distribution; None when it failed in a way that measures nothing."""
    if wake.outcome in (READY, NOT_READY) and wake.wake_seconds is not None:
        return WakeTime(wake.wake_seconds)
    gave_up = lua_gave_up(wake.grpc_status, wake.elapsed_seconds, wake.ready_timeout_seconds)
    if wake.outcome == DEADLINE_EXCEEDED or (wake.outcome == REJECTED and gave_up):
        return WakeTime(wake.elapsed_seconds, cut_off=True)
    return None


def percentile(times: Sequence[WakeTime], percent: int) -> WakeTime | None:
    """Nearest-rank percentile of sorted ``times``; None when there are too few for it to differ from the max."""
    if not times or (percent in TAIL_PERCENTILES and len(times) < min_sample_for(percent)):
        return None
    return times[nearest_rank(len(times), percent) - 1]


def covered(times: Iterable[WakeTime], timeout: float) -> int:
    return sum(not t.cut_off and t.seconds <= timeout for t in times)


def round_up_to_minute(seconds: float) -> int:
    return max(ROUND_TO_SECONDS, math.ceil(seconds / ROUND_TO_SECONDS) * ROUND_TO_SECONDS)


def timeouts(settings: Settings) -> dict[str, int]:
    """The wake timeout and what is derived from it, as the program would deploy them (keys of ``DERIVED``)."""
    # lazy: the component's module loads Pulumi, which `./supersonic probe` never needs otherwise
    from supersonic_interlink.components.supersonic_release import release_timeout_seconds

    return {
        "ready_timeout_seconds": settings.scaleFromZero.readyTimeoutSeconds,
        "hold_min_replicas_seconds": settings.scaleFromZero.holdMinReplicasSeconds,
        "idle_timeout_seconds": repository_index_idle_timeout_seconds(settings),
        "helm_timeout_seconds": release_timeout_seconds(settings),
    }


@dataclass(frozen=True)
class StackReport:
    """One stack's cold wake times (measured ones ascending, then the cut-off ones) and its ``--json`` record."""

    times: tuple[WakeTime, ...]
    record: dict[str, Any]


def _recommend(
    times: Sequence[WakeTime], current: Mapping[str, int] | None, config: Mapping[str, str] | None
) -> tuple[dict[str, Any] | None, str | None]:
    if not times:
        return None, "no cold wakes to recommend from"
    p99 = percentile(times, PERCENTILE_FOR_TIMEOUT)
    basis_name, basis = (f"p{PERCENTILE_FOR_TIMEOUT}", p99) if p99 is not None else ("max", times[-1])
    if basis.cut_off:
        return None, (
            f"the {basis_name} cold wake was cut off after {basis.seconds:.1f} s, so how long it would have taken "
            f"is not known: raise readyTimeoutSeconds (and holdMinReplicasSeconds) and probe again"
        )
    ready = round_up_to_minute(basis.seconds * (1 + MARGIN))
    derived: dict[str, int] = {}
    if config is not None and current is not None:
        # The hold counts from the wake's start: keep what it gives beyond the slowest allowed wake.
        hold = ready + max(0, current["hold_min_replicas_seconds"] - current["ready_timeout_seconds"])
        key = f"{PROJECT}:scaleFromZero"
        merged = deep_merge(
            json.loads(config.get(key, "{}")), {"readyTimeoutSeconds": ready, "holdMinReplicasSeconds": hold}
        )
        derived = timeouts(settings_from_config({**config, key: json.dumps(merged)}))
    return {
        "basis": basis_name,
        "basis_seconds": round(basis.seconds, 3),
        "margin": MARGIN,
        "provisional": p99 is None,
        # the chance that the largest of n wakes lies above the true p99, 1 - 0.99^n
        "max_above_p99_probability": None if p99 is not None else 1 - (PERCENTILE_FOR_TIMEOUT / 100) ** len(times),
        "covered": covered(times, ready),
        "ready_timeout_seconds": ready,
        **derived,
    }, None


def build_report(
    stack: str, wakes: Sequence[wake_history.Wake], config: Mapping[str, str] | None = None
) -> StackReport:
    """The report for one stack's probes (all of them this stack's, at least one); ``config`` replaces the stack
    file's config map (the tests' short timeouts)."""
    cold = [w for w in wakes if w.cold is True]
    times = tuple(sorted((t for t in map(wake_time, cold) if t is not None), key=WakeTime.sort_key))
    current: dict[str, int] | None = None
    source, problem = f"the given config of {stack}", None
    try:
        if config is None:
            config, source = load_stack_config(stack), str(stack_file(stack).relative_to(ROOT))
        current = timeouts(settings_from_config(config))
    except ConfigError as error:
        problem = error.problems[0]
    newest = max(wakes, key=lambda w: w.started_at)
    ready_timeout = newest.ready_timeout_seconds if current is None else current["ready_timeout_seconds"]
    stats: dict[str, Any] = {"samples": len(times), "cut_off": sum(t.cut_off for t in times)}
    stats["failed"] = len(cold) - len(times)
    stats |= {name: None if (v := percentile(times, percent)) is None else v.record() for name, percent in SHOWN}
    stats |= {f"p{percent}_needs": min_sample_for(percent) for percent in TAIL_PERCENTILES}
    recommended, reason = _recommend(times, current, config)
    record = {
        "kind": "report",
        "stack": stack,
        "probes": len(wakes),
        "cold": len(cold),
        "warm": sum(w.cold is False for w in wakes),
        # neither cold nor warm: records from before the probe told them apart, or probes that never reached Envoy
        "untold": sum(w.cold is None and w.outcome != UNREACHABLE for w in wakes),
        "unreached": sum(w.cold is None and w.outcome == UNREACHABLE for w in wakes),
        "first_started_at": min(w.started_at for w in wakes).isoformat(),
        "last_started_at": newest.started_at.isoformat(),
        "cold_outcomes": {outcome: sum(w.outcome == outcome for w in cold) for outcome in OUTCOMES},
        "wake_seconds": stats,
        "current": {
            "source": f"the newest record, line {newest.line}" if current is None else source,
            "config_problem": problem,
            "ready_timeout_seconds": ready_timeout,
            "covered": None if ready_timeout is None else covered(times, ready_timeout),
            **(current or {}),
        },
        "recommended": recommended,
        "no_recommendation": reason,
    }
    return StackReport(times, record)


def select(
    wakes: Iterable[wake_history.Wake], stack: str | None = None, since: datetime | None = None
) -> dict[str, list[wake_history.Wake]]:
    """The probes per stack (in the order stacks first appear), of one stack and from a time on if given."""
    chosen: dict[str, list[wake_history.Wake]] = {}
    for wake in wakes:
        if (stack is None or wake.stack == stack) and (since is None or wake.started_at >= since):
            chosen.setdefault(wake.stack, []).append(wake)
    return chosen


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({100 * part / whole:.1f}%)" if whole else "none (no cold wakes)"


def _span(record: Mapping[str, Any]) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(record["first_started_at"]), datetime.fromisoformat(record["last_started_at"])


def _recommended_label(rec: Mapping[str, Any]) -> str:
    return f"{rec['ready_timeout_seconds']}" + (" (provisional)" if rec["provisional"] else "")


def describe(report: StackReport) -> list[str]:
    """The report for one stack, as lines for a terminal or a pull request."""
    r, stats, current = report.record, report.record["wake_seconds"], report.record["current"]
    (first, last), samples = _span(r), stats["samples"]
    lines = [
        f"stack {r['stack']}: {r['probes']} probe(s) from {first:%Y-%m-%d %H:%MZ} to {last:%Y-%m-%d %H:%MZ}: "
        f"{r['cold']} cold, {r['warm']} warm (a Triton was already up: not counted)"
        + (f", {r['unreached']} unreachable (never reached Envoy: not counted)" if r["unreached"] else "")
        + (f", {r['untold']} not told cold or warm (older records: not counted)" if r["untold"] else "")
    ]
    if r["cold"]:
        lines.append(f"  cold probes ended: {', '.join(f'{n} {o}' for o, n in r['cold_outcomes'].items() if n)}")
    failed = f"{stats['failed']} cold probe(s) failed without a wake time, not counted" if stats["failed"] else ""
    if samples:
        cut = f"{stats['cut_off']} cut off by the timeout, ranked above every measured wake" if stats["cut_off"] else ""
        notes = "; ".join(note for note in (cut, failed) if note)
        lines.append(f"  wake time of {samples} cold wake(s)" + (f" ({notes})" if notes else ""))
        shown = [
            f"{name} {value.show()}"
            if (value := percentile(report.times, percent))
            else f"{name} n/a (needs {min_sample_for(percent)} cold wakes, have {samples})"
            for name, percent in SHOWN
        ]
        lines.append("    " + ", ".join(shown))
    else:
        lines.append("  no cold wake with a wake time" + (f" ({failed})" if failed else ""))
    if current["config_problem"]:
        lines.append(f"  no current settings: {current['config_problem']}")
    if current["ready_timeout_seconds"] is not None:
        lines.append(
            f"  current readyTimeoutSeconds {current['ready_timeout_seconds']} ({current['source']}) covered "
            f"{_share(current['covered'], samples)} cold wakes"
        )
    if (rec := r["recommended"]) is None:
        return [*lines, f"  recommended readyTimeoutSeconds: none: {r['no_recommendation']}"]
    lines.append(
        f"  recommended readyTimeoutSeconds {_recommended_label(rec)}: the smallest whole minute >= {rec['basis']} "
        f"{rec['basis_seconds']:.1f} s + {MARGIN:.0%} margin ({rec['basis_seconds'] * (1 + MARGIN):.1f} s); it covers "
        f"{_share(rec['covered'], samples)} cold wakes"
    )
    if rec["provisional"]:
        p = PERCENTILE_FOR_TIMEOUT
        lines.append(
            f"    only {samples} cold wake(s): a p{p} needs {min_sample_for(p)}; the largest of {samples} lies above "
            f"the true p{p} with probability {rec['max_above_p99_probability']:.0%}"
        )
    for name, key, unit in DERIVED if "helm_timeout_seconds" in rec and "helm_timeout_seconds" in current else ():
        change = "unchanged" if current[key] == rec[key] else f"-> {rec[key]}{unit}"
        lines.append(f"    {name:<39} {current[key]}{unit} {change}")
    return lines


def figure(reports: Sequence[StackReport]) -> Figure:
    """Each stack's cold-wake histogram, cut-off wakes hatched from their bound, the p99, current and recommended
    timeouts marked; a bare ``Figure`` on the Agg canvas (no pyplot state)."""
    # lazy: matplotlib takes longer to import than the rest of the probe, and only --png needs it
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(8, 4.5 * len(reports)), layout="constrained")
    FigureCanvasAgg(fig)
    for ax, report in zip(fig.subplots(len(reports), 1, squeeze=False)[:, 0], reports, strict=True):
        r, samples = report.record, report.record["wake_seconds"]["samples"]
        current, rec = r["current"]["ready_timeout_seconds"], r["recommended"]
        measured = [t.seconds for t in report.times if not t.cut_off]
        cut = [t.seconds for t in report.times if t.cut_off]
        right = max([*measured, *cut, current or 0, rec["ready_timeout_seconds"] if rec else 0, 1.0]) * 1.08
        width = right / 30
        ax.hist(measured, bins=30, range=(0, right), color="#4c72b0", label=f"measured cold wakes ({len(measured)})")
        if cut:  # only known to be longer than its bound: the bar starts there, not at a bin's edge
            piles = [list(pile) for _, pile in groupby(cut, key=lambda bound: int(bound // width))]
            heights, label = [len(p) for p in piles], f"cut off: took longer than this ({len(cut)})"
            ax.bar([p[0] for p in piles], heights, width, align="edge", color="#dd8452", hatch="//", label=label)
        if (p99 := percentile(report.times, PERCENTILE_FOR_TIMEOUT)) is not None:
            ax.axvline(p99.seconds, color="black", linestyle=":", label=f"p99 {p99.show()}")
        if current is not None:
            label = f"current readyTimeoutSeconds {current} (covered {_share(r['current']['covered'], samples)})"
            ax.axvline(current, color="#c44e52", linestyle="--", linewidth=2, label=label)
        if rec is not None:
            label = f"recommended {_recommended_label(rec)}: {rec['basis']} {rec['basis_seconds']:.1f} s + {MARGIN:.0%}"
            ax.axvline(rec["ready_timeout_seconds"], color="#55a868", linewidth=2, label=label + ", to the minute")
        ax.set_xlim(0, right + width)  # room for a cut-off bar that starts at the largest bound
        ax.set(xlabel="wake time: RepositoryIndex sent to answered (s)", ylabel="cold wakes")
        first, last = _span(r)
        title = f"stack {r['stack']}: {samples} cold wakes, {first:%Y-%m-%d} to {last:%Y-%m-%d}"
        ax.set_title(title + ("" if rec else "; no recommendation"))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        # below the axes: the marks run the full height, so no corner inside is free of them
        ax.legend(loc="upper left", bbox_to_anchor=(0, -0.2), fontsize="small", frameon=False)
    return fig


def run_report(
    args: argparse.Namespace, stack_configs: Mapping[str, Mapping[str, str]] | None, stdout: TextIO, stderr: TextIO
) -> int:
    """``./supersonic probe report FILE``: the damaged lines on stderr, each stack's report, the picture."""
    if args.png is not None and not args.png.parent.is_dir():
        print(f"probe report: --png {str(args.png)!r}: no directory {str(args.png.parent)!r}", file=stderr)
        return EXIT_USAGE
    try:
        history = wake_history.read(args.file)
    except OSError as error:
        print(f"probe report: cannot read {str(args.file)!r}: {error.strerror}", file=stderr)
        return EXIT_USAGE
    for damaged in history.damaged:
        print(damaged.describe(args.file), file=stderr)
    chosen = select(history.wakes, args.stack, args.since)
    if not chosen:
        which = (f" of stack {args.stack}" if args.stack else "") + (
            f" since {args.since.isoformat()}" if args.since else ""
        )
        print(f"probe report: no probe records{which} in {str(args.file)!r}", file=stderr)
        return EXIT_FINDING
    reports = [build_report(stack, wakes, (stack_configs or {}).get(stack)) for stack, wakes in chosen.items()]
    texts = [json.dumps(report.record) if args.json else "\n".join(describe(report)) for report in reports]
    print(("\n" if args.json else "\n\n").join(texts), file=stdout)
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
