"""The Slurm queue delay a rehearsal draws for each Triton pod (``--queue-delay``), and what it predicts.

``fixed:S`` every pod waits S seconds; ``uniform:A:B`` a time drawn uniformly from [A, B]; ``history:FILE`` one of the
cold wake times a probe history (``./supersonic probe --record``) holds, drawn with replacement. Those were measured
end to end on the cluster, so they already contain its overhead: as queue delays they make the prediction
conservative. A wake the probe gave up on counts as a time above any timeout.

A cold session is served when the queue delay plus the overhead around it (the wake's scale-up, scheduling, DNS, the
filter's pacing), which a rehearsal measures, is within ``readyTimeoutSeconds``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

FORMS = "fixed:S | uniform:A:B | history:FILE"


class DelaySpecError(ValueError):
    """The ``--queue-delay`` text is not one of the forms; the message says which and shows them."""


@dataclass(frozen=True)
class QueueDelay:
    """Delays in seconds: ``low``..``high`` (equal for ``fixed``), or a history's ``samples`` (inf: cut off)."""

    kind: str
    low: float = 0.0
    high: float = 0.0
    samples: tuple[float, ...] = ()
    source: str = ""

    def draw(self, rng: random.Random) -> float:
        return rng.choice(self.samples) if self.samples else rng.uniform(self.low, self.high)

    def share_within(self, seconds: float) -> float:
        """The probability that a delay is at most ``seconds`` (exact for each form, no sampling)."""
        if self.samples:
            return sum(1 for s in self.samples if s <= seconds) / len(self.samples)
        if self.high == self.low:
            return 1.0 if self.low <= seconds else 0.0
        return min(1.0, max(0.0, (seconds - self.low) / (self.high - self.low)))

    def describe(self) -> str:
        cut = sum(1 for s in self.samples if math.isinf(s))
        return {
            "fixed": f"fixed {self.low:g} s",
            "uniform": f"uniform {self.low:g}..{self.high:g} s",
            "history": f"{len(self.samples)} cold wakes from {self.source}" + (f" ({cut} cut off)" if cut else ""),
        }[self.kind]


def _seconds(text: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DelaySpecError(f"--queue-delay {spec!r}: {text!r} is not a number of seconds; expected {FORMS}") from None
    if not math.isfinite(value) or value < 0:
        raise DelaySpecError(f"--queue-delay {spec!r}: {text!r} must be a finite number of seconds >= 0")
    return value


def parse(spec: str, *, stack: str | None = None) -> QueueDelay:
    """One of ``FORMS``; a history gives the cold wakes of ``stack`` (of every stack when None)."""
    kind, _, rest = spec.partition(":")
    if kind == "fixed":
        return QueueDelay("fixed", low=_seconds(rest, spec), high=_seconds(rest, spec))
    if kind == "uniform":
        low_text, sep, high_text = rest.partition(":")
        if not sep:
            raise DelaySpecError(f"--queue-delay {spec!r}: expected uniform:A:B, e.g. uniform:60:300")
        low, high = _seconds(low_text, spec), _seconds(high_text, spec)
        if high < low:
            raise DelaySpecError(f"--queue-delay {spec!r}: B ({high:g}) is below A ({low:g})")
        return QueueDelay("uniform", low=low, high=high)
    if kind == "history":
        return _from_history(Path(rest), spec, stack)
    raise DelaySpecError(f"--queue-delay {spec!r}: expected {FORMS}")


def _from_history(path: Path, spec: str, stack: str | None) -> QueueDelay:
    # Lazy for start-up time: the verb's parser (--help, the completion script) imports FORMS from here, and the
    # history reader brings in the settings and the probe (about 0.2 s).
    from supersonic_interlink.wake.history import read
    from supersonic_interlink.wake.report import wake_time

    if not path.is_file():
        raise DelaySpecError(f"--queue-delay {spec!r}: no file {path}")
    # cold, or not known to be warm
    times = [wake_time(w) for w in read(path).wakes if w.cold is not False and stack in (None, w.stack)]
    samples = tuple(math.inf if t.cut_off else t.seconds for t in times if t is not None)
    if not samples:
        whose = f" of stack {stack!r}" if stack else ""
        raise DelaySpecError(f"--queue-delay {spec!r}: {path} holds no cold wake{whose} with a wake time")
    return QueueDelay("history", samples=samples, source=str(path))


def served_share(delay: QueueDelay, ready_timeout_seconds: float, overhead_seconds: float) -> float:
    """The predicted share of cold sessions served: the queue delay plus the measured overhead within the timeout."""
    return delay.share_within(ready_timeout_seconds - overhead_seconds)
