"""Retry accounting and backoff schedules.

The accounting here is the lesson's and Flowable's: a new job carries ``retries = attempts``
(total executions); each failure decrements it; a failure with ``retries <= 1`` left moves
the job to the dead-letter table instead. The ``k``-th failure (1-based) waits
``backoff.delay(k)`` before the job is due again.

Backoff forms:

- ``ListBackoff([10s, 60s, 300s])`` — the ``k``-th delay, the last one repeating;
- ``FixedBackoff(10s)``;
- ``ExponentialBackoff(base, factor, cap, jitter, offset)`` — ``min(cap, offset + base ×
  factor^(k−1))`` (Oban's ``15 s + 2^k s`` is base 2 s, factor 2, offset 15 s),
  scaled by ``1 + jitter × U[−1, 1)`` from the named stream ``retry/jitter/<node>``, then
  capped again;
- ``CycleBackoff(repeat, interval)`` — ISO-8601 ``R5/PT10M``: on the first failure the retry
  count is replaced by the repeat count (Flowable's ``failedJobRetryTimeCycle``), so the job
  runs ``repeat`` times in all, ``interval`` apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base.durations import format_duration
from ..base.rng import Stream


@dataclass(frozen=True)
class ListBackoff:
    delays: tuple[float, ...]

    def delay(self, failure: int, stream: Stream | None = None) -> float:
        return self.delays[min(failure, len(self.delays)) - 1]

    def bounds(self, failure: int) -> tuple[float, float]:
        d = self.delay(failure)
        return d, d

    def describe(self) -> str:
        return "[" + ", ".join(format_duration(d) for d in self.delays) + "]"


@dataclass(frozen=True)
class FixedBackoff:
    every: float

    def delay(self, failure: int, stream: Stream | None = None) -> float:
        return self.every

    def bounds(self, failure: int) -> tuple[float, float]:
        return self.every, self.every

    def describe(self) -> str:
        return f"fixed {format_duration(self.every)}"


@dataclass(frozen=True)
class ExponentialBackoff:
    base: float
    factor: float = 2.0
    cap: float = float("inf")
    jitter: float = 0.0
    offset: float = 0.0

    def _raw(self, failure: int) -> float:
        """``min(cap, offset + base × factor^(failure−1))``, safe for any failure count: the
        power is taken before the cap, and ``2.0 ** 1024`` raises OverflowError (a job's
        1,025th failure used to crash the run). A power beyond a float's range is infinite,
        so the delay is then the cap, or infinite when there is none (never due again)."""
        try:
            grown = self.factor ** (failure - 1)
        except OverflowError:
            grown = math.inf
        return min(self.cap, self.offset + (self.base * grown if self.base else 0.0))

    def delay(self, failure: int, stream: Stream | None = None) -> float:
        d = self._raw(failure)
        if self.jitter and stream is not None:
            scale = 1.0 + self.jitter * (2.0 * stream.uniform() - 1.0)
            if d < math.inf:  # inf × 0 is nan: an infinite wait stays infinite
                d *= scale
        return min(self.cap, d)

    def bounds(self, failure: int) -> tuple[float, float]:
        d = self._raw(failure)
        if d == math.inf:
            return d, d
        return d * (1.0 - self.jitter), min(self.cap, d * (1.0 + self.jitter))

    def describe(self) -> str:
        text = f"exponential {format_duration(self.base)} ×{self.factor:g}"
        if self.offset:
            text = f"{format_duration(self.offset)} + " + text
        if self.cap != float("inf"):
            text += f" cap {format_duration(self.cap)}"
        if self.jitter:
            text += f" ±{self.jitter:.0%}"
        return text


@dataclass(frozen=True)
class CycleBackoff:
    repeat: int
    interval: float

    def delay(self, failure: int, stream: Stream | None = None) -> float:
        return self.interval

    def bounds(self, failure: int) -> tuple[float, float]:
        return self.interval, self.interval

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
    """``attempts`` executions in all (Flowable's RETRIES_), waiting ``backoff`` between."""

    attempts: int = 3
    backoff: Backoff = ListBackoff((10.0,))

    def initial_retries(self) -> int:
        return self.attempts

    def on_failure(self, retries: int, failure: int, stream: Stream | None = None) -> Decision:
        """The decision for the ``failure``-th failure of a job holding ``retries``."""
        if failure == 1 and isinstance(self.backoff, CycleBackoff):
            retries = self.backoff.repeat
        if retries <= 1:
            return Decision(True, 0, 0.0)
        return Decision(False, retries - 1, self.backoff.delay(failure, stream))

    def total_attempts(self) -> int:
        """How many executions a job that always fails gets."""
        if isinstance(self.backoff, CycleBackoff):
            return self.backoff.repeat
        return self.attempts
