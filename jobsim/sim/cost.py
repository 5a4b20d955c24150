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
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from ..database.claims import INSTANT
from ..executor.config import Scenario
from ..base.dists import Constant

#: the default budget: about a minute or two of simulation on a laptop
DEFAULT_EVENTS = 20_000_000
DEFAULT_MEMORY = 4 * 1024 ** 3
#: the largest budget the command line takes
MAX_EVENTS = 10 ** 12
MAX_MEMORY = 1024 ** 5
#: a run stops when it reaches this many times its estimate (or its budget, if higher)
GUARD_FACTOR = 10.0
GUARD_MIN_EVENTS = 1_000_000

# events (SimPy steps) per unit, measured (see tests/test_cost.py)
EVENTS_PER_EXECUTION = 2.14
EVENTS_PER_INSTANT_EXECUTION = 0.29  # no duration, no database latency
EVENTS_PER_INSTANT_BURST_EXECUTION = 0.02  # the same, for a burst's jobs
EVENTS_PER_INSTANT_BURST_POLL = 0.8
EVENTS_PER_HANDOFF = 1.0  # a row handed to an idle thread (no local queue)
EVENTS_PER_BATCH_HANDOFF = 0.5  # a claim's batch, through the statement path, per thread
EVENTS_PER_JOB = 1.2
EVENTS_PER_POLL = 2.4
EVENTS_PER_INSTANT_POLL = 1.5
EVENTS_PER_TICK = 0.72
EVENTS_PER_RUN = 21.0
#: SQLite: every write queues for the database's one write lock (a request, a release)
SQLITE_STATEMENT_FACTOR = 1.8
# memory: a trace row costs about 60 bytes in its buffers and several times that while it
# is analysed (its frame, the stories, the tables); a job costs its row, its story and its
# line in the tables
ROWS_PER_EXECUTION = 4.0
BYTES_PER_ROW = 250.0
BYTES_PER_JOB = 2500.0
BYTES_PER_THREAD = 4000.0
BASE_MEMORY = 50 * 1024 ** 2


class BudgetError(Exception):
    """A run (or a sweep) would cost more than its budget: the message says how much, why,
    and how to raise the budget."""


@dataclass(frozen=True)
class Budget:
    events: float = DEFAULT_EVENTS
    memory: float = DEFAULT_MEMORY


@dataclass
class Estimate:
    """The estimated events and memory of one run, with what drives them."""

    events: float
    memory_bytes: float
    #: (what, events) for each part, largest first
    parts: list[tuple[str, float]] = field(default_factory=list)
    jobs: float = 0.0
    executions: float = 0.0
    span: float = 0.0
    #: the raw counts behind the parts (executions, jobs, polls, periodic ticks)
    counts: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        return (f"about {_count(self.events)} events and {_bytes(self.memory_bytes)} of "
                f"memory ({_count(self.jobs)} jobs, {_count(self.executions)} executions "
                f"over {_seconds(self.span)} of simulated time)")

    def drivers(self, n: int = 3) -> list[str]:
        total = max(self.events, 1.0)
        return [f"{what}: {_count(ev)} events ({ev / total:.0%})"
                for what, ev in self.parts[:n] if ev >= 0.01 * total]

    def over(self, budget: Budget) -> str | None:
        """Why this estimate is beyond ``budget``, or None."""
        if self.events > budget.events:
            return (f"estimated {_count(self.events)} events, beyond the budget of "
                    f"{_count(budget.events)}")
        if self.memory_bytes > budget.memory:
            return (f"estimated {_bytes(self.memory_bytes)} of memory, beyond the budget of "
                    f"{_bytes(budget.memory)}")
        return None


def check(estimate: Estimate, budget: Budget, what: str) -> None:
    """Raise BudgetError when ``estimate`` is beyond ``budget``; ``what`` names the run."""
    why = estimate.over(budget)
    if why is None:
        return
    lines = [f"{what}: {why}.", f"  estimate: {estimate.describe()}"]
    drivers = estimate.drivers()
    if drivers:
        lines.append("  driven by: " + "; ".join(drivers))
    need_events = max(budget.events, estimate.events * 1.1)
    need_mem = max(budget.memory, estimate.memory_bytes * 1.1)
    if need_events > MAX_EVENTS or need_mem > MAX_MEMORY:
        lines.append(f"  that is beyond what jobsim runs at all ({MAX_EVENTS:.0e} events, "
                     f"{_bytes(MAX_MEMORY)}): change the settings above (fewer jobs, "
                     "attempts or nodes, a longer interval, a shorter run)")
        raise BudgetError("\n".join(lines))
    lines.append(f"  if this is what you mean, raise the budget: --budget {need_events:.2g}"
                 + (f" --memory-budget {_bytes(need_mem).replace(' ', '')}"
                    if estimate.memory_bytes > budget.memory else ""))
    raise BudgetError("\n".join(lines))


