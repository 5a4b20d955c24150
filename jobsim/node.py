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
- an optional **heartbeat** that extends the locks of the jobs it is running.

Everything a node does is written to the trace.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from .claims import ACQUIRE
from .config import ExecutorConfig
from .store import DEADLETTER
from .trace import K

if TYPE_CHECKING:
    from .world import World


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
        self._acquire = ACQUIRE[cfg.acquisition]
        self._strategy_text = world.trace.text(cfg.acquisition)
        self.queue: deque[tuple[int, str, str]] = deque()
        self.idle: deque[Any] = deque()
        self.running: dict[int, int] = {}
        self._tick = None
        self._slot = None
        self.polls = 0
        self.polls_skipped = 0

    # --- life -----------------------------------------------------------------------------

    def start(self) -> None:
        env = self.env
        env.process(self._acquisition_loop())
        for i in range(self.cfg.threads):
            env.process(self._worker(i))
        if self.cfg.heartbeat:
            env.process(self._heartbeat())

    def tick(self) -> None:
        """Run one acquisition round now (the fake clock)."""
        ev, self._tick = self._tick, None
        if ev is not None:
            ev.succeed()

    # --- acquisition ----------------------------------------------------------------------

    def _free(self) -> int:
        return self.cfg.queue_size - len(self.queue)

    def _round(self) -> Generator[Any, Any, tuple[int, int]]:
        """One acquisition attempt; returns (asked, got)."""
        n = min(self.cfg.batch_size, self._free())
        self.polls += 1
        att = yield from self._acquire(self.db, self.name, n, self.cfg.lock_time)
        world, trace, env = self.world, self.trace, self.env
        now = env.now
        trace.add(now, K["acquire"], self.code, a=att.asked, b=len(att.locked), c=att.lost,
                  x=att.latency, text=self._strategy_text)
        world.lost_races += att.lost
        idle, queue = self.idle, self.queue
        for lk in att.locked:
            prev = -1 if lk.previous_owner is None else trace.node(lk.previous_owner)
            trace.add(now, K["locked"], self.code, lk.id, a=prev, b=int(lk.previous_valid),
                      x=lk.lock_until)
            item = (lk.id, lk.handler, lk.kind)
            if idle:
                idle.popleft().succeed(item)
            else:
                queue.append(item)
        return att.asked, len(att.locked)

    def _acquisition_loop(self) -> Generator[Any, Any, None]:
        env, cfg = self.env, self.cfg
        if self.start_at > 0:
            yield env.timeout(self.start_at)
        if cfg.wakeup == "ticks":
            while True:
                self._tick = env.event()
                yield self._tick
                while self._free() > 0:
                    asked, got = yield from self._round()
                    if got < asked:
                        break
            return
        notify = cfg.wakeup == "notify"
        period = cfg.poll_interval
        while True:
            if self._free() <= 0:
                if notify:
                    yield self._slot_freed()
                else:
                    yield env.timeout(cfg.queue_full_wait)
                continue
            asked, got = yield from self._round()
            if got == asked:
                continue
            now = env.now
            next_poll = now + period
            if got == 0:
                soonest = self.db.store.next_eligible(now)
                if soonest is None or soonest > next_poll:
                    yield from self._idle(next_poll, soonest, period, notify)
                    continue
            if notify:
                yield env.any_of([env.timeout(period), self.db.inserted()])
            else:
                yield env.timeout(period)

    def _idle(self, next_poll: float, soonest: float | None, period: float,
              notify: bool) -> Generator[Any, Any, None]:
        """Sleep through polls that cannot find anything; count them."""
        env = self.env
        if soonest is None:
            target = math.inf
        else:
            target = next_poll + math.floor((soonest - next_poll) / period) * period
        inserted = self.db.inserted() if notify else None
        waits = [self.db.changed()]
        if inserted is not None:
            waits.append(inserted)
        if not math.isinf(target):
            waits.append(env.timeout(target - env.now))
        yield env.any_of(waits)
        now = env.now
        if now >= target:
            skipped = round((target - next_poll) / period)
        else:
            # Woken by a change: an insert wakes a notify node at once; otherwise resume
            # the poll schedule at its next tick.
            k = max(0, math.ceil((now - next_poll) / period))
            skipped = k
            if not (inserted is not None and inserted.triggered):
                resume = next_poll + k * period
                if resume > now:
                    yield env.timeout(resume - now)
        if skipped > 0:
            self.polls += skipped
            self.polls_skipped += skipped
            self.trace.add(env.now, K["polls_skipped"], self.code, a=skipped)

    def _slot_freed(self) -> Any:
        if self._slot is None:
            self._slot = self.env.event()
        return self._slot

    # --- execution ------------------------------------------------------------------------

    def _worker(self, thread: int) -> Generator[Any, Any, None]:
        env, queue, idle = self.env, self.queue, self.idle
        while True:
            if queue:
                item = queue.popleft()
                slot, self._slot = self._slot, None
                if slot is not None:
                    slot.succeed()
            else:
                ev = env.event()
                idle.append(ev)
                item = yield ev
            yield from self._execute(item, thread)

    def _execute(self, item: tuple[int, str, str], thread: int) -> Generator[Any, Any, None]:
        jid, hname, kind = item
        world, env, trace, code = self.world, self.env, self.trace, self.code
        handler = world.handlers[hname]
        attempt = world.executions.get(jid, 0) + 1
        world.executions[jid] = attempt
        trace.add(env.now, K["exec_start"], code, jid, attempt, a=thread)
        self.running[jid] = self.running.get(jid, 0) + 1
        ex = handler.draw(attempt, world.handler_stream(hname))
        if math.isinf(ex.duration):
            yield env.event()  # hangs forever: the thread is gone
        if ex.side_effect_at is not None:
            if ex.side_effect_at > 0:
                yield env.timeout(ex.side_effect_at)
            trace.add(env.now, K["side_effect"], code, jid, attempt,
                      text=world.says_code(hname))
            rest = ex.duration - ex.side_effect_at
            if rest > 0:
                yield env.timeout(rest)
        elif ex.duration > 0:
            yield env.timeout(ex.duration)
        trace.add(env.now, K["exec_end"], code, jid, attempt, a=int(ex.ok),
                  text=trace.text(ex.error))
        left = self.running[jid] - 1
        if left:
            self.running[jid] = left
        else:
            del self.running[jid]
        if ex.ok:
            yield from self._complete(jid, attempt)
        else:
            yield from self._fail(jid, hname, attempt, ex.error or "")

    def _owner(self) -> str | None:
        return self.name if self.cfg.complete_guard == "owner" else None

    def _complete(self, jid: int, attempt: int) -> Generator[Any, Any, None]:
        store, owner, me = self.world.store, self._owner(), self.name

        def apply(now: float) -> tuple[bool, bool]:
            row = store.get(jid)
            other = row is not None and row.locked_by not in (None, me)
            return store.delete(jid, owner), other

        (deleted, other), _ = yield from self.db.run(me, apply)
        self.trace.add(self.env.now, K["completed"], self.code, jid, attempt, a=int(deleted),
                       b=int(other))
        if deleted:
            self.world.job_done()

    def _fail(self, jid: int, hname: str, attempt: int,
              error: str) -> Generator[Any, Any, None]:
        world, store, me, owner = self.world, self.world.store, self.name, self._owner()
        policy = world.scenario.retry_for(me, hname)
        stream = world.jitter_stream(me)

        def apply(now: float) -> tuple[str, int, float]:
            row = store.get(jid)
            if row is None or row.table == DEADLETTER or (owner and row.locked_by != owner):
                return "stale", 0, 0.0
            d = policy.on_failure(row.retries, row.failures + 1, stream)
            if d.dead:
                store.move(jid, DEADLETTER, error=error)
                return "dead", 0, 0.0
            store.reschedule(jid, now + d.delay, d.left, error)
            return "retry", d.left, now + d.delay

        (what, left, due), _ = yield from self.db.run(me, apply, wakes=True)
        trace, now, text = self.trace, self.env.now, self.trace.text(error)
        if what == "retry":
            trace.add(now, K["retry_scheduled"], self.code, jid, attempt, a=left, x=due,
                      text=text)
        elif what == "dead":
            trace.add(now, K["dead_lettered"], self.code, jid, attempt, text=text)
            world.job_done()
        else:
            trace.add(now, K["stale_write"], self.code, jid, attempt, text=trace.text("fail"))

    # --- heartbeat ------------------------------------------------------------------------

    def _heartbeat(self) -> Generator[Any, Any, None]:
        env, cfg, store, me = self.env, self.cfg, self.world.store, self.name
        while True:
            yield env.timeout(cfg.heartbeat)
            if not self.running:
                continue
            ids = sorted(self.running)
            done, _ = yield from self.db.run(
                me, lambda now: (store.extend(ids, me, now + cfg.lock_time), now + cfg.lock_time))
            extended, until = done
            for jid in extended:
                self.trace.add(env.now, K["lock_extended"], self.code, jid, a=1, x=until)
