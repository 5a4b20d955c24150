"""How long a run lasts, worked out from its scenario: the time its work takes to drain, and
what keeps a run "until drained" going longer — a serial queue's jobs one after another, a
crashed or cut-off node's locks until they expire, an operation still to come — or to its
horizon: a job that may be stranded (``may_strand``).
"""

from __future__ import annotations

import math

from ...executor.config import OPERATIONS, Scenario
from ...executor.handlers import Call
from .work import Work, Workload, throughput


def run_span(sc: Scenario, workload: Workload, run: Work,
             latency: float) -> tuple[float, float]:
    """How long the run lasts: the time its work takes to drain (the workload, the longest
    backoff, the longest execution and the backlog at the nodes' throughput), and its span
    (the drain, within the run's horizon and ``until``; a hanging job, or one that may be
    stranded (``may_strand``), lasts to the end)."""
    rate = throughput(sc.nodes, run.work / run.executions if run.executions else 0.0,
                      latency)
    drain = workload.arrivals_end + run.tail + run.longest_run + run.executions / rate
    drain = max(drain, _serial_span(sc, run), _crash_recovery(sc, drain) + run.longest_run,
                max((f.at for f in sc.faults if f.kind in OPERATIONS), default=0.0))
    span = min(sc.end, max(drain, sc.until or 0.0)) if sc.until is not None else \
        min(sc.end, drain)
    if run.hang_jobs or may_strand(sc):
        span = sc.end
    span = max(span, max((t.at for t in sc.ticks), default=0.0),
               max((f.at + (f.length or 0.0) for f in sc.faults), default=0.0) if
               sc.until is not None else 0.0)
    return drain, min(span, sc.end)




def _serial_span(sc: Scenario, run: Work) -> float:
    """The longest a serial queue takes: its jobs run one after another, from its first."""
    queues: dict[str, list[float]] = {}
    for item in (*sc.jobs, *sc.streams):
        if item.queue is None or item.handler not in run.per_job:
            continue
        per, length = run.per_job[item.handler]
        count = float(getattr(item, "count", 1))
        start = getattr(item, "at", getattr(item, "start", 0.0))
        q = queues.setdefault(item.queue, [math.inf, 0.0])
        q[0], q[1] = min(q[0], start), q[1] + count * per * length
    return max((start + work for start, work in queues.values()), default=0.0)


def _crash_recovery(sc: Scenario, drain: float) -> float:
    """When the last crash's jobs are taken again: a crashed node's locks hold its jobs
    until they expire (and a reset thread frees them, where expiry waits for one), and so
    do the locks of a node cut off, whose outcomes did not reach the table; a crash after
    the work has drained holds nothing."""
    ex = sc.executor
    if ex.lock_expiry == "never":
        return 0.0  # the lock never frees: may_strand prices it
    wait = ex.lock_time + (min((n.executor.reset_interval for n in sc.nodes
                                if n.executor.reset_interval), default=0.0)
                           if ex.lock_expiry == "reset" else 0.0)
    return max((f.at + wait for f in sc.faults
                if f.kind in ("crash", "partition") and f.at < drain), default=0.0)


def may_strand(sc: Scenario) -> bool:
    """Whether a job may stay unfinished to the run's end, so that a run "until drained"
    lasts to its horizon, its nodes polling all the while: a lock that never frees (no
    expiry, or a reset and no reset thread) held by a node that crashes or is cut off, with
    no server restart after it to hand the job back, nor an operator's ``fail: all`` (which
    hands back, or makes an incident of, every activated job); a job that no node runs; a run that
    waits for ever on a call into an outage that never answers; a job suspended and not
    activated after."""
    ex = sc.executor
    never = ex.lock_expiry == "never" or (ex.lock_expiry == "reset" and not any(
        n.executor.reset_interval for n in sc.nodes))
    if never:
        cuts = [f.at for f in sc.faults if f.kind in ("crash", "partition")]
        restarts = [f.at for f in sc.faults if f.kind == "restart_server"
                    or (f.kind == "fail" and f.node == "all")]
        if cuts and not (restarts and max(restarts) > max(cuts)):
            return True
    used = {j.handler for j in sc.jobs} | {s.handler for s in sc.streams} | {
        r.handler for r in sc.recurring}
    if any(all(n.executor.handles is not None and h not in n.executor.handles
               for n in sc.nodes) for h in used):
        return True
    if any(_hangs_on_a_call(sc, h) for h in used):
        return True
    suspended = [f for f in sc.faults if f.kind == "suspend"]
    return any(not any(a.kind == "activate" and a.at >= f.at and a.node in (f.node, "all")
                       for a in sc.faults) for f in suspended)


def _hangs_on_a_call(sc: Scenario, name: str) -> bool:
    """Whether a run of handler ``name`` may wait for ever: a call with no timeout (and no
    worker timeout over the run) to a service whose outage never answers."""
    h = sc.handlers[name]
    if h.steps is None or h.worker_timeout is not None:
        return False
    return any(isinstance(s, Call) and s.timeout is None and any(
        o.fail == "timeout" for o in sc.services[s.service].outages) for s in h.steps)
