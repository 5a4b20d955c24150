"""Traps of the workload rather than of a node's settings: an item that creates nothing
before the run's end, or a stream a fixed ``until`` cuts short (``created-after-the-end``),
a timer or a boundary timer due only at
or after it (``due-after-the-end``), an operation that acts where no job ever is
(``operation-cannot-act``), a job its worker hands back for ever
(``handed-back-for-ever``), a schedule that a failure ends for good
(``schedule-stops-on-failure``), a call that can hang its thread for good
(``call-without-timeout``), an effect call whose timeout its service's answers outlast,
retried without an idempotency key (``ambiguous-timeout``), a service nothing calls
(``service-not-called``), a rule for beyond a capacity it does not have or priorities
that the nodes' order does not read (``ignored-setting``), priorities that a local queue
runs first in, first out once claimed (``priority-behind-local-queue``), or nodes' clocks
further apart than a lock can bear (``clock-skew``), a fault that outlasts the run
(``fault-outlasts-the-end``, ``lint_faults``), or polls that drift into lock-step
(``poll-lock-step``, ``lint_polls``). Each is a (code, dotted path, message) as in ``lint``."""

from __future__ import annotations

from collections.abc import Iterator

import math
from typing import Any

from ..base import dists
from ..base.durations import format_duration, format_span
from ..executor.config import Scenario
from ..executor.handlers import Call
from .lint_calls import ambiguous_timeouts, calls_that_hang, p99, run_p99  # noqa: F401
from .lint_faults import (faults_past_the_end, retried, retries_inside_outages,
                          slow_nothing)

Found = tuple[str, str, str]


def workload_traps(sc: Scenario) -> list[Found]:
    """The workload's traps, in the order they are reported."""
    return [*_after_the_end(sc), *_due_after_the_end(sc), *_handed_back_for_ever(sc),
            *_stopped_schedules(sc), *_ignored_priorities(sc), *_priority_behind_queue(sc),
            *calls_that_hang(sc), *ambiguous_timeouts(sc), *_idle_services(sc),
            *_skewed_clocks(sc), *_operations_that_cannot_act(sc), *faults_past_the_end(sc),
            *slow_nothing(sc), *retries_inside_outages(sc), *_server_backoff(sc)]


def _after_the_end(sc: Scenario) -> Iterator[Found]:
    """A workload item whose first job would be created at or after the run's end: it
    creates nothing in this run (and a run with no job at all has nothing to show)."""
    end = sc.end
    until = "until" if sc.until is not None else "horizon"
    for group, items, key in (("jobs", sc.jobs, "at"), ("streams", sc.streams, "start"),
                              ("recurring", sc.recurring, "start")):
        for i, item in enumerate(items):
            first = getattr(item, key)
            if first >= end:
                yield ("created-after-the-end", f"workload.{group}[{i}].{key}",
                       f"its first job would be created at {format_duration(first)}, at or "
                       f"after the run's end ({until}: {format_duration(end)}), so it creates "
                       f"no job in this run; fix: an earlier {key}, or a later {until}")
            elif group == "streams" and item.rate and sc.until is not None:
                yield from _stream_cut_short(item, i, end)


def _stream_cut_short(item: Any, i: int, end: float) -> Iterator[Found]:
    """A Poisson stream whose ``count`` jobs take, at its rate, past a fixed ``until``: the
    run ends with a share of them never created, and its figures (and any expectation on
    the jobs done) are of the first part of the stream only. Warned where the arrivals'
    mean would fall short by a tenth or more (a Poisson stream's end varies by about
    √count / rate)."""
    made = (end - item.start) * item.rate
    if made <= 0.9 * item.count:
        yield ("created-after-the-end", f"workload.streams[{i}].count",
               f"{item.count:,} jobs at {item.rate:g}/s take about "
               f"{format_duration(item.count / item.rate)} to arrive, past the run's end "
               f"(until: {format_duration(end)}): about {made:,.0f} are created and the other "
               f"{item.count - made:,.0f} never are, and the report counts only those "
               f"created; fix: a later until (or until: drained), a higher rate, or a "
               f"count of about {made:,.0f}")


