"""A worker thread: it takes the next job from the local queue (or waits as an idle thread for
a claim to hand it one) and executes it — the handler's run, its side effect, its end — then
the completion (a DELETE) or the failure statement. This loop is the hottest code of a run.
"""

from __future__ import annotations

import math
from heapq import heappush
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from simpy import Event
from simpy.core import NORMAL

from ...base.trace import K, pack
from ...database.db import StatementFailed, delay as sleep
from . import boundary
from .calls import run_process
from .failure import fail
from .serial import next_in_queue

new_event = object.__new__

if TYPE_CHECKING:
    from .host import Host


def worker(node: Host, thread: int) -> Generator[Any, Any, None]:
    """A worker thread: take the next job from the local queue and execute it.

    This loop is the hottest code of a run, so it is written out in one piece: the
    handler's run, its side effect, the end, then the completion (a DELETE) or the
    failure statement.
    """
    env, queue, idle, world, trace = node.env, node.queue, node.idle, node.world, node.trace
    put, code, running, executions = trace.put, node.code, node.running, world.executions
    handlers, db, store, me = world.handlers, node.db, world.store, node.name
    k_start, k_side, k_end, k_done = (K["exec_start"], K["side_effect"], K["exec_end"],
                                      K["completed"])
    owner = node.name if node.cfg.complete_guard == "owner" else None
    # Counted at fetch (Oban, River), the completion is guarded by the fetch it belongs
    # to: ``WHERE state = 'executing' AND attempt = ?`` (this node's lock, and no claim
    # of the row since). A stale execution's write to a row that a rescue or an
    # operator's move/retry released, or that was fetched again since, is a no-op.
    by_fetch = store.count_at_fetch
    inf, nan = math.inf, math.nan
    hstreams, says = world.handler_streams, world.says
    track = node.track_running
    procs = world.process_handlers  # runs that are processes: they call services
    draws = {name: h.drawer() for name, h in handlers.items()}
    # side effects written with the run's fencing token: refused once a later claim took the
    # row (its lock generation moved on) or the row is gone
    fence = {name for name, h in handlers.items() if h.fenced}
    # effects written in the completion's transaction (an outbox row): made by a completion
    # that deletes the job, none at the run's end
    commit = {name for name, h in handlers.items() if h.at_commit}
    k_refused = K["effect_refused"]
    stale_text = trace.text("stale fencing token") if fence else -1  # (a text moves a hash)

    def refused(jid: int, attempt: int, hname: str, token: int) -> bool:
        """Whether the fenced effect is refused (``token`` no longer the row's lock
        generation, or the row gone), and if so its ``effect_refused`` event."""
        row = store.get(jid)
        if row is not None and row.fetched == token:
            return False
        put(pack(env._now, k_refused, code, jid, attempt, token,
                 -1 if row is None else row.fetched, 0, nan, says[hname]))
        return True
    # the completion needs no queue; a node's own clock (skew) goes through ``db.run``
    direct = db.pool is None and db.write_lock is None and not world.skewed
    cut, row_locks, sample_latency = db._cut, db.row_locks, db.sample_latency
    row_of = store.rows.get  # (the store's rows are one dict for the run)
    schedule, number = env._queue, env._eid  # type: ignore[attr-defined]

    def complete(now: float, jid: int, fetched: int) -> tuple[bool, int]:
        """DELETE; and why nothing was deleted, or whose lock it overrode (see the
        ``completed`` event: 0 none / row gone, 1 another node's lock, 2 not ours)."""
        row = row_of(jid)
        if row is None:
            return False, 0
        why = 1 if row.locked_by is not None and row.locked_by != me else 0
        deleted = store.delete(jid, me, fetched) if by_fetch else store.delete(jid, owner)
        if not deleted and why == 0:
            why = 2  # still there, but unlocked (rescheduled) or moved: not ours
        if deleted and row.queue is not None:
            next_in_queue(node, row.queue, now)
        return deleted, why

    if world.boundary is not None:  # boundary timers are timer jobs: their completions
        complete = boundary.completer(node, complete)  # fire them, or end them with the task

    while True:
        if queue:
            jid, hname, kind, fetched = queue.popleft()
            slot, node.slot = node.slot, None
            if slot is not None:
                slot.succeed()
        else:
            ev = new_event(Event)  # ``env.event()`` without its Python ``__init__``
            ev.env, ev.callbacks = env, []
            idle.append(ev)
            slot, node.slot = node.slot, None
            if slot is not None:  # an idle thread is room too (no local queue)
                slot.succeed()
            jid, hname, kind, fetched = yield ev
        if node.paused is not None:  # a stalled node starts nothing until it resumes
            yield node.paused
        attempt = executions.get(jid, 0) + 1
        executions[jid] = attempt
        put(pack(env._now, k_start, code, jid, attempt, thread, 0, 0, nan, -1))
        world.in_flight += 1
        world.started += 1
        if track:
            running[jid] = running.get(jid, 0) + 1
        stream = hstreams.get(hname) or world.handler_stream(hname)
        if procs and hname in procs:  # a process: it tells its own end
            ok, error = yield from run_process(node, hname, jid, attempt, stream, fetched)
        else:
            duration, ok, error, side_at = draws[hname](attempt, stream)
            if duration == inf:
                yield env.event()  # hangs forever: the thread is gone
            if ok:
                # The side effect happens at ``side_at`` into the run. At the very end it is
                # told by the exec_end event itself (b=1, text = what the handler says).
                # A pause stalls the thread: what wakes during it goes on when it ends.
                if side_at < duration:
                    if side_at > 0:
                        yield sleep(env, side_at)
                        if node.paused is not None:
                            yield node.paused
                    if fence and hname in fence and refused(jid, attempt, hname, fetched):
                        ok, error = False, "stale fencing token"
                    else:
                        put(pack(env._now, k_side, code, jid, attempt, 0, 0, 0, nan,
                                 says[hname]))
                    yield sleep(env, duration - side_at)
                    if node.paused is not None:
                        yield node.paused
                    put(pack(env._now, k_end, code, jid, attempt, int(ok), 0, 0, nan,
                             -1 if ok else stale_text))
                else:
                    if duration > 0:  # ``sleep(env, duration)`` written out: the common run
                        ev = new_event(Event)
                        ev.env, ev.callbacks, ev._value, ev._ok = env, [], None, True
                        heappush(schedule, (env._now + duration, NORMAL, next(number), ev))
                        yield ev
                        if node.paused is not None:
                            yield node.paused
                    if fence and hname in fence and refused(jid, attempt, hname, fetched):
                        ok, error = False, "stale fencing token"
                        put(pack(env._now, k_end, code, jid, attempt, 0, 0, 0, nan, stale_text))
                    elif commit and hname in commit:  # the effect waits for the commit
                        put(pack(env._now, k_end, code, jid, attempt, 1, 0, 0, nan, -1))
                    else:
                        put(pack(env._now, k_end, code, jid, attempt, 1, 1, 0, nan,
                                 says[hname]))
            else:
                if side_at is not None and side_at < duration:  # its effect, then the failure
                    if side_at > 0:
                        yield sleep(env, side_at)
                        if node.paused is not None:
                            yield node.paused
                    if not (fence and hname in fence and
                            refused(jid, attempt, hname, fetched)):
                        put(pack(env._now, k_side, code, jid, attempt, 0, 0, 0, nan,
                                 says[hname]))
                    duration -= side_at
                if duration > 0:
                    yield sleep(env, duration)
                    if node.paused is not None:
                        yield node.paused
                put(pack(env._now, k_end, code, jid, attempt, 0, 0, 0, nan, trace.text(error)))
        # The execution counts as running (for a crash, a heartbeat and the drain) until
        # its completion or failure statement has returned.
        if not ok:
            yield from fail(node, jid, hname, attempt, error or "", fetched)
        else:
            if db.instant and not world.skewed:
                db.statements += 1
                res = complete(env._now, jid, fetched)
            elif direct and me not in cut:
                # ``db.run`` written out for the common case (no connection pool, no write
                # lock): the statement's latency, then — unless the node was cut off while
                # it was in flight — its row's holder, if any, then the DELETE
                db.statements += 1
                lat = sample_latency(me)
                if lat > 0:
                    yield sleep(env, lat)
                if me in cut:
                    res = None
                else:
                    while row_locks and (holder := row_locks.get(jid)) is not None:
                        yield holder.end
                    res = complete(env._now, jid, fetched)
            else:
                try:
                    res, _ = yield from db.run(me, lambda now: complete(now, jid, fetched),
                                               rows=(jid,))
                except StatementFailed:
                    res = None
            if res is None:
                node.failed("complete", jid, attempt)
            else:
                deleted, other = res
                if deleted and commit and hname in commit:  # committed with the deletion
                    put(pack(env._now, k_side, code, jid, attempt, 0, 0, 0, nan, says[hname]))
                put(pack(env._now, k_done, code, jid, attempt, int(deleted), int(other), 0,
                         nan, -1))
                if deleted:
                    world.live -= 1
                    if world.waiters:
                        world.finished(jid)
        world.in_flight -= 1
        if track:
            left = running[jid] - 1
            if left:
                running[jid] = left
            else:
                del running[jid]
        if world.live == 0:
            world.check_drained()
