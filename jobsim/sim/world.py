"""A run: a scenario wired into SimPy processes, run to its end, returned as a ``RunResult``.

``run(scenario)`` builds the store, the database, the nodes, the workload and the fake clock,
runs until the horizon (``until``) or until the workload is exhausted and every job has reached
a terminal state (``drained``, bounded by ``horizon``), and then records what is still in the
tables as ``pending`` events, so that the trace alone explains every job.

A second submit of an explicit id (under ``idempotent_submit``, the only way a file may repeat
one) is an ``INSERT … WHERE NOT EXISTS``: while the task holding the id is in the table
(waiting, running, failed) it does nothing (``submit_ignored``); once that task is gone (done
or cancelled: its row deleted) it inserts a new task, which runs again. jobsim tells each
job's story by its number, so the new task gets a fresh one (after the largest explicit id),
and a ``resubmitted`` event names the id it was submitted under.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import simpy

from ..executor.config import Scenario
from ..database.db import Database
from ..executor.node import Node
from ..executor.parts import boundary as boundary_jobs
from ..executor.services import Service
from ..base.rng import Stream, Streams
from ..database.store import FAILED, JOB, TIMER, Row, Store
from .faults import schedule, skewed, start_clocks
from ..database.cpu import Cpu
from ..database.measured import measure
from .watch import events_scheduled, run_until, run_watched
from ..base.trace import COMPACT_BYTES, K, Trace, pack
from .workload import Waits, explicit_jobs, recurring, stream

K_CREATED = K["job_created"]


@dataclass
class RunResult:
    """What a run leaves: its scenario, trace, final tables and a few counters."""

    scenario: Scenario
    seed: int
    trace: Trace
    store: Store
    end_time: float
    drained: bool
    statements: int
    polls: dict[str, int]
    polls_skipped: dict[str, int]
    lost_races: int
    #: the SimPy events the run scheduled: what its cost estimate predicts
    events: int = 0

    @property
    def trace_sha256(self) -> str:
        return self.trace.sha256()


class World:
    def __init__(self, scenario: Scenario, seed: int | None = None, idle_shortcut: bool = True):
        self.scenario = scenario
        #: idle nodes may count polls instead of simulating them, where that is exact
        self.idle_shortcut = idle_shortcut
        #: (instant, salt) of the poll whose wake-up ran last (``parts/polls.py``)
        self.rank_now = (-1.0, 0)
        self.seed = scenario.seed if seed is None else seed
        self.env = simpy.Environment()
        self.streams = Streams(self.seed)
        self.trace = Trace()
        ex = scenario.executor
        self.store = Store(ex.order, ex.aging_rate, ex.lock_expiry, aging_from=ex.aging_from,
                           count_at_fetch=ex.count_attempt == "fetch")
        self.store.horizon = scenario.end
        self.has_faults = bool(scenario.faults)
        db_faults = any(f.kind in ("slow_db", "partition") for f in scenario.faults)
        self.db = Database(self.env, self.store, self.streams, scenario.db.latency,
                           scenario.db.connections, scenario.db.dialect, faulty=db_faults,
                           isolation=scenario.db.isolation,
                           sqlite_begin=scenario.db.sqlite_begin,
                           cpu=None if scenario.db.cores is None else
                           Cpu(self.env, scenario.db.cores, scenario.db.quantum,
                               scenario.db.handover),
                           busy_sleep=scenario.db.sqlite_busy == "sleep")
        #: the boundary timers' timer jobs, when they go through the timer table (Flowable)
        self.boundary = boundary_jobs.BoundaryTimers(scenario.handlers) \
            if scenario.boundary_timer_jobs else None
        self.handlers = scenario.handlers if self.boundary is None else \
            {**scenario.handlers, **self.boundary.handlers}
        self.executions: dict[int, int] = {}
        #: the downstream services, and the handlers whose runs are processes (they call
        #: services, or are written in Python); a drawn handler is never looked up there
        self.services = {name: Service(spec, self.env, self.trace,
                                       self.streams.stream(f"service/{name}"),
                                       self.check_drained)
                         for name, spec in scenario.services.items()}
        self.process_handlers = frozenset(n for n, h in self.handlers.items() if h.process)
        self.lost_races = 0
        self.handler_streams: dict[str, Stream] = {}
        self._jstreams: dict[str, Stream] = {}
        self._named: dict[str, Stream] = {}
        self.handler_texts = {name: self.trace.text(name) for name in scenario.handlers}
        self.says = {name: self.trace.text(h.says) for name, h in self.handlers.items()}
        self.retries = {name: scenario.initial_retries(name) for name in scenario.handlers}
        self.next_id = 1 + max((j.id for j in scenario.jobs if j.id is not None), default=0)
        self._timer_table = scenario.executor.timer_table
        #: explicit id -> the job that holds it: the id itself, or the latest task submitted
        #: again under it once the one before was gone (an idempotent submit's lookup)
        self._holders: dict[int, int] = {}
        self._sources = 0
        #: what the recurring schedules wait for; the worker skips ``finished`` when no
        #: schedule waits for a job's end (``waiters`` empty)
        self.waits = Waits(self)
        self.waiters = self.waits.ends
        self._timers: list[tuple[float, int, bool]] = []
        self._boundaries = {n: h.boundary for n, h in scenario.handlers.items() if h.boundary}
        #: job name -> id, for operations that name a job
        self.names: dict[str, int] = {}
        self._timer_wake: simpy.Event | None = None
        self.created = self.live = 0
        #: executions running anywhere (a drained run also waits for duplicates in flight),
        #: and started (a drained run's progress: ``watch.run_watched``)
        self.in_flight = self.started = 0
        self._stop = self.env.event()
        self.nodes = [Node(self, n.name, n.executor, n.start_at) for n in scenario.nodes]
        timing = dict(scenario.db.timing)
        for n in self.nodes if timing else ():  # each node's strategy as measured
            measure(self.db, n.name, timing[n.cfg.acquisition])
        self._by_name, self.skewed = {n.name: n for n in self.nodes}, skewed(self)

    # --- helpers used by nodes and workload -------------------------------------------------

    def node(self, name: str) -> Node:
        return self._by_name[name]

    def handler_stream(self, name: str) -> Stream:
        s = self.handler_streams.get(name)
        if s is None:
            s = self.handler_streams[name] = self.streams.stream(f"handler/{name}")
        return s

    def named_stream(self, name: str) -> Stream:
        """The stream of that name (made once per run)."""
        s = self._named.get(name)
        if s is None:
            s = self._named[name] = self.streams.stream(name)
        return s

    def jitter_stream(self, node: str) -> Stream:
        s = self._jstreams.get(node)
        if s is None:
            s = self._jstreams[node] = self.streams.stream(f"retry/jitter/{node}")
        return s

    def create(self, handler: str, kind: str, priority: int, due_in: float,
               jid: int | None = None, name: str | None = None, node: str | None = None,
               queue: str | None = None, failed: str | None = None) -> int:
        """Insert a new job (no executor latency): by a client, or by ``node``'s transaction
        (Flowable's hint path: inserted locked by that node and handed to its pool on
        commit, when it runs with ``hint``). ``failed`` inserts it already failed with that
        error (failsafe-executor's recordFailure). The job's number is ``jid`` (an explicit
        id) or the next free one, and is returned; an explicit id submitted again is an
        idempotent submit (see the module's doc)."""
        reused = None
        if jid is None:
            jid = self.next_id
            self.next_id += 1
        else:
            holder = self._holders.get(jid)
            if holder is not None and self.store.get(holder) is not None:
                return _submit_ignored(self, holder, handler, name)
            if holder is not None:  # the id's task is gone: a new one, numbered afresh
                reused, jid = jid, self.next_id
                self.next_id += 1
            self._holders[jid if reused is None else reused] = jid
        now = self.env.now
        row = Row(jid, kind, handler, priority, now, now + due_in, self.retries[handler],
                  queue)
        if name is not None:
            self.names[name] = jid
        creator = None
        if node is None and failed is None and (kind != "timer" or not self._timer_table):
            self.store.insert(row, JOB)  # the common case: a client's insert
        else:
            creator = self._by_name.get(node) if node is not None else None
            if creator is not None and not (creator.alive and creator.cfg.hint):
                creator = None  # a node that is down creates nothing; without hint: unlocked
            table = TIMER if kind == "timer" and self._timer_table else JOB
            if failed is not None:
                table = FAILED
            if creator is not None and table == JOB and row.due <= now:
                self.store.insert(row, JOB, creator.name, now + creator.cfg.lock_time)
            else:
                creator = None
                self.store.insert(row, table)
        self.db.commits += 1  # a client's INSERT commits too (SQLite's snapshots see it)
        self.created += 1
        self.live += 1
        trace, text = self.trace, self.handler_texts[handler]
        trace.put(pack(now, K_CREATED, -1, jid, 0, int(kind == "timer"), priority,
                       -1 if name is None else trace.text(name), row.due, text))
        if reused is not None:
            trace.add(now, K["resubmitted"], job=jid, a=reused)
        if failed is not None:
            row.error = failed
            trace.add(now, K["dead_lettered"], job=jid, a=2, text=trace.text(failed))
            self.live -= 1
            return jid
        if creator is not None:
            creator.hint(row)
        if len(trace._buf) > COMPACT_BYTES:
            trace.compact()
        boundary = self._boundaries.get(handler) if self._boundaries else None
        if boundary is not None and self.boundary is not None:
            boundary_jobs.create(self, row, *boundary)
        elif boundary is not None:
            heapq.heappush(self._timers, (now + boundary[0], jid, boundary[1]))
            if self._timer_wake is not None and not self._timer_wake.triggered:
                self._timer_wake.succeed()
        self.db.touch(insert=True)
        return jid

    def finished(self, jid: int) -> None:
        """A job reached a terminal state (done, dead-lettered, failed, withdrawn): wake the
        schedule waiting for it, if any."""
        self.waits.finished(jid)

    def source_done(self) -> None:
        self._sources -= 1
        self.check_drained()

    def job_done(self) -> None:
        """One more job reached a terminal state (done, dead-lettered, withdrawn…)."""
        self.live -= 1
        self.check_drained()

    def check_drained(self) -> None:
        """Stop a drained run once nothing is left: no source, no live job, no execution
        in flight, no job waiting in a local queue, no call a service still serves (one
        whose caller left takes effect at its end: that belongs to the run)."""
        if (self.scenario.until is None and self._sources == 0 and self.live == 0
                and self.in_flight == 0 and not self._stop.triggered
                and not any(n.queue for n in self.nodes)
                and not any(s.busy or s.queue for s in self.services.values())):
            self._stop.succeed()

    # --- the run ----------------------------------------------------------------------------

    def _clock(self) -> Generator[Any, Any, None]:
        env, trace = self.env, self.trace
        for tick in self.scenario.ticks:
            if tick.at > env.now:
                yield env.timeout(tick.at - env.now)
            trace.add(env.now, K["tick"], text=trace.text(tick.note))
            for name in tick.nodes:
                self._by_name[name].tick()

    def run(self, progress: Callable[[float, float], None] | None = None,
            guard: Callable[[int, float], None] | None = None) -> RunResult:
        """Run to the end. ``progress(fraction, now)``, if given, is called every few
        thousand events; it observes only, so the trace is the same with or without it."""
        sc, env = self.scenario, self.env
        self.trace.add(0.0, K["run_start"], x=math.inf if sc.until is None else sc.until)
        if self._boundaries and self.boundary is None:
            env.process(engine_timers(self))
        sources = [explicit_jobs(self, sc.jobs)] if sc.jobs else []
        sources += [stream(self, s) for s in sc.streams]
        sources += [recurring(self, r) for r in sc.recurring]
        self._sources = len(sources)
        for src in sources:
            env.process(src)
        # Nodes start after the workload, so jobs created at t=0 exist at their first poll.
        for node in self.nodes:
            node.start()
        if sc.ticks:
            env.process(self._clock())
        start_clocks(self)
        schedule(self, sc.faults)
        if not sources:
            self.check_drained()
        horizon = env.timeout(sc.end)
        finish = env.any_of([self._stop, horizon])
        if progress is None and guard is None:
            run_until(env, finish)
        else:
            run_watched(self, finish, progress, guard)
        drained = self._stop.triggered
        end = env.now
        for node in self.nodes:
            node.finish(end)
        self._record_pending(end)
        return RunResult(sc, self.seed, self.trace, self.store, end, drained, self.db.statements,
                         {n.name: n.polls for n in self.nodes},
                         {n.name: n.polls_skipped for n in self.nodes}, self.lost_races,
                         events_scheduled(env))

    def _record_pending(self, now: float) -> None:
        trace = self.trace
        pending = 0
        for rid, row in sorted(self.store.rows.items()):
            if row.table == JOB and row.locked_by is not None and row.lock_until >= now:
                why = f"{row.table}: locked by {row.locked_by}"
            elif row.table == JOB and row.due > now:
                why = f"{row.table}: due later"
            else:
                why = row.table
            trace.add(now, K["pending"], job=rid, a=row.retries, text=trace.text(why))
            pending += 1
        trace.add(now, K["run_end"], a=self.created, b=pending)



def engine_timers(world: World) -> Generator[Any, Any, None]:
    """BPMN timer boundary events fired by the engine itself (no timer table: the
    Zeebe-like server), one process for all of them: at each deadline an interrupting
    timer withdraws its job if it is still there (a later complete or fail answers "job
    not found"); a non-interrupting one only fires. With a timer table they are timer
    jobs instead (``executor/parts/boundary.py``)."""
    env, store, trace = world.env, world.store, world.trace
    while True:
        world._timer_wake = env.event()
        if world._timers:
            delay = world._timers[0][0] - env.now
            yield env.any_of([world._timer_wake, env.timeout(max(0.0, delay))])
        else:
            yield world._timer_wake
        while world._timers and world._timers[0][0] <= env.now:
            _, jid, interrupting = heapq.heappop(world._timers)
            row = store.get(jid)
            if row is None or row.table not in (JOB, TIMER):
                continue  # done, dead-lettered or in an incident already
            if not interrupting:
                trace.add(env.now, K["boundary_timer"], job=jid)
                continue
            store.delete(jid)
            trace.add(env.now, K["withdrawn"], job=jid)
            world.finished(jid)
            world.job_done()


def run(scenario: Scenario, seed: int | None = None,
        progress: Callable[[float, float], None] | None = None,
        guard: Callable[[int, float], None] | None = None,
        idle_shortcut: bool = True) -> RunResult:
    """Run ``scenario`` (with its own seed unless ``seed`` is given). ``guard(events, now)``,
    if given, is called every few thousand events and may stop the run by raising (see
    ``cost.Guard``). ``idle_shortcut=False`` simulates every poll of an idle node instead of
    counting them (the same trace, less the empty polls' records, and slower)."""
    return World(scenario, seed, idle_shortcut).run(progress, guard)


def _submit_ignored(world: World, holder: int, handler: str, name: str | None) -> int:
    """An idempotent submit of an id whose task is in the table: nothing inserted; a name it
    gives stands for that task (its event carries it)."""
    trace = world.trace
    if name is not None:
        world.names[name] = holder
    trace.add(world.env.now, K["submit_ignored"], job=holder,
              c=0 if name is None else trace.text(name) + 1, text=trace.text(handler))
    return holder
