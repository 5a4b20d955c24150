"""A node: the executor loop on one machine of the cluster, as a small core and its parts.

The core (this module) is the node's life — start, crash, restart, pause, the fake clock's
tick — its bounded local queue, its idle threads, and the hand-off of the rows its claims
lock. Its SimPy processes (never one per job) are parts, one concept each, in
``jobsim/executor/parts/``; which ones a node runs follows from its settings (the table in
``parts/__init__.py``):

- the **acquisition loop** claims due jobs, ``min(batch_size, free local-queue slots)`` at a
  time, woken by ``poll``, ``notify`` or ``ticks``; an idle node sleeps through polls that
  nothing can change (counted, not simulated); with a timer table a second loop claims due
  timers and the **timer mover** moves them to the job table; Flowable's **global acquire
  lock** is a step of the loop;
- **worker threads** take jobs from the local queue in order and execute them: the
  handler's run, its side effect, then the completion or the **failure** statement (retries
  by policy); **serial queues** hand a queue's next task over in the same statement; with a
  timer table, a **boundary timer**'s timer job fires its event in its own completion;
- an optional **heartbeat** extends the locks of the jobs it runs (``heartbeat_scope:
  running``) or of every job it holds (``held``);
- an optional **reset thread** unlocks rows whose lock expired (or discards them when
  attempts are counted at fetch and none are left);
- an optional **unacquirer** unlocks rows refused by a full local queue (Flowable).
- an optional **stager** notifies the nodes when rows wait to be claimed (Oban).

Faults: ``crash()`` kills every process at that instant — the local queue and running
executions are lost, the locks stay in the table until they expire — and ``restart()``
starts a fresh incarnation. ``pause(d)`` is a stop-the-world stall: whatever wakes during it
(a handler's end, a poll, a heartbeat) goes on only when it ends, and then as if nothing
happened, committing work whose lock has meanwhile expired unless completion is guarded by
owner. When attempts are counted at fetch (Oban, River) the completion and the failure are
always guarded by the fetch they belong to (the row still locked by this node, and not
fetched again since): a stale execution's write to a row that a rescue or an operator's
move released is a no-op. A statement that fails (the node is cut off from the database) is
traced; a lost completion leaves the job locked until its lock expires.

Everything a node does is written to the trace.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from heapq import heappush
from typing import TYPE_CHECKING, Any

import simpy
from simpy.core import NORMAL

from ..base.trace import K, pack
from ..database.claims import ACQUIRE, INSTANT, Attempt
from ..database.dialects import STRATEGIES
from ..database.store import JOB, TIMER, Locked
from .config import ExecutorConfig
from .parts import processes
from .parts.polls import Grid, Sleep
from .parts.unacquire import reject as reject_job

if TYPE_CHECKING:
    from .parts.host import Cluster


class Node:
    def __init__(self, world: Cluster, name: str, cfg: ExecutorConfig,
                 start_at: float | None = None):
        self.world = world
        self.env = world.env
        self.db = world.db
        self.trace = world.trace
        self.name = name
        self.code = world.trace.node(name)
        self.cfg = cfg
        #: when the node starts; None: at 0, with its first poll at a drawn phase
        self.start_at = start_at
        streams = world.streams
        phase = streams.stream(f"poll/phase/{name}")
        #: where its polls fall within one poll interval (pinned by ``start_at``); a long
        #: polling worker sends its first request as it starts, held until there is work
        self.phase = phase.uniform() * cfg.poll_interval \
            if start_at is None and cfg.wakeup != "long_poll" else 0.0
        #: orders this node's polls among other nodes' at one instant (``polls.rank``)
        self.salt = int(phase.uniform() * 2 ** 31)
        db = world.db
        #: whether an empty poll takes no time and touches nothing another statement sees,
        #: so that the idle sleep may count polls instead of simulating them (``polls.py``)
        self.instant_polls = (db.dialect == "atomic" and db.pool is None
                              and db.latency.is_zero and not cfg.global_lock
                              and not any(f.kind == "partition" and f.node == name
                                          for f in world.scenario.faults))
        self.exact_idle = world.idle_shortcut and self.instant_polls
        dialect = world.db.dialect
        # With the global acquire lock held, Flowable locks in bulk without REV_: a SELECT,
        # then one UPDATE … WHERE ID_ IN (…) (read_then_write, made safe by the lock).
        strategy = "read_then_write" if cfg.global_lock else cfg.acquisition
        self.acquire = ACQUIRE[strategy] if dialect == "atomic" else \
            STRATEGIES[dialect][strategy]
        self.instant = INSTANT.get(strategy) if world.db.instant else None
        self.strategy_text = world.trace.text(strategy)
        self.timer_table = world.scenario.executor.timer_table
        self.timer_text = world.trace.text(strategy + " timer_job") if self.timer_table else -1
        #: timers this node's timer loop locked, to move to the job table
        self.timers_locked: list[int] = []
        #: jobs handed to a full local queue, to unacquire (Flowable)
        self.rejects: list[int] = []
        self.reject_wake: simpy.Event | None = None
        self.rejected = 0
        #: (job id, handler, kind, the row's ``fetched`` at this node's claim of it)
        self.queue: deque[tuple[int, str, str, int]] = deque()
        self.idle: deque[Any] = deque()
        #: job id -> executions of it running here (kept when a heartbeat needs it)
        self.running: dict[int, int] = {}
        #: what Python handlers remember on this node, by handler (lost in a crash)
        self.memory: dict[str, dict] = {}
        self.track_running = cfg.heartbeat is not None or world.has_faults
        self.alive = False
        #: this incarnation's life, shared with the calls it makes: ``[False]`` once it
        #: crashed (a service then ends them with nobody waiting)
        self.life = [False]
        self._procs: list[simpy.Process] = []
        self.paused: simpy.Event | None = None
        #: per acquisition loop (job table, timer table): the event its next tick fires
        self.tick_events: dict[str, simpy.Event] = {}
        #: on the fake clock, the tick's timer round while it runs (the job round waits)
        self.timer_round: simpy.Event | None = None
        self.slot = None
        self.polls = 0
        self.polls_skipped = 0
        #: per acquisition loop (job table, timer table): its idle sleep, if asleep
        self.sleeps: dict[str, Sleep] = {}
        self._grids: dict[str, Grid] = {}

    # --- life ------------------------------------------------------------------------------

    def start(self) -> None:
        env = self.env
        self.alive = True
        self.life = [True]
        if self.cfg.handles is not None:
            handles = frozenset(self.cfg.handles)
            if self.world.boundary is not None:
                handles = self.world.boundary.routes(handles)
            self.db.store.routes[self.name] = handles
        self.on_locked = lock_listener(self)
        self.db.lock_listeners[self.name] = self.on_locked
        self._procs = [env.process(body) for body in processes(self)]
        for proc in self._procs:  # a body runs until it ends or the node crashes
            proc.callbacks.append(_ended_by_crash)

    def crash(self) -> None:
        """Die at once: processes, local queue and running executions are gone; the locks
        stay in the table."""
        if not self.alive:
            return
        self.finish(self.env.now)  # the polls an idle node slept through until now
        lost_runs = sum(self.running.values())
        self.world.in_flight -= lost_runs
        lost_queued = len(self.queue)
        for proc in self._procs:
            if proc.is_alive:
                proc.interrupt("crash")
        self._procs = []
        self.alive = False
        self.life[0] = False
        self.queue.clear()
        self.idle.clear()
        self.running.clear()
        self.memory.clear()
        self.timers_locked.clear()
        self.rejects.clear()
        self.tick_events = {}
        self.slot = self.paused = self.reject_wake = self.timer_round = None
        self.trace.add(self.env.now, K["node_crashed"], self.code, a=lost_runs, b=lost_queued)
        self.world.check_drained()

    def restart(self) -> None:
        """Start again with an empty queue (a new incarnation under the same name)."""
        if self.alive:
            return
        self.trace.add(self.env.now, K["node_restarted"], self.code)
        self.start_at, self.phase = 0.0, 0.0  # it polls after its initial delay
        self.start()

    def pause(self, length: float) -> None:
        """Stop the world for ``length`` seconds."""
        if not self.alive or self.paused is not None:
            return
        self.paused = self.env.event()
        self.trace.add(self.env.now, K["node_paused"], self.code, x=length)
        for sleep in self.sleeps.values():
            sleep.nudge()  # its next poll waits for the pause to end, as a simulated one
        self.env.process(self._resume_after(length, self.paused))

    def _resume_after(self, length: float, ev: simpy.Event) -> Generator[Any, Any, None]:
        yield self.env.timeout(length)
        if self.paused is ev:
            self.paused = None
            self.trace.add(self.env.now, K["node_resumed"], self.code)
            ev.succeed()

    def tick(self) -> None:
        """Run one acquisition round now (the fake clock), in each acquisition loop waiting
        for it: the job table's and, with a timer table, the timer table's."""
        ticks, self.tick_events = self.tick_events, {}
        for table in (TIMER, JOB):  # due timers first: moved, they may run this tick
            ev = ticks.get(table)
            if ev is not None:
                ev.succeed()

    def finish(self, end: float) -> None:
        """At the end of the run (or a crash): count the polls an idle node slept through
        until now (the sleep itself never finishes)."""
        for table in sorted(self.sleeps):
            self.sleeps[table].stop()
        self.sleeps.clear()

    def first_poll(self) -> float:
        """Seconds from the loop's start to its first poll: the pinned start, the system's
        initial delay and the node's phase."""
        return (self.start_at or 0.0) + self.cfg.initial_delay + self.phase

    def grid(self, table: str) -> Grid:
        """The poll grid of this node's loop over ``table``: one for the node's life, so
        that the jitter drawn for polls that never came is drawn again after a restart (one
        stream per loop, so that one loop's sleep never takes another's draws)."""
        grid = self._grids.get(table)
        if grid is None:
            cfg = self.cfg
            stream = self.world.streams.stream(f"poll/jitter/{self.name}/{table}") \
                if cfg.poll_jitter else None
            salt = 2 * self.salt + (table == JOB)
            period = cfg.poll_period if table == JOB else cfg.poll_interval
            grid = self._grids[table] = Grid(period, cfg.poll_jitter, stream, salt)
        return grid

    # --- the local queue and its threads ---------------------------------------------------

    def free(self) -> int:
        """Rows the next claim may ask for: free local-queue slots, or idle threads (no queue)."""
        if self.cfg.claim_when == "empty" and (self.queue or len(self.idle) < self.cfg.threads):
            return 0  # the lesson's loop claims only once it holds nothing
        if self.cfg.queue_size == 0:
            return len(self.idle) - len(self.queue)
        return self.cfg.queue_size - len(self.queue)

    def unhurried(self) -> None:
        """Nodes' clocks disagree in this run (``database/clocks.py``): every claim goes
        through the statement path, which reads this node's clock, and an idle node polls
        rather than counts the polls that could not find anything (that count assumes one
        clock for all)."""
        self.instant = None
        self.exact_idle = False

    def slot_freed(self) -> Any:
        if self.slot is None:
            self.slot = self.env.event()
        return self.slot

    def hint(self, row: Any) -> None:
        """Flowable's hint path: a job this node's transaction created was inserted locked by
        it; on commit it goes straight to the local pool."""
        self.on_locked([Locked(row.id, None, False, row.lock_until, row.handler, row.kind,
                                row.fetched)])

    def trace_attempt(self, att: Attempt, text: int | None = None) -> None:
        """Trace the attempt as a whole (its rows were traced as they were locked)."""
        self.world.lost_races += att.lost
        self.trace.put(pack(self.env.now, K["acquire"], self.code, -1, att.errors, att.asked,
                         len(att.locked), att.lost, att.latency,
                         self.strategy_text if text is None else text))

    def failed(self, statement: str, job: int = -1, attempt: int = 0) -> None:
        self.trace.add(self.env.now, K["statement_failed"], self.code, job, attempt,
                       text=self.trace.text(statement))