def _due_after_the_end(sc: Scenario) -> Iterator[Found]:
    """A timer created in the run but due at or after its end (a ``due_in``), or a boundary
    timer that cannot fire before the end (its ``after`` from its task's first creation):
    it never fires, and the run says only "0 fired" (Flowable's P30D under the 30-day
    default horizon)."""
    end = sc.end
    until = "until" if sc.until is not None else "horizon"
    first: dict[str, float] = {}  # each handler's first job created by the workload
    for group, items in (("jobs", sc.jobs), ("streams", sc.streams)):
        key = "at" if group == "jobs" else "start"
        for i, item in enumerate(items):
            created = getattr(item, key)
            first[item.handler] = min(first.get(item.handler, math.inf), created)
            if created < end <= created + item.due_in:
                yield ("due-after-the-end", f"workload.{group}[{i}].due_in",
                       f"its first job, created at {format_duration(created)}, is due at "
                       f"{format_duration(created + item.due_in)}, at or after the run's end "
                       f"({until}: {format_duration(end)}): it never runs in this run; fix: a "
                       f"shorter due_in, or a later {until}")
    for i, item in enumerate(sc.recurring):
        first[item.handler] = min(first.get(item.handler, math.inf), item.start)
    for name, h in sc.handlers.items():
        if h.boundary is None or first.get(name, math.inf) >= end:
            continue
        at = first[name] + h.boundary[0]
        if at >= end:
            yield ("due-after-the-end", f"handlers.{name}.boundary_timer.after",
                   f"its boundary timer, {format_duration(h.boundary[0])} after its first "
                   f"task is created ({format_duration(first[name])}), would fire at "
                   f"{format_duration(at)}, at or after the run's end ({until}: "
                   f"{format_duration(end)}): it cannot fire in this run, whether or not its "
                   f"task would outlast it; fix: a shorter after, or a later {until}")


#: operation -> the ``executor.exhausted`` that puts jobs where it acts, and that place
_NEEDS_EXHAUSTED = {"retry": ("failed", "kept failed"), "cancel": ("failed", "kept failed"),
                    "move": ("dead_letter", "in the dead-letter table")}
_BECOME = {"dead_letter": "dead letters", "incident": "incidents, which no operation "
           "revives", "failed": "failed tasks"}


def _server_backoff(sc: Scenario) -> Iterator[Found]:
    """A retry delay on the Zeebe-like server (``acquisition: broker``), which has none: a
    failed job is activatable again at once, and a worker that must wait does so before it
    reports the failure (``fail_wait``). A user who copied the page's 1 s, 2 s, 4 s into
    ``retry.backoff`` models a server the page does not describe (a seed audit's finding:
    it passed validate as ok)."""
    if not any(n.executor.acquisition == "broker" for n in sc.nodes):
        return
    for name, h, policy, n, where in retried(sc):
        if not any(policy.backoff.mean(k) > 0 for k in range(1, n)):
            continue
        yield ("server-retry-delay", where,
               f"the Zeebe-like server (acquisition: broker) has no retry delay: a failed "
               f"job is activatable again at once, its fail request has no backoff field; "
               f"this backoff ({policy.backoff.describe()}) parks it on the server all the "
               f"same; fix: a worker's wait before it fails, fail_wait on the handler "
               f"(the page's 1s, 2s, 4s), with retry.backoff [0s]")
        return


def _operations_that_cannot_act(sc: Scenario) -> Iterator[Found]:
    """An operation that acts on jobs where this executor never puts one: a retry or a
    cancel where no job is ever kept failed, a move where none is dead-lettered."""
    from ..executor.operation_kinds import OPERATIONS

    ops = [f for f in sc.faults if f.kind in OPERATIONS]  # the file's operations, in order
    where = {n.executor.exhausted for n in sc.nodes}
    for i, f in enumerate(ops):
        needs, place = _NEEDS_EXHAUSTED.get(f.kind, (None, ""))
        if needs is not None and needs not in where:
            got = sorted(where)[0]
            yield ("operation-cannot-act", f"operations[{i}].{f.kind}",
                   f"{f.kind} acts on a job {place}, and here no job ever is: exhausted "
                   f"jobs become {_BECOME[got]} (executor.exhausted: {got}); fix: an "
                   f"operation for what they become, or executor.exhausted: {needs}")


#: how the nodes take rows under each ``executor.order`` that reads no priority
_ORDER_WORDS = {"id": "by id, the order they were created in", "due": "by due time",
                "created": "by creation time"}


def _prioritised(sc: Scenario) -> list[tuple[str, int, str]]:
    """Each workload item's place in the file, priority and handler."""
    return [(f"{group}[{i}]", item.priority, item.handler) for group, items in (
        ("jobs", sc.jobs), ("streams", sc.streams), ("recurring", sc.recurring))
        for i, item in enumerate(items)]


