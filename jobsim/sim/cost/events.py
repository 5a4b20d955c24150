"""The events and memory a run's work costs, and ``estimate``, which adds them up.

Each count of the work (see ``work``) is multiplied by the events it costs, fitted on the
random scenarios of the test suite: an execution, a job created, a poll that cannot be
skipped, a tick of a periodic thread (heartbeats, the reset thread, the timer mover, the
global lock's polling), the fake clock's ticks and the faults. With no latency a statement
takes no event, and a burst's rows taken from a local queue by threads that finish at once
hardly any. The memory follows from the trace's rows (about four per execution, one per
job, poll and heartbeat) and the jobs.
"""

from __future__ import annotations

import math

from ...base.dists import Constant
from ...database.claims import INSTANT
from ...executor.config import ExecutorConfig, Scenario
from .budget import Estimate
from .span import run_span
from .work import (Work, Workload, count_executions, count_workload, db_latency,
                   outlived_locks, reruns, shares, within_capacity)

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
#: the CPU model (``db.cpu``): a statement's parts each take their turn on a core (the
#: client's, the server's way there, its scan and write, the way back), an event or more
#: each, measured over poll- and execution-driven runs on 1 and 4 cores
CPU_STATEMENT_FACTOR = {"postgres": 5.5, "sqlite": 1.9}
# memory: a trace row costs about 60 bytes in its buffers and several times that while it
# is analysed (its frame, the stories, the tables); a job costs its row, its story and its
# line in the tables
ROWS_PER_EXECUTION = 4.0
BYTES_PER_ROW = 250.0
BYTES_PER_JOB = 2500.0
BYTES_PER_THREAD = 4000.0
BASE_MEMORY = 50 * 1024 ** 2


def estimate(sc: Scenario) -> Estimate:
    """The events and memory of a run of ``sc`` (before running it)."""
    threads = sum(n.executor.threads for n in sc.nodes)
    # --- the work: the jobs, their executions, and how long the run lasts ---
    workload = count_workload(sc)
    run = count_executions(sc, workload)
    if run.livelock:  # handed back at one instant for ever: the run never ends
        why = (f"jobs of {', '.join(run.livelock)} handed back with their retries unchanged "
               "(fail_retries: unchanged), again and again at one instant")
        return Estimate(math.inf, math.inf, [(why, math.inf)], workload.jobs, math.inf,
                        sc.end, {"executions": math.inf})
    rerun = reruns(sc, workload, run, threads)
    run.work *= rerun
    run.executions *= rerun
    latency = db_latency(sc)
    drain, span = run_span(sc, workload, run, latency)
    run.executions += outlived_locks(sc, workload, span, threads)
    mean_d = run.work / run.executions if run.executions and run.work else 0.0
    retry_share, fail_share = shares(workload, run)
    run.executions = within_capacity(sc, run, span, latency, threads, mean_d)
    # --- what it costs ---
    db_instant = _db_instant(sc, latency)
    per_poll = _events_per_poll(sc, workload, db_instant)
    parts: dict[str, float] = {}
    parts["executions"] = run.executions * _events_per_execution(sc, workload, mean_d,
                                                                 db_instant, threads)
    parts["jobs created"] = workload.created_by_event * EVENTS_PER_JOB
    polls = _polls(sc, workload, run, span, drain, latency, retry_share, fail_share,
                   threads)
    parts["polls"] = polls * per_poll
    periodic = _periodic(sc, run, span, threads, per_poll)
    counts = {"executions": run.executions, "jobs": workload.created_by_event,
              "rerun": rerun, "polls": polls, "periodic": periodic, "latency": latency,
              "mean_d": mean_d}
    parts["heartbeat, reset and lock threads"] = periodic * EVENTS_PER_TICK
    parts["ticks and faults"] = (sum(len(t.nodes) for t in sc.ticks) + 4.0 * len(sc.faults)
                                 ) * EVENTS_PER_TICK
    events = sum(parts.values()) + EVENTS_PER_RUN
    ordered = sorted(parts.items(), key=lambda kv: -kv[1])
    # the trace keeps a row per step of a job's life (claimed, started, ended, completed or
    # rescheduled), per job created, per poll and per heartbeat that extends something
    rows = ROWS_PER_EXECUTION * run.executions + workload.jobs + polls + periodic
    counts["trace rows"] = rows
    memory = BASE_MEMORY + rows * BYTES_PER_ROW + workload.jobs * BYTES_PER_JOB \
        + threads * BYTES_PER_THREAD
    return Estimate(events, memory, ordered, workload.jobs, run.executions, span, counts)


