"""The machine's cores, and a database as measured (``db.cpu``, ``db.profile``).

**The CPU model: a run queue with a time slice.** ``cores`` cores serve every process that
needs one: each node's client (its time between statements, and a statement's own work on
SQLite, which runs inside the client's process) and, on PostgreSQL, each connection's server
process (the statement's work there). A process that needs the CPU and holds no core waits
in one FIFO run queue. Once it has a core it keeps it across its next bursts, as a process
does that never blocks, until either it blocks — it waits for the server's answer, sleeps in
SQLite's busy handler, waits for a row lock, or its node sleeps between polls — or it has run
``quantum`` seconds while others wait; then it goes to the back of the queue. A slice that
ends inside a burst preempts it there (whether others wait is looked at as the burst begins):
a process preempted inside a statement keeps what it holds — SQLite's write lock, PostgreSQL's
row locks — until it runs again, as a real one does.

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
(``client_cpu``; on PostgreSQL the rest is the server's, on SQLite waiting for the disk). ``jobsim race --calibrate`` measures them.

Only the claim statements are timed this way; every other statement (completion, heartbeat,
reset…) keeps the database's ``latency``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import simpy

from ..base.dists import Distribution

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

    @cached_property
    def select_growth(self) -> float:
        """How a SELECT's time grows per locked row, as a share of its mean at none: a
        statement's draw is scaled by ``1 + growth × rows`` (its spread grows with it), so
        that its mean is ``mean + select_per_row × rows``."""
        return self.select_per_row / self.select.mean if self.select_per_row else 0.0

    @cached_property
    def update_growth(self) -> float:
        return self.update_per_row / self.update.mean if self.update_per_row else 0.0


class Cpu:
    """``cores`` cores shared through one run queue (see the module's note). Who ran and who
    waited how long is kept per process (``busy``, ``waited``)."""

    __slots__ = ("env", "cores", "quantum", "held", "busy", "waited")

    def __init__(self, env: simpy.Environment, cores: int, quantum: float):
        self.env = env
        self.cores = simpy.Resource(env, capacity=cores)
        self.quantum = quantum
        self.held: dict[str, list[Any]] = {}  # process -> [its core's request, time run]
        self.busy: dict[str, float] = {}
        self.waited: dict[str, float] = {}

    def burst(self, who: str, seconds: float) -> Generator[simpy.Event, Any, None]:
        """``who`` runs ``seconds`` of CPU: a core first (the run queue), then the time. A
        slice that ends inside the burst while others wait preempts it there: the rest runs
        once the process has a core again (a lock it holds stays held meanwhile)."""
        held = self.held.get(who)
        if held is None:
            held = yield from self._core(who)
        if seconds > 0:
            left = self.quantum - held[1]
            if seconds > left and self.cores.queue:
                if left > 0:
                    yield from self._run(who, left)
                    seconds -= left
                self.release(who)
                held = yield from self._core(who)
            yield from self._run(who, seconds)
            held[1] += seconds
        if held[1] >= self.quantum and self.cores.queue:
            self.release(who)  # its slice is over: to the back of the queue

    def _core(self, who: str) -> Generator[simpy.Event, Any, list[Any]]:
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
        held = self.held[who] = [req, 0.0]
        return held

    def _run(self, who: str, seconds: float) -> Generator[simpy.Event, Any, None]:
        try:
            yield self.env.timeout(seconds)
        except BaseException:  # crashed while running: its core is free
            self.release(who)
            raise
        self.busy[who] = self.busy.get(who, 0.0) + seconds

    def release(self, who: str) -> None:
        """``who`` blocks (or its slice ended): its core goes to the next in the queue."""
        held = self.held.pop(who, None)
        if held is not None:
            self.cores.release(held[0])
