"""Handler models: how long a job runs, whether it fails, and when its side effect happens.

A handler is what a job *does*. jobsim does not run code; it draws an execution:

- a duration from a distribution (``constant``, ``uniform``, ``exponential``, ``lognormal``);
- an outcome by the failure mode: ``succeed``; ``fail_first: N`` (the job's first ``N``
  executions fail, then it succeeds — a flaky remote call); ``always_fail``; ``fail_rate: p``
  (each execution fails with probability ``p``, from the stream ``handler/<name>``); ``hang``
  (runs ``hang_for``, by default forever: far past any lock);
- the side-effect point: the external effect (the payment, the e-mail) happens at a fraction
  of the run (``0`` = at the start, ``1`` = at the end, just before the completion commits).
  A failed execution has no side effect: its failure *is* the external call failing. A crash
  or a lost lock between the side effect and the commit makes a duplicate side effect.

The error message may name the execution: ``"bureau 502 (attempt {attempt})"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from ..base.dists import ZERO, Distribution
from .retry import RetryPolicy
from ..base.rng import Stream

OUTCOMES = ("succeed", "fail_first", "always_fail", "fail_rate", "hang")


class Execution(NamedTuple):
    """One drawn execution: its length, success, error, and side-effect offset (a failed
    execution has none: ``None``)."""

    duration: float
    ok: bool
    error: str | None
    side_effect_at: float | None


@dataclass(frozen=True)
class Handler:
    name: str
    duration: Distribution = ZERO
    outcome: str = "succeed"
    fail_first: int = 0
    fail_rate: float = 0.0
    hang_for: float = math.inf
    error: str = "handler failed"
    side_effect_at: float = 1.0
    says: str | None = None
    retry: RetryPolicy | None = None
    #: a BPMN timer boundary event on the task: (after, interrupting) or None
    boundary: tuple[float, bool] | None = None

    def draw(self, attempt: int, stream: Stream) -> Execution:
        """The ``attempt``-th execution of a job (1-based), drawn from ``stream``."""
        if self.outcome == "hang":
            d = self.hang_for
            return Execution(d, True, None, math.inf if math.isinf(d) else d * self.side_effect_at)
        d = self.duration.sample(stream)
        if self.outcome == "succeed":
            ok = True
        elif self.outcome == "fail_first":
            ok = attempt > self.fail_first
        elif self.outcome == "always_fail":
            ok = False
        else:
            ok = stream.uniform() >= self.fail_rate
        if ok:
            return Execution(d, True, None, d * self.side_effect_at)
        return Execution(d, False, self.error.replace("{attempt}", str(attempt)), None)
