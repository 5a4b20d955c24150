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

What the worker does around the run (the Zeebe-like server's JavaScript worker does all
three):

- ``worker_timeout``: the worker's own timeout races the run (``Promise.race``): a run
  longer than it — a hanging one too — ends there as a failure, "processing took too long";
- ``fail_wait``: before it reports a failure, the worker waits (the job stays its own), the
  ``k``-th wait by the retries the job has used (``attempt = 3 - job.retries``: 1 s, 2 s, 4 s);
- ``fail_retries``: what the worker's fail call sends where the worker sends the retries
  (a server that stores them as sent): ``decrement`` (``job.retries - 1``, one used),
  ``unchanged`` (``job.retries``: handed back without using one) or ``omitted`` (counts as
  0: an incident at once).

A handler may instead be a process that takes time and fails as the downstream services it
calls do (``executor/services.py``):

- ``steps``: its own work (``Work``: a duration) and its calls (``Call``: a service, the
  caller's timeout), in order. The first call that does not answer ``ok`` ends the run as a
  failure with that call's error; the side effect is the ``ok`` answer of the call marked
  ``effect`` (by default the last call);
- ``python``: a generator function, run through the API (``executor/context.py``).

The worker's own timeout, wait before failing and retries apply to both as to a drawn run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..base.dists import ZERO, Distribution
from .retry import Backoff, RetryPolicy
from ..base.rng import Stream

OUTCOMES = ("succeed", "fail_first", "always_fail", "fail_rate", "hang")
FAIL_RETRIES = ("decrement", "unchanged", "omitted")
#: the error of a run the worker's own timeout cut short
TIMED_OUT = "processing took too long"


class Execution(NamedTuple):
    """One drawn execution: its length, success, error, and side-effect offset (a failed
    execution has one only where its effect comes before its end, at ``start`` or a
    fraction: the effect took place and then the run failed; ``None`` otherwise)."""

    duration: float
    ok: bool
    error: str | None
    side_effect_at: float | None


@dataclass(frozen=True)
class Work:
    """A step of a handler's own work."""

    duration: Distribution


@dataclass(frozen=True)
class Call:
    """A step that calls a service; ``timeout`` is the caller's (None: it waits for ever);
    ``effect``: its ``ok`` answer is the run's side effect. With a ``breaker``, ``after``
    failed calls in a row on a node open it: for ``open_for`` that node's calls fail at once
    ("circuit open") without reaching the service; then one trial call goes through (the
    others still fail at once), and its answer closes the breaker or opens it again."""

    service: str
    timeout: float | None = None
    effect: bool = False
    #: a circuit breaker in the worker, per node: (failures in a row that open it, how long
    #: it stays open); None: none
    breaker: tuple[int, float] | None = None
    #: the idempotency key it sends: "job" (the same on every attempt), "attempt" (a new
    #: one each attempt), or None (none)
    idempotency_key: str | None = None


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
    #: the side effect is written with the run's fencing token (the row's lock generation
    #: at its claim) and refused once a later claim took the row, or the row is gone
    fenced: bool = False
    #: the effect is a row written in the completion's transaction: made only when the
    #: completion deletes the job (a rejected or row-gone completion rolls it back)
    at_commit: bool = False
    retry: RetryPolicy | None = None
    #: a BPMN timer boundary event on the task: (after, interrupting) or None
    boundary: tuple[float, bool] | None = None
    #: the worker's own timeout on a run (None: none)
    worker_timeout: float | None = None
    #: the worker's wait before it reports a failure, by the retries used (None: none)
    fail_wait: Backoff | None = None
    #: what the worker's fail call sends as retries (``FAIL_RETRIES``)
    fail_retries: str = "decrement"
    #: the run as steps of work and calls to services (None: a drawn run)
    steps: tuple[Work | Call, ...] | None = None
    #: the run as a Python generator function of a context (None: not one)
    python: Callable[..., Any] | None = None

    @property
    def effect_step(self) -> int | None:
        """The index of the step whose ok answer is the run's side effect: the call marked
        ``effect``, else the last call; None when the run calls no service, or its effect is
        a row written with its completion (``at_commit``)."""
        if self.at_commit:
            return None
        steps = self.steps or ()
        calls = [i for i, st in enumerate(steps) if isinstance(st, Call)]
        marked = [i for i in calls if steps[i].effect]  # type: ignore[union-attr]
        return marked[0] if marked else (calls[-1] if calls else None)

    @property
    def process(self) -> bool:
        """Whether a run is a process of its own (steps or Python), not a drawn one."""
        return self.steps is not None or self.python is not None

    def draw(self, attempt: int, stream: Stream) -> Execution:
        """The ``attempt``-th execution of a job (1-based), drawn from ``stream``; a run
        longer than the worker's timeout fails at the timeout."""
        run = self._draw(attempt, stream)
        limit = self.worker_timeout
        if limit is not None and run.duration > limit:  # (an effect before it took place)
            side = run.side_effect_at
            return Execution(limit, False, TIMED_OUT,
                             side if side is not None and side < limit else None)
        return run

    def drawer(self) -> Callable[[int, Stream], tuple[float, bool, str | None, float | None]]:
        """``draw`` as one function made for this handler (the worker's hot path): the same
        draws in the same order, as a plain tuple, without the outcome's dispatch."""
        if self.worker_timeout is not None or self.outcome not in ("succeed", "fail_rate"):
            return self.draw
        sample, side = self.duration.sample, self.side_effect_at
        if self.outcome == "succeed":
            def draw(attempt: int, stream: Stream) -> tuple[float, bool, None, float]:
                d = sample(stream)
                return d, True, None, d * side
            return draw
        rate, error = self.fail_rate, self.error
        before = side if side < 1.0 else None  # an effect before the failure took place

        def draw_failing(attempt: int, stream: Stream
                         ) -> tuple[float, bool, str | None, float | None]:
            d = sample(stream)
            if stream.uniform() >= rate:
                return d, True, None, d * side
            return (d, False, error.replace("{attempt}", str(attempt)),
                    None if before is None else before * d)
        return draw_failing

    def _draw(self, attempt: int, stream: Stream) -> Execution:
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
        # an effect before the run's end took place before it failed
        before = d * self.side_effect_at if self.side_effect_at < 1.0 else None
        return Execution(d, False, self.error.replace("{attempt}", str(attempt)), before)
