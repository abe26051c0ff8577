"""Reporting wakes: from a history of probes to a recommended ``readyTimeoutSeconds``, with its evidence.

Per stack: how many probes were cold wakes, how they ended, the wake-time distribution, the share of cold wakes
the stack's current ``readyTimeoutSeconds`` covered, and the timeout the history supports, with the values
that move with it (``holdMinReplicasSeconds``, the RepositoryIndex route's ``idle_timeout``, the Helm timeout),
derived by the same functions the program deploys with. ``figure`` draws the distribution for a pull request.

How the numbers are made (docs/probe.md says why):

- Only cold wakes count. A warm answer (a Triton was already serving) measures nothing about waking, and a
  record from before the probe told the two apart is left out.
- A cold wake the Lua filter gave up on (at ``readyTimeoutSeconds``: CANCELLED from the ``triton`` chart generation,
  UNAVAILABLE from the ``inferenceServer`` one, ``probe.lua_gave_up``) or that ran into the
  client's deadline is *cut off*: it took longer than the client waited, by an unknown amount. It stays in the
  sample, ranked above every measured wake, so it can only make a percentile larger, never hide a slow tail. A
  percentile that lands on one is reported as ``> that time`` and no timeout is recommended from it.
- Cold probes that failed otherwise (Envoy without a Triton, a lost connection, either status long before the
  timeout: the wake itself failed) say nothing about how long a wake takes; they are counted, not ranked.
- Percentiles are nearest-rank: the q-th is the smallest wake time that at least q percent of the cold wakes did
  not exceed. Nearest rank needs no interpolation, so it stays defined with cut-off wakes in the sample, and a
  timeout set to it would have covered at least that share of the wakes seen.
- A q-th percentile is shown only from 100 / (100 - q) cold wakes on (10 for p90, 100 for p99): with fewer, the
  nearest rank is the largest wake, and calling the maximum a p99 would hide that the tail was not sampled.
- The recommendation is the smallest whole minute at or above the p99 plus ``MARGIN`` (with fewer than 100
  cold wakes: the largest wake plus the margin, marked provisional, with the chance that the largest of n wakes
  lies above the true p99: 1 - 0.99^n).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from supersonic_interlink.config import PROJECT, ConfigError, Settings, deep_merge
from supersonic_interlink.config.envoy import repository_index_idle_timeout_seconds
from supersonic_interlink.wake.history import Wake
from supersonic_interlink.wake.probe import (
    DEADLINE_EXCEEDED,
    NOT_READY,
    OUTCOMES,
    READY,
    REJECTED,
    UNREACHABLE,
    lua_gave_up,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MARGIN = 0.20
"""Headroom over the p99 cold wake. A wake's time is mostly Hammer's Slurm queue, which moves with the cluster's
load from week to week; a fifth over the tail seen so far absorbs that drift without holding a client (and, since
the hold must be at least as long, a GPU) for much longer than wakes take. Rounding up to the minute adds 0-59 s."""

ROUND_TO_SECONDS = 60
"""The recommendation is a whole number of minutes: what an operator writes in a stack file and reads in a diff."""

TAIL_PERCENTILES = (90, 99)
PERCENTILE_FOR_TIMEOUT = 99
SHOWN = (("min", 0), ("median", 50), ("p90", 90), ("p99", 99), ("max", 100))
"""The statistics the report shows, by name and percentile."""


def min_sample_for(percent: int) -> int:
    """Fewest cold wakes for which the nearest-rank ``percent``-th percentile is not simply the largest one."""
    return math.ceil(100 / (100 - percent))


def nearest_rank(count: int, percent: int) -> int:
    """1-based rank of the ``percent``-th percentile among ``count`` sorted values (exact integer arithmetic)."""
    return max(1, -(-percent * count // 100))


# --------------------------------------------------------------------------------------------- one stack's numbers


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


def wake_time(wake: Wake) -> WakeTime | None:
    """The wake time a cold probe gives the distribution; None when it failed in a way that measures nothing."""
    if wake.outcome in (READY, NOT_READY) and wake.wake_seconds is not None:
        return WakeTime(wake.wake_seconds)
    if wake.outcome == DEADLINE_EXCEEDED or (
        wake.outcome == REJECTED and lua_gave_up(wake.grpc_status, wake.elapsed_seconds, wake.ready_timeout_seconds)
    ):
        return WakeTime(wake.elapsed_seconds, cut_off=True)
    return None


def covered(times: Iterable[WakeTime], timeout: float) -> int:
    """How many of ``times`` a ``timeout`` would have let finish: the measured ones not above it."""
    return sum(not t.cut_off and t.seconds <= timeout for t in times)


@dataclass(frozen=True)
class Timeouts:
    """The wake timeout and everything derived from it, as the program would deploy them."""

    ready_timeout_seconds: int
    hold_min_replicas_seconds: int
    idle_timeout_seconds: int
    """The RepositoryIndex route's idle_timeout in the Envoy configuration."""
    helm_timeout_seconds: int
    """The Helm release's upgrade timeout."""

    @classmethod
    def of(cls, settings: Settings) -> Timeouts:
        from supersonic_interlink.components.supersonic_release import release_timeout_seconds

        return cls(
            ready_timeout_seconds=settings.scaleFromZero.readyTimeoutSeconds,
            hold_min_replicas_seconds=settings.scaleFromZero.holdMinReplicasSeconds,
            idle_timeout_seconds=repository_index_idle_timeout_seconds(settings),
            helm_timeout_seconds=release_timeout_seconds(settings),
        )

    def record(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class StackConfig:
    """A stack's config map as the CLI passes it, or why it could not be had."""

    config: Mapping[str, str] | None
    source: str
    problem: str | None = None


def load_config(stack: str) -> StackConfig:
    from supersonic_interlink.config.stack_config import ROOT, load_stack_config, stack_file

    try:
        return StackConfig(load_stack_config(stack), str(stack_file(stack).relative_to(ROOT)))
    except ConfigError as error:
        return StackConfig(None, "", error.problems[0])


def settings_of(config: Mapping[str, str], **scale_from_zero: int) -> Settings:
    """The stack's settings with the given ``scaleFromZero`` keys replaced, loaded and checked exactly as ``pulumi
    up`` would load them (ConfigError if the program would refuse)."""
    from supersonic_interlink.config.pulumi_config import settings_from_config

    if not scale_from_zero:
        return settings_from_config(config)
    key = f"{PROJECT}:scaleFromZero"
    current = json.loads(config[key]) if key in config else {}
    return settings_from_config({**config, key: json.dumps(deep_merge(current, scale_from_zero))})


def round_up_to_minute(seconds: float) -> int:
    return max(ROUND_TO_SECONDS, math.ceil(seconds / ROUND_TO_SECONDS) * ROUND_TO_SECONDS)


@dataclass(frozen=True)
class Recommendation:
    basis: str
    """``p99``, or ``max`` while there are too few cold wakes for a p99."""
    basis_seconds: float
    ready_timeout_seconds: int
    covered: int
    """How many of the cold wakes it would have covered."""
    timeouts: Timeouts | None
    """With the derived values, when the stack's config is at hand."""
    max_above_p99_probability: float | None
    """For a ``max`` basis: the chance that the largest of n wakes lies above the true p99, 1 - 0.99^n."""

    @property
    def provisional(self) -> bool:
        return self.basis != f"p{PERCENTILE_FOR_TIMEOUT}"


@dataclass(frozen=True)
class StackReport:
    """Everything the report says about one stack."""

    stack: str
    probes: int
    cold: int
    warm: int
    untold: int
    """Probes whose record predates telling cold from warm (no start check recorded)."""
    unreached: int
    """Probes that never reached Envoy (unreachable): neither cold nor warm."""
    outcomes: Mapping[str, int]
    """How the cold probes ended."""
    times: tuple[WakeTime, ...]
    """Cold wake times, measured ones ascending, then the cut-off ones."""
    failed: int
    """Cold probes that measure nothing about wake time (see ``wake_time``)."""
    first: datetime
    last: datetime
    current_ready_timeout: int | None
    current: Timeouts | None
    current_source: str
    config_problem: str | None
    recommendation: Recommendation | None
    no_recommendation: str | None

    @property
    def samples(self) -> int:
        return len(self.times)

    @property
    def cut_off(self) -> int:
        return sum(t.cut_off for t in self.times)

    def percentile(self, percent: int) -> WakeTime | None:
        """Nearest-rank percentile; None when there are too few cold wakes for it to differ from the max."""
        if not self.times or (percent in TAIL_PERCENTILES and self.samples < min_sample_for(percent)):
            return None
        return self.times[nearest_rank(self.samples, percent) - 1]

    def covered_by(self, timeout: float) -> int:
        return covered(self.times, timeout)

    def record(self) -> dict[str, Any]:
        """The report for this stack as one JSON object (``./supersonic probe report --json``)."""
        stats: dict[str, Any] = {"samples": self.samples, "cut_off": self.cut_off, "failed": self.failed}
        for name, percent in SHOWN:
            value = self.percentile(percent)
            stats[name] = None if value is None else value.record()
        for percent in TAIL_PERCENTILES:
            stats[f"p{percent}_needs"] = min_sample_for(percent)
        recommendation = self.recommendation
        return {
            "kind": "report",
            "stack": self.stack,
            "probes": self.probes,
            "cold": self.cold,
            "warm": self.warm,
            "untold": self.untold,
            "unreached": self.unreached,
            "first_started_at": self.first.isoformat(),
            "last_started_at": self.last.isoformat(),
            "cold_outcomes": dict(self.outcomes),
            "wake_seconds": stats,
            "current": {
                "source": self.current_source,
                "config_problem": self.config_problem,
                "ready_timeout_seconds": self.current_ready_timeout,
                "covered": None if self.current_ready_timeout is None else self.covered_by(self.current_ready_timeout),
                **(self.current.record() if self.current else {}),
            },
            "recommended": None
            if recommendation is None
            else {
                "basis": recommendation.basis,
                "basis_seconds": round(recommendation.basis_seconds, 3),
                "margin": MARGIN,
                "provisional": recommendation.provisional,
                "max_above_p99_probability": recommendation.max_above_p99_probability,
                "covered": recommendation.covered,
                "ready_timeout_seconds": recommendation.ready_timeout_seconds,
                **(recommendation.timeouts.record() if recommendation.timeouts else {}),
            },
            "no_recommendation": self.no_recommendation,
        }


def _recommend(
    times: Sequence[WakeTime], current: Timeouts | None, config: Mapping[str, str] | None
) -> tuple[Recommendation | None, str | None]:
    count = len(times)
    if not count:
        return None, "no cold wakes to recommend from"
    enough = count >= min_sample_for(PERCENTILE_FOR_TIMEOUT)
    basis_name = f"p{PERCENTILE_FOR_TIMEOUT}" if enough else "max"
    basis = times[nearest_rank(count, PERCENTILE_FOR_TIMEOUT) - 1] if enough else times[-1]
    if basis.cut_off:
        return None, (
            f"the {basis_name} cold wake was cut off after {basis.seconds:.1f} s, so how long it would have taken "
            f"is not known: raise readyTimeoutSeconds (and holdMinReplicasSeconds) and probe again"
        )
    ready = round_up_to_minute(basis.seconds * (1 + MARGIN))
    timeouts = None
    if config is not None and current is not None:
        # Keep what the hold gives a client beyond the slowest allowed wake: the hold counts from the wake's start.
        hold = ready + max(0, current.hold_min_replicas_seconds - current.ready_timeout_seconds)
        timeouts = Timeouts.of(settings_of(config, readyTimeoutSeconds=ready, holdMinReplicasSeconds=hold))
    chance = None if enough else 1 - (PERCENTILE_FOR_TIMEOUT / 100) ** count
    return Recommendation(basis_name, basis.seconds, ready, covered(times, ready), timeouts, chance), None


def build_report(stack: str, wakes: Sequence[Wake], config: StackConfig) -> StackReport:
    """The report for one stack's probes (all of them this stack's, at least one)."""
    cold = [w for w in wakes if w.cold is True]
    times = sorted((t for t in map(wake_time, cold) if t is not None), key=WakeTime.sort_key)
    current: Timeouts | None = None
    problem = config.problem
    if config.config is not None:
        try:
            current = Timeouts.of(settings_of(config.config))
        except ConfigError as error:
            problem = error.problems[0]
    if current is not None:
        ready_timeout: int | None = current.ready_timeout_seconds
        source = config.source
    else:
        newest = max(wakes, key=lambda w: w.started_at)
        ready_timeout = newest.ready_timeout_seconds
        source = f"the newest record, line {newest.line}"
    recommendation, reason = _recommend(times, current, config.config if current else None)
    return StackReport(
        stack=stack,
        probes=len(wakes),
        cold=len(cold),
        warm=sum(w.cold is False for w in wakes),
        untold=sum(w.cold is None and w.outcome != UNREACHABLE for w in wakes),
        unreached=sum(w.cold is None and w.outcome == UNREACHABLE for w in wakes),
        outcomes={outcome: sum(w.outcome == outcome for w in cold) for outcome in OUTCOMES},
        times=tuple(times),
        failed=len(cold) - len(times),
        first=min(w.started_at for w in wakes),
        last=max(w.started_at for w in wakes),
        current_ready_timeout=ready_timeout,
        current=current,
        current_source=source,
        config_problem=problem,
        recommendation=recommendation,
        no_recommendation=reason,
    )


def select(wakes: Iterable[Wake], stack: str | None = None, since: datetime | None = None) -> dict[str, list[Wake]]:
    """The probes per stack (in the order stacks first appear), of one stack and from a time on if given."""
    chosen: dict[str, list[Wake]] = {}
    for wake in wakes:
        if (stack is None or wake.stack == stack) and (since is None or wake.started_at >= since):
            chosen.setdefault(wake.stack, []).append(wake)
    return chosen


# --------------------------------------------------------------------------------------------- text


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({100 * part / whole:.1f}%)" if whole else "none (no cold wakes)"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%MZ")


