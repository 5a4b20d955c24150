"""Arrivals: the jobs a run creates, as a few SimPy processes (never one per job).

- explicit jobs, each created at ``at`` and due ``due_in`` later (a timer is a job whose due
  date lies ahead);
- streams: Poisson arrivals at ``rate`` per second up to ``count`` jobs, from the stream
  ``workload/<name>``; or, with no rate, a burst of ``count`` jobs at ``start``;
- recurring schedules: ``count`` jobs, one every ``every`` (``fixed_rate``: the schedule does
  not wait for the jobs) or ``every`` after the previous one reached a terminal state
  (``fixed_delay``: a slow or failing job pushes the next one back).

A schedule under an executor whose exhausted jobs stay failed (``exhausted: failed``,
failsafe-executor) is one task, as failsafe's schedule is one row whose planned time moves on
after each successful run: its jobs run one at a time. ``fixed_delay`` waits as above;
``fixed_rate`` creates the next job at the schedule's next instant (``start + k × every``)
once the previous one is over — instants that passed while it ran are skipped, not made up,
as a failsafe ``Schedule`` returns the next planned time after the run. A job that fails
stays failed, and the schedule creates nothing more: after an operator's ``retry`` the job
runs again, and once it is done the schedule goes on from that completion (``every`` after
it, or the next instant); after a ``cancel`` (the row deleted) the schedule is over. An
operation names the schedule by its name: its latest job. Under other executors a failed
job is dead-lettered (or an incident) and the schedule goes on.

Explicit ids are kept; the others are numbered after the largest explicit id, in order of
creation.
"""

from __future__ import annotations

import math
from functools import partial
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from ..base.trace import COMPACT_BYTES, K, pack
from ..database.db import delay
from ..database.rows import Row
from ..database.store import DEADLETTER, FAILED, INCIDENT
from ..executor.config import JobSpec, RecurringSpec, StreamSpec

if TYPE_CHECKING:
    from .world import World

K_CREATED = K["job_created"]


def explicit_jobs(world: "World", jobs: tuple[JobSpec, ...]) -> Generator[Any, Any, None]:
    env = world.env
    for spec in sorted(jobs, key=lambda j: j.at):  # stable: file order at equal times
        if spec.at > env.now:
            yield env.timeout(spec.at - env.now)
        world.create(spec.handler, spec.kind, spec.priority, spec.due_in, spec.id, spec.name,
                     spec.node, spec.queue, spec.record_failure)
    world.source_done()


def plain_insert(world: "World", handler: str, kind: str, priority: int,
                 due_in: float) -> int:
    """``world.create`` for a client's insert with nothing else to it (no id, name, node,
    queue or failure; not a timer of a timer table, no boundary timer: ``plain`` in
    ``stream``), the hot path of a stream: the same row, the same records."""
    jid = world.next_id
    world.next_id += 1
    now = world.env._now
    row = Row(jid, kind, handler, priority, now, now + due_in, world.retries[handler])
    world.store.insert_new(row)
    world.db.commits += 1
    world.created += 1
    world.live += 1
    trace = world.trace
    trace.put(pack(now, K_CREATED, -1, jid, 0, int(kind == "timer"), priority, -1, row.due,
                   world.handler_texts[handler]))
    if len(trace._buf) > COMPACT_BYTES:
        trace.compact()
    world.db.touch(True, due_in <= 0.0)  # a row due now is eligible at once
    return jid


def stream(world: "World", spec: StreamSpec) -> Generator[Any, Any, None]:
    env = world.env
    if spec.start > 0:
        yield env.timeout(spec.start)
    create = world.create
    plain_create = partial(plain_insert, world)
    nodes = spec.nodes or (None,)  # the nodes that create its jobs, in turn
    h, kind, prio, due_in, queue = spec.handler, spec.kind, spec.priority, spec.due_in, \
        spec.queue
    # the common case: a plain insert (no keywords to pass, no timer-table row, no boundary)
    plain = (not spec.nodes and queue is None and not (kind == "timer" and world._timer_table)
             and h not in world._boundaries)
    if spec.rate is None:
        for i in range(spec.count):
            if plain:
                plain_create(h, kind, prio, due_in)
            else:
                create(h, kind, prio, due_in, node=nodes[i % len(nodes)], queue=queue)
    else:
        rng = world.streams.stream(f"workload/{spec.name}")
        mean = 1.0 / spec.rate
        timeout = env.timeout
        exponential = rng.exponential
        if plain and spec.count > 0:
            # The arrivals as callbacks of their own timeouts, the next one scheduled where
            # the loop below would schedule it: no process resumed per job.
            left = spec.count

            def arrive(_: Any) -> None:
                nonlocal left
                plain_create(h, kind, prio, due_in)
                left -= 1
                if left:
                    delay(env, mean * exponential()).callbacks.append(arrive)
                else:
                    world.source_done()

            delay(env, mean * exponential()).callbacks.append(arrive)
            return
        for i in range(spec.count):  # not plain: each insert through ``create``
            yield timeout(mean * exponential())
            create(h, kind, prio, due_in, node=nodes[i % len(nodes)], queue=queue)
    world.source_done()


