"""The machine's cores, and a database as measured (``db.cpu``, ``db.profile``).

**The CPU model: a run queue with a time slice.** ``cores`` cores serve every process that
needs one: each node's client (its time between statements, and a statement's own work on
SQLite, which runs inside the client's process) and, on PostgreSQL, each connection's server
process (the statement's work there). A process that needs the CPU and holds no core waits
in one FIFO run queue. Once it has a core it keeps it across its next bursts, as a process
does that never blocks, until either it blocks — it waits for anything that is not CPU: the
server's answer, a sleep in SQLite's busy handler, a lock, a connection, a thread, its node's
sleep between polls — or it has run ``quantum`` seconds while others wait; then it goes to
the back of the queue. A slice that ends inside a burst preempts it there: a process
preempted inside a statement keeps what it holds — SQLite's write lock, PostgreSQL's row
locks — until it runs again, as a real one does.

Why not processor sharing: with processor sharing eight processes on two cores would each
run at a quarter speed, all at once, and their statements would interleave at every
instant. Linux gives each runnable process the whole core for a slice instead: one worker
runs many claims back to back while the others, frozen wherever they were, wait — which is
what decides how often two workers read the same rows.

**A measured database (``Timing``).** Per node: each statement kind's service time
(``select``, ``update``, and ``commit`` where a transaction commits on its own) plus, for a
statement that scans the table in its claim order, a time per locked row it passes — the
claimed rows sit at the head of that order, so a claim's scan grows with them (counted as
the rows of the job table holding a lock, valid or expired: ``Store.held``) — the client's
time before a statement — ``between_attempts`` before an attempt's first, ``between_statements``
before the others — and the share of a statement's time that is the client's own CPU
(``client_cpu``; on PostgreSQL the rest is the server's, on SQLite waiting for the disk)
and, on PostgreSQL, the share of the server's part spent on a core (``unchanged_cpu`` for a
statement's way there and back, ``server_cpu`` for its own work; the rest is waiting with
no core: a process waking up, the sockets).
``jobsim race --calibrate`` measures them.

**A busy machine hands over faster.** A process woken on an idle core runs slower than one
that takes a core another has just left: a lone PostgreSQL worker's single-row UPDATE took
190 µs, two workers' 101 µs. A one-worker calibration measures the idle machine; the
profile's ``machine.handover`` is what each hand-over between client and server (two per
statement) saves when the other cores are busy, measured with no-op UPDATEs alone and with
one prober per core. A statement's way there and its way back are that much shorter, in
proportion to how busy the other cores are as it starts (``busy_share``).

Only the claim statements are timed this way; every other statement (completion, heartbeat,
reset…) keeps the database's ``latency``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from heapq import heappush
from functools import cached_property
from typing import Any

import simpy

from ..base.dists import Distribution

#: a priority after SimPy's NORMAL (1): an event that fires once all else at its instant has
_AFTER_ALL = 2

#: SQLite's busy handler with ``usleep`` (``sqliteDefaultBusyCallback``): the sleeps between
#: tries for a lock that is held, in seconds; the last repeats until the busy timeout
BUSY_SLEEPS = (0.001, 0.002, 0.005, 0.010, 0.015, 0.020, 0.025, 0.025, 0.025, 0.050, 0.050,
               0.100)


@dataclass(frozen=True)
class Timing:
    """One node's claim statements as measured (see the module's note)."""

    select: Distribution
    update: Distribution
    between_attempts: Distribution
    between_statements: Distribution
    commit: Distribution | None = None
    client_cpu: float = 1.0
    #: seconds a statement takes per locked row its index scan passes (``store.held``)
    select_per_row: float = 0.0
    update_per_row: float = 0.0
    #: an UPDATE that changes no row (a lost race, a guarded loser): nothing to write
    update_unchanged: Distribution | None = None
    #: PostgreSQL: CPU per statement after its answer, beside the client (``measured.py``)
    server_tail: float = 0.0
    #: PostgreSQL: the share of a statement's server time (its time less the client's CPU)
    #: spent on a core; the rest is waiting with no core (a process waking, the sockets)
    server_cpu: float = 1.0
    #: PostgreSQL: ``server_cpu`` of a statement's way there and back (``update_unchanged``)
    unchanged_cpu: float = 1.0

    @cached_property
    def select_growth(self) -> float:
        """How a SELECT's time grows per locked row, as a share of its mean at none: a
        statement's draw is scaled by ``1 + growth × rows`` (its spread grows with it), so
        that its mean is ``mean + select_per_row × rows``. A statement whose mean is 0 has
        no share to scale: its per-row time is added as it is (``per_row``)."""
        return _growth(self.select_per_row, self.select.mean)

    @cached_property
    def update_growth(self) -> float:
        return _growth(self.update_per_row, self.update.mean)


def _growth(per_row: float, mean: float) -> float:
    return per_row / mean if per_row and mean > 0 else 0.0


class Cpu:
    """``cores`` cores shared through one run queue (see the module's note). A core is held
    by a SimPy process (a node's acquisition loop, its timer loop, a server's background),
    named ``who`` for the accounts of who ran and who waited how long (``busy``,
    ``waited``). A process that holds a core and, once everything at the current instant
    has happened, is not running a burst, is waiting for something else — a thread, a lock,
    a sleep, an answer — and its core is freed then (``_settled``): no wait anywhere can
    keep a core from the others."""

    __slots__ = ("env", "cores", "quantum", "handover", "held", "running", "busy", "waited")

    def __init__(self, env: simpy.Environment, cores: int, quantum: float,
                 handover: float = 0.0):
        self.env = env
        self.cores = simpy.Resource(env, capacity=cores)
        self.quantum = quantum
        self.handover = handover
        #: process -> [its core's request, time run in this slice, its name]
        self.held: dict[Any, list[Any]] = {}
        self.running: set[Any] = set()  # processes inside a burst's time
        self.busy: dict[str, float] = {}
        self.waited: dict[str, float] = {}

    def busy_share(self) -> float:
        """How busy the other cores are now: the processes inside a burst over the cores
        but one (1 on a single core whenever one runs)."""
        others = self.cores.capacity - 1
        return min(1.0, len(self.running) / others) if others > 0 else \
            float(bool(self.running))

    def burst(self, who: str, seconds: float) -> Generator[simpy.Event, Any, None]:
        """The active process (named ``who``) runs ``seconds`` of CPU: a core first (the run
        queue), then the time. A slice that ends inside the burst while others wait preempts
        it there: the rest runs once the process has a core again (a lock it holds stays
        held meanwhile)."""
        me = self.env.active_process
        held = self.held.get(me)
        if held is None:
            held = yield from self._core(me, who)
        while seconds > 0:
            left = self.quantum - held[1]
            step = seconds if seconds <= left or not self.cores.queue else max(left, 0.0)
            if step > 0:
                yield from self._run(me, who, step)
                held[1] += step
                seconds -= step
            if seconds > 0:  # preempted inside the burst: to the back of the queue
                self._free(me)
                held = yield from self._core(me, who)
        if held[1] >= self.quantum and self.cores.queue:
            self._free(me)  # its slice is over: to the back of the queue
        else:
            self._settled(me)

    def _core(self, me: Any, who: str) -> Generator[simpy.Event, Any, list[Any]]:
        """Wait in the run queue for a core; a new slice begins."""
        env = self.env
        since = env.now
        req = self.cores.request()
        try:
            yield req
        except BaseException:  # the node crashed while it waited for a core
            if req.triggered:
                self.cores.release(req)
            else:
                req.cancel()
            raise
        self.waited[who] = self.waited.get(who, 0.0) + env.now - since
        held = self.held[me] = [req, 0.0, who]
        return held

    def _run(self, me: Any, who: str, seconds: float) -> Generator[simpy.Event, Any, None]:
        self.running.add(me)
        try:
            yield self.env.timeout(seconds)
        except BaseException:  # crashed while running: its core is free
            self.running.discard(me)
            self._free(me)
            raise
        self.running.discard(me)
        self.busy[who] = self.busy.get(who, 0.0) + seconds

    def _settled(self, me: Any) -> None:
        """After everything at this instant (a priority below SimPy's normal one): free the
        core of ``me`` unless it is running its next burst by then."""
        ev = simpy.Event(self.env)
        ev.callbacks.append(lambda _: self._free(me) if me not in self.running else None)
        ev._ok, ev._value = True, None
        heappush(self.env._queue, (self.env._now, _AFTER_ALL,  # type: ignore[attr-defined]
                                   next(self.env._eid), ev))  # type: ignore[attr-defined]

    def _free(self, me: Any) -> None:
        held = self.held.pop(me, None)
        if held is not None:
            self.cores.release(held[0])

    def release(self, who: str) -> None:
        """The processes named ``who`` hand their cores over (one SimPy process that stands
        for a client and then for its server changes sides)."""
        for me in [m for m, h in self.held.items() if h[2] == who and m not in self.running]:
            self._free(me)  # (one inside a burst frees its core as the burst ends)
