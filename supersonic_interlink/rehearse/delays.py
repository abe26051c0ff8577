"""The Slurm queue delays of ``--queue-delay`` and the share of cold sessions they leave served. A history's cold wakes
were measured end to end, overhead included: as queue delays they make the prediction conservative."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

FORMS = "fixed:S | uniform:A:B | history:FILE"


class DelaySpecError(ValueError):
    """The ``--queue-delay`` text is not one of the forms."""


@dataclass(frozen=True)
class QueueDelay:
    """Delays in seconds uniform in ``low``..``high`` (equal: fixed), or a history's ``samples`` (inf: given up on)."""

    low: float = 0.0
    high: float = 0.0
    samples: tuple[float, ...] = ()
    source: str = ""

    def share_within(self, seconds: float) -> float:
        """The probability that a delay is at most ``seconds``, exact for each form."""
        if self.samples:
            return sum(s <= seconds for s in self.samples) / len(self.samples)
        if self.high == self.low:
            return float(self.low <= seconds)
        return min(1.0, max(0.0, (seconds - self.low) / (self.high - self.low)))

    def describe(self) -> str:
        if self.samples:
            cut = sum(map(math.isinf, self.samples))
            return f"{len(self.samples)} cold wakes from {self.source}" + (f" ({cut} cut off)" if cut else "")
        return f"fixed {self.low:g} s" if self.low == self.high else f"uniform {self.low:g}..{self.high:g} s"


def parse(spec: str, *, stack: str | None = None) -> QueueDelay:
    """One of ``FORMS``; a history gives the cold wakes of ``stack`` (of every stack when None)."""
    kind, _, rest = spec.partition(":")
    refused = DelaySpecError(f"--queue-delay {spec!r}: expected {FORMS}, in seconds, finite, 0 <= A <= B")
    if kind in ("fixed", "uniform"):
        try:
            low, high = map(float, [rest] * 2 if kind == "fixed" else rest.split(":"))
        except ValueError:
            raise refused from None
        if not (math.isfinite(high) and 0 <= low <= high):
            raise refused
        return QueueDelay(low=low, high=high)
    if kind != "history":
        raise refused
    # lazy: the verb's parser (--help, completion) imports FORMS, and the history reader loads the settings (0.2 s)
    from supersonic_interlink.wake.history import read
    from supersonic_interlink.wake.report import wake_time

    path = Path(rest)
    if not path.is_file():
        raise DelaySpecError(f"--queue-delay {spec!r}: no file {path}")
    times = [wake_time(w) for w in read(path).wakes if w.cold is not False and stack in (None, w.stack)]
    samples = tuple(math.inf if t.cut_off else t.seconds for t in times if t is not None)
    if not samples:
        whose = f" of stack {stack!r}" if stack else ""
        raise DelaySpecError(f"--queue-delay {spec!r}: {path} holds no cold wake{whose} with a wake time")
    return QueueDelay(samples=samples, source=str(path))


def served_share(delay: QueueDelay, ready_timeout_seconds: float, overhead_seconds: float) -> float:
    """The predicted share of cold sessions served: the queue delay plus the measured overhead within the timeout."""
    return delay.share_within(ready_timeout_seconds - overhead_seconds)
