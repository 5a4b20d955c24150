"""How much work a run has and how long it lasts, worked out from its scenario.

The steps of the estimate that count, before any event is priced: the jobs the workload
creates (by handler) and when it ends; the executions they make (a failing handler runs
again up to its retry policy's attempts); the rows that wait in a local queue past their
lock and are run again; the executions again when a handler outlives its lock; and what the
nodes can run in the time the run has. How long the run lasts is ``span``'s.
"""

from __future__ import annotations


import math
from dataclasses import dataclass, field, replace
from typing import Any

from ...executor.config import Scenario
from ...executor.handlers import Call


@dataclass
class Workload:
    """The jobs a run creates, by handler, and when its workload ends."""

    by_handler: dict[str, float]
    jobs: float
    #: jobs created one SimPy event apart (a burst costs one in all)
    created_by_event: float
    arrivals_end: float

    @property
    def spread(self) -> float:
        """The share of jobs that arrive at instants of their own (1 for a stream with a
        rate, about 0 for a burst created at once)."""
        return min(1.0, self.created_by_event / max(self.jobs, 1.0))


@dataclass
class Work:
    """The executions the jobs make and the handler time they take."""

    #: handler-seconds of execution
    work: float
    executions: float
    #: the longest a job keeps coming back (backoff), after the workload
    tail: float
    hang_jobs: float
    #: jobs whose last execution fails (dead letters, failed tasks)
    dead: float
    longest_run: float
    #: per handler: (executions per job, mean length of one) — for serial queues
    per_job: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: handlers whose jobs are handed back for ever with no time passing (a livelock)
    livelock: list[str] = field(default_factory=list)


def mean(d) -> float:
    m = d.mean
    return float(m() if callable(m) else m)


def db_latency(sc: Scenario) -> float:
    """The database's mean latency per statement (0 with none)."""
    return mean(sc.db.latency) if sc.db.latency is not None else 0.0


def _executions_per_job(h, attempts: int) -> float:
    """Expected executions of one job of handler ``h`` (failures and retries). Where the
    retries run out does not matter: a task that ends failed (``exhausted: failed``, as
    failsafe-executor's with its one attempt) was retried as a dead letter would be."""
    if h.outcome == "succeed" or h.outcome == "hang":
        return 1.0
    a = max(1, attempts)
    if h.outcome == "always_fail":
        return float(a)
    if h.outcome == "fail_first":
        return float(min(a, h.fail_first + 1))
    return _mean_tries(h.fail_rate, a)


def _mean_tries(p: float, a: int) -> float:
    """Executions of a job that fails each time with chance ``p``, up to ``a`` of them."""
    p = min(max(p, 0.0), 1.0)
    if p >= 1.0:
        return float(a)
    return (1.0 - p ** a) / (1.0 - p)


def _most_tries(p: float, a: int, count: float) -> float:
    """The executions of the unluckiest of ``count`` such jobs: about the ``k`` at which
    ``count × p^k`` falls to one job."""
    p = min(max(p, 0.0), 1.0)
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return float(a)
    return min(float(a), 1.0 + math.ceil(math.log(max(count, 1.0)) / math.log(1.0 / p)))


def throughput(nodes, mean_d: float, latency: float) -> float:
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


def _most_executions(h, attempts: int, count: float) -> float:
    """The executions of the unluckiest of ``count`` jobs of handler ``h``: with a failure
    rate ``p``, about the ``k`` at which ``count × p^k`` falls to one job."""
    if h.outcome in ("succeed", "hang"):
        return 1.0
    a = float(max(1, attempts))
    if h.outcome == "always_fail":
        return a
    if h.outcome == "fail_first":
        return min(a, h.fail_first + 1.0)
    return _most_tries(h.fail_rate, attempts, count)


def _opens_at_once(sc: Scenario, step: Any) -> bool:
    """Whether ``step`` is a call with a circuit breaker that its service can open: while
    open, the call — and a run that starts with it — fails at once. Some of its calls can
    fail: an outage, a brown-out's errors, a refusal at capacity or at the rate limit, or a
    timeout its latency can outlast."""
    if not isinstance(step, Call) or step.breaker is None:
        return False
    spec = sc.services[step.service]
    slow = step.timeout is not None and (
        spec.latency.beyond(step.timeout) > 0
        or any(b.latency_factor > 1 and spec.latency.beyond(step.timeout / b.latency_factor) > 0
               for b in spec.brownouts))
    return bool(spec.outages or any(b.error_share > 0 for b in spec.brownouts) or slow
                or (spec.capacity is not None and spec.when_full == "refuse")
                or (spec.rate_limit is not None and spec.rate_limit[2] == "refuse"))