def _dialect_factor(sc: Scenario) -> float:
    factor = SQLITE_STATEMENT_FACTOR if sc.db.dialect == "sqlite" else 1.0
    if sc.db.cores is not None:
        factor *= CPU_STATEMENT_FACTOR.get(sc.db.dialect, 1.0)
    return factor


def _db_instant(sc: Scenario, latency: float) -> bool:
    """With no latency and no pool a statement takes no simulated time: no event (SQLite's
    write lock is still queued for; a claim skips the statement path altogether on the
    plain model if its strategy has a direct form)."""
    return latency == 0 and sc.db.dialect != "sqlite" and not sc.db.connections and \
        sc.db.cores is None


def _events_per_execution(sc: Scenario, workload: Workload, mean_d: float,
                          db_instant: bool, threads: int) -> float:
    """The events an execution costs."""
    nodes = sc.nodes
    if mean_d > 0 or not db_instant:
        per_exec = EVENTS_PER_EXECUTION
    else:  # instant: spread arrivals cost a little each; a burst's, by how it is handed out
        burst = sum(n.executor.threads / max(threads, 1) * _instant_burst_execution(n.executor)
                    for n in nodes)
        per_exec = workload.spread * EVENTS_PER_INSTANT_EXECUTION \
            + (1.0 - workload.spread) * burst
    per_exec *= _dialect_factor(sc)
    return per_exec


def _instant_burst_execution(e: ExecutorConfig) -> float:
    """The events of an instant execution of a burst on a node with settings ``e``. With no
    local queue each row is handed to an idle thread: an event. With one, the rows wait there
    and a thread that finishes takes the next at the same instant: hardly an event each when
    the claim applies at once, a share of a hand-off per thread when it goes through the
    statement path."""
    if e.queue_size == 0:
        return EVENTS_PER_HANDOFF
    if e.acquisition in INSTANT:
        return EVENTS_PER_INSTANT_BURST_EXECUTION
    return EVENTS_PER_BATCH_HANDOFF * min(1.0, e.threads / max(
        1, min(e.batch_size, e.queue_size + e.threads)))


def _events_per_poll(sc: Scenario, workload: Workload, db_instant: bool) -> float:
    """The events a poll costs (and a statement of a periodic thread)."""
    if db_instant:
        return workload.spread * EVENTS_PER_INSTANT_POLL + \
            (1.0 - workload.spread) * EVENTS_PER_INSTANT_BURST_POLL
    return EVENTS_PER_POLL * _dialect_factor(sc)


