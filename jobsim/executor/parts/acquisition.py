"""The acquisition loop: claim due jobs, ``min(batch_size, free local-queue slots)`` at a time.

It re-polls at once when a batch came back full. It wakes by ``poll`` (every
``poll_interval``), by ``notify`` (also at every insert and whenever a thread frees a slot) or
by ``ticks`` (the fake clock: one round per tick). With a timer table a second loop claims
due timers and moves them to the job table. When a poll finds nothing and nothing can change
its answer before a later poll, the node sleeps through the polls that would find nothing:
they are counted, not simulated, so an idle month costs a handful of events (the idle sleep
is written out in the loop: it runs after nearly every claim, and a helper generator there
cost the M/M/8 benchmark 4%). Flowable's global acquire lock and its wait after a refused
batch are steps of this loop when the settings ask for them.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...base.trace import K
from ...database.claims import Attempt
from ...database.db import StatementFailed
from ...database.store import JOB, TIMER
from .global_lock import release as release_global_lock, take as take_global_lock
from .timers import move as move_timers

if TYPE_CHECKING:
    from ..node import Node


def loop(node: Node, table: str = JOB) -> Generator[Any, Any, None]:
    env, cfg = node.env, node.cfg
    if node.start_at > 0:
        yield env.timeout(node.start_at)
    if cfg.wakeup == "ticks":
        # each loop waits for its own tick: with a timer table there are two loops, and
        # one shared event left the job table's loop waiting forever (and the timer
        # loop claiming job rows, so that no timer ever came due)
        while True:
            node._ticks[table] = ev = env.event()
            yield ev
            if node._paused is not None:
                yield node._paused
            while table == TIMER or node._free() > 0:
                asked, got = yield from claim_round(node, table)
                if got < asked:
                    break
        return
    timers = table == TIMER
    notify = cfg.wakeup == "notify" and not timers
    period = cfg.poll_interval
    store, db, end = node.db.store, node.db, node.world.scenario.end
    step = period + (0.0 if db.instant else db.latency.mean)
    instant, acquire, me, queue = node._instant, node._acquire, node.name, node.queue
    batch, size, lock_time, trace_attempt = (cfg.batch_size, cfg.queue_size,
                                             cfg.lock_time, node._trace_attempt)
    emit, k_acquire, code = node.trace.emit, K["acquire"], node.code
    strategy_text = node._timer_text if timers else node._strategy_text
    global_lock = cfg.global_lock
    watch_rejects, rejected = cfg.on_queue_full == "unacquire", 0
    sized = bool(size) and not timers
    if timers:
        instant = None  # the timer table goes through the statement path
    while True:
        if node._paused is not None:
            yield node._paused
        if sized:
            free = size - len(queue)
        else:
            free = batch if timers else len(node.idle) - len(queue)
        if free <= 0:
            if notify or not size:  # no local queue: fetch again when a thread frees
                yield node._slot_freed()
            else:
                yield env.timeout(cfg.queue_full_wait)
            continue
        asked = batch if batch < free else free
        node.polls += 1
        if watch_rejects:
            rejected = node.rejected
        if instant is not None:  # the hot path: one statement, applied at once
            got = len(instant(db, me, asked, lock_time))
            emit((env.now, k_acquire, code, -1, 0, asked, got, 0, 0.0, strategy_text))
        else:
            try:
                if global_lock and not (yield from take_global_lock(node, table)):
                    yield env.timeout(period)  # the lock was busy all along: next cycle
                    continue
                att = yield from acquire(db, me, asked, lock_time, table=table)
                if global_lock:
                    yield from release_global_lock(node, table)
            except StatementFailed:
                node._failed("acquire")
                yield env.timeout(period)
                continue
            trace_attempt(att, strategy_text)
            if timers and node._timers_locked:
                yield from move_timers(node)
            if att.errors:
                # 40001 / SQLITE_BUSY: retry at once (after others); Flowable's
                # optimistic-lock rollback: wait the acquire wait
                yield env.timeout(cfg.error_wait)
                continue
            got = len(att.locked)
            if global_lock:  # "to let other nodes have the ability to fill the queue"
                yield env.timeout(cfg.global_lock_poll)
        if watch_rejects and node.rejected > rejected:  # refused: Flowable waits 5 s
            yield env.timeout(cfg.queue_full_wait)
            continue
        if got == asked:
            continue
        now = env.now
        next_poll = now + period
        soonest = store.next_eligible(now, table)
        if soonest is not None and soonest <= next_poll:
            if notify:
                yield env.any_of([env.timeout(period), db.inserted()])
            else:
                yield env.timeout(period)
            continue
        # Idle: no poll before ``soonest`` can find anything unless the table changes.
        # Sleep until the last poll instant at or before ``soonest`` (a poll there may
        # see it if its statement takes long enough) or until the table changes; a
        # notify node then polls at once after an insert, any other node resumes its
        # poll schedule. The polls slept through are counted, not simulated. The poll
        # instants of a naive loop are ``step = poll_interval + statement latency`` apart
        # (a poll, then a sleep); with a random latency its mean stands in for it.
        changed = db.changed()
        node._asleep[table] = (next_poll, step)
        target = math.inf
        if soonest is not None:
            target = next_poll + math.floor((soonest - next_poll) / step) * step
        if target >= end:
            target = math.inf
        replan = None
        if node._pausable:
            node._replan[table] = replan = env.event()
            yield first_of(node.env, (changed, replan),
                              None if target == math.inf else target - now)
        elif target == math.inf:
            yield changed  # the common idle wait: one event, no helper
        else:
            yield first_of(node.env, (changed,), target - now)
        del node._asleep[table]
        if replan is not None:
            del node._replan[table]
        now = env.now
        if replan is not None and replan.triggered:
            # Paused while asleep: the polls before the pause found nothing; a poll that
            # fell due during the pause happens when it ends, and the grid restarts there.
            paused_at = now
            if node._paused is not None:
                yield node._paused
            skipped = max(0, math.ceil((paused_at - next_poll) / step))
            tick = next_poll + skipped * step
            if tick > env.now:
                yield env.timeout(tick - env.now)
        elif now >= target:
            skipped = round((target - next_poll) / step)
        else:
            skipped = max(0, math.ceil((now - next_poll) / step))
            if not (notify and changed.triggered and changed.value):
                resume = next_poll + skipped * step
                if resume > now:
                    if notify:  # an insert meanwhile still wakes a notify node at once
                        yield env.any_of([env.timeout(resume - now), db.inserted()])
                    else:
                        yield env.timeout(resume - now)
        if skipped > 0:
            node.polls += skipped
            node.polls_skipped += skipped
            node.trace.add(env.now, K["polls_skipped"], node.code, a=skipped)


def claim_round(node: Node, table: str = JOB) -> Generator[Any, Any, tuple[int, int]]:
    """One acquisition attempt on ``table``; returns (asked, got). Timers are not bounded
    by the local queue: the timer loop moves what it locked to the job table (as a poll
    of the timer table does), where they reach the pool only while it has room."""
    timers = table == TIMER
    n = node.cfg.batch_size if timers else min(node.cfg.batch_size, node._free())
    node.polls += 1
    if node._instant is not None and not timers:
        locked = node._instant(node.db, node.name, n, node.cfg.lock_time)
        att = Attempt(n, locked, 0, 1, 0.0)
    else:
        try:
            att = yield from node._acquire(node.db, node.name, n, node.cfg.lock_time,
                                           table=table)
        except StatementFailed:
            node._failed("acquire")
            return n, 0
    node._trace_attempt(att, node._timer_text if timers else None)
    if timers and node._timers_locked:
        yield from move_timers(node)
    return att.asked, len(att.locked)


def first_of(env, events: tuple[Any, ...], delay: float | None) -> Any:
    """An event that fires when the first of ``events`` does, or when ``delay`` (if not
    None) has passed (a lighter ``any_of`` for the idle loop)."""
    wake = env.event()

    def fire(_: Any) -> None:
        if not wake.triggered:
            wake.succeed()

    for event in events:
        event.callbacks.append(fire)
    if delay is not None:
        env.timeout(delay).callbacks.append(fire)
    return wake