def _ignored_priorities(sc: Scenario) -> Iterator[Found]:
    """Jobs of more than one priority where the nodes take rows by an order that reads
    none (``executor.order`` id, due or created): a priority the file gives has no effect,
    and the urgent job waits behind the rest as if it had none."""
    order = sc.executor.order
    if order not in _ORDER_WORDS:
        return
    items = _prioritised(sc)
    levels = sorted({p for _, p, _ in items})
    if len(levels) < 2:
        return
    where = next(w for w, p, _ in items if p == levels[-1])  # the most urgent
    said = ", ".join(map(str, levels[:-1])) + f" and {levels[-1]}"
    yield ("ignored-setting", f"workload.{where}.priority",
           f"priority has no effect here: the nodes take rows {_ORDER_WORDS[order]} "
           f"(executor.order: {order}), whatever their priority ({said}): a job of priority "
           f"{levels[-1]} waits behind any of {levels[0]} taken before it as if it had none; "
           f"fix: executor.order: priority (or aging), or leave the priorities out")


def _priority_behind_queue(sc: Scenario) -> Iterator[Found]:
    """Priorities the order reads, on nodes with a local queue: a claim takes the most
    urgent due rows, but the local queue hands what it holds to the threads first in, first
    out, so an urgent job claimed after others waits behind them (Flowable's async executor
    and every prefetching executor alike)."""
    if sc.executor.order in _ORDER_WORDS:
        return  # priorities are not read at all (``_ignored_priorities``)
    items = _prioritised(sc)
    levels = sorted({p for _, p, _ in items})
    if len(levels) < 2:
        return
    urgent = {h for _, p, h in items if p == levels[-1]}
    others = {h for _, p, h in items if p < levels[-1]}
    raws = sc.document.get("nodes") if isinstance(sc.document.get("nodes"), list) else []
    mean = max(sc.handlers[h].duration.mean for h in others) if others else 0.0

    def depth(cfg: Any) -> int:  # what a queue may hold: the lesson's loop claims when empty
        return min(cfg.queue_size, cfg.batch_size) if cfg.claim_when == "empty" else \
            cfg.queue_size

    # worth a warning where the queue may hold an urgent job back longer than a poll
    # interval, and longer than a run, which a claim by priority is meant to bound
    queued = [(i, n) for i, n in enumerate(sc.nodes) if n.executor.queue_size > 0 and (
        n.executor.handles is None or urgent & set(n.executor.handles)) and
        depth(n.executor) * mean / n.executor.threads > max(n.executor.poll_interval, mean)]
    if not queued:
        return
    i, node = queued[0]
    cfg = node.executor
    own = i < len(raws) and isinstance(raws[i], dict) and "queue_size" in raws[i]
    which = "" if len(queued) == len(sc.nodes) else \
        f"(on {', '.join(n.name for _, n in queued)}) "
    behind = (f" (up to {depth(cfg)} × a mean run of {format_duration(mean)} / "
              f"{cfg.threads} thread{'s' if cfg.threads != 1 else ''} ≈ "
              f"{format_span(depth(cfg) * mean / cfg.threads)}, longer "
              f"than its poll interval ({format_duration(cfg.poll_interval)}) and longer "
              f"than a run)")
    yield ("priority-behind-local-queue",
           f"nodes[{i}].queue_size" if own else "executor.queue_size",
           f"{which}the nodes claim by priority (executor.order: {sc.executor.order}), but "
           f"their local queue (queue_size {cfg.queue_size}) runs what it holds first in, "
           f"first out: a job of priority {levels[-1]} claimed after lower ones already "
           f"queued waits behind them{behind}, and the order cannot help it; fix: "
           f"queue_size: 0 (claim only for idle threads), or a smaller "
           f"{'batch' if cfg.claim_when == 'empty' else 'queue'}")


def _idle_services(sc: Scenario) -> Iterator[Found]:
    """A service no handler of the file calls, and a queue rule with no capacity."""
    called = {s.service for h in sc.handlers.values() for s in h.steps or ()
              if isinstance(s, Call)}
    for name, spec in sc.services.items():
        if name not in called:
            yield ("service-not-called", f"services.{name}",
                   f"no handler of the file calls {name!r}: its settings change nothing "
                   f"(a Python handler given through the API still may); fix: name it in a "
                   f"handler's calls, or remove it")
        if spec.capacity is None and spec.when_full != "queue":
            yield ("ignored-setting", f"services.{name}.when_full",
                   f"when_full: {spec.when_full} does nothing without a capacity (calls are "
                   f"never beyond it); fix: set services.{name}.capacity")


def _shortest(d: dists.Distribution) -> float:
    """The shortest run a duration distribution draws."""
    if isinstance(d, dists.Constant):
        return d.value
    return d.low if isinstance(d, dists.Uniform) else 0.0