def describe(report: StackReport) -> list[str]:
    """The report for one stack, as lines for a terminal or a pull request."""
    lines = [
        f"stack {report.stack}: {report.probes} probe(s) from {_stamp(report.first)} to {_stamp(report.last)}: "
        f"{report.cold} cold, {report.warm} warm (a Triton was already up: not counted)"
        + (f", {report.unreached} unreachable (never reached Envoy: not counted)" if report.unreached else "")
        + (f", {report.untold} not told cold or warm (older records: not counted)" if report.untold else "")
    ]
    if report.cold:
        ended = ", ".join(f"{n} {outcome}" for outcome, n in report.outcomes.items() if n)
        lines.append(f"  cold probes ended: {ended}")
    if report.times:
        notes = []
        if report.cut_off:
            notes.append(f"{report.cut_off} cut off by the timeout, ranked above every measured wake")
        if report.failed:
            notes.append(f"{report.failed} cold probe(s) failed without a wake time, not counted")
        stats = []
        for name, percent in SHOWN:
            value = report.percentile(percent)
            stats.append(
                f"{name} {value.show()}"
                if value
                else f"{name} n/a (needs {min_sample_for(percent)} cold wakes, have {report.samples})"
            )
        lines.append(f"  wake time of {report.samples} cold wake(s)" + (f" ({'; '.join(notes)})" if notes else ""))
        lines.append("    " + ", ".join(stats))
    else:
        lines.append(
            "  no cold wake with a wake time"
            + (f" ({report.failed} cold probe(s) failed without one)" if report.failed else "")
        )
    if report.config_problem:
        lines.append(f"  no current settings: {report.config_problem}")
    if report.current_ready_timeout is not None:
        lines.append(
            f"  current readyTimeoutSeconds {report.current_ready_timeout} ({report.current_source}) covered "
            f"{_share(report.covered_by(report.current_ready_timeout), report.samples)} cold wakes"
        )
    recommendation = report.recommendation
    if recommendation is None:
        lines.append(f"  recommended readyTimeoutSeconds: none: {report.no_recommendation}")
        return lines
    target = recommendation.basis_seconds * (1 + MARGIN)
    lines.append(
        f"  recommended readyTimeoutSeconds {recommendation.ready_timeout_seconds}"
        + (" (provisional)" if recommendation.provisional else "")
        + f": the smallest whole minute >= {recommendation.basis} {recommendation.basis_seconds:.1f} s "
        f"+ {MARGIN:.0%} margin ({target:.1f} s); it covers {_share(recommendation.covered, report.samples)} "
        f"cold wakes"
    )
    if recommendation.provisional:
        lines.append(
            f"    only {report.samples} cold wake(s): a p{PERCENTILE_FOR_TIMEOUT} needs "
            f"{min_sample_for(PERCENTILE_FOR_TIMEOUT)}; the largest of {report.samples} lies above the true "
            f"p{PERCENTILE_FOR_TIMEOUT} with probability {recommendation.max_above_p99_probability:.0%}"
        )
    if recommendation.timeouts and report.current:
        now, new = report.current, recommendation.timeouts
        rows = (
            ("scaleFromZero.readyTimeoutSeconds", now.ready_timeout_seconds, new.ready_timeout_seconds, ""),
            ("scaleFromZero.holdMinReplicasSeconds", now.hold_min_replicas_seconds, new.hold_min_replicas_seconds, ""),
            ("RepositoryIndex idle_timeout (derived)", now.idle_timeout_seconds, new.idle_timeout_seconds, " s"),
            ("Helm timeout (derived)", now.helm_timeout_seconds, new.helm_timeout_seconds, " s"),
        )
        for name, before, after, unit in rows:
            change = "unchanged" if before == after else f"-> {after}{unit}"
            lines.append(f"    {name:<39} {before}{unit} {change}")
    return lines


