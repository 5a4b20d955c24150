"""Timer boundary events as timer jobs (Flowable): the boundary timer of a task is a row of
the timer table, and it fires only when an executor thread has run that row.

A task whose handler has a ``boundary_timer`` gets, in the transaction that creates its job,
a second row: a timer job in ``timer_job``, due ``after`` the task's creation. Nothing else
is special about it until it runs: the timer loops claim it when due (every poll interval,
a batch at a time, optimistically), move it to the job table locked by the claiming node and
hand it to that node's pool, or leave it unlocked for any node's acquisition when the pool is
full; a crashed holder's lock stays until the reset thread frees it. Only when an executor
thread has run it — its completion, one transaction — does the boundary event fire:

- an **interrupting** one ends the task's activity: the task's job is deleted if it is still
  in the job or timer table (``withdrawn``); an execution of it still running, or still in a
  local queue, goes on, and its completion then finds its row gone (a failure of it is a
  stale write);
- a **non-interrupting** one only fires (``boundary_timer``); the task's job stays.

A task whose job is done first has ended its activity, and its boundary timer's row is
deleted in the same statement (``cancelled``, ``a`` = the task): the timer never fires. A
timer job that has already been handed to a pool still runs, and its completion finds its row
gone, which fires nothing. A timer whose task's job was dead-lettered (or moved elsewhere)
fires nothing when it runs.

The firing is therefore late by the timer loop's poll, the pool's queue and, after a crash,
the lock time and the reset interval — as in Flowable. Without a timer table the engine fires
its timers itself at their instant (``sim/world.engine_timers``, the Zeebe-like server).

No process is made for it: the row is claimed, moved and run by the parts that do so for any
job. What is its own is its handler — a run of no length, under a key no task uses — and the
completion statement of a run that has such timers (``completer``); a run without them keeps
the plain completion, so ordinary jobs pay nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...base.trace import K, pack
from ...database.rows import ACQUIRABLE, TIMER, Row
from ..handlers import Handler

if TYPE_CHECKING:
    from .host import Cluster, Host

Complete = Callable[[float, int, int], tuple[bool, int]]

#: what a boundary timer's timer job is told by the trace (``job_created``'s ``a``)
KIND_CODE = 2


class BoundaryTimers:
    """The timer jobs of a run's boundary events: the handler each task's timer jobs run
    under, and which timer job belongs to which task."""

    def __init__(self, handlers: dict[str, Handler]):
        #: task handler -> the key its timer jobs run under (never a task's own name)
        self.keys: dict[str, str] = {}
        #: that key -> the handler: a run of no length that succeeds
        self.handlers: dict[str, Handler] = {}
        for name, h in handlers.items():
            if h.boundary is None:
                continue
            key = f"{name} boundary timer"
            while key in handlers or key in self.handlers:
                key += "'"
            self.keys[name] = key
            self.handlers[key] = Handler(key)
        #: task job id -> its timer job's id (while both are there)
        self.timer_of: dict[int, int] = {}
        #: timer job id -> (task job id, interrupting, due)
        self.fires: dict[int, tuple[int, bool, float]] = {}

    def routes(self, handles: frozenset[str]) -> frozenset[str]:
        """A node that runs a task runs its boundary timers' jobs too."""
        return handles | {self.keys[h] for h in handles if h in self.keys}


def create(world: Cluster, task: Row, after: float, interrupting: bool) -> None:
    """Insert the task's boundary timer: a timer job due ``after`` from now, unlocked in the
    timer table (never hinted: it is not due), told by a ``job_created`` of kind 2."""
    b, trace, now = world.boundary, world.trace, world.env.now
    assert b is not None
    tid = world.next_id
    world.next_id += 1
    due = now + after
    world.store.insert(Row(tid, "timer", b.keys[task.handler], task.priority, now, due,
                           task.retries), TIMER)
    b.timer_of[task.id] = tid
    b.fires[tid] = (task.id, interrupting, due)
    world.created += 1
    world.live += 1
    trace.put(pack(now, K["job_created"], -1, tid, 0, KIND_CODE, task.priority, -1, due,
                world.handler_texts[task.handler]))


def completer(node: Host, complete: Complete) -> Complete:
    """``complete`` (the worker's DELETE of a job it ran), and in the same statement what
    goes with it: a timer job's boundary event fires; a task's boundary timer is deleted
    with the task's activity."""
    world, store, trace, code = node.world, node.world.store, node.trace, node.code
    b = world.boundary
    assert b is not None
    fires, timer_of = b.fires, b.timer_of
    k_withdrawn, k_fired, k_cancelled = K["withdrawn"], K["boundary_timer"], K["cancelled"]
    ended = trace.text("its task ended first")

    def bounded(now: float, jid: int, fetched: int) -> tuple[bool, int]:
        deleted, why = complete(now, jid, fetched)
        if not deleted:
            return deleted, why
        fire = fires.pop(jid, None)
        if fire is not None:  # a timer job ran: its boundary event fires
            task, interrupting, due = fire
            timer_of.pop(task, None)
            row = store.get(task)
            if row is None or row.table not in ACQUIRABLE:
                return deleted, why  # dead-lettered, or gone, already: nothing to interrupt
            if interrupting:
                store.delete(task)
                trace.add(now, k_withdrawn, code, task, a=jid, x=due)
                world.finished(task)
                world.job_done()
            else:
                trace.add(now, k_fired, code, task, a=jid, x=due)
            return deleted, why
        tid = timer_of.pop(jid, None)
        if tid is not None:  # the task is done: its activity ends, and its timer with it
            del fires[tid]
            store.remove(tid)
            trace.add(now, k_cancelled, code, tid, a=jid, text=ended)
            world.job_done()
        return deleted, why

    return bounded