def _handed_back_for_ever(sc: Scenario) -> Iterator[Found]:
    """A job handed back without using a retry by a handler that never succeeds."""
    for name, h in sc.handlers.items():
        shortest = h.hang_for if h.outcome == "hang" else _shortest(h.duration)
        timed_out = h.worker_timeout is not None and shortest > h.worker_timeout
        if h.fail_retries == "unchanged" and (h.outcome == "always_fail" or timed_out):
            yield ("handed-back-for-ever", f"handlers.{name}.fail_retries",
                   f"its worker hands each failed job back with its retries unchanged, and "
                   f"{name!r} never succeeds: every job of it runs again and again until the "
                   f"run ends and never reaches an incident; fix: send job.retries - 1 "
                   f"(fail_retries: decrement), or let the handler succeed")


def _can_end_failed(sc: Scenario, handler: str) -> bool:
    """Whether a job of ``handler`` may run out of its executions failing."""
    h = sc.handlers[handler]
    if h.outcome == "always_fail":
        return True
    if h.outcome == "fail_rate":
        return h.fail_rate > 0
    return h.outcome == "fail_first" and h.fail_first >= sc.retry_for("", handler).total_attempts()


def _stopped_schedules(sc: Scenario) -> Iterator[Found]:
    """A schedule that its first failure stops for good: no operation will retry it."""
    if not sc.keeps_failed:
        return
    named = {f.node for f in sc.faults if f.kind in ("retry", "cancel")}
    for i, r in enumerate(sc.recurring):
        if r.count > 1 and _can_end_failed(sc, r.handler) and not named & {r.name, "all"}:
            yield ("schedule-stops-on-failure", f"workload.recurring[{i}]",
                   f"a job of the schedule '{r.name}' may fail ('{r.handler}' can fail, and "
                   f"exhausted: failed keeps it failed), and then the schedule creates no more "
                   f"until an operator retries it; no operation names '{r.name}', so its first "
                   f"failure ends it short of its count ({r.count}); fix: an operation "
                   f"{{at, retry: {r.name}}} (or all), or a handler that does not fail")


def offsets(sc: Scenario) -> dict[str, tuple[float, float, str]]:
    """Each node's clock offset over the run (its least, its most, and the path that sets
    the most extreme one), from its offset, drift and clock faults: piecewise linear, so
    its extremes are at the run's start, a fault or its end."""
    out = {}
    for i, n in enumerate(sc.nodes):
        e, off, drift, t, where = n.executor, n.executor.clock_offset, \
            n.executor.clock_drift, 0.0, f"nodes[{i}].clock_offset"
        seen = [(off, where)]
        for k, f in enumerate(sc.faults):
            if f.kind != "clock" or f.node != n.name or f.at >= sc.end:
                continue
            off += drift * (f.at - t) + f.step
            t, drift = f.at, drift if f.drift is None else f.drift
            seen.append((off, f"faults[{k}]"))
        if math.isfinite(sc.end):
            seen.append((off + drift * (sc.end - t), where if drift == e.clock_drift
                         else seen[-1][1]))
        lo, hi = min(o for o, _ in seen), max(o for o, _ in seen)
        out[n.name] = (lo, hi, max(seen, key=lambda x: abs(x[0]))[1])
    return out


def _skewed_clocks(sc: Scenario) -> Iterator[Found]:
    """Nodes whose clocks (``executor.clock: node``) drift further apart than a lock has to
    spare: a node ahead sees a live lock of another node expired before its run (or its
    next heartbeat) is over, and runs the job again."""
    if sc.executor.clock != "node" or sc.executor.lock_expiry == "never":
        return
    spans = offsets(sc)
    if all(lo == hi == 0.0 for lo, hi, _ in spans.values()):
        return
    runs = max((run_p99(h, sc.services) for h in sc.handlers.values()), default=0.0)
    for holder in sc.nodes:
        cfg = holder.executor
        needs = min(runs, cfg.heartbeat) if cfg.heartbeat is not None else runs
        spare = cfg.lock_time - needs
        for rival, (lo, hi, where) in spans.items():
            ahead = hi - spans[holder.name][0]
            if rival == holder.name or ahead <= spare or needs >= cfg.lock_time:
                continue
            mine = spans[holder.name]
            yield ("clock-skew", where if abs(hi) >= abs(mine[0]) else mine[2],
                   f"{rival}'s clock runs up to {format_duration(ahead)} ahead of "
                   f"{holder.name}'s, more than its lock ({format_duration(cfg.lock_time)}) "
                   f"has to spare after {'a heartbeat interval' if needs != runs else 'the p99 run'} "
                   f"({format_duration(needs)}): {rival} sees {holder.name}'s live locks "
                   f"expired and runs their jobs again (clock_skew duplicates); fix: "
                   f"executor.clock: database (the server's now()), a lock_time above "
                   f"{format_duration(needs + ahead)}, or clocks kept closer")
            return