def _ends_failed(h, attempts: int) -> float:
    """The chance that a job of handler ``h`` ends failed (its last attempt fails)."""
    if h.outcome in ("succeed", "hang"):
        return 0.0
    if h.outcome == "always_fail":
        return 1.0
    if h.outcome == "fail_first":
        return 1.0 if h.fail_first >= max(1, attempts) else 0.0
    p = min(max(h.fail_rate, 0.0), 1.0)
    return p ** max(1, attempts)


def _calls(sc: Scenario, h: Any, fit: int, waits: list[float], count: float,
           arrivals: float) -> tuple[float, float, float]:
    """A handler that calls services: its run is its work and its calls' latencies; a job
    that comes while a service it calls is down fails until the outage is over (its
    retries, spaced by the backoff, that fall inside the longest outage). A service that
    refuses what it cannot take at once (a rate limit, or a capacity, that refuses) lets
    through, of the ``count`` jobs that came faster than it takes them (over ``arrivals``
    seconds), what it takes at once, then in each round of retries (which come back
    together, one backoff later) what it has regained meanwhile: the last job waits every
    round, a job half of them. A call whose timeout its service's latency passes fails the
    run that share of the time. Returns the run's length, the mean executions of a job and
    the most (the last job's)."""
    length, down, rounds, answered = 0.0, 0.0, 0.0, 1.0
    wait = waits[1] - waits[0] if len(waits) > 1 else 0.0
    for step in h.steps:
        if isinstance(step, Call):
            spec = sc.services[step.service]
            length += mean(spec.latency)
            if step.timeout is not None:  # a call slower than its timeout fails the run
                answered *= 1.0 - spec.latency.beyond(step.timeout)
            down = max([down] + [o.length for o in spec.outages])
            takes = []  # (calls a second it takes, calls it takes at once)
            if spec.rate_limit is not None and spec.rate_limit[2] == "refuse":
                takes.append((spec.rate_limit[0], spec.rate_limit[1]))
            if spec.capacity is not None and spec.when_full == "refuse" and \
                    mean(spec.latency) > 0:
                takes.append((spec.capacity / mean(spec.latency), float(spec.capacity)))
            for rate, at_once in takes:
                excess = count - rate * arrivals - at_once
                if excess > 0:
                    per_round = max(min(at_once, rate * wait), 1e-9)
                    rounds = max(rounds, excess / per_round)
    inside = sum(1 for w in waits if w < down) if down else 0
    most = min(float(fit), 1.0 + max(inside, math.ceil(rounds)))
    per = min(float(fit), 1.0 + inside + rounds / 2.0)
    if answered < 1.0:  # timed out a share of the time, whatever the service's health
        per = max(per, _mean_tries(1.0 - answered, fit))
        most = max(most, _most_tries(1.0 - answered, fit, count))
    return length, per, most


def _attempts_within(policy, attempts: int, end: float) -> tuple[int, list[float]]:
    """How many of ``attempts`` executions fit before ``end`` (the backoff delays between
    them add up), and the cumulative wait before each (up to 100,000 of them)."""
    waits = [0.0]
    total = 0.0
    for failure in range(1, min(attempts, 100_000)):
        total += policy.backoff.mean(failure)
        if total > end:
            break
        waits.append(total)
    return len(waits), waits


def count_workload(sc: Scenario) -> Workload:
    """The jobs, by handler, and when the workload ends."""
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
    return Workload(by_handler, sum(by_handler.values()), created_by_event, arrivals_end)


def count_executions(sc: Scenario, workload: Workload) -> Work:
    """The executions of the jobs with their failures and retries (as many as fit in the
    run), the handler time they take, and how long a job keeps coming back."""
    work = 0.0        # handler-seconds of execution
    tail = 0.0        # the longest a job keeps coming back (backoff), after the workload
    executions = 0.0
    hang_jobs = 0.0
    dead = 0.0        # jobs whose last execution fails (dead letters, failed tasks)
    longest_run = 0.0
    per_job: dict[str, tuple[float, float]] = {}
    livelock: list[str] = []
    for name, count in workload.by_handler.items():
        h = sc.handlers[name]
        policy = sc.retry_for("", name)
        mean_length = h.hang_for if h.outcome == "hang" else mean(h.duration)
        if h.worker_timeout is not None and mean_length > h.worker_timeout:
            # the worker's timeout cuts the run short: it fails there, every time
            h, mean_length = replace(h, outcome="always_fail"), h.worker_timeout
        # the worker's wait before it reports a failure keeps its thread busy too
        wait = h.fail_wait.delay(1) if h.fail_wait is not None else 0.0
        attempts = policy.total_attempts()
        if h.fail_retries == "omitted":
            attempts = 1  # no retries sent: the first failure is the last
        elif h.fail_retries == "unchanged":  # handed back for free: until the run ends
            attempts = min(100_000, math.ceil(sc.end / max(mean_length + wait, 1e-3)))
            instant = wait <= 0 and policy.backoff.mean(1) <= 0 and db_latency(sc) <= 0
            if instant and mean_length <= 0 and h.steps is None and \
                    _ends_failed(h, 1_000_000) >= 1.0:
                # at one instant, for ever: time never advances
                livelock.append(f"{name!r} (no run time, no wait, no backoff)")
            elif instant and h.steps and _opens_at_once(sc, h.steps[0]):
                livelock.append(f"{name!r} (while its first call's circuit breaker is open, "
                                "a run fails at once: no wait, no backoff, no latency)")
        fit, waits = _attempts_within(policy, attempts, sc.end)
        per = _executions_per_job(h, fit)
        most = _most_executions(h, fit, count)
        if h.steps is not None:
            mean_length, per, most = _calls(sc, h, fit, waits, count,
                                            workload.arrivals_end)
        if h.outcome != "succeed":
            mean_length += wait * min(1.0, _ends_failed(h, fit) +
                                      (per - 1.0) / max(per, 1.0))
        if h.outcome == "hang" and math.isinf(mean_length):
            hang_jobs += count
        else:
            work += count * per * mean_length
            longest_run = max(longest_run, mean_length)
        executions += count * per
        per_job[name] = (per, mean_length)
        if h.boundary is not None and sc.boundary_timer_jobs:
            executions += count  # its boundary timer's timer job: a run of no length, at most
        dead += count * _ends_failed(h, fit)
        tail = max(tail, waits[min(len(waits), max(1, math.ceil(most))) - 1])
    return Work(work, executions, tail, hang_jobs, dead, longest_run, per_job, livelock)


