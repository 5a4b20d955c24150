"""Retry accounting and backoff schedules.

The accounting here is the lesson's and Flowable's: a new job carries ``retries = attempts``
(total executions); each failure decrements it; a failure with ``retries <= 1`` left moves
the job to the dead-letter table instead. The ``k``-th failure (1-based) waits
``backoff.delay(k)`` before the job is due again.

Backoff forms:

- ``ListBackoff([10s, 60s, 300s])`` — the ``k``-th delay, the last one repeating;
- ``FixedBackoff(10s)``;
- ``ExponentialBackoff(base, factor, cap, jitter, offset)`` — ``d = min(cap, offset + base ×
  factor^(k−1))`` (Oban's ``15 s + 2^k s`` is base 2 s, factor 2, offset 15 s), jittered
  with draws ``U`` from the failing node's stream ``retry/jitter/<node>``:

  - a number ``jitter`` in [0, 1]: ``d × (1 + jitter × U[−1, 1))``, capped again;
  - ``full``: ``U(0, d)``; ``equal``: ``d/2 + U(0, d/2)``;
  - ``decorrelated``: ``min(cap, U(low, 3 × previous))``, where ``low = min(cap, offset +
    base)`` and ``previous`` is the job's previous delay (``low`` before its first); it
    grows by its own draws, so ``factor`` plays no part.

  The offset is part of ``d`` in every form: the jitter spreads the whole delay, offset
  included (a numeric jitter always did), and ``decorrelated`` starts from ``offset + base``.
  Without a stream the middle of the draw is taken (``U = 1/2``);
- ``CycleBackoff(repeat, interval)`` — ISO-8601 ``R5/PT10M``: on the job's first failure
  ever the retry count is replaced by the repeat count (Flowable's
  ``failedJobRetryTimeCycle``: only while the job's exception message is empty), so the job
  runs ``repeat`` times in all, ``interval`` apart. A job an operator moved back with
  retries has failed before: the cycle does not replace those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base.durations import format_duration
from ..base.rng import Stream


@dataclass(frozen=True)
class ListBackoff:
    delays: tuple[float, ...]

    def delay(self, failure: int, stream: Stream | None = None,
              previous: float | None = None) -> float:
        return self.delays[min(failure, len(self.delays)) - 1]

    def bounds(self, failure: int, previous: float | None = None) -> tuple[float, float]:
        d = self.delay(failure)
        return d, d

    def mean(self, failure: int) -> float:
        return self.delay(failure)

    def describe(self) -> str:
        return "[" + ", ".join(format_duration(d) for d in self.delays) + "]"


@dataclass(frozen=True)
class FixedBackoff:
    every: float

    def delay(self, failure: int, stream: Stream | None = None,
              previous: float | None = None) -> float:
        return self.every

    def bounds(self, failure: int, previous: float | None = None) -> tuple[float, float]:
        return self.every, self.every

    def mean(self, failure: int) -> float:
        return self.every

    def describe(self) -> str:
        return f"fixed {format_duration(self.every)}"


#: the named jitter forms of ``ExponentialBackoff`` (a number is the symmetric fraction)
JITTER_FORMS = ("full", "equal", "decorrelated")
#: what a retry's wait counts from (``RetryPolicy.backoff_from``)
BACKOFF_FROM = ("failure", "due")


def _power(x: float, n: int) -> float:
    """``x ** n``, infinite beyond a float's range (``2.0 ** 1024`` raises OverflowError)."""
    try:
        return x ** n
    except OverflowError:
        return math.inf