def lock_listener(node: Node) -> Callable[[list], None]:
    """A node's hand-off of claimed rows, made once per start and bound as the database's
    listener for it (the hot path of every claim): at a claim's commit instant, trace the rows
    it locked and hand them to idle threads, or queue them. With a timer loop, a timer it
    locked waits for its move instead; with ``on_queue_full: unacquire``, a row that finds the
    local queue full is refused and unlocked again. (A function beside the class, which the
    node calls once per start.)"""
    env, put, code, k_locked, code_of = (node.env, node.trace.put, node.code, K["locked"],
                                          node.trace.node)
    idle, queue, rows = node.idle, node.queue, node.db.store.rows
    timers = node.timer_table
    reject = node.cfg.on_queue_full == "unacquire"
    size = node.cfg.queue_size
    # a broker fixes each activation's deadline, activation + the job timeout: traced in
    # Unix epoch ms, as the server gives it (informational where nothing expires)
    timeout = node.cfg.lock_time if node.cfg.acquisition == "broker" else None
    epoch = node.world.scenario.epoch_ms
    # an idle thread's event succeeded as ``Event.succeed`` schedules it — (now, NORMAL,
    # its number) — without the two Python calls (it is this thread's and still pending)
    schedule, number = env._queue, env._eid  # type: ignore[attr-defined]

    def on_locked(locked: list) -> None:
        if not node.alive:
            return
        now = env._now
        deadline = 0 if timeout is None else epoch + round((now + timeout) * 1000.0)
        for lk in locked:
            prev = -1 if lk.previous_owner is None else code_of(lk.previous_owner)
            put(pack(now, k_locked, code, lk.id, 0, prev, int(lk.previous_valid), deadline,
                  lk.lock_until, -1))
            if timers and rows[lk.id].table == TIMER:
                node.timers_locked.append(lk.id)
                continue
            item = (lk.id, lk.handler, lk.kind, lk.fetched)
            if idle:
                ev = idle.popleft()
                ev._ok, ev._value = True, item
                heappush(schedule, (now, NORMAL, next(number), ev))
            elif reject and len(queue) >= size:
                reject_job(node, lk.id)
            else:
                queue.append(item)

    return on_locked


def _ended_by_crash(proc: simpy.Event) -> None:
    """A node's process that a crash interrupted ended as it should: not a failure of the
    run. (A callback rather than a generator around each body, which every resume of the
    process would pass through.)"""
    if not proc._ok and isinstance(proc._value, simpy.Interrupt):
        proc._defused = True  # type: ignore[attr-defined]