class Waits:
    """What the recurring schedules wait for, job by job: a job's end (``wait_for``, woken
    by ``finished`` when it reaches a terminal state), or, for a failed one, an operator's
    retry or cancel (``hold``, woken by ``operated``)."""

    def __init__(self, world: "World"):
        self.world = world
        #: job -> the schedule waiting for its end
        self.ends: dict[int, simpy.Event] = {}
        #: failed job -> its schedule, stopped until an operator retries or cancels it
        self.held: dict[int, simpy.Event] = {}
        #: jobs an operator cancelled (a schedule asks why its job's row is gone)
        self.cancelled: set[int] = set()

    def wait_for(self, jid: int) -> simpy.Event:
        ev = self.ends[jid] = self.world.env.event()
        return ev

    def finished(self, jid: int) -> None:
        ev = self.ends.pop(jid, None)
        if ev is not None:
            ev.succeed()

    def hold(self, jid: int) -> simpy.Event:
        """The schedule stops on its failed job ``jid``. Meanwhile it keeps no run from
        draining: with no operation left to come, the job stays failed, the schedule over."""
        ev = self.held[jid] = self.world.env.event()
        self.world.source_done()
        return ev

    def operated(self, jid: int, cancelled: bool = False) -> None:
        """An operator retried (or cancelled) the failed job ``jid``: the schedule it held
        goes on, a source of the run again at once (before anything can drain the run)."""
        if cancelled:
            self.cancelled.add(jid)
        ev = self.held.pop(jid, None)
        if ev is not None:
            self.world._sources += 1
            ev.succeed()


def recurring(world: "World", spec: RecurringSpec) -> Generator[Any, Any, None]:
    env = world.env
    if spec.start > 0:
        yield env.timeout(spec.start)
    one_task = world.scenario.keeps_failed
    for i in range(spec.count):
        created = env.now
        jid = world.create(spec.handler, spec.kind, spec.priority, 0.0)
        world.names[spec.name] = jid  # an operation names the schedule: its latest job
        if i == spec.count - 1:
            break
        if spec.mode == "fixed_rate" and not one_task:
            yield env.timeout(spec.every)
            continue
        grid = env.timeout(spec.every) if spec.mode == "fixed_rate" else None
        if not (yield from _over(world, jid)):
            break  # its failed job was cancelled: the schedule is over
        if grid is None:
            yield env.timeout(spec.every)  # fixed delay: from the end
        else:
            yield from _next_instant(env, grid, created + spec.every, spec.every)
    world.source_done()


def _over(world: "World", jid: int) -> Generator[Any, Any, bool]:
    """Wait until a schedule's job ``jid`` is over: True once it ended (done, dead-lettered,
    withdrawn); a failed one, kept until an operator acts, holds the schedule until it is
    retried and ends — or False if it is cancelled instead."""
    store, waits = world.store, world.waits
    while True:
        row = store.get(jid)
        if row is None:
            return jid not in waits.cancelled
        if row.table == FAILED:
            yield waits.hold(jid)
        elif row.table in (DEADLETTER, INCIDENT):
            return True
        else:
            yield waits.wait_for(jid)


def _next_instant(env: simpy.Environment, grid: simpy.Timeout, due: float,
                  every: float) -> Generator[Any, Any, None]:
    """Wait for a fixed-rate schedule's next instant after its job is over: ``grid`` (the
    timeout to ``due``, made when the job was created) if it is still to come, else the
    first instant ``due + k × every`` from now (the ones that passed are skipped)."""
    now = env.now
    if now <= due:
        yield grid
        return
    due += math.ceil((now - due) / every) * every
    while due < now:  # rounding
        due += every
    yield env.timeout(due - now)