@dataclass(frozen=True)
class ExponentialBackoff:
    base: float
    factor: float = 2.0
    cap: float = float("inf")
    #: a fraction in [0, 1] (symmetric), or one of ``JITTER_FORMS``
    jitter: float | str = 0.0
    offset: float = 0.0

    def _raw(self, failure: int) -> float:
        """``min(cap, offset + base × factor^(failure−1))``, safe for any failure count: the
        power is taken before the cap, and ``2.0 ** 1024`` raises OverflowError (a job's
        1,025th failure used to crash the run). A power beyond a float's range is infinite,
        so the delay is then the cap, or infinite when there is none (never due again)."""
        grown = _power(self.factor, failure - 1)
        return min(self.cap, self.offset + (self.base * grown if self.base else 0.0))

    def _low(self) -> float:
        """Decorrelated jitter's least delay, and its ``previous`` before the first."""
        return min(self.cap, self.offset + self.base)

    def delay(self, failure: int, stream: Stream | None = None,
              previous: float | None = None) -> float:
        """The ``failure``-th delay; ``previous`` is the job's previous delay (decorrelated
        jitter only; ``None`` before its first)."""
        if isinstance(self.jitter, str):
            u = stream.uniform() if stream is not None else 0.5
            return self._named(failure, u, previous)
        d = self._raw(failure)
        if self.jitter and stream is not None:
            scale = 1.0 + self.jitter * (2.0 * stream.uniform() - 1.0)
            if d < math.inf:  # inf × 0 is nan: an infinite wait stays infinite
                d *= scale
        return min(self.cap, d)

    def _named(self, failure: int, u: float, previous: float | None) -> float:
        if self.jitter == "decorrelated":
            low = self._low()
            top = 3.0 * max(low, low if previous is None else previous)
            if top == math.inf:
                return min(self.cap, math.inf)
            return min(self.cap, low + u * (top - low))
        d = self._raw(failure)
        if d == math.inf:  # U(0, inf) has no middle: an infinite wait stays infinite
            return d
        if self.jitter == "full":
            return u * d
        return d / 2.0 + u * (d / 2.0)  # equal

    def bounds(self, failure: int, previous: float | None = None) -> tuple[float, float]:
        """The least and the most the ``failure``-th delay can be; decorrelated: given the
        job's ``previous`` delay, else over every history (``low × 3^failure`` at most)."""
        if self.jitter == "decorrelated":
            low = self._low()
            top = 3.0 * previous if previous is not None else low * _power(3.0, failure)
            return low, min(self.cap, max(low, top))
        d = self._raw(failure)
        if d == math.inf:
            return d, d
        if self.jitter == "full":
            return 0.0, d
        if self.jitter == "equal":
            return d / 2.0, d
        return d * (1.0 - self.jitter), min(self.cap, d * (1.0 + self.jitter))

    def mean(self, failure: int) -> float:
        """The ``failure``-th delay on average, for estimates (decorrelated: ``m_k = (low +
        3 m_{k−1}) / 2`` from ``m_0 = low``, i.e. ``2 low × 1.5^k − low``, at most the cap)."""
        if self.jitter == "decorrelated":
            low = self._low()
            return min(self.cap, 2.0 * low * _power(1.5, failure) - low)
        lo, hi = self.bounds(failure)
        return (lo + hi) / 2.0

    def describe(self) -> str:
        if self.jitter == "decorrelated":
            text = f"decorrelated U({format_duration(self._low())}, 3 × the previous delay)"
        else:
            text = f"exponential {format_duration(self.base)} ×{self.factor:g}"
            if self.offset:
                text = f"{format_duration(self.offset)} + " + text
        if self.cap != float("inf"):
            text += f" cap {format_duration(self.cap)}"
        if self.jitter in ("full", "equal"):
            text += f", {self.jitter} jitter"
        elif self.jitter and not isinstance(self.jitter, str):
            text += f" ±{self.jitter:.0%}"
        return text


@dataclass(frozen=True)
class CycleBackoff:
    repeat: int
    interval: float

    def delay(self, failure: int, stream: Stream | None = None,
              previous: float | None = None) -> float:
        return self.interval

    def bounds(self, failure: int, previous: float | None = None) -> tuple[float, float]:
        return self.interval, self.interval

    def mean(self, failure: int) -> float:
        return self.interval

    def describe(self) -> str:
        return f"R{self.repeat}/{format_duration(self.interval)}"


Backoff = ListBackoff | FixedBackoff | ExponentialBackoff | CycleBackoff


@dataclass(frozen=True)
class Decision:
    """What a failure leads to: dead letter, or a retry ``delay`` later with ``left`` retries."""

    dead: bool
    left: int
    delay: float


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` executions in all (Flowable's RETRIES_), waiting ``backoff`` between.
    ``backoff_from``: what the wait counts from — ``failure`` (due = the failure's instant +
    backoff, as every modelled system but the lesson's does) or ``due`` (the lesson's
    ``due += backoff``: from the job's due time, so a job that failed long after it fell
    due may be due again at once)."""

    attempts: int = 3
    backoff: Backoff = ListBackoff((10.0,))
    backoff_from: str = "failure"

    def initial_retries(self) -> int:
        return self.attempts

    def on_failure(self, retries: int, failure: int, stream: Stream | None = None,
                   previous: float | None = None, first: bool | None = None) -> Decision:
        """The decision for the ``failure``-th failure of a job holding ``retries``, whose
        previous delay was ``previous`` (``None`` before its first). ``first``: whether the
        job never failed before (Flowable: its exception message is still empty); only then
        does a cycle replace the retries by its repeat count, so an operator's move with
        retries, which keeps the exception, is not overridden. ``None``: ``failure == 1``."""
        if first is None:
            first = failure == 1
        if first and isinstance(self.backoff, CycleBackoff):
            retries = self.backoff.repeat
        if retries <= 1:
            return Decision(True, 0, 0.0)
        return Decision(False, retries - 1, self.backoff.delay(failure, stream, previous))

    def total_attempts(self) -> int:
        """How many executions a job that always fails gets."""
        if isinstance(self.backoff, CycleBackoff):
            return self.backoff.repeat
        return self.attempts