# --------------------------------------------------------------------------------------------- picture


PANEL_HEIGHT_INCHES = 4.5


def figure(reports: Sequence[StackReport]) -> Figure:
    """The cold-wake distribution of each stack, one panel each, with the current and recommended timeouts marked.

    Built on a bare ``Figure`` with the Agg canvas: no pyplot state, no display needed.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, PANEL_HEIGHT_INCHES * max(1, len(reports))), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(max(1, len(reports)), 1, squeeze=False)[:, 0]
    for ax, report in zip(axes, reports, strict=False):
        _panel(ax, report)
    if not reports:
        axes[0].set_title("no probes")
    return fig


def _panel(ax: Axes, report: StackReport) -> None:
    from matplotlib.ticker import MaxNLocator

    measured = [t.seconds for t in report.times if not t.cut_off]
    cut = [t.seconds for t in report.times if t.cut_off]
    recommendation = report.recommendation
    marks = [report.current_ready_timeout or 0, recommendation.ready_timeout_seconds if recommendation else 0]
    right = max([*measured, *cut, *marks, 1.0]) * 1.08
    bins = [right * i / 30 for i in range(31)]
    right += bins[1]  # room for a cut-off bar that starts at the largest bound
    if measured:
        ax.hist(measured, bins=bins, color="#4c72b0", label=f"measured cold wakes ({len(measured)})")
    if cut:
        # A cut-off wake is only known to be longer than its bound: its bar starts there, not at a bin's edge.
        width = bins[1]
        piles: dict[int, list[float]] = {}
        for bound in cut:
            piles.setdefault(int(bound // width), []).append(bound)
        ax.bar(
            [min(pile) for pile in piles.values()],
            [len(pile) for pile in piles.values()],
            width=width,
            align="edge",
            color="#dd8452",
            hatch="//",
            label=f"cut off: took longer than this ({len(cut)})",
        )
    p99 = report.percentile(PERCENTILE_FOR_TIMEOUT)
    if p99 is not None:
        ax.axvline(p99.seconds, color="black", linestyle=":", label=f"p99 {p99.show()}")
    if report.current_ready_timeout is not None:
        covered = _share(report.covered_by(report.current_ready_timeout), report.samples)
        ax.axvline(
            report.current_ready_timeout,
            color="#c44e52",
            linestyle="--",
            linewidth=2,
            label=f"current readyTimeoutSeconds {report.current_ready_timeout} (covered {covered})",
        )
    if recommendation is not None:
        ax.axvline(
            recommendation.ready_timeout_seconds,
            color="#55a868",
            linewidth=2,
            label=f"recommended {recommendation.ready_timeout_seconds}"
            + (" (provisional)" if recommendation.provisional else "")
            + f": {recommendation.basis} {recommendation.basis_seconds:.1f} s + {MARGIN:.0%}, to the minute",
        )
    ax.set_xlim(0, right)
    ax.set_xlabel("wake time: RepositoryIndex sent to answered (s)")
    ax.set_ylabel("cold wakes")
    ax.set_title(
        f"stack {report.stack}: {report.samples} cold wakes, {report.first:%Y-%m-%d} to {report.last:%Y-%m-%d}"
        + ("" if recommendation else "; no recommendation")
    )
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    # Below the axes: the marks run the full height, so no corner inside is free of them.
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.2), fontsize="small", frameon=False)


def save_png(fig: Figure, path: Path) -> None:
    """Write the figure as PNG (Agg); OSError when the file cannot be written."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).print_png(str(path))
