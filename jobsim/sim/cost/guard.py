"""The guard while a run runs: it stops a run that goes far past its estimate.

The run loop calls a ``Guard`` every few thousand events; it raises ``RunStopped`` when the
run has made ``GUARD_FACTOR`` times its estimated events (and at least ``GUARD_MIN_EVENTS``,
a few seconds of simulation, so that a small run is never stopped for a small miss), or when
the process's memory grew past the memory budget. A budget raised above the default
(``--budget``) is the user's consent to a bigger run: the guard then stops at that budget if
it is higher. The default budget is not such a consent: a run estimated at 12,000 events
that makes millions has gone wrong (or the estimate has), and is stopped with a message
that says so and how to let it go on.
"""

from __future__ import annotations

import os

from .budget import DEFAULT_EVENTS, Budget, Estimate, _bytes, _count, events_flag

#: a run stops when it reaches this many times its estimate (or its budget, if higher)
GUARD_FACTOR = 10.0
GUARD_MIN_EVENTS = 1_000_000


def _rss() -> float | None:
    """This process's resident memory in bytes (Linux), else None."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class RunStopped(Exception):
    """A run went far past its estimate (events or memory) and was stopped."""


class Guard:
    """Called by the run loop every few thousand events: stops a run that has gone far past
    its estimate, or whose memory grew past the budget."""

    def __init__(self, est: Estimate, budget: Budget = Budget(), what: str = "the run"):
        self.estimate = est
        self.what = what
        raised = budget.events if budget.events > DEFAULT_EVENTS else 0.0
        self.max_events = max(GUARD_FACTOR * est.events, raised, GUARD_MIN_EVENTS)
        self.max_growth = max(budget.memory, 2.0 * est.memory_bytes)
        self.start_rss = _rss()

    def __call__(self, events: int, now: float) -> None:
        if events > self.max_events:
            raise RunStopped(
                f"{self.what} stopped at simulated t={now:,.6g} s after {_count(events)} "
                f"events, {events / max(self.estimate.events, 1):,.0f}× its estimate "
                f"({self.estimate.describe()}); nothing was written. Something in the "
                "scenario makes far more events than it looks (a tight loop of retries, "
                "polls or expiring locks?). If the run is right, raise the budget: "
                f"--budget {events_flag(max(events * 10, self.max_events * 10))}")
        if self.start_rss is not None:
            rss = _rss()
            if rss is not None and rss - self.start_rss > self.max_growth:
                raise RunStopped(
                    f"{self.what} stopped at simulated t={now:,.6g} s: its memory grew by "
                    f"{_bytes(rss - self.start_rss)}, past the budget of "
                    f"{_bytes(self.max_growth)} (estimate: {self.estimate.describe()}); "
                    "nothing was written. Raise it with --memory-budget if the machine "
                    "has the memory.")
