"""The database as SimPy sees it: connections, statement latency, and commit instants.

A statement is issued by a node, waits for a connection from the pool (if the pool is
bounded), takes a latency drawn from the scenario's latency model — from the node's own
stream ``db/latency/<node>``, so one node's statements never shift another's draws — and is
applied to the store at its end, in one instant.

That is the ``atomic`` dialect: statements are applied one at a time, in the order they
complete; simultaneous ones in the order SimPy scheduled them (FIFO). A conditional UPDATE can
therefore never be lost or doubled, but a *pair* of statements (SELECT, then UPDATE) leaves a
window in which another node's statement commits.

Zero latency with an unbounded pool costs no SimPy event: the statement applies at once.

Faults: ``slow(factor)`` multiplies latencies for a window; ``cut(node, timeout)`` makes a
node's statements fail after ``timeout`` (a network partition), until ``heal(node)``.

The database also tells waiting nodes when something changed: ``inserted()`` fires on the
next insert (LISTEN/NOTIFY), ``changed()`` — a ``Signal``, called at the write itself —
on the next write that may make a row eligible sooner (an insert, an unlock, a reschedule);
idle nodes use it to skip polls that could not find anything.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from heapq import heappush
from typing import Any, TypeVar

import simpy
from simpy.core import NORMAL

from ..base.dists import ZERO, Distribution
from ..base.rng import Streams
from .clocks import NodeClock
from .cpu import Cpu, Timing
from .store import Store

T = TypeVar("T")


_new_event = object.__new__


def delay(env: simpy.Environment, seconds: float) -> simpy.Event:
    """``env.timeout(seconds)`` for the hot paths (``seconds`` ≥ 0): the same event at the
    same place in the schedule — ``(now + seconds, NORMAL, its number)`` — made without
    ``Timeout``'s two Python calls."""
    ev = _new_event(simpy.Event)
    ev.env, ev.callbacks, ev._value, ev._ok = env, [], None, True
    heappush(env._queue, (env._now + seconds, NORMAL,  # type: ignore[attr-defined]
                          next(env._eid), ev))  # type: ignore[attr-defined]
    return ev


class Signal:
    """A one-shot notice (``changed()``): its callbacks are called, in order, at the write
    itself, with the signal (``value``: whether the write was an insert; ``ready``: whether
    it was the insert of a job-table row eligible at once). No SimPy event is scheduled for
    it: what a callback does — aim a sleep, schedule a poll — happens at the instant of the
    write in any case."""

    __slots__ = ("callbacks", "value", "ready")

    def __init__(self) -> None:
        self.callbacks: list[Callable[[Signal], None]] = []
        self.value = False
        self.ready = False


class StatementFailed(Exception):
    """A statement that never reached the database (its node was cut off)."""

DIALECTS = ("atomic", "postgres", "sqlite")