def _count(x: float) -> str:
    if not math.isfinite(x):
        return "unboundedly many"
    if x >= 1e12:
        return f"{x:.1e}"
    for unit, size in (("billion", 1e9), ("million", 1e6)):
        if x >= size:
            return f"{x / size:,.1f} {unit}"
    return f"{x:,.0f}"


def _bytes(x: float) -> str:
    if not math.isfinite(x):
        return "unbounded"
    if x > 1024 ** 5:
        return f"{x:.1e} bytes"
    if x == 1024 ** 5:
        return "1 PB"
    for unit, size in (("TB", 1024 ** 4), ("GB", 1024 ** 3), ("MB", 1024 ** 2)):
        if x >= size:
            return f"{x / size:,.1f} {unit}"
    return f"{x / 1024:,.0f} kB"


def _seconds(s: float) -> str:
    if not math.isfinite(s):
        return "forever"
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= size:
            return f"{s / size:,.1f} {unit}"
    return f"{s:,.3g} s"


def _mean(d) -> float:
    m = d.mean
    return float(m() if callable(m) else m)


def _dialect_factor(sc: Scenario) -> float:
    return SQLITE_STATEMENT_FACTOR if sc.db.dialect == "sqlite" else 1.0


def _executions_per_job(h, attempts: int, exhausted_stops: bool) -> float:
    """Expected executions of one job of handler ``h`` (failures and retries)."""
    if h.outcome == "succeed" or h.outcome == "hang":
        return 1.0
    if exhausted_stops:  # failsafe: a failure parks the task
        return 1.0
    a = max(1, attempts)
    if h.outcome == "always_fail":
        return float(a)
    if h.outcome == "fail_first":
        return float(min(a, h.fail_first + 1))
    p = min(max(h.fail_rate, 0.0), 1.0)
    if p >= 1.0:
        return float(a)
    return (1.0 - p ** a) / (1.0 - p)


def _throughput(nodes, mean_d: float, latency: float) -> float:
    """Executions per second the nodes can run under a backlog: each node's threads (a
    handler's mean length and its two statements), and — for a node on the poll grid with
    a local queue — a queue's worth per cycle (it fills the queue, then waits
    ``queue_full_wait`` before it looks again)."""
    total = 0.0
    busy = mean_d + 2.0 * latency
    for n in nodes:
        e = n.executor
        rate = e.threads / busy if busy > 0 else math.inf
        if e.wakeup == "poll" and e.queue_size:
            cycle = e.queue_full_wait or e.poll_interval
            if cycle > 0:
                rate = min(rate, (e.queue_size + e.threads) / cycle)
        total += rate
    return max(total, 1e-12)


def _ends_failed(h, attempts: int, exhausted_stops: bool) -> float:
    """The chance that a job of handler ``h`` ends failed (its last attempt fails)."""
    if h.outcome in ("succeed", "hang"):
        return 0.0
    if h.outcome == "always_fail":
        return 1.0
    if h.outcome == "fail_first":
        return 1.0 if exhausted_stops or h.fail_first >= max(1, attempts) else 0.0
    p = min(max(h.fail_rate, 0.0), 1.0)
    return p if exhausted_stops else p ** max(1, attempts)


def _attempts_within(policy, attempts: int, end: float) -> tuple[int, list[float]]:
    """How many of ``attempts`` executions fit before ``end`` (the backoff delays between
    them add up), and the cumulative wait before each (up to 100,000 of them)."""
    waits = [0.0]
    total = 0.0
    for failure in range(1, min(attempts, 100_000)):
        lo, hi = policy.backoff.bounds(failure)
        total += (lo + hi) / 2
        if total > end:
            break
        waits.append(total)
    return len(waits), waits