def _polls(sc: Scenario, workload: Workload, run: Work, span: float, drain: float,
           latency: float, retry_share: float, fail_share: float, threads: int) -> float:
    """The polls that cannot be skipped, on all the nodes."""
    # A node sleeps through polls that nothing can change (counted, not simulated). While
    # its threads are all busy (the share ``load`` of the time work lasts), it polls when a
    # thread frees (a notify node, or one with no local queue: a poll per execution) or,
    # with a local queue on the poll grid, when the full queue's wait ends. Otherwise a
    # change to the table wakes it (an insert, a failure, a retry falling due) — every
    # idle node, so polls grow with the nodes. Spread arrivals change the table at their own
    # instants; a burst's jobs run in waves, a wave per round of the threads. A node on the poll grid makes at most one poll per interval however many
    # changes fall in it (the share of intervals holding one, for changes at random:
    # 1 − e^(−c·T)); a notify node answers an insert at once, other changes on its grid.
    ex = sc.executor
    executions, work = run.executions, run.work
    created_by_event = workload.created_by_event
    polls = 0.0
    constant = all(isinstance(sc.handlers[name].duration, Constant)
                   for name in workload.by_handler)
    busy_span = max(min(span, drain), 1e-9)
    spread = workload.spread
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
    # nodes' clocks that differ turn the idle shortcut off (``sim/faults.skewed``)
    clocks_differ = sc.clocks_differ
    for n in sc.nodes:
        e = n.executor
        if e.wakeup == "ticks":
            continue
        active = max(0.0, min(span, busy_span + e.poll_interval) - (n.start_at or 0.0))
        share = e.threads / max(threads, 1)
        batches = executions * share / max(min(e.batch_size, e.queue_size + e.threads), 1)
        notify = e.wakeup in ("notify", "long_poll")
        # a long-polling node's held request is answered at every change that makes a job
        # claimable (a failure and a retry falling due as well as an insert); its empty
        # answers come on a grid of the request's timeout and the wait after it
        wakes = inserts + (failures + retries if e.wakeup == "long_poll" else 0.0)
        period = e.poll_period
        if notify or not e.queue_size:
            # a poll per freed thread; threads that run equal lengths free together
            when_busy = executions * share / (e.threads if constant else 1)
        else:
            cycle = e.queue_full_wait or e.poll_interval
            when_busy = min(active, busy_span) / max(cycle, 1e-9) + batches
        # where the idle sleep is not exact (parts/polls.py), every poll is simulated
        counted = sc.db.dialect == "atomic" and not sc.db.connections and \
            sc.db.latency.is_zero and not e.global_lock and not clocks_differ and \
            not any(f.kind == "partition" and f.node == n.name for f in sc.faults)
        after = 0.0  # polls after the work has drained, while the run goes on
        if not counted:  # it polls to the end of the run, work or none
            start, step = n.start_at or 0.0, max(period + latency, 1e-9)
            after = max(0.0, span - max(busy_span, start)) / step
            grid = max(0.0, span - start) / step - after
            when_idle = grid + batches
            if notify:  # and a poll at every insert
                when_idle += wakes * min(active / busy_span, 1.0)
        elif e.wakeup == "poll" and e.poll_interval > 0:
            grid = active / e.poll_interval
            when_idle = grid * -math.expm1(-rate * e.poll_interval) + batches
        elif e.wakeup == "long_poll":  # every change answers at once; no poll grid
            when_idle = wakes * min(active / busy_span, 1.0) + batches
        else:  # notify: an insert at once; another change on the poll grid
            grid = active / e.poll_interval if e.poll_interval > 0 else others
            when_idle = inserts * min(active / busy_span, 1.0) + batches + grid * \
                -math.expm1(-others / busy_span * max(e.poll_interval, 1e-9))
        polls += load * when_busy + (1.0 - load) * when_idle + after + 1
        if ex.timer_table and not counted:  # the timer loop polls to the end too
            polls += max(0.0, span - (n.start_at or 0.0)) / max(e.poll_interval + latency,
                                                               1e-9)
        elif ex.timer_table:  # the timer loop: on its grid while a timer (a retry) is due
            polls += active / max(e.poll_interval, 1e-9) * \
                -math.expm1(-(retries + 1.0) / busy_span * max(e.poll_interval, 1e-9))
    return polls


def _periodic(sc: Scenario, run: Work, span: float, threads: int, per_poll: float) -> float:
    """The ticks of the threads that tick for the whole run (a statement when they have
    work): heartbeats, the reset thread, the stager, the global lock's polling."""
    n_nodes = max(len(sc.nodes), 1)
    periodic = 0.0
    busy = min(1.0, run.work / max(threads * span, 1e-9)) if math.isfinite(span) else 1.0
    for n in sc.nodes:
        e = n.executor
        active = max(0.0, span - (n.start_at or 0.0))
        if e.heartbeat:
            periodic += active / e.heartbeat * (1.0 + busy * per_poll)
        if e.reset_interval:
            periodic += active / e.reset_interval * (1.0 + per_poll)
        if e.stager_interval:  # a statement every time
            periodic += active / e.stager_interval * (1.0 + per_poll)
        if e.global_lock and e.global_lock_poll:
            periodic += min(active / e.global_lock_poll, 2.0 * run.executions / n_nodes + 1)
    return periodic
