"""The fault schedule: what goes wrong, and when.

One SimPy process per fault, or per stretch of overlapping windows (a handful per run, never
one per job):

- ``crash`` — the node dies at ``at``: its local queue and running executions are lost at
  that instant, its locks stay in the table; with ``restart_after`` it comes back that much
  later with an empty queue;
- ``pause`` — a stop-the-world stall of ``for`` (a GC pause, a frozen VM): the node resumes as
  if nothing happened, committing work whose lock may have expired meanwhile;
- ``slow_db`` — every statement latency drawn during the window is multiplied by ``factor``;
- ``partition`` — the node is cut off from the database for ``for``: its statements fail
  after ``timeout``;
- ``restart_server`` — the Zeebe-like server restarts: every activated job is restored to
  waiting with the same key and retries (the only way it reclaims a crashed worker's job).

Windows that overlap. Before any process starts, ``plan`` merges the windows of one kind on
one target (a node; the database for ``slow_db``) that overlap or touch (one ends at the
instant the next starts) into one stretch, run by one process in the place of its first
fault in the file; a window that overlaps nothing runs exactly as above. Nothing is dropped
without a rule:

- ``crash``: the node's down times (from the crash to its restart, or for ever without
  ``restart_after``) are unioned: a crash while the node is down extends the down time to
  the later restart (or for ever) — one ``node_crashed``, one ``node_restarted``;
- ``pause``: a node's pauses are unioned, from the earliest start to the latest end — one
  ``node_paused``, one ``node_resumed``;
- ``slow_db``: while windows overlap, their factors multiply (the exact product, rounded
  once: the order of the windows does not matter); the factor changes at each
  window's start and end, and each change is traced (``db_slowed``, the new product); after
  the last window it is 1 again;
- ``partition``: a node's partitions are unioned: it heals when the last one ends. While
  several are in force a statement fails after the shortest of their timeouts (each cut alone
  would fail it then); a change of timeout is traced as another ``partition`` (``a=1``);
- across kinds: a pause acts on the node as it is when the pause starts. A pause that starts
  while the node is down (at its crash instant, or at its restart instant, included) does
  nothing; a crash ends a pause (no ``node_resumed``), and the restarted node runs, not
  paused; pauses are unioned only within one life of the node, between a restart and the
  next crash. A partition is the network's, not the process's: a crash neither heals nor
  ends it, and a node restarted while cut off is still cut off. ``slow_db`` is the
  database's, whatever the nodes do.

``restart_server``, ``clock`` (a node's clock steps by ``step`` and/or runs at a new
``drift``: ``database/clocks.py``) and the operations (``retry``, ``cancel``, ``move``,
``suspend``, ``activate``, ``fail``: ``operations.py``) are instants, not windows: each runs
at its ``at``, in the file's order.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..executor.config import Fault
from ..database.store import unlock_all
from ..base.trace import K
from ..database.clocks import NodeClock
from .operations import OPERATIONS, operate

#: the faults that last a window
WINDOWS = ("crash", "pause", "slow_db", "partition")

if TYPE_CHECKING:
    from .world import World


@dataclass(frozen=True)
class Stretch:
    """Overlapping (or touching) ``slow_db`` or ``partition`` windows, merged: from ``at`` the
    value ``first`` (a latency factor; a statement timeout), then each ``(delay, value)`` of
    ``steps`` in turn, ``delay`` after the one before; the last ends the stretch (a factor of
    1; ``None``: healed)."""

    kind: str
    node: str | None
    at: float
    first: float
    steps: tuple[tuple[float, float | None], ...]


def schedule(world: "World", faults: tuple[Fault, ...]) -> None:
    """One process per fault, or per stretch of overlapping windows (``plan``)."""
    for fault in plan(faults):
        if fault.kind in OPERATIONS:
            world._sources += 1  # a drained run waits for the operator's pending actions
        world.env.process(_one(world, fault) if isinstance(fault, Fault) else
                          _stretch(world, fault))


def plan(faults: tuple[Fault, ...]) -> list[Fault | Stretch]:
    """The faults to run, overlapping windows merged (see the module's doc), in the order of
    the file: a stretch in the place of its first fault. A crash or a pause that overlaps no
    other window of its kind is the very ``Fault`` given; a ``slow_db`` or ``partition`` alone
    becomes a stretch of one step, which runs exactly as it did."""
    placed: list[tuple[int, Fault | Stretch]] = []
    groups: dict[tuple[str, str | None], list[int]] = {}
    for i, f in enumerate(faults):
        if f.kind in WINDOWS:
            groups.setdefault((f.kind, f.node), []).append(i)
        else:
            placed.append((i, f))
    down: dict[str | None, list[tuple[float, float]]] = {}
    for (kind, node), idx in groups.items():  # first the crashes: pauses depend on them
        if kind != "crash":
            continue
        for group in _overlapping(faults, idx):
            fs = [faults[i] for i in group]
            start, end = fs[0].at, max(_end(f) for f in fs)
            down.setdefault(node, []).append((start, end))
            length = None if end == math.inf else _delay(fs, start, end)
            placed.append((min(group), fs[0] if len(fs) == 1 else
                           Fault(start, "crash", node, length)))
    for (kind, node), idx in groups.items():
        if kind == "pause":
            gone = down.get(node, [])
            lives = {i: _life(gone, faults[i].at) for i in idx}
            idx = [i for i in idx if lives[i] >= 0]  # down at its start: it does nothing
            for group in _overlapping(faults, idx, lives):
                fs = [faults[i] for i in group]
                start, end = fs[0].at, max(_end(f) for f in fs)
                placed.append((min(group), fs[0] if len(fs) == 1 else
                               Fault(start, "pause", node, _delay(fs, start, end))))
        elif kind in ("slow_db", "partition"):
            for group in _overlapping(faults, idx):
                placed.append((min(group), _merge(faults, group)))
    placed.sort(key=lambda p: p[0])
    return [p[1] for p in placed]


def _end(f: Fault) -> float:
    return math.inf if f.length is None else f.at + f.length


def _life(down: list[tuple[float, float]], at: float) -> int:
    """Which life of a node the instant ``at`` falls in — the number of its down times
    (``down``, in time order and apart) before it — or -1 if the node is down then (its crash
    and restart instants included)."""
    k = bisect.bisect_right(down, (at, math.inf))
    return -1 if k and at <= down[k - 1][1] else k


def _overlapping(faults: tuple[Fault, ...], idx: list[int],
                 lives: dict[int, int] | None = None) -> list[list[int]]:
    """The windows ``idx`` grouped into runs that overlap or touch, in time order (ties: the
    file's order); with ``lives`` (index -> the node's life it starts in), windows of two
    lives never merge."""
    groups: list[list[int]] = []
    end = -math.inf
    key = None
    for i in sorted(idx, key=lambda i: (faults[i].at, i)):
        f = faults[i]
        k = lives[i] if lives is not None else 0
        if groups and f.at <= end and k == key:
            groups[-1].append(i)
            end = max(end, _end(f))
        else:
            groups.append([i])
            end, key = _end(f), k
    return groups


def _delay(fs: list[Fault], prev: float, instant: float,
           lengths: dict[tuple[float, float], float] | None = None) -> float:
    """From ``prev`` to ``instant``: the length of a window of ``fs`` that starts at ``prev``
    and ends then, if one does (so that a window alone ends exactly where it always did).
    ``lengths``: those lengths by (start, end), if already gathered."""
    if lengths is None:
        lengths = _lengths(fs)
    return lengths.get((prev, instant), instant - prev)


def _lengths(fs: list[Fault]) -> dict[tuple[float, float], float]:
    lengths: dict[tuple[float, float], float] = {}
    for f in fs:
        if f.length is not None:
            lengths.setdefault((f.at, f.at + f.length), f.length)
    return lengths


def _merge(faults: tuple[Fault, ...], group: list[int]) -> Stretch:
    """A run of overlapping ``slow_db`` windows (factors multiply) or ``partition`` windows of
    one node (the shortest timeout holds) as a stretch: its value at each instant it changes.
    One sweep over the starts and ends; the product is kept exact (a ratio of integers) and
    rounded once, so it does not depend on the order of the windows."""
    fs = [faults[i] for i in group]  # in time order
    slow = fs[0].kind == "slow_db"
    ends = sorted((_end(f), k) for k, f in enumerate(fs))
    instants = sorted(dict.fromkeys([f.at for f in fs] + [e for e, _ in ends]))
    num, den, zeros = 1, 1, 0  # slow_db: the factors in force, num / den (and zeros)
    shortest: list[tuple[float, int]] = []  # partition: (timeout, k) in force, or ended
    ended = [False] * len(fs)
    started = stopped = live = 0
    changes: list[tuple[float, float | None]] = []
    for t in instants:  # the windows in force over [t, the next instant)
        while stopped < len(ends) and ends[stopped][0] <= t:
            k = ends[stopped][1]
            stopped, live, ended[k] = stopped + 1, live - 1, True
            if slow:
                n, d = fs[k].factor.as_integer_ratio()
                if n == 0:
                    zeros -= 1
                else:
                    num, den = num // n, den // d
        while started < len(fs) and fs[started].at <= t:
            f = fs[started]
            if slow:
                n, d = f.factor.as_integer_ratio()
                if n == 0:
                    zeros += 1
                else:
                    num, den = num * n, den * d
            else:
                heapq.heappush(shortest, (f.timeout, started))
            started, live = started + 1, live + 1
        while shortest and ended[shortest[0][1]]:
            heapq.heappop(shortest)
        value: float | None
        if live == 0:
            value = 1.0 if slow else None
        elif slow:
            value = 0.0 if zeros else _ratio(num, den)
        else:
            value = shortest[0][0]
        if not changes or value != changes[-1][1] or live == 0:
            changes.append((t, value))
    lengths = _lengths(fs)
    steps = tuple((_delay(fs, prev, t, lengths), value)
                  for (prev, _), (t, value) in zip(changes, changes[1:]))
    start = changes[0][1]
    assert start is not None  # a window is in force at its own start
    return Stretch(fs[0].kind, fs[0].node, fs[0].at, start, steps)


def _ratio(num: int, den: int) -> float:
    try:
        return num / den  # correctly rounded
    except OverflowError:
        return math.inf


def _stretch(world: "World", s: Stretch) -> Generator[Any, Any, None]:
    env, trace, db = world.env, world.trace, world.db
    if s.at > 0:
        yield env.timeout(s.at)
    if s.kind == "slow_db":
        db.slow(s.first)
        trace.add(env.now, K["db_slowed"], x=s.first)
        for delay, factor in s.steps:
            yield env.timeout(delay)
            db.slow(factor)
            trace.add(env.now, K["db_slowed"], x=factor)
        return
    code = trace.node(s.node)
    timeout = s.first
    db.cut(s.node, timeout)
    trace.add(env.now, K["partition"], code, a=1, x=timeout)
    for delay, value in s.steps:
        yield env.timeout(delay)
        if value is None:
            db.heal(s.node)
            trace.add(env.now, K["partition"], code, a=0, x=timeout)
        else:
            timeout = value
            db.cut(s.node, timeout)
            trace.add(env.now, K["partition"], code, a=1, x=timeout)


def _one(world: "World", f: Fault) -> Generator[Any, Any, None]:
    env, trace = world.env, world.trace
    if f.at > 0:
        yield env.timeout(f.at)
    if f.kind == "crash":
        node = world.node(f.node)
        node.crash()
        if f.length is not None:
            yield env.timeout(f.length)
            node.restart()
    elif f.kind == "pause":
        world.node(f.node).pause(f.length)
    elif f.kind == "clock":
        if world.skewed:  # with clock: database, no statement reads the node's clock
            set_clock(world, f.node, f.step, f.drift)
    elif f.kind in OPERATIONS:
        operate(world, f)
        world.source_done()
    else:  # restart_server
        # The Zeebe-like server restores every activated job; a server whose jobs time out
        # (real Zeebe) recovers its state, deadlines included: activated jobs stay so.
        ids = unlock_all(world.store) if world.store.lock_expiry == "never" else []
        trace.add(env.now, K["server_restarted"], a=len(ids))
        text = trace.text("server restart")
        for rid in ids:
            trace.add(env.now, K["unlocked"], job=rid, text=text)
        world.db.touch(insert=True)  # waiting jobs again: wake the workers


def skewed(world: "World") -> bool:
    """Whether any node's claims read a clock that is not the true one, at any time (a
    node's offset or drift, or a clock fault, where the claims use the nodes' clocks); if
    so, no shortcut that assumes one clock for all is taken: every read of the table checks
    each row at the reader's own now, and nodes claim through the statement path."""
    if not world.scenario.clocks_differ:
        return False
    world.store.skewed = world.store._general = True
    for n in world.nodes:
        n.unhurried()
    return True


def start_clocks(world: "World") -> None:
    """The skewed nodes' clocks as the run starts (traced, at 0)."""
    for n in world.scenario.nodes if world.skewed else ():
        if n.executor.clock_offset or n.executor.clock_drift:
            set_clock(world, n.name, n.executor.clock_offset, n.executor.clock_drift)


def set_clock(world: "World", node: str, step: float, drift: float | None) -> None:
    """``node``'s clock jumps by ``step`` now (and runs at ``drift`` from now, if given);
    traced as ``clock_set`` with the offset and drift it has from this instant."""
    clocks, now = world.db.clocks, world.env.now
    clock = clocks.get(node)
    if clock is None:
        clock = clocks[node] = NodeClock(0.0, 0.0, now)
    clock.set(now, step, drift)
    world.trace.add(now, K["clock_set"], world.trace.node(node), x=clock.offset(now),
                    c=round(clock.drift * 1e9))
