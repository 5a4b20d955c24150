"""A fault at or after the run's end, which never happens (``fault-after-the-end``), and one
whose window outlasts the run (``fault-outlasts-the-end``): a pause, a node's
crash with its restart, a slow database, a partition or a service's outage or brown-out
that ends at or after the run's end; and retries that end inside an outage
(``retries-inside-outage``). The run stops inside a window that outlasts it, so what its
end brings (a paused node waking to finish what another node took meanwhile, a restart,
the backlog draining once the database is fast again) is not in the run, while the report
tells the fault's cause as it would of a whole one. Each is a (code, dotted path, message) as in
``lint``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from ..base.durations import format_duration
from ..executor.config import OPERATIONS, Scenario
from .lint_calls import arrives

Found = tuple[str, str, str]

#: what the end of each kind of window brings, which a run stopped inside it leaves out
_ENDS = {"pause": "wakes (and runs on with what it held, whoever took it meanwhile)",
         "crash": "restarts", "partition": "is reconnected"}


def _at(x: float) -> str:
    """An instant as the file would write it, or in plain seconds where it has no short
    form (40 days and 10 s: 3,456,010s, not 3.45601e+06s)."""
    said = format_duration(x)
    return said if "e+" not in said else f"{x:,.0f}s"


def _crashed(sc: Scenario, node: str | None, at: float, end: float) -> bool:
    """Whether ``node`` is down at ``at`` or crashes after it before ``end``."""
    for c in sc.faults:
        if c.kind == "crash" and c.node == node and (
                c.at <= at < (c.at + c.length if c.length is not None else math.inf)
                or at < c.at < end):
            return True
    return False


def _where(sc: Scenario, i: int) -> str:
    """The dotted path of fault ``i`` of ``sc.faults``: the file's ``faults[i]``, or its
    ``operations[j]`` (the operations are kept after the faults)."""
    faults = sum(1 for g in sc.faults if g.kind not in OPERATIONS)
    return f"faults[{i}]" if i < faults else f"operations[{i - faults}]"


def slow_nothing(sc: Scenario) -> Iterator[Found]:
    """A slow-database fault on a database whose statements take no time (``db.latency``
    zero, no measured profile, no CPU model): the factor multiplies nothing."""
    db = sc.db
    if not db.latency.is_zero or db.timing or db.cores is not None:
        return
    for i, f in enumerate(sc.faults):
        if f.kind == "slow_db":
            yield ("fault-does-nothing", _where(sc, i),
                   "this slow_db multiplies the database's statement latency, and it has "
                   "none (db.latency is 0): the window changes nothing, and the report "
                   "tells no window for it; fix: a db.latency (e.g. {lognormal: {median: "
                   "2ms, p99: 20ms}})")


def faults_past_the_end(sc: Scenario) -> Iterator[Found]:
    """The scenario's fault windows and services' outages and brown-outs that end at or
    after the run's end (``until``, or the ``horizon`` of a run until drained)."""
    end = sc.end
    until = "until" if sc.until is not None else "horizon"
    fix = (f"fix: {'an until' if sc.until is not None else 'a horizon'} past it"
           + (", or until: drained" if sc.until is not None else "") + ", or a shorter window")
    for i, f in enumerate(sc.faults):  # (the file's faults first, in its order)
        if f.at >= end:
            yield ("fault-after-the-end", _where(sc, i),
                   f"this {f.kind.replace('_', ' ')} is at {_at(f.at)}, at or after the run's "
                   f"end ({until}: {_at(end)}): it never happens; fix: "
                   f"{'an until' if sc.until is not None else 'a horizon'} past it, or an "
                   f"earlier at")
            continue
        if f.kind not in _ENDS and f.kind != "slow_db" or f.length is None or \
                f.at >= end or f.at + f.length < end:
            continue  # (a crash with no restart has no end; one at or after the end, none)
        if f.kind == "pause" and _crashed(sc, f.node, f.at, end):
            continue  # a pause while down does nothing; a crash within it ends it
        what = "the database is fast again" if f.kind == "slow_db" else \
            f"{f.node} {_ENDS[f.kind]}"
        yield ("fault-outlasts-the-end", f"faults[{i}]",
               f"this {f.kind.replace('_', ' ')} ends at {_at(f.at + f.length)}, "
               f"at or after the run's end ({until}: {_at(end)}): the run stops "
               f"before {what}, so what that brings is not in it; {fix}")
    for name, spec in sc.services.items():
        for key, windows in (("outages", spec.outages), ("brownouts", spec.brownouts)):
            for i, w in enumerate(windows):
                if w.at >= end:
                    yield ("fault-after-the-end", f"services.{name}.{key}[{i}]",
                           f"{name}'s {key[:-1]} is at {_at(w.at)}, at or after the run's end "
                           f"({until}: {_at(end)}): it never happens; fix: an earlier at, or "
                           f"{'an until' if sc.until is not None else 'a horizon'} past it")
                elif w.at < end <= w.at + w.length:
                    yield ("fault-outlasts-the-end", f"services.{name}.{key}[{i}]",
                           f"{name}'s {key[:-1]} ends at {_at(w.at + w.length)}, "
                           f"at or after the run's end ({until}: {_at(end)}): "
                           f"the run stops before the service is back, so its recovery is "
                           f"not in it; {fix}")


