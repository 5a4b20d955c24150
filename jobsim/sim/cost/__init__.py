"""What a run will cost, worked out from its scenario before it runs — and a guard while it runs.

``estimate(scenario)`` counts the simulator's events (SimPy events: each a step of the
event loop) from what drives them:

- **executions**: jobs × executions per job. A job runs once if it succeeds; a failing
  handler runs ``1 + p + p² + …`` times up to its retry policy's attempts (``always_fail``:
  every attempt; ``fail_first: N``: N + 1); a handler that runs past its lock without a
  heartbeat is taken again each time the lock expires; a job that hangs forever is retaken
  every ``lock_time`` until the end of the run.
- **polls that cannot be skipped**: a node sleeps through polls that nothing can change
  (counted, not simulated). Under a backlog it polls when a thread frees or when its full
  local queue's wait ends; otherwise a write that may make a row eligible (an insert, a
  failure, a retry falling due) wakes every idle node — at once with notify, at its next
  poll instant on the poll grid (at most one poll per interval).
- **what the nodes can run**: the threads, and for a node on the poll grid with a local
  queue a queue's worth per wait; a run with an end runs no more than that.
- **rows that wait in a local queue past their lock** and are claimed again.
- **periodic threads**: heartbeats, the reset thread, the timer mover, the global lock's
  polling — each ticks for as long as the run lasts, whether or not it has work.
- **recurrences, faults and the fake clock's ticks**.

Each is multiplied by the events it costs, fitted on the random scenarios of the test suite:
with no latency a statement takes no event, and a burst's rows taken from a local queue by
threads that finish at once hardly any. The memory follows from the trace's rows (about
four per execution, one per job, poll and heartbeat) and the jobs. On 600 random scenarios
written as a newcomer would, 596 ran within 3× of their estimate (see tests/test_cost.py);
the misses are mostly lock-expiry cascades that feed themselves.

A run is refused above a budget (``DEFAULT_EVENTS`` events, ``DEFAULT_MEMORY`` bytes; the
command line's ``--budget`` and ``--memory-budget`` raise them) with the estimate, the
settings that drive it, and how to raise it. ``Guard`` stops a run that goes far past its
estimate (``GUARD_FACTOR``×, or past the budget if that is higher) or past the memory budget.

How long a run lasts decides how many polls and periodic ticks it makes: the time its work
takes to drain (the unluckiest job's chain of retries included), longer for a serial queue's
jobs one after another, a crashed or cut-off node's locks that must expire first, or an
operation still to come, and to the horizon when a job may be stranded. A job handed back
for ever at one instant (no run time, no wait, no backoff) is a run that never ends: it is
refused as such, with the setting that causes it.

The modules: ``budget`` (the budget, the ``Estimate`` and the refusal), ``work`` (the jobs
and their executions), ``span`` (how long the run lasts), ``events`` (what that costs in
events and memory, and ``estimate``), ``guard`` (the guard while running).
"""

from .budget import (DEFAULT_EVENTS, DEFAULT_MEMORY, MAX_EVENTS, MAX_MEMORY, Budget,
                     BudgetError, Estimate, check)
from .events import (BASE_MEMORY, BYTES_PER_JOB, BYTES_PER_ROW, BYTES_PER_THREAD,
                     EVENTS_PER_BATCH_HANDOFF, EVENTS_PER_EXECUTION, EVENTS_PER_HANDOFF,
                     EVENTS_PER_INSTANT_BURST_EXECUTION, EVENTS_PER_INSTANT_BURST_POLL,
                     EVENTS_PER_INSTANT_EXECUTION, EVENTS_PER_INSTANT_POLL, EVENTS_PER_JOB,
                     EVENTS_PER_POLL, EVENTS_PER_RUN, EVENTS_PER_TICK, ROWS_PER_EXECUTION,
                     SQLITE_STATEMENT_FACTOR, estimate)
from .guard import GUARD_FACTOR, GUARD_MIN_EVENTS, Guard, RunStopped

__all__ = [
    "DEFAULT_EVENTS", "DEFAULT_MEMORY", "MAX_EVENTS", "MAX_MEMORY", "Budget", "BudgetError",
    "Estimate", "check", "estimate", "GUARD_FACTOR", "GUARD_MIN_EVENTS", "Guard",
    "RunStopped", "BASE_MEMORY", "BYTES_PER_JOB", "BYTES_PER_ROW", "BYTES_PER_THREAD",
    "EVENTS_PER_BATCH_HANDOFF", "EVENTS_PER_EXECUTION", "EVENTS_PER_HANDOFF",
    "EVENTS_PER_INSTANT_BURST_EXECUTION", "EVENTS_PER_INSTANT_BURST_POLL",
    "EVENTS_PER_INSTANT_EXECUTION", "EVENTS_PER_INSTANT_POLL", "EVENTS_PER_JOB",
    "EVENTS_PER_POLL", "EVENTS_PER_RUN", "EVENTS_PER_TICK", "ROWS_PER_EXECUTION",
    "SQLITE_STATEMENT_FACTOR",
]
