"""The machine's cores, and a database as measured (``db.cpu``, ``db.profile``).

**The CPU model: a run queue with a time slice.** ``cores`` cores serve every process that
needs one: each node's client (its time between statements, and a statement's own work on
SQLite, which runs inside the client's process) and, on PostgreSQL, each connection's server
process (the statement's work there). A process that needs the CPU and holds no core waits
in one FIFO run queue. Once it has a core it keeps it across its next bursts, as a process
does that never blocks, until either it blocks — it waits for the server's answer, sleeps in
SQLite's busy handler, waits for a row lock, or its node sleeps between polls — or it has run
``quantum`` seconds while others wait; then it goes to the back of the queue. A slice ends
only between bursts, never inside one: the bursts (tens to hundreds of microseconds) are
short beside a slice (milliseconds).

Why not processor sharing: with processor sharing eight processes on two cores would each
run at a quarter speed, all at once, and their statements would interleave at every
instant. Linux gives each runnable process the whole core for a slice instead: one worker
runs many claims back to back while the others, frozen wherever they were, wait — which is
what decides how often two workers read the same rows.

**A measured database (``Timing``).** Per node: each statement kind's service time
(``select``, ``update``, and ``commit`` where a transaction commits on its own), the client's
time before a statement — ``between_attempts`` before an attempt's first, ``between_statements``
before the others — and on PostgreSQL the share of a statement's time that is the client's
own CPU (``client_cpu``; the rest is the server's). ``jobsim race --calibrate`` measures them.

Only the claim statements are timed this way; every other statement (completion, heartbeat,
reset…) keeps the database's ``latency``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
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
        """``who`` runs ``seconds`` of CPU: a core first (the run queue), then the time."""
        env = self.env
        held = self.held.get(who)
        if held is None:
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
        if seconds > 0:
            try:
                yield env.timeout(seconds)
            except BaseException:  # crashed while running: its core is free
                self.release(who)
                raise
        self.busy[who] = self.busy.get(who, 0.0) + seconds
        held[1] += seconds
        if held[1] >= self.quantum and self.cores.queue:
            self.release(who)  # its slice is over: to the back of the queue

    def release(self, who: str) -> None:
        """``who`` blocks (or its slice ended): its core goes to the next in the queue."""
        held = self.held.pop(who, None)
        if held is not None:
            self.cores.release(held[0])