class Database:
    def __init__(self, env: simpy.Environment, store: Store, streams: Streams,
                 latency: Distribution = ZERO, connections: int | None = None,
                 dialect: str = "atomic", faulty: bool = False,
                 isolation: str = "read_committed", sqlite_begin: str = "autocommit",
                 cpu: Cpu | None = None, busy_sleep: bool = False):
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {DIALECTS} (got {dialect!r})")
        self.env = env
        self.store = store
        self.dialect = dialect
        self.latency = latency
        self._zero = latency.is_zero
        self.pool = simpy.Resource(env, capacity=connections) if connections else None
        #: statements apply at the instant they are issued (zero latency, unbounded pool, no
        #: database faults); hot callers may then apply them directly instead of ``run``.
        self.instant = self._zero and self.pool is None and not faulty and dialect == "atomic"
        self.isolation = isolation
        self.sqlite_begin = sqlite_begin
        #: PostgreSQL: row id -> the open transaction holding its row lock
        self.row_locks: dict[int, Any] = {}
        #: SQLite: the database-wide write lock
        self.write_lock = simpy.Resource(env, capacity=1) if dialect == "sqlite" else None
        self.commits = 0
        #: cluster-wide locks (Flowable's ACT_GE_PROPERTY rows): name -> (holder, since)
        self.global_locks: dict[str, tuple[str, float]] = {}
        #: node name -> what it does with rows its claims lock (trace, hand to threads)
        self.lock_listeners: dict[str, Callable[[list], None]] = {}
        self.factor = 1.0
        self._cut: dict[str, float] = {}
        self._streams = streams
        self._lat: dict[str, Any] = {}
        self.statements = 0
        self._inserted: simpy.Event | None = None
        self._changed: Signal | None = None
        #: the machine's cores (``cpu.py``), and each node's claim statements as measured:
        #: with either, the claim statements go through ``measured.think``/``serve``
        self.cpu = cpu
        self.timing: dict[str, Timing] = {}
        self.timed = cpu is not None
        #: SQLite: a held write lock is waited for in the busy handler's sleeps, not a queue
        self.busy_sleep = busy_sleep
        self._think: dict[str, Any] = {}
        self._tails: dict[str, list[Any]] = {}  # node -> [server CPU owed, its wake-up]
        self._owed: dict[str, list[float]] = {}  # node -> [client CPU, idle] owed to its end
        #: node -> its clock, for the nodes whose claims use a clock that is not the true one
        #: (``clocks``); empty in a run without skew
        self.clocks: dict[str, NodeClock] = {}

    def now_of(self, node: str, t: float) -> float:
        """The ``now`` that ``node``'s statements compare and write at the true time ``t``:
        its own clock's reading, or ``t`` (the server's clock, or a node without skew)."""
        c = self.clocks.get(node)
        return t if c is None else c.read(t)

    def run(self, node: str, apply: Callable[[float], T], wakes: bool = False,
            rows: tuple[int, ...] | list[int] = ()) -> Generator[simpy.Event, Any, tuple[T, float]]:
        """Issue one statement for ``node``; ``apply(now)`` runs at its commit instant.

        Returns ``(apply's result, latency)``. ``wakes`` marks a write that may make a row
        eligible sooner, which wakes idle nodes. On PostgreSQL the statement first waits for
        any open transaction holding a row lock on ``rows`` (the rows it writes), then applies
        to their newest versions. A node cut off from the database waits the
        partition's timeout and gets ``StatementFailed``; a node that dies while its statement
        is in flight (an interrupt) gives its connection back and nothing is applied.
        """
        self.statements += 1
        env = self.env
        if self.instant:
            result = apply(self.now_of(node, env.now) if self.clocks else env.now)
            if wakes:
                self.touch()
            return result, 0.0
        yield from self.refuse_if_cut(node)
        req = wreq = None
        applied = False
        try:
            if self.pool is not None:
                req = self.pool.request()
                yield req
            if self.write_lock is not None:  # SQLite: every write takes the write lock
                wreq = self.write_lock.request()
                yield wreq
            lat = yield from self.transit(node)
            # Lock:transactionid, then the newest version. The statement applies in one
            # instant, when none of its rows is held: while it waits for one row's holder,
            # another transaction may take a row it already passed, so all are looked at
            # again after every wait (else a heartbeat could extend a row that a claim's
            # open transaction has just selected as expired, and the claim then takes it
            # from the node that still runs it).
            while self.row_locks:
                holder = next((h for rid in rows
                               if (h := self.row_locks.get(rid)) is not None), None)
                if holder is None:
                    break
                yield holder.end
            result = apply(self.now_of(node, env.now) if self.clocks else env.now)
            applied = True
        finally:
            if wreq is not None:
                if wreq.triggered:
                    self.write_lock.release(wreq)
                    if applied:
                        self.commits += 1
                else:
                    wreq.cancel()
            if req is not None:
                if req.triggered:
                    self.pool.release(req)
                else:  # interrupted while still waiting for a connection
                    req.cancel()
        if wakes:
            self.touch()
        return result, lat

    def refuse_if_cut(self, node: str) -> Generator[simpy.Event, Any, None]:
        """A node cut off from the database waits its partition's timeout, then fails."""
        cut = self._cut.get(node)
        if cut is not None:
            yield self.env.timeout(cut)
            raise StatementFailed(node)

    def transit(self, node: str) -> Generator[simpy.Event, Any, float]:
        """A statement on its way: its latency passes; if the node was cut off meanwhile the
        statement never arrives. Returns the latency."""
        lat = self.sample_latency(node)
        if lat > 0:
            yield self.env.timeout(lat)
        if node in self._cut:
            raise StatementFailed(node)  # cut off while the statement was in flight
        return lat

    def locked(self, node: str, items: list) -> list:
        """Tell ``node`` what one of its claim statements just locked, at its commit instant
        (a claim of several statements reports each one as it commits), and pass it on."""
        listener = self.lock_listeners.get(node)
        if listener is not None and items:
            listener(items)
        return items

    def sample_latency(self, node: str) -> float:
        """One statement latency for ``node`` (its own stream; the slow-DB factor applied)."""
        if self._zero:
            return 0.0
        stream = self._lat.get(node)
        if stream is None:
            stream = self._lat[node] = self._streams.stream(f"db/latency/{node}")
        return self.latency.sample(stream) * self.factor

    # --- faults ----------------------------------------------------------------------------

    def slow(self, factor: float) -> None:
        """Multiply every statement latency drawn from now on by ``factor``."""
        self.factor = factor

    def cut(self, node: str, timeout: float) -> None:
        """Cut ``node`` off: its statements fail after ``timeout``."""
        self._cut[node] = timeout

    def heal(self, node: str) -> None:
        self._cut.pop(node, None)

    # --- notifications ---------------------------------------------------------------------

    def inserted(self) -> simpy.Event:
        """An event that fires at the next insert (LISTEN/NOTIFY)."""
        if self._inserted is None:
            self._inserted = self.env.event()
        return self._inserted

    def changed(self) -> Signal:
        """A signal given at the next write that may make a row eligible sooner."""
        if self._changed is None:
            self._changed = Signal()
        return self._changed

    def touch(self, insert: bool = False, ready: bool = False) -> None:
        """Give ``changed()`` (its value says whether the change was an insert, ``ready``
        whether of a job-table row eligible at once) and, for an insert, fire
        ``inserted()``."""
        sig = self._changed
        if sig is not None:
            self._changed = None  # a callback that asks again registers on a new one
            sig.value, sig.ready = insert, ready
            for callback in sig.callbacks:
                callback(sig)
        if insert:
            ev = self._inserted
            if ev is not None:
                self._inserted = None
                ev.succeed()
