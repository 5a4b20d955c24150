"""A claim statement on a measured database or with a CPU (``db.profile``, ``db.cpu``; the
model is described in ``cpu.py``): the client's time before it (``think``), its own time on
the server's and the client's cores (``serve``). A process that waits for anything else frees its
core by itself (``Cpu``). The claim strategies (``postgres``, ``sqlite``) call these where
``Database.timed`` holds; every other scenario never reaches them.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from .cpu import Timing
from .db import StatementFailed

if TYPE_CHECKING:
    from .db import Database

_NONE_OWED = (0.0, 0.0)


def measure(db: "Database", node: str, timing: Timing) -> None:
    """``node``'s claim statements take the times of ``timing``."""
    db.timing[node] = timing
    db.timed = True


def think(db: "Database", node: str, first: bool) -> Generator[simpy.Event, Any, None]:
    """The client's own time before a claim statement (``first``: an attempt's first):
    CPU in the node's process. On PostgreSQL the client then sends the statement and
    waits for the answer (``serve`` hands the core over)."""
    t = db.timing.get(node)
    if t is not None:
        stream = db._think.get(node)
        if stream is None:
            stream = db._think[node] = db._streams.stream(f"db/client/{node}")
        gap = (t.between_attempts if first else t.between_statements).sample(stream)
        if db.cpu is not None:
            yield from db.cpu.burst(node, gap)
        elif gap > 0:
            yield db.env.timeout(gap)


def serve(db: "Database", node: str, kind: str, changes: bool = True, part: str = "all"
          ) -> Generator[simpy.Event, Any, float]:
    """A claim statement's own time, or a part of it: on SQLite CPU in the client's
    process (the rest of a measured one waiting for the disk), on PostgreSQL first the
    server's CPU, then the client's share. If the node
    was cut off meanwhile the statement never arrives. Returns the time.

    ``kind``: select or update (an update includes its commit where a transaction
    commits on its own); ``changes``: whether it writes a row (an UPDATE that does not
    is far cheaper). On PostgreSQL a statement is taken in parts (``part``), so that its
    snapshot and its locks fall where the server takes them: ``pre`` (the way there,
    parse and plan: half a statement that changes nothing, ``update_unchanged``), then
    the snapshot, ``scan`` (finding the rows), the row locks, ``write`` (writing and
    committing what it locked) and ``post`` (the answer's way back, the other half)."""
    t = db.timing.get(node)
    if t is None:
        lat = db.sample_latency(node) if part in ("all", "scan") else 0.0
        client = 1.0 if db.dialect == "sqlite" else 0.0
    else:
        lat = _cost(db, node, t, kind, changes, part)
        client = t.client_cpu
    cpu = db.cpu
    if cpu is not None and cpu.handover > 0 and part in ("pre", "post", "all") and \
            db.dialect == "postgres":
        # a hand-over between client and server is faster when the other cores are busy
        lat = max(0.0, lat - cpu.handover * (2 if part == "all" else 1) * cpu.busy_share())
    if cpu is None:
        if lat > 0:
            yield db.env.timeout(lat)
    elif db.dialect == "sqlite":  # a library call: the client's own process runs it, then
        yield from cpu.burst(node, lat * client)  # waits for the disk (its core free)
        if client < 1.0 and t is not None:
            yield db.env.timeout(lat * (1.0 - client))
    else:  # The connection's server process runs the statement's parts back to back on
        # the core it got when the client handed over (it loses it only if it blocks or
        # its slice ends): its snapshot is taken while it runs. The client's share runs
        # once the answer is back; the one SimPy process hands its core over as it changes
        # sides. The server's time off any core (``server_cpu``, ``unchanged_cpu`` below 1:
        # waking up, the sockets) falls at the two hand-overs: before the server runs, and
        # on the answer's way back.
        server, mine = f"{node}/server", lat * client
        run = lat - mine if t is None else _on_core(t, part, lat - mine, client)
        idle = lat - mine - run
        if part == "pre":  # a statement in parts: the client's CPU and the idle time owed
            db._owed[node] = [0.0, 0.0]  # until its way back
        if part in ("all", "pre"):
            cpu.release(node)
            if idle > 0:
                yield db.env.timeout(idle)
            idle = 0.0
        yield from cpu.burst(server, run)
        if part in ("all", "post"):
            owed = db._owed.pop(node, _NONE_OWED) if part == "post" else _NONE_OWED
            cpu.release(server)
            if t is not None and t.server_tail > 0:
                _tail(db, node, t.server_tail)
            if idle + owed[1] > 0:
                yield db.env.timeout(idle + owed[1])
            yield from cpu.burst(node, mine + owed[0])
        else:
            owed = db._owed.setdefault(node, [0.0, 0.0])
            owed[0] += mine
            owed[1] += idle
    if node in db._cut:
        raise StatementFailed(node)
    return lat