def reruns(sc: Scenario, workload: Workload, run: Work, threads: int) -> float:
    """How many times a job runs for the rows that wait in a local queue past their lock
    and are taken again by another node (1 when none can)."""
    # Under a backlog a node's local queue fills; a row at a position its threads reach
    # only after ``lock_time`` expires while it waits (a heartbeat extends only the rows
    # running, unless its scope is "held") and is claimed again — and may wait again. With
    # a share f expiring, a job runs between 1 + f (no cascade) and 1/(1 − f) times (every
    # re-claim waits as long); the estimate takes about the geometric mean of the two,
    # √(q·d / (lock_time·threads)). (The upper bound fits a stream that arrives faster than
    # the threads run, whose backlog grows with every re-run, but it over-counts the many
    # cases that drain: measured on random scenarios, the mean misses far less often.)
    ex = sc.executor
    mean_job = run.work / run.executions if run.executions and run.work else 0.0
    if not (ex.lock_expiry != "never" and ex.lock_time > 0 and mean_job > 0
            and not (ex.heartbeat and ex.heartbeat_scope == "held")):
        return 1.0
    backlog = max(0.0, run.executions - workload.arrivals_end * threads / mean_job)
    weighted = 0.0
    for n in sc.nodes:
        e = n.executor
        share = e.threads / max(threads, 1)
        queued = min(float(e.queue_size), backlog * share)
        reach = e.lock_time * e.threads / mean_job  # positions started within the lock
        ratio = max(1.0, queued / max(reach, 1e-9))
        weighted += share * math.sqrt(ratio)
    return weighted


def outlived_locks(sc: Scenario, workload: Workload, span: float,
                   threads: int | None = None) -> float:
    """The executions again when a run outlives its lock (no heartbeat, expiry by claim):
    the job is taken again each time its lock expires (0 when locks do not expire so) — but
    a run that hangs keeps its thread: the ``threads`` can start a hung run at most once per
    its length, so the hung jobs run again no more often than that."""
    ex = sc.executor
    if not (ex.lock_expiry != "never" and ex.heartbeat is None and ex.lock_time > 0):
        return 0.0
    extra = 0.0
    for name, count in workload.by_handler.items():
        h = sc.handlers[name]
        if h.outcome == "hang":
            length = min(h.hang_for, span)
        else:
            length = mean(h.duration)
        if length > ex.lock_time:
            again = count * min(length, span) / ex.lock_time
            if h.outcome == "hang" and threads is not None and length > 0:
                again = min(again, threads * (span / length + 1.0))
            extra += again
    return min(extra, 1e18)


def shares(workload: Workload, run: Work) -> tuple[float, float]:
    """The shares of executions that are retries, and that fail (kept if the run is cut)."""
    executions, jobs = run.executions, workload.jobs
    retry_share = max(0.0, executions - jobs) / executions if executions else 0.0
    fail_share = min(1.0, (max(0.0, executions - jobs) + min(run.dead, jobs)) / executions) \
        if executions else 0.0
    return retry_share, fail_share


def within_capacity(sc: Scenario, run: Work, span: float, latency: float, threads: int,
                    mean_d: float) -> float:
    """The executions the nodes can run in the time the run has (no more than its work)."""
    if not math.isfinite(span):
        return run.executions
    return min(run.executions, throughput(sc.nodes, mean_d, latency) * span + threads
               + run.hang_jobs)