def estimate(sc: Scenario) -> Estimate:
    """The events and memory of a run of ``sc`` (before running it)."""
    ex = sc.executor
    nodes = sc.nodes
    n_nodes = max(len(nodes), 1)
    threads = sum(n.executor.threads for n in nodes)
    parts: dict[str, float] = {}

    # --- the jobs, by handler, and when the workload ends ---
    by_handler: dict[str, float] = {}
    arrivals_end = 0.0
    stop = sc.end  # nothing is created after the run's end
    created_by_event = 0.0  # jobs created one SimPy event apart (a burst costs one in all)
    for j in sc.jobs:
        if j.at <= stop:
            by_handler[j.handler] = by_handler.get(j.handler, 0.0) + 1
            arrivals_end = max(arrivals_end, j.at + j.due_in)
    created_by_event += len({j.at for j in sc.jobs if j.at <= stop})
    for s in sc.streams:
        count = float(s.count)
        if s.rate:
            count = min(count, s.rate * max(0.0, stop - s.start) + 1)
        elif s.start > stop:
            count = 0.0
        by_handler[s.handler] = by_handler.get(s.handler, 0.0) + count
        created_by_event += count if s.rate else 1.0
        end = s.start + (count / s.rate if s.rate else 0.0) + s.due_in
        arrivals_end = max(arrivals_end, min(end, stop))
    for r in sc.recurring:
        count = min(float(r.count), max(0.0, stop - r.start) / r.every + 1) if r.every > 0 \
            else float(r.count)
        by_handler[r.handler] = by_handler.get(r.handler, 0.0) + count
        created_by_event += count
        arrivals_end = max(arrivals_end, min(r.start + count * r.every, stop))
    jobs = sum(by_handler.values())

    # --- how long the run lasts ---
    exhausted_stops = ex.exhausted == "failed"
    work = 0.0        # handler-seconds of execution
    tail = 0.0        # the longest a job keeps coming back (backoff), after the workload
    executions = 0.0
    hang_jobs = 0.0
    dead = 0.0        # jobs whose last execution fails (dead letters, failed tasks)
    longest_run = 0.0
    for name, count in by_handler.items():
        h = sc.handlers[name]
        policy = sc.retry_for("", name)
        fit, waits = _attempts_within(policy, policy.total_attempts(), sc.end)
        per = _executions_per_job(h, fit, exhausted_stops)
        mean = h.hang_for if h.outcome == "hang" else _mean(h.duration)
        if h.outcome == "hang" and math.isinf(mean):
            hang_jobs += count
        else:
            work += count * per * mean
            longest_run = max(longest_run, mean)
        executions += count * per
        dead += count * _ends_failed(h, fit, exhausted_stops)
        tail = max(tail, waits[min(len(waits), max(1, math.ceil(per))) - 1])
    # --- rows that wait in a local queue past their lock: taken again by another node ---
    # Under a backlog a node's local queue fills; a row at a position its threads reach
    # only after ``lock_time`` expires while it waits (a heartbeat extends only the rows
    # running, unless its scope is "held") and is claimed again — and may wait again. With
    # a share f expiring, a job runs between 1 + f (no cascade) and 1/(1 − f) times (every
    # re-claim waits as long). A stream that arrives faster than the threads run feeds the
    # cascade (the backlog grows with every re-run): the upper bound. A burst drains: the
    # geometric mean of the two, √(q·d / (lock_time·threads)).
    mean_job = work / executions if executions and work else 0.0
    rerun = 1.0
    if (ex.lock_expiry != "never" and ex.lock_time > 0 and mean_job > 0
            and not (ex.heartbeat and ex.heartbeat_scope == "held")):
        backlog = max(0.0, executions - arrivals_end * threads / mean_job)
        spread = created_by_event / max(jobs, 1.0)
        overloaded = spread >= 0.5 and backlog > 0
        weighted = 0.0
        for n in nodes:
            e = n.executor
            share = e.threads / max(threads, 1)
            queued = min(float(e.queue_size), backlog * share)
            reach = e.lock_time * e.threads / mean_job  # positions started within the lock
            ratio = max(1.0, queued / max(reach, 1e-9))
            weighted += share * math.sqrt(ratio)
        rerun = weighted
        work *= rerun
        executions *= rerun
    latency = _mean(sc.db.latency) if sc.db.latency is not None else 0.0
    throughput = _throughput(nodes, work / executions if executions else 0.0, latency)
    drain = arrivals_end + tail + longest_run + executions / throughput
    span = min(sc.end, max(drain, sc.until or 0.0)) if sc.until is not None else \
        min(sc.end, drain)
    if hang_jobs:
        span = sc.end
    span = max(span, max((t.at for t in sc.ticks), default=0.0),
               max((f.at + (f.length or 0.0) for f in sc.faults), default=0.0) if
               sc.until is not None else 0.0)
    span = min(span, sc.end)

    # --- executions again when a run outlives its lock (no heartbeat, expiry by claim) ---
    if ex.lock_expiry != "never" and ex.heartbeat is None and ex.lock_time > 0:
        extra = 0.0
        for name, count in by_handler.items():
            h = sc.handlers[name]
            if h.outcome == "hang":
                length = min(h.hang_for, span)
            else:
                length = _mean(h.duration)
            if length > ex.lock_time:
                extra += count * min(length, span) / ex.lock_time
        executions += min(extra, 1e18)
    # --- what the nodes can run in the time the run has ---
    mean_d = work / executions if executions and work else 0.0
    # the shares of executions that are retries, and that fail (kept if the run is cut)
    retry_share = max(0.0, executions - jobs) / executions if executions else 0.0
    fail_share = min(1.0, (max(0.0, executions - jobs) + min(dead, jobs)) / executions) \
        if executions else 0.0
    if math.isfinite(span):
        executions = min(executions, _throughput(nodes, mean_d, latency) * span + threads
                         + hang_jobs)
    # with no latency and no pool a statement takes no simulated time: no event (SQLite's
    # write lock is still queued for; a claim skips the statement path altogether on the
    # plain model if its strategy has a direct form)
    db_instant = latency == 0 and sc.db.dialect != "sqlite" and not sc.db.connections
    if mean_d > 0 or not db_instant:
        per_exec = EVENTS_PER_EXECUTION
    else:  # instant: a burst's rows go to idle threads within the poll that took them
        spread_jobs = min(1.0, created_by_event / max(jobs, 1.0))
        # (a burst's rows wait in the local queue and a thread that finishes takes the next
        # at the same instant: hardly an event each; with no local queue each row is handed
        # to an idle thread: an event)
        burst = sum(n.executor.threads / max(threads, 1) * (
            EVENTS_PER_HANDOFF if n.executor.queue_size == 0
            else EVENTS_PER_INSTANT_BURST_EXECUTION if n.executor.acquisition in INSTANT
            else EVENTS_PER_BATCH_HANDOFF * min(1.0, n.executor.threads / max(
                1, min(n.executor.batch_size, n.executor.queue_size + n.executor.threads))))
            for n in nodes)
        per_exec = spread_jobs * EVENTS_PER_INSTANT_EXECUTION + (1.0 - spread_jobs) * burst
    per_exec *= _dialect_factor(sc)
    parts["executions"] = executions * per_exec
    parts["jobs created"] = created_by_event * EVENTS_PER_JOB

    # --- polls that cannot be skipped ---
    # A node sleeps through polls that nothing can change (counted, not simulated). While
    # its threads are all busy (the share ``load`` of the time work lasts), it polls when a
    # thread frees (a notify node, or one with no local queue: a poll per execution) or,
    # with a local queue on the poll grid, when the full queue's wait ends. Otherwise a
    # change to the table wakes it (an insert, a failure, a retry falling due) — every
    # idle node, so polls grow with the nodes. Spread arrivals change
    # the table at their own instants; a burst's jobs run in waves, a wave per round of the
    # threads. A node on the poll grid makes at most one poll per interval however many
    # changes fall in it (the share of intervals holding one, for changes at random:
    # 1 − e^(−c·T)); a notify node answers an insert at once, other changes on its grid.
    polls = 0.0
    constant = all(isinstance(sc.handlers[name].duration, Constant) for name in by_handler)
    if db_instant:
        spread_jobs = min(1.0, created_by_event / max(jobs, 1.0))
        per_poll = spread_jobs * EVENTS_PER_INSTANT_POLL + \
            (1.0 - spread_jobs) * EVENTS_PER_INSTANT_BURST_POLL
    else:
        per_poll = EVENTS_PER_POLL * _dialect_factor(sc)
    busy_span = max(min(span, drain), 1e-9)
    spread = min(1.0, created_by_event / max(jobs, 1.0))
    retries = executions * retry_share
    failures = executions * fail_share
    # the writes that wake idle nodes: inserts, failures (a retry's new due time) and the
    # retries falling due; a claim or a completion makes no row eligible sooner
    # (with a timer table, a retry's timer is moved into the job table: an insert)
    inserts = created_by_event + (retries if ex.timer_table else 0.0)
    others = spread * (failures + retries) + (1.0 - spread) * 2.0 * executions / max(threads, 1)
    rate = (inserts + others) / busy_span
    # a thread is busy for the handler and for its statements (claim, completion)
    load = min(1.0, (work + 2.0 * latency * executions) / max(threads * busy_span, 1e-9))
    for n in nodes:
        e = n.executor
        if e.wakeup == "ticks":
            continue
        active = max(0.0, min(span, busy_span + e.poll_interval) - n.start_at)
        share = e.threads / max(threads, 1)
        batches = executions * share / max(min(e.batch_size, e.queue_size + e.threads), 1)
        if e.wakeup == "notify" or not e.queue_size:
            # a poll per freed thread; threads that run equal lengths free together
            when_busy = executions * share / (e.threads if constant else 1)
        else:
            cycle = e.queue_full_wait or e.poll_interval
            when_busy = min(active, busy_span) / max(cycle, 1e-9) + batches
        if e.wakeup == "poll" and e.poll_interval > 0:
            grid = active / e.poll_interval
            when_idle = grid * -math.expm1(-rate * e.poll_interval) + batches
        else:  # notify: an insert at once; another change on the poll grid
            grid = active / e.poll_interval if e.poll_interval > 0 else others
            when_idle = inserts * min(active / busy_span, 1.0) + batches + grid * \
                -math.expm1(-others / busy_span * max(e.poll_interval, 1e-9))
        polls += load * when_busy + (1.0 - load) * when_idle + 1
        if ex.timer_table:  # the timer loop: on its grid while a timer (a retry) is due
            polls += active / max(e.poll_interval, 1e-9) * \
                -math.expm1(-(retries + 1.0) / busy_span * max(e.poll_interval, 1e-9))
    parts["polls"] = polls * per_poll

    # --- threads that tick for the whole run (a statement when they have work) ---
    periodic = 0.0
    busy = min(1.0, work / max(threads * span, 1e-9)) if math.isfinite(span) else 1.0
    for n in nodes:
        e = n.executor
        active = max(0.0, span - n.start_at)
        if e.heartbeat:
            periodic += active / e.heartbeat * (1.0 + busy * per_poll)
        if e.reset_interval:
            periodic += active / e.reset_interval * (1.0 + per_poll)
        if e.global_lock and e.global_lock_poll:
            periodic += min(active / e.global_lock_poll, 2.0 * executions / n_nodes + 1)
    counts = {"executions": executions, "jobs": created_by_event, "rerun": rerun, "polls": polls, "periodic": periodic,
              "latency": latency, "mean_d": mean_d}
    parts["heartbeat, reset and lock threads"] = periodic * EVENTS_PER_TICK
    parts["ticks and faults"] = (sum(len(t.nodes) for t in sc.ticks) + 4.0 * len(sc.faults)
                                 ) * EVENTS_PER_TICK
    events = sum(parts.values()) + EVENTS_PER_RUN
    ordered = sorted(parts.items(), key=lambda kv: -kv[1])
    # the trace keeps a row per step of a job's life (claimed, started, ended, completed or
    # rescheduled), per job created, per poll and per heartbeat that extends something
    rows = ROWS_PER_EXECUTION * executions + jobs + polls + periodic
    counts["trace rows"] = rows
    memory = BASE_MEMORY + rows * BYTES_PER_ROW + jobs * BYTES_PER_JOB \
        + threads * BYTES_PER_THREAD
    return Estimate(events, memory, ordered, jobs, executions, span, counts)


# --- the guard while running ---------------------------------------------------------------

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
        self.max_events = max(GUARD_FACTOR * est.events, budget.events, GUARD_MIN_EVENTS)
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
                f"--budget {max(events * 10, self.max_events * 10):.2g}")
        if self.start_rss is not None:
            rss = _rss()
            if rss is not None and rss - self.start_rss > self.max_growth:
                raise RunStopped(
                    f"{self.what} stopped at simulated t={now:,.6g} s: its memory grew by "
                    f"{_bytes(rss - self.start_rss)}, past the budget of "
                    f"{_bytes(self.max_growth)} (estimate: {self.estimate.describe()}); "
                    "nothing was written. Raise it with --memory-budget if the machine "
                    "has the memory.")