def _cost(db: "Database", node: str, t: Timing, kind: str, changes: bool,
          part: str) -> float:
    """The seconds of ``part`` of a statement as ``t`` measured them (see ``serve``)."""
    stream = db._lat.get(node)
    if stream is None:
        stream = db._lat[node] = db._streams.stream(f"db/latency/{node}")
    unchanged = t.update_unchanged
    if part in ("pre", "post"):
        return 0.0 if unchanged is None else unchanged.sample(stream) / 2 * db.factor
    split = part != "all" and unchanged is not None  # the way there and back apart
    overhead = unchanged.sample(stream) if split else 0.0
    held = db.store.held()
    if kind == "select":
        draw = t.select.sample(stream)
        grown = draw * (1.0 + t.select_growth * held) if t.select_growth else \
            draw + t.select_per_row * held
        return max(0.0, grown - overhead) * db.factor
    base = t.update.sample(stream)
    # the part its subquery's scan adds
    rows = base * t.update_growth * held if t.update_growth else t.update_per_row * held
    if part == "write":
        lat = max(0.0, base - overhead) if split else 0.0
        if t.commit is not None:
            lat += t.commit.sample(stream)
    elif part == "scan" and split:
        lat = rows
    elif not changes and unchanged is not None:
        lat = unchanged.sample(stream) + rows
    else:
        lat = base + rows
        if t.commit is not None and part == "all":
            lat += t.commit.sample(stream)
    return lat * db.factor


def _on_core(t: Timing, part: str, server: float, client: float) -> float:
    """Of a PostgreSQL statement part's ``server`` seconds, those on a core: the way there
    and back at ``unchanged_cpu``, the statement's own work at ``server_cpu`` (a whole
    statement holds one round trip of the mean no-op's time)."""
    if part in ("pre", "post"):
        return server * t.unchanged_cpu
    if part != "all" or t.update_unchanged is None:
        return server * t.server_cpu
    trip = min(server, t.update_unchanged.mean * (1.0 - client))
    return trip * t.unchanged_cpu + (server - trip) * t.server_cpu


def _tail(db: "Database", node: str, seconds: float) -> None:
    """``seconds`` of server CPU after an answer, run beside the client: by one process per
    node (its server's background), which works through what is owed, then waits."""
    tails = db._tails
    owed = tails.get(node)
    if owed is None:
        owed = tails[node] = [0.0, db.env.event()]
        db.env.process(_background(db, node, owed))
    owed[0] += seconds
    if not owed[1].triggered:
        owed[1].succeed()


def _background(db: "Database", node: str, owed: list[Any]) -> Generator[simpy.Event, Any, None]:
    cpu, who = db.cpu, f"{node}/background"
    while True:
        if owed[0] <= 0:
            owed[1] = db.env.event()
            yield owed[1]
        seconds, owed[0] = owed[0], 0.0
        yield from cpu.burst(who, seconds)