#: where the exhausted jobs go, by ``executor.exhausted``
_GIVEN_UP = {"dead_letter": "the dead-letter table", "incident": "an incident",
             "failed": "the failed tasks"}


#: retries that end within this share of an outage are warned of: the jobs due in the rest
#: of it, a tenth or more, are given up (4 attempts 40 s apart in a 4-minute outage, half of
#: it, dead-lettered 409-495 of 2,400 jobs; 150 s of 180 s, 78-115)
NEARLY = 0.9


def retries_inside_outages(sc: Any) -> Iterator[Found]:
    """A handler whose retries, every attempt and the mean backoff between them, end within
    under ``NEARLY`` of an outage of a service it calls, while its jobs arrive then: a job due in
    the outage's first part fails every attempt there and is given up, though the service
    comes back (a webhook's default 3 attempts 10 s apart dead-lettered 819-879 of 3,000
    jobs in a 5-minute outage; ``retries-inside-outage``)."""
    from ..executor.handlers import Call

    for name, h, policy, n, where in retried(sc):
        span = sum(policy.backoff.mean(k) for k in range(1, n))
        called = {s.service for s in (h.steps or ()) if isinstance(s, Call)}
        for service in sorted(called):
            for o in sc.services[service].outages:
                if span >= NEARLY * o.length or not arrives(sc, name, o.at, o.at + o.length):
                    continue
                yield ("retries-inside-outage", where,
                       f"{name}'s {n} attempts end about {format_duration(span)} after its "
                       f"first ({policy.backoff.describe()}), but {service!r} is down for "
                       f"{format_duration(o.length)} from {_at(o.at)}: a job due in the "
                       f"first {format_duration(o.length - span)} of it fails every attempt "
                       f"there and goes to {_GIVEN_UP.get(sc.executor.exhausted, 'its end')}, "
                       f"though the service comes back; fix: a backoff whose attempts "
                       f"outlast the outage ({_outlasting(o.length)}), or more attempts")
                break


def retried(sc: Any) -> Iterator[tuple[str, Any, Any, int, str]]:
    """Each handler whose jobs are retried (two attempts or more; no retry: a failure is
    final by design), by name: its handler, retry policy, attempts in all, and the path
    that sets the policy (its own ``retry``, else the executor's)."""
    for name in sorted(sc.handlers):
        h = sc.handlers[name]
        policy = sc.retry_for("", name)
        n = policy.total_attempts()
        if n >= 2:
            yield (name, h, policy, n,
                   f"handlers.{name}.retry" if h.retry is not None else "executor.retry")


def _outlasting(length: float) -> str:
    """An exponential backoff from 10 s, factor 2, whose attempts outlast ``length``."""
    k = 2
    while 10.0 * (2 ** (k - 1) - 1) < length:
        k += 1
    return (f"exponential from 10s, factor 2: {k} attempts span "
            f"{format_duration(10.0 * (2 ** (k - 1) - 1))}")
