"""A node: the executor loop on one machine of the cluster.

A node runs, as SimPy processes (never one per job):

- an **acquisition loop** that claims due jobs with its strategy, ``min(batch_size, free
  local-queue slots)`` at a time, re-polling at once when a batch came back full. It wakes by
  ``poll`` (every ``poll_interval``), by ``notify`` (also at every insert and whenever a
  thread frees a slot) or by ``ticks`` (the lesson's fake clock: one round per tick). When a
  poll finds nothing and nothing can change its answer before a later poll, the polls in
  between are counted, not simulated (an idle month costs a handful of events);
- **worker threads** that take jobs from the bounded local queue, in order, and execute them:
  the handler's run, its side effect, then the completion or failure statement;
- an optional **heartbeat** that extends the locks of the jobs it is running
  (``heartbeat_scope: running``, failsafe-executor v2, db-scheduler) or of every job it holds,
  those waiting in its local queue too (``held``, failsafe-executor v3).

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

import math
from collections import deque
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from ..database.claims import ACQUIRE, INSTANT, Attempt
from .config import ExecutorConfig
from ..database.db import StatementFailed
from ..database.dialects import STRATEGIES
from ..database.store import DEADLETTER, FAILED, INCIDENT, JOB, TIMER, Locked
from ..base.trace import K

if TYPE_CHECKING:
    from ..sim.world import World


class Node:
    def __init__(self, world: "World", name: str, cfg: ExecutorConfig, start_at: float = 0.0):
        self.world = world
        self.env = world.env
        self.db = world.db
        self.trace = world.trace
        self.name = name
        self.code = world.trace.node(name)
        self.cfg = cfg
        self.start_at = start_at
        dialect = world.db.dialect
        # With the global acquire lock held, Flowable locks in bulk without REV_: a SELECT,
        # then one UPDATE … WHERE ID_ IN (…) (read_then_write, made safe by the lock).
        strategy = "read_then_write" if cfg.global_lock else cfg.acquisition
        self._acquire = ACQUIRE[strategy] if dialect == "atomic" else \
            STRATEGIES[dialect][strategy]
        self._instant = INSTANT.get(strategy) if world.db.instant else None
        self._strategy_text = world.trace.text(strategy)
        self.timer_table = world.scenario.executor.timer_table
        self._timer_text = world.trace.text(strategy + " timer_job") if self.timer_table else -1
        #: timers this node's timer loop locked, to move to the job table
        self._timers_locked: list[int] = []
        #: jobs handed to a full local queue, to unacquire (Flowable)
        self._rejects: list[int] = []
        self._reject_wake: simpy.Event | None = None
        self.rejected = 0
        #: (job id, handler, kind, the row's ``fetched`` at this node's claim of it)
        self.queue: deque[tuple[int, str, str, int]] = deque()
        self.idle: deque[Any] = deque()
        #: job id -> executions of it running here (kept when a heartbeat needs it)
        self.running: dict[int, int] = {}
        self.track_running = cfg.heartbeat is not None or world.has_faults
        self.alive = False
        self._procs: list[simpy.Process] = []
        self._paused: simpy.Event | None = None
        #: per acquisition loop (job table, timer table): the event its next tick fires
        self._ticks: dict[str, simpy.Event] = {}
        self._slot = None
        self.polls = 0
        self.polls_skipped = 0
        #: per acquisition loop (job table, timer table): the idle sleep's poll grid
        self._asleep: dict[str, tuple[float, float]] = {}
        self._replan: dict[str, simpy.Event] = {}
        #: only a node that may be paused needs its idle sleep to be interruptible
        self._pausable = any(f.kind == "pause" and f.node == name
                             for f in world.scenario.faults)

    # --- life -----------------------------------------------------------------------------

    def start(self) -> None:
        env = self.env
        self.alive = True
        if self.cfg.handles is not None:
            self.db.store.routes[self.name] = frozenset(self.cfg.handles)
        plain = not self.timer_table and self.cfg.on_queue_full != "unacquire"
        self.db.lock_listeners[self.name] = self._on_locked_plain if plain else \
            self._on_locked
        self._procs = [env.process(self._life(self._acquisition_loop(JOB)))]
        if self.timer_table:
            self._procs.append(env.process(self._life(self._acquisition_loop(TIMER))))
        self._procs += [env.process(self._life(self._worker(i))) for i in range(self.cfg.threads)]
        if self.cfg.heartbeat:
            self._procs.append(env.process(self._life(self._heartbeat())))
        if self.cfg.reset_interval:
            self._procs.append(env.process(self._life(self._reset_expired())))
        if self.cfg.on_queue_full == "unacquire":
            self._procs.append(env.process(self._life(self._unacquirer())))

    def _life(self, body: Generator[Any, Any, None]) -> Generator[Any, Any, None]:
        """Run a process body until it ends or the node crashes."""
        try:
            yield from body
        except simpy.Interrupt:
            return

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
        self.queue.clear()
        self.idle.clear()
        self.running.clear()
        self._timers_locked.clear()
        self._rejects.clear()
        self._replan.clear()
        self._ticks = {}
        self._slot = self._paused = self._reject_wake = None
        self.trace.add(self.env.now, K["node_crashed"], self.code, a=lost_runs, b=lost_queued)
        self.world.check_drained()

    def restart(self) -> None:
        """Start again with an empty queue (a new incarnation under the same name)."""
        if self.alive:
            return
        self.trace.add(self.env.now, K["node_restarted"], self.code)
        self.start_at = 0.0
        self.start()

    def pause(self, length: float) -> None:
        """Stop the world for ``length`` seconds."""
        if not self.alive or self._paused is not None:
            return
        self._paused = self.env.event()
        self.trace.add(self.env.now, K["node_paused"], self.code, x=length)
        for replan in self._replan.values():
            if not replan.triggered:
                replan.succeed()  # an idle sleeper re-plans its polls around the pause
        self.env.process(self._resume_after(length, self._paused))

    def _resume_after(self, length: float, ev: simpy.Event) -> Generator[Any, Any, None]:
        yield self.env.timeout(length)
        if self._paused is ev:
            self._paused = None
            self.trace.add(self.env.now, K["node_resumed"], self.code)
            ev.succeed()

    def tick(self) -> None:
        """Run one acquisition round now (the fake clock), in each acquisition loop waiting
        for it: the job table's and, with a timer table, the timer table's."""
        ticks, self._ticks = self._ticks, {}
        for table in (TIMER, JOB):  # due timers first: moved, they may run this tick
            ev = ticks.get(table)
            if ev is not None:
                ev.succeed()

    # --- acquisition ----------------------------------------------------------------------

    def _free(self) -> int:
        """Rows the next claim may ask for: the free slots of the local queue or, with no
        local queue (``queue_size: 0``, Oban's demand = limit − running), the idle threads."""
        if self.cfg.queue_size == 0:
            return len(self.idle) - len(self.queue)
        return self.cfg.queue_size - len(self.queue)

    def _round(self, table: str = JOB) -> Generator[Any, Any, tuple[int, int]]:
        """One acquisition attempt on ``table``; returns (asked, got). Timers are not bounded
        by the local queue: the timer loop moves what it locked to the job table (as a poll
        of the timer table does), where they reach the pool only while it has room."""
        timers = table == TIMER
        n = self.cfg.batch_size if timers else min(self.cfg.batch_size, self._free())
        self.polls += 1
        if self._instant is not None and not timers:
            locked = self._instant(self.db, self.name, n, self.cfg.lock_time)
            att = Attempt(n, locked, 0, 1, 0.0)
        else:
            try:
                att = yield from self._acquire(self.db, self.name, n, self.cfg.lock_time,
                                               table=table)
            except StatementFailed:
                self._failed("acquire")
                return n, 0
        self._trace_attempt(att, self._timer_text if timers else None)
        if timers and self._timers_locked:
            yield from self._move_timers()
        return att.asked, len(att.locked)

    def _failed(self, statement: str, job: int = -1, attempt: int = 0) -> None:
        self.trace.add(self.env.now, K["statement_failed"], self.code, job, attempt,
                       text=self.trace.text(statement))

    def _on_locked(self, locked: list) -> None:
        """Rows one of this node's claim statements locked, at its commit instant: trace
        them and hand them to idle threads, or queue them (a timer locked by the timer loop
        waits for its move instead)."""
        if not self.alive:
            return
        now, emit, code, k_locked, node = (self.env.now, self.trace.emit, self.code,
                                           K["locked"], self.trace.node)
        idle, queue = self.idle, self.queue
        timers = self.timer_table
        reject = self.cfg.on_queue_full == "unacquire"
        size = self.cfg.queue_size
        for lk in locked:
            prev = -1 if lk.previous_owner is None else node(lk.previous_owner)
            emit((now, k_locked, code, lk.id, 0, prev, int(lk.previous_valid), 0, lk.lock_until,
                  -1))
            if timers and self.db.store.rows[lk.id].table == TIMER:
                self._timers_locked.append(lk.id)
                continue
            item = (lk.id, lk.handler, lk.kind, lk.fetched)
            if idle:
                idle.popleft().succeed(item)
            elif reject and len(queue) >= size:
                self._reject(lk.id)
            else:
                queue.append(item)

    def _on_locked_plain(self, locked: list) -> None:
        """``_on_locked`` for a node with no timer loop and a local queue that takes what
        comes (the hot path of most runs)."""
        if not self.alive:
            return
        now, emit, code, k_locked, node = (self.env.now, self.trace.emit, self.code,
                                           K["locked"], self.trace.node)
        idle, queue = self.idle, self.queue
        for lk in locked:
            prev = -1 if lk.previous_owner is None else node(lk.previous_owner)
            emit((now, k_locked, code, lk.id, 0, prev, int(lk.previous_valid), 0, lk.lock_until,
                  -1))
            item = (lk.id, lk.handler, lk.kind, lk.fetched)
            if idle:
                idle.popleft().succeed(item)
            else:
                queue.append(item)

    def hint(self, row: Any) -> None:
        """Flowable's hint path: a job this node's transaction created was inserted locked by
        it; on commit it goes straight to the local pool."""
        self._on_locked([Locked(row.id, None, False, row.lock_until, row.handler, row.kind,
                                row.fetched)])

    def _reject(self, jid: int) -> None:
        """The pool refused the job (RejectedExecutionException): unacquire it in a new
        transaction, without re-hinting; any node's acquisition takes it later."""
        self.rejected += 1
        self._rejects.append(jid)
        ev, self._reject_wake = self._reject_wake, None
        if ev is not None:
            ev.succeed()

    def _unacquirer(self) -> Generator[Any, Any, None]:
        """Unacquire rejected jobs (one statement for those pending at once)."""
        env, store, me, text = self.env, self.db.store, self.name, self.trace.text("queue full")
        while True:
            if not self._rejects:
                self._reject_wake = env.event()
                yield self._reject_wake
            ids, self._rejects = self._rejects, []
            try:
                done, _ = yield from self.db.run(
                    me, lambda now: [rid for rid in ids if store.unlock(rid, me)], wakes=True,
                    rows=ids)
            except StatementFailed:
                self._failed("unacquire")
                continue
            for rid in done:
                self.trace.add(env.now, K["unlocked"], self.code, rid, text=text)

    def _trace_attempt(self, att: Attempt, text: int | None = None) -> None:
        """Trace the attempt as a whole (its rows were traced as they were locked)."""
        self.world.lost_races += att.lost
        self.trace.emit((self.env.now, K["acquire"], self.code, -1, att.errors, att.asked,
                         len(att.locked), att.lost, att.latency,
                         self._strategy_text if text is None else text))

    def _move_timers(self) -> Generator[Any, Any, None]:
        """Move the timers this node locked to the job table (delete + insert, one statement
        here): each goes in locked by this node and straight to its pool while the pool has
        room (the hint), else unlocked for any node's acquisition."""
        ids, self._timers_locked = self._timers_locked, []
        store, me, cfg = self.db.store, self.name, self.cfg

        def move(now: float) -> list[tuple[int, float, bool]]:
            out = []
            room = cfg.queue_size - len(self.queue) + len(self.idle)
            for rid in ids:
                row = store.get(rid)
                if row is None or row.table != TIMER or row.locked_by != me:
                    continue
                store.move(rid, JOB)
                hinted = cfg.hint and room > 0
                if hinted:
                    room -= 1
                    store.lock([rid], me, now, now + cfg.lock_time, guard=False)
                out.append((rid, row.due, hinted))
            return out

        try:
            moved, _ = yield from self.db.run(me, move, wakes=True, rows=ids)
        except StatementFailed:
            self._failed("move timers")
            return
        now, trace = self.env.now, self.trace
        for rid, due, hinted in moved:
            trace.add(now, K["timer_due"], self.code, rid, x=due)
            if hinted:
                self.hint(store.rows[rid])

    def _take_global_lock(self, table: str) -> Generator[Any, Any, bool]:
        """Flowable's global acquire lock (a row of ACT_GE_PROPERTY, updated optimistically;
        one for async jobs, one for timers): poll every ``global_lock_poll`` for up to
        ``global_lock_wait``; a holder older than ``global_lock_force`` (a crashed node) is
        overridden. True if this node holds it."""
        env, db, cfg, me = self.env, self.db, self.cfg, self.name
        locks, name = db.global_locks, "acquireTimerJobsLock" if table == TIMER \
            else "acquireAsyncJobsLock"
        give_up = env.now + cfg.global_lock_wait

        def take(now: float) -> bool:
            holder = locks.get(name)
            if holder is None or holder[0] == me or now - holder[1] >= cfg.global_lock_force:
                locks[name] = (me, now)
                return True
            return False

        while True:
            got, _ = yield from db.run(me, take)
            if got:
                return True
            if env.now + cfg.global_lock_poll > give_up:
                return False
            yield env.timeout(cfg.global_lock_poll)

    def _release_global_lock(self, table: str) -> Generator[Any, Any, None]:
        locks, me = self.db.global_locks, self.name
        name = "acquireTimerJobsLock" if table == TIMER else "acquireAsyncJobsLock"

        def release(now: float) -> None:
            if locks.get(name, (None,))[0] == me:
                del locks[name]

        yield from self.db.run(me, release)

    def _acquisition_loop(self, table: str = JOB) -> Generator[Any, Any, None]:
        env, cfg = self.env, self.cfg
        if self.start_at > 0:
            yield env.timeout(self.start_at)
        if cfg.wakeup == "ticks":
            # each loop waits for its own tick: with a timer table there are two loops, and
            # one shared event left the job table's loop waiting forever (and the timer
            # loop claiming job rows, so that no timer ever came due)
            while True:
                self._ticks[table] = ev = env.event()
                yield ev
                if self._paused is not None:
                    yield self._paused
                while table == TIMER or self._free() > 0:
                    asked, got = yield from self._round(table)
                    if got < asked:
                        break
            return
        timers = table == TIMER
        notify = cfg.wakeup == "notify" and not timers
        period = cfg.poll_interval
        store, db, end = self.db.store, self.db, self.world.scenario.end
        step = period + (0.0 if db.instant else db.latency.mean)
        instant, acquire, me, queue = self._instant, self._acquire, self.name, self.queue
        batch, size, lock_time, trace_attempt = (cfg.batch_size, cfg.queue_size,
                                                 cfg.lock_time, self._trace_attempt)
        emit, k_acquire, code = self.trace.emit, K["acquire"], self.code
        strategy_text = self._timer_text if timers else self._strategy_text
        global_lock = cfg.global_lock
        watch_rejects, rejected = cfg.on_queue_full == "unacquire", 0
        sized = bool(size) and not timers
        if timers:
            instant = None  # the timer table goes through the statement path
        while True:
            if self._paused is not None:
                yield self._paused
            if sized:
                free = size - len(queue)
            else:
                free = batch if timers else len(self.idle) - len(queue)
            if free <= 0:
                if notify or not size:  # no local queue: fetch again when a thread frees
                    yield self._slot_freed()
                else:
                    yield env.timeout(cfg.queue_full_wait)
                continue
            asked = batch if batch < free else free
            self.polls += 1
            if watch_rejects:
                rejected = self.rejected
            if instant is not None:  # the hot path: one statement, applied at once
                got = len(instant(db, me, asked, lock_time))
                emit((env.now, k_acquire, code, -1, 0, asked, got, 0, 0.0, strategy_text))
            else:
                try:
                    if global_lock and not (yield from self._take_global_lock(table)):
                        yield env.timeout(period)  # the lock was busy all along: next cycle
                        continue
                    att = yield from acquire(db, me, asked, lock_time, table=table)
                    if global_lock:
                        yield from self._release_global_lock(table)
                except StatementFailed:
                    self._failed("acquire")
                    yield env.timeout(period)
                    continue
                trace_attempt(att, strategy_text)
                if timers and self._timers_locked:
                    yield from self._move_timers()
                if att.errors:
                    # 40001 / SQLITE_BUSY: retry at once (after others); Flowable's
                    # optimistic-lock rollback: wait the acquire wait
                    yield env.timeout(cfg.error_wait)
                    continue
                got = len(att.locked)
                if global_lock:  # "to let other nodes have the ability to fill the queue"
                    yield env.timeout(cfg.global_lock_poll)
            if watch_rejects and self.rejected > rejected:  # refused: Flowable waits 5 s
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
            self._asleep[table] = (next_poll, step)
            target = math.inf
            if soonest is not None:
                target = next_poll + math.floor((soonest - next_poll) / step) * step
            if target >= end:
                target = math.inf
            replan = None
            if self._pausable:
                self._replan[table] = replan = env.event()
                yield self._first((changed, replan),
                                  None if target == math.inf else target - now)
            elif target == math.inf:
                yield changed  # the common idle wait: one event, no helper
            else:
                yield self._first((changed,), target - now)
            del self._asleep[table]
            if replan is not None:
                del self._replan[table]
            now = env.now
            if replan is not None and replan.triggered:
                # Paused while asleep: the polls before the pause found nothing; a poll that
                # fell due during the pause happens when it ends, and the grid restarts there.
                paused_at = now
                if self._paused is not None:
                    yield self._paused
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
                self.polls += skipped
                self.polls_skipped += skipped
                self.trace.add(env.now, K["polls_skipped"], self.code, a=skipped)

    def finish(self, end: float) -> None:
        """At the end of the run: count the polls an idle node would have made since it
        fell asleep (the sleep itself never finishes)."""
        for table, (next_poll, period) in sorted(self._asleep.items()):
            if end >= next_poll:
                skipped = math.floor((end - next_poll) / period) + 1
                self.polls += skipped
                self.polls_skipped += skipped
                self.trace.add(end, K["polls_skipped"], self.code, a=skipped)
        self._asleep.clear()

    # --- the reset thread -------------------------------------------------------------------

    def _reset_expired(self) -> Generator[Any, Any, None]:
        """Every ``reset_interval``: find rows whose lock expired, a page of ``reset_page``
        at a time, and unlock them, until a page comes back empty (Flowable's
        ResetExpiredJobsRunnable; retries untouched). When executions are counted at fetch
        (Oban's Lifeline rescue), a row with no attempts left is discarded instead."""
        env, cfg, store, me, trace = self.env, self.cfg, self.db.store, self.name, self.trace
        reason = trace.text("lock expired (reset)")
        while True:
            yield env.timeout(cfg.reset_interval)
            if self._paused is not None:
                yield self._paused
            while True:
                try:
                    ids, _ = yield from self.db.run(
                        me, lambda now: store.expired(now, cfg.reset_page))
                    if not ids:
                        break

                    def reset(now: float, ids: list[int] = ids) -> list[tuple[int, bool]]:
                        out = []
                        for rid in ids:
                            row = store.get(rid)
                            if row is None or row.locked_by is None or row.lock_until >= now:
                                continue  # done, or reset by another node meanwhile
                            if store.count_at_fetch and row.retries <= 0:
                                store.move(rid, DEADLETTER, error="lock expired, no attempts "
                                                                  "left")
                                out.append((rid, True))
                            else:
                                store.unlock(rid)
                                out.append((rid, False))
                        return out

                    done, _ = yield from self.db.run(me, reset, wakes=True, rows=ids)
                except StatementFailed:
                    self._failed("reset expired")
                    break
                now = env.now
                for rid, discarded in done:
                    if discarded:
                        trace.add(now, K["dead_lettered"], self.code, rid, a=0,
                                  text=trace.text("lock expired, no attempts left"))
                        self.world.finished(rid)
                        self.world.job_done()
                    else:
                        trace.add(now, K["unlocked"], self.code, rid, text=reason)


    def _first(self, events: tuple[Any, ...], delay: float | None) -> Any:
        """An event that fires when the first of ``events`` does, or when ``delay`` (if not
        None) has passed (a lighter ``any_of`` for the idle loop)."""
        env = self.env
        wake = env.event()

        def fire(_: Any) -> None:
            if not wake.triggered:
                wake.succeed()

        for event in events:
            event.callbacks.append(fire)
        if delay is not None:
            env.timeout(delay).callbacks.append(fire)
        return wake

    def _slot_freed(self) -> Any:
        if self._slot is None:
            self._slot = self.env.event()
        return self._slot

    # --- execution ------------------------------------------------------------------------

    def _worker(self, thread: int) -> Generator[Any, Any, None]:
        """A worker thread: take the next job from the local queue and execute it.

        This loop is the hottest code of a run, so it is written out in one piece: the
        handler's run, its side effect, the end, then the completion (a DELETE) or the
        failure statement.
        """
        env, queue, idle, world, trace = self.env, self.queue, self.idle, self.world, self.trace
        emit, code, running, executions = trace.emit, self.code, self.running, world.executions
        handlers, db, store, me = world.handlers, self.db, world.store, self.name
        k_start, k_side, k_end, k_done = (K["exec_start"], K["side_effect"], K["exec_end"],
                                          K["completed"])
        owner = self.name if self.cfg.complete_guard == "owner" else None
        # Counted at fetch (Oban, River), the completion is guarded by the fetch it belongs
        # to: ``WHERE state = 'executing' AND attempt = ?`` (this node's lock, and no claim
        # of the row since). A stale execution's write to a row that a rescue or an
        # operator's move/retry released, or that was fetched again since, is a no-op.
        by_fetch = store.count_at_fetch
        inf, nan = math.inf, math.nan
        hstreams, says = world._hstreams, world._says
        track = self.track_running

        def complete(now: float, jid: int, fetched: int) -> tuple[bool, int]:
            """DELETE; and why nothing was deleted, or whose lock it overrode (see the
            ``completed`` event: 0 none / row gone, 1 another node's lock, 2 not ours)."""
            row = store.get(jid)
            if row is None:
                return False, 0
            why = 1 if row.locked_by is not None and row.locked_by != me else 0
            deleted = store.delete(jid, me, fetched) if by_fetch else store.delete(jid, owner)
            if not deleted and why == 0:
                why = 2  # still there, but unlocked (rescheduled) or moved: not ours
            if deleted and row.queue is not None:
                self._next_in_queue(row.queue, now)
            return deleted, why

        while True:
            if queue:
                jid, hname, kind, fetched = queue.popleft()
                slot, self._slot = self._slot, None
                if slot is not None:
                    slot.succeed()
            else:
                ev = env.event()
                idle.append(ev)
                slot, self._slot = self._slot, None
                if slot is not None:  # an idle thread is room too (no local queue)
                    slot.succeed()
                jid, hname, kind, fetched = yield ev
            if self._paused is not None:  # a stalled node starts nothing until it resumes
                yield self._paused
            attempt = executions.get(jid, 0) + 1
            executions[jid] = attempt
            emit((env.now, k_start, code, jid, attempt, thread, 0, 0, nan, -1))
            world.in_flight += 1
            if track:
                running[jid] = running.get(jid, 0) + 1
            stream = hstreams.get(hname) or world.handler_stream(hname)
            duration, ok, error, side_at = handlers[hname].draw(attempt, stream)
            if duration == inf:
                yield env.event()  # hangs forever: the thread is gone
            if ok:
                # The side effect happens at ``side_at`` into the run. At the very end it is
                # told by the exec_end event itself (b=1, text = what the handler says).
                # A pause stalls the thread: what wakes during it goes on when it ends.
                if side_at < duration:
                    if side_at > 0:
                        yield env.timeout(side_at)
                        if self._paused is not None:
                            yield self._paused
                    emit((env.now, k_side, code, jid, attempt, 0, 0, 0, nan, says[hname]))
                    yield env.timeout(duration - side_at)
                    if self._paused is not None:
                        yield self._paused
                    emit((env.now, k_end, code, jid, attempt, 1, 0, 0, nan, -1))
                else:
                    if duration > 0:
                        yield env.timeout(duration)
                        if self._paused is not None:
                            yield self._paused
                    emit((env.now, k_end, code, jid, attempt, 1, 1, 0, nan, says[hname]))
            else:
                if duration > 0:
                    yield env.timeout(duration)
                    if self._paused is not None:
                        yield self._paused
                emit((env.now, k_end, code, jid, attempt, 0, 0, 0, nan, trace.text(error)))
            # The execution counts as running (for a crash, a heartbeat and the drain) until
            # its completion or failure statement has returned.
            if not ok:
                yield from self._fail(jid, hname, attempt, error or "", fetched)
            elif db.instant:
                db.statements += 1
                deleted, other = complete(env.now, jid, fetched)
                emit((env.now, k_done, code, jid, attempt, int(deleted), int(other), 0, nan,
                      -1))
                if deleted:
                    world.live -= 1
                    if world._waiters:
                        world.finished(jid)
            else:
                try:
                    (deleted, other), _ = yield from db.run(
                        me, lambda now: complete(now, jid, fetched), rows=(jid,))
                except StatementFailed:
                    self._failed("complete", jid, attempt)
                else:
                    emit((env.now, k_done, code, jid, attempt, int(deleted), int(other), 0,
                          nan, -1))
                    if deleted:
                        world.live -= 1
                        if world._waiters:
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

    def _next_in_queue(self, queue: str, now: float) -> None:
        """A task of a serial queue ended here: this node takes the queue's next waiting
        task in the same statement, as failsafe-executor's queue poller runs them one after
        another; if none is set aside, the queue is free for any claim (wake idle nodes)."""
        db = self.db
        if not db.locked(self.name, db.store.hand_over(queue, self.name, now,
                                                       now + self.cfg.lock_time)):
            db.touch()

    def _fail(self, jid: int, hname: str, attempt: int, error: str,
              fetched: int = 0) -> Generator[Any, Any, None]:
        world, store, me = self.world, self.world.store, self.name
        owner = me if self.cfg.complete_guard == "owner" else None
        policy = world.scenario.retry_for(me, hname)
        stream = world.jitter_stream(me)

        terminal = {"incident": INCIDENT, "failed": FAILED}.get(self.cfg.exhausted, DEADLETTER)
        code_of = {"dead_letter": 0, "incident": 1, "failed": 2}[self.cfg.exhausted]
        # Flowable: a failed job waits for its retry in the timer table
        table = TIMER if self.timer_table else JOB
        # counted at fetch (Oban): the claim already took this execution off the retries
        counted = 1 if store.count_at_fetch else 0

        def apply(now: float) -> tuple[str, int, float]:
            row = store.get(jid)
            if row is None or row.table not in (JOB, TIMER) or (
                    owner and row.locked_by != owner) or (
                    counted and (row.locked_by != me or row.fetched != fetched)):
                # e.g. withdrawn: the server answers 404. Counted at fetch, the failure
                # belongs to the fetch that counted it (Oban's error_job: ``WHERE state =
                # 'executing'``, with the job's attempt): once a rescue or an operator's
                # move/retry has released the row, or a claim has fetched it again,
                # ``row.retries`` is no longer what this fetch left, and a stale failure must
                # not reschedule (or dead-letter) the row from it
                return "stale", 0, 0.0
            d = policy.on_failure(row.retries + counted, row.failures + 1, stream)
            if d.dead:
                store.move(jid, terminal, error=error)
                out = "dead", 0, 0.0
            else:
                store.reschedule(jid, now + d.delay, d.left, error, table=table)
                out = "retry", d.left, now + d.delay
            if row.queue is not None:  # a failed task does not block its queue
                self._next_in_queue(row.queue, now)
            return out

        try:
            (what, left, due), _ = yield from self.db.run(me, apply, wakes=True, rows=(jid,))
        except StatementFailed:
            self._failed("fail", jid, attempt)
            return
        trace, now, text = self.trace, self.env.now, self.trace.text(error)
        if what == "retry":
            trace.add(now, K["retry_scheduled"], self.code, jid, attempt, a=left, x=due,
                      text=text)
        elif what == "dead":
            trace.add(now, K["dead_lettered"], self.code, jid, attempt, a=code_of, text=text)
            world.finished(jid)
            world.job_done()
        else:
            trace.add(now, K["stale_write"], self.code, jid, attempt, text=trace.text("fail"))

    # --- heartbeat ------------------------------------------------------------------------

    def _heartbeat(self) -> Generator[Any, Any, None]:
        env, cfg, store, me = self.env, self.cfg, self.world.store, self.name
        while True:
            yield env.timeout(cfg.heartbeat)
            if self._paused is not None:
                yield self._paused
            held = set(self.running)
            if cfg.heartbeat_scope == "held":  # also the jobs waiting in the local queue
                held.update(item[0] for item in self.queue)
            if not held:
                continue
            ids = sorted(held)
            try:
                done, _ = yield from self.db.run(
                    me, lambda now: (store.extend(ids, me, now + cfg.lock_time),
                                     now + cfg.lock_time), rows=ids)
            except StatementFailed:
                self._failed("heartbeat")
                continue
            extended, until = done
            for jid in extended:
                self.trace.add(env.now, K["lock_extended"], self.code, jid, a=1, x=until)
