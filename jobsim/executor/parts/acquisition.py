"""The acquisition loop: claim due jobs, ``min(batch_size, free local-queue slots)`` at a time.

It re-polls at once when a batch came back full. It wakes by ``poll`` (every
``poll_interval``), by ``notify`` (also at every insert and whenever a thread frees a slot), by
``long_poll`` (its empty request held by the server until a row becomes claimable, see
``polls.py``) or by ``ticks`` (the fake clock: one round per tick). Its first poll comes after
the node's start, its ``initial_delay`` and its phase (``Host.first_poll``). With a timer table
a second loop claims due timers and moves them to the job table. When a poll finds nothing and
nothing can change its answer before a later poll, the node sleeps through the polls that would
find nothing: they are counted, not simulated, so an idle month costs a handful of events — and
the trace is the one of simulating them (``polls.py``: the grid, the ranks, the sleep).
Flowable's global acquire lock and its wait after a refused batch are steps of this loop when
the settings ask for them.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...base.trace import K, pack
from ...database.claims import Attempt, guarded_update_now
from ...database.db import StatementFailed
from ...database.store import JOB, TIMER
from .global_lock import release as release_global_lock, take as take_global_lock
from .polls import RESUME, Sleep, rank, wake_at
from .timers import move as move_timers

if TYPE_CHECKING:
    from .host import Host


#: whether a notify node's insert polls may run as a callback of its sleep (``fast`` in
#: ``loop``); the tests turn it off to check that the shortcut moves nothing
FAST_POLL = True


def loop(node: Host, table: str = JOB) -> Generator[Any, Any, None]:
    env, cfg = node.env, node.cfg
    if cfg.wakeup == "ticks":
        if node.start_at:
            yield env.timeout(node.start_at)
        # each loop waits for its own tick: with a timer table there are two loops, and
        # one shared event left the job table's loop waiting forever (and the timer
        # loop claiming job rows, so that no timer ever came due)
        while True:
            node.tick_events[table] = ev = env.event()
            yield ev
            if table == TIMER:  # a tick runs its timer round first ...
                node.timer_round = done = env.event()
            elif node.timer_round is not None:
                yield node.timer_round  # ... so that a timer it moves runs at this tick
            if node.paused is not None:
                yield node.paused
            if table == TIMER or node.free() > 0:  # one acquire statement per tick
                yield from claim_round(node, table)
            if table == TIMER:
                node.timer_round = None
                done.succeed()
        return
    timers = table == TIMER
    notify = cfg.wakeup == "notify" and not timers
    long = cfg.wakeup == "long_poll" and not timers  # the server holds an empty request
    db, world = node.db, node.world
    store = db.store
    grid = node.grid(table)
    salt = grid.salt
    exact = node.exact_idle  # the idle sleep may count polls instead of simulating them
    keep_grid = node.instant_polls  # an empty poll took no time: the grid goes on
    on_grid = False  # the last wake-up was the grid's (not an insert's, not a wait's)
    answered = False  # long_poll: the server answered the held request (it had work)
    instant, acquire, me, queue = node.instant, node.acquire, node.name, node.queue
    batch, size, lock_time, trace_attempt = (cfg.batch_size, cfg.queue_size,
                                             cfg.lock_time, node.trace_attempt)
    put, k_acquire, code = node.trace.put, K["acquire"], node.code
    strategy_text = node.timer_text if timers else node.strategy_text
    global_lock = cfg.global_lock
    watch_rejects, rejected = cfg.on_queue_full == "unacquire", 0
    sized = bool(size) and not timers
    # claim_when: empty — the lesson's loop claims only once it holds nothing
    drain = cfg.claim_when == "empty" and not timers
    if timers:
        instant = None  # the timer table goes through the statement path
    fast = None
    plain_claim = instant is guarded_update_now
    claim, hand = store.claim, node.on_locked
    if (FAST_POLL and notify and instant is not None and not global_lock and not watch_rejects
            and not drain):
        def fast(sleep: Sleep, m: int) -> None:
            """The poll an insert wakes, run in the sleep's callback at the instant and rank
            the loop would poll: the same steps as the loop's, from its wake-up to its next
            sleep, which is this one armed again. A step that is not simple (a pause, no
            room) hands over to the loop, at its top."""
            m = -m - 1
            if m > sleep.k0:
                sleep.count(m)
            grid.k = m
            world.rank_now = (env._now, salt)
            while node.paused is None:
                free = size - len(queue) if sized else len(node.idle) - len(queue)
                if free <= 0:
                    break
                asked = batch if batch < free else free
                node.polls += 1
                if plain_claim:  # guarded_update_now, its calls written out
                    db.statements += 1
                    now = env._now
                    locked = claim(me, now, asked, now + lock_time)
                    if locked:
                        hand(locked)
                    got = len(locked)
                else:
                    got = len(instant(db, me, asked, lock_time))
                put(pack(env._now, k_acquire, code, -1, 0, asked, got, 0, 0.0, strategy_text))
                if got < asked:
                    now = env._now
                    grid.restart(now)
                    soonest = store.next_after_claim(me, now, table) if exact else None
                    sleep.arm(soonest, exact and (soonest is None or soonest > grid.at(grid.k)))
                    return
            sleep.wake.succeed(RESUME)

    # the first poll: after the node's start, initial delay and phase — ranked like any
    # other, even at the instant the loop starts (nodes pinned together do not poll in the
    # order they were listed)
    first = env.now + node.first_poll()
    ev = wake_at(env, first, rank(salt, first))
    yield env.any_of([ev, db.inserted()]) if notify else ev
    if ev.processed:
        world.rank_now = (first, salt)
    while True:
        if node.paused is not None:
            yield node.paused
            on_grid = False
        if drain and (queue or len(node.idle) < cfg.threads):
            free = 0  # it holds a job still: claim once it holds nothing
        elif sized:
            free = size - len(queue)
        else:
            free = batch if timers else len(node.idle) - len(queue)
        if free <= 0:
            if notify or long or not size or drain:  # fetch again when a thread frees
                yield node.slot_freed()
            else:
                yield env.timeout(cfg.queue_full_wait)
            on_grid = False
            continue
        asked = batch if batch < free else free
        node.polls += 1
        reply, answered = answered, False  # this poll answers a held long-poll request
        if watch_rejects:
            rejected = node.rejected
        if instant is not None:  # the hot path: one statement, applied at once
            got = len(instant(db, me, asked, lock_time))
            if got or not reply:
                put(pack(env.now, k_acquire, code, -1, 0, asked, got, 0, 0.0, strategy_text))
        else:
            try:
                if global_lock and not (yield from take_global_lock(node, table)):
                    yield env.timeout(cfg.poll_interval)  # the lock was busy all along
                    on_grid = False
                    continue
                att = yield from acquire(db, me, asked, lock_time, table=table)
                if global_lock:
                    yield from release_global_lock(node, table)
            except StatementFailed:
                node.failed("acquire")
                yield env.timeout(cfg.poll_interval)
                on_grid = False
                continue
            if att.locked or not reply:
                trace_attempt(att, strategy_text)
            if timers and node.timers_locked:
                yield from move_timers(node)
            if att.errors:
                # 40001 / SQLITE_BUSY: retry at once (after others); Flowable's
                # optimistic-lock rollback: wait the acquire wait
                yield env.timeout(cfg.error_wait)
                on_grid = False
                continue
            got = len(att.locked)
            if global_lock:  # "to let other nodes have the ability to fill the queue"
                yield env.timeout(cfg.global_lock_poll)
        if watch_rejects and node.rejected > rejected:  # refused: Flowable waits 5 s
            yield env.timeout(cfg.queue_full_wait)
            on_grid = False
            continue
        if got == asked:
            on_grid = False
            continue
        now = env.now
        if reply and got == 0:
            # another worker's request was answered first: this one was never answered,
            # it stays held with its timeout (the server sends no empty answer early)
            node.polls -= 1
            db.statements -= 1
        elif got == 0 and on_grid and keep_grid:
            grid.k += 1  # an empty poll on the grid keeps it (where it took no time)
        else:
            grid.restart(now)
        nxt = grid.at(grid.k)
        if notify or long or exact:
            soonest = store.next_eligible(now, table) if exact else None
            counting = exact and (soonest is None or soonest > nxt or long)
            # Idle: sleep through the polls that cannot find anything (polls.py)
            sleep = node.sleeps[table] = Sleep(node, table, grid, notify, soonest, counting,
                                                long, fast)
            m = yield sleep.wake
            del node.sleeps[table]
            if m is None:
                return  # the node crashed, or the run ended
            if m is RESUME:  # its insert poll ran in the sleep (``fast``), up to a step
                on_grid = False  # that needs the loop
                continue
            if m < 0:  # an insert woke a notify node: it polls now, off the grid
                m = -m - 1
                on_grid = False
                answered = long
            else:
                on_grid = True
            if m > sleep.k0:
                sleep.count(m)
            grid.k = m
        else:
            yield wake_at(env, nxt, rank(salt, nxt))
            on_grid = True
        world.rank_now = (env.now, salt)


def claim_round(node: Host, table: str = JOB) -> Generator[Any, Any, tuple[int, int]]:
    """One acquisition attempt on ``table``; returns (asked, got). Timers are not bounded
    by the local queue: the timer loop moves what it locked to the job table (as a poll
    of the timer table does), where they reach the pool only while it has room."""
    timers = table == TIMER
    n = node.cfg.batch_size if timers else min(node.cfg.batch_size, node.free())
    node.polls += 1
    if node.instant is not None and not timers:
        locked = node.instant(node.db, node.name, n, node.cfg.lock_time)
        att = Attempt(n, locked, 0, 1, 0.0)
    else:
        try:
            # the global acquire lock guards a tick's claim as it guards a poll's: its claim
            # (a bulk UPDATE without REV_) is safe only under the lock
            if node.cfg.global_lock and not (yield from take_global_lock(node, table)):
                return n, 0  # the lock was busy all along: this round claims nothing
            att = yield from node.acquire(node.db, node.name, n, node.cfg.lock_time,
                                           table=table)
            if node.cfg.global_lock:
                yield from release_global_lock(node, table)
        except StatementFailed:
            node.failed("acquire")
            return n, 0
    node.trace_attempt(att, node.timer_text if timers else None)
    if timers and node.timers_locked:
        yield from move_timers(node)
    return att.asked, len(att.locked)
