"""When a node polls: its poll grid, the rank of a poll among simultaneous events, and the
idle sleep that counts polls instead of simulating them.

**The grid.** After a poll that did not fill its batch, a node polls again ``poll_interval``
later (× ``1 ± poll_jitter``, drawn from its own stream). A poll that found nothing keeps
the grid (``anchor + k × interval``); any other poll starts a new one at its instant. The
instants are computed the same way whether a poll is simulated or counted, so both give the
same floats.

**The rank.** A poll that falls due at an instant runs after every other event of that
instant (a job inserted or failed at the very instant of a poll is seen by it), and polls of
different nodes at one instant run in an order drawn afresh for that instant (from the
node's seeded salt and the instant), so no node wins every tie. SimPy orders events of one
instant by priority, then by the order they were scheduled; a poll's wake-up is scheduled
with priority ``2 + rank``, after SimPy's NORMAL (1).

**The idle sleep.** When no poll before the next eligible row can find anything unless the
table changes, a node sleeps: the polls in between are counted, not simulated. It wakes at
the first grid instant at or after that row's time, at an insert (a notify node, which then
polls at once), or at a write that may make a row eligible sooner (then it aims again). The
sleep is exact: the trace is the one of simulating every poll, less the empty polls'
records. It is taken only where an empty poll touches nothing another statement could see:
the ``atomic`` dialect, no statement latency, no bounded connection pool, no global acquire
lock and no partition of the node (``World(idle_shortcut=False)`` or ``jobsim run
--every-poll`` simulates every poll everywhere).

**Long polling** (``wakeup: long_poll``, Zeebe's gateway): the request that found nothing is
held by the server and answered the moment a row becomes claimable — an insert, a failure
that leaves retries, a lock freed, a due time reached — so the node polls then, off the
grid, at its rank of that instant. A request held ``long_poll_timeout`` is answered empty
and the worker asks again ``poll_interval`` later: those empty answers are the grid (period
``long_poll_timeout + poll_interval``), counted or simulated like any other poll.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from heapq import heappush
from typing import TYPE_CHECKING

import simpy
from simpy.events import PENDING

from ...base.rng import Stream
from ...base.trace import K
from ...database.db import Signal
from ...database.store import JOB

if TYPE_CHECKING:
    from .host import Host

#: the priority of a poll's wake-up before its rank (SimPy: URGENT 0, NORMAL 1)
POLL = 2
_RANKS = 0xFFFFFFF


def rank(salt: int, at: float) -> int:
    """The priority of the poll at ``at`` of the loop whose salt is ``salt`` (its node's,
    doubled, plus 1 for the job table: a node's timer loop polls before its job loop at one
    instant). Deterministic: the hash of a tuple of numbers does not depend on
    PYTHONHASHSEED."""
    return POLL + ((hash((salt >> 1, at)) & _RANKS) << 1) + (salt & 1)


def wake_at(env: simpy.Environment, at: float, priority: int) -> simpy.Event:
    """An event that fires at exactly ``at`` (SimPy's ``schedule`` adds a delay to ``now``,
    which may round) with ``priority``."""
    ev = simpy.Event(env)
    ev._ok = True
    ev._value = None
    heappush(env._queue, (at, priority, next(env._eid), ev))  # type: ignore[attr-defined]
    return ev


class Grid:
    """A node's poll instants: index ``k`` is the next poll's."""

    __slots__ = ("period", "jitter", "stream", "salt", "anchor", "k", "_at", "_draws",
                 "_spare")

    def __init__(self, period: float, jitter: float, stream: Stream | None, salt: int):
        self.period, self.jitter, self.stream, self.salt = period, jitter, stream, salt
        self.anchor, self.k = 0.0, 1
        #: with jitter: the instants from the anchor on, and the draws that made them
        self._at: list[float] = [0.0]
        self._draws: list[float] = []
        self._spare: deque[float] = deque()

    def restart(self, now: float) -> None:
        """A poll at ``now`` that starts a new grid: the next poll is index 1."""
        if self.jitter:
            # draws made for polls that never came (a sleep looked ahead) go back, in order
            self._spare.extendleft(reversed(self._draws[self.k:]))
            self._at, self._draws = [now], []
        self.anchor, self.k = now, 1

    def at(self, m: int) -> float:
        """The instant of poll ``m``."""
        if not self.jitter:
            return self.anchor + m * self.period
        at, draws, spare, j, p = self._at, self._draws, self._spare, self.jitter, self.period
        while len(at) <= m:
            u = spare.popleft() if spare else self.stream.uniform()  # type: ignore[union-attr]
            draws.append(u)
            at.append(at[-1] + p * (1.0 + j * (2.0 * u - 1.0)))
        return at[m]

    def first_from(self, m: int, t: float) -> int:
        """The first index from ``m`` on whose instant is at or after ``t``."""
        if not self.jitter and t > self.at(m):
            m = max(m, math.ceil((t - self.anchor) / self.period) - 1)
        while self.at(m) < t:
            m += 1
        return m


#: the wake value of a sleep whose insert poll ran in a callback and found the loop's next
#: step not simple (a pause, a full queue): the loop goes on from its top
RESUME = "resume"


class Sleep:
    """The wait of one acquisition loop until its next poll (see the module's docstring):
    the next grid instant, or — ``counting`` — the first one at or after ``soonest``, the
    polls in between counted. A notify node also wakes at an insert, and polls then at its
    rank among the polls of that instant.

    Two shortcuts keep an idle sleep cheap without moving any instant: a grid wake-up is
    lazy (one event stays scheduled at the earliest instant aimed at; when it comes and the
    aim has moved later, it schedules the next — a notify node re-aimed at every insert
    costs one event per poll interval, not one per insert); and a notify node's poll at an
    insert may run as ``fast``, a callback of the loop's, at the very instant and rank the
    loop would have polled, which claims, hands the rows to threads and ``arm``s the same
    sleep again without resuming the loop's process."""

    __slots__ = ("node", "table", "grid", "notify", "wake", "k0", "_target", "_target_at",
                 "_timer_at", "_woken", "_fast", "_counting", "_long", "_answer_gen",
                 "_answer_at", "_poll")

    def __init__(self, node: Host, table: str, grid: Grid, notify: bool,
                 soonest: float | None, counting: bool, long: bool = False,
                 fast: Callable[[Sleep, int], None] | None = None):
        self.node, self.table, self.grid, self.notify = node, table, grid, notify
        self.wake = simpy.Event(node.env)
        #: the instant of the earliest grid wake-up scheduled (inf: none)
        self._timer_at = math.inf
        #: a long poll: the held request is answered when a row becomes claimable
        self._long = long
        self._answer_gen = 0
        self._answer_at = math.inf
        self._fast = fast
        self._poll: simpy.Event | None = None
        self.arm(soonest, counting)

    def arm(self, soonest: float | None, counting: bool) -> None:
        """Start the sleep from the grid's next poll (again, after a ``fast`` poll)."""
        node, grid = self.node, self.grid
        self.k0 = grid.k
        self._target, self._target_at = -1, math.inf
        #: the sleep's end is decided (an insert's poll is scheduled, or ``wake`` fired)
        self._woken = False
        #: a counting sleep aims again at each write that may make a row eligible sooner
        self._counting = counting
        if self.notify or counting or self._long:  # an insert is a change: one event tells all
            node.db.changed().callbacks.append(self._changed)
        if self._long:
            # what is claimable already was not this node's to take (another's handler):
            # only a change, a due time or the request's timeout answers it
            at = node.db.store.next_eligible(node.env.now, self.table)
            if at is not None and at > node.env.now:
                self._answer(at)
        if not counting:
            soonest = grid.at(grid.k)
        elif soonest is None and node.paused is None:
            return  # nothing to aim at: only a change wakes it
        self._aim(soonest)

    # --- where the next real poll falls ---------------------------------------------------

    def pending(self) -> int:
        """The first poll of the grid not yet made at this instant: a later one, or one at
        this instant that ranks after the event running now."""
        node, grid = self.node, self.grid
        now = node.env._now
        m = grid.k
        at = grid.at(m)
        if at < now:
            m = grid.first_from(m, now)
            at = grid.at(m)
        if at == now:
            at_now, salt = node.world.rank_now
            if at_now == now:  # an instant's polls run in rank order: before this one?
                running = rank(salt, now)
                while at == now and rank(grid.salt, now) < running:
                    m += 1
                    at = grid.at(m)
        return m

    def _aim(self, soonest: float | None) -> None:
        """Wake at the first pending poll at or after ``soonest`` (None: at none); while
        the node is paused, at the next pending poll (it waits for the pause to end). A wake-up
        already set for that very poll stays (many changes within one interval cost one)."""
        node = self.node
        if node.paused is not None:
            soonest = node.env.now
        if soonest is None or soonest >= node.world.scenario.end:
            self._target, self._target_at = -1, math.inf
            return
        grid = self.grid
        m = grid.first_from(self.pending(), soonest)
        if m == self._target:
            return
        at = grid.at(m)
        if at >= node.world.scenario.end:
            self._target, self._target_at = -1, math.inf
            return
        self._target, self._target_at = m, at
        if at < self._timer_at:
            self._schedule(at)

    def _schedule(self, at: float) -> None:
        self._timer_at = at
        ev = wake_at(self.node.env, at, rank(self.grid.salt, at))
        ev.callbacks.append(lambda _: self._tick(at))

    def _tick(self, at: float) -> None:
        """A grid wake-up came: the poll aimed at, if it falls now; else, if the aim moved
        later, the wake-up for it."""
        if at == self._timer_at:
            self._timer_at = math.inf  # gone, even if the sleep is over (it may be armed again)
        if self._woken:
            return
        t = self._target_at
        if t == at:
            self._woken = True
            self.wake.succeed(self._target)
        elif at < t < self._timer_at:
            self._schedule(t)

    def nudge(self) -> None:
        """Wake at the next pending poll (the node was paused: that poll waits for the
        pause to end, as a simulated one would)."""
        if not self._woken:
            self._aim(self.node.env.now)

    # --- callbacks --------------------------------------------------------------------------

    def _inserted(self) -> None:
        if self._woken:
            return
        self._woken = True  # it polls now, off the grid, at its rank of this instant
        env = self.node.env
        if self._fast is None:
            ev = self.wake
        else:  # one event per sleep, used again: at most one insert's poll is pending
            ev = self._poll
            if ev is None:
                ev = self._poll = simpy.Event(env)
            ev.callbacks = [self._run_fast]
        ev._ok, ev._value = True, -self.pending() - 1
        heappush(env._queue, (env._now, rank(self.grid.salt, env._now),  # type: ignore
                              next(env._eid), ev))  # type: ignore[attr-defined]

    def _run_fast(self, ev: simpy.Event) -> None:
        if self.wake._value is PENDING:  # not stopped (a crash, the run's end) meanwhile
            self._fast(self, ev._value)  # type: ignore[misc]

    def _changed(self, ev: Signal) -> None:
        if self._woken:
            return
        if ev.value and self.notify:
            self._inserted()  # an insert wakes a notify node
            return
        node = self.node
        if (ev.ready and self._counting and not self._long and self.table == JOB
                and self._target >= 0 and self._target == self.pending()):
            # a row eligible now makes the first poll to come the aim (``_aim(now)``): it
            # is the aim already, so nothing moves (the busy cluster's common case: an
            # insert reaches every sleeping node)
            node.db.changed().callbacks.append(self._changed)
            return
        soonest = node.db.store.next_eligible(node.env.now, self.table) \
            if self._counting or self._long else None
        if self._long and soonest is not None:
            if soonest <= node.env.now:
                self._inserted()  # claimable now: the server answers the held request
                return
            self._answer(soonest)
        node.db.changed().callbacks.append(self._changed)
        if self._counting:
            self._aim(soonest)

    def _answer(self, at: float) -> None:
        """A long poll: answer the held request at ``at``, when a row falls due (a retry's
        backoff ends, a lock expires), unless a change answers it sooner."""
        if at >= self._answer_at or at >= self.node.world.scenario.end:
            return
        self._answer_gen += 1
        self._answer_at = at
        gen = self._answer_gen
        ev = wake_at(self.node.env, at, rank(self.grid.salt, at))
        ev.callbacks.append(lambda _: self._answered(gen))

    def _answered(self, gen: int) -> None:
        if gen != self._answer_gen or self._woken:
            return
        self._answer_at = math.inf
        node = self.node
        soonest = node.db.store.next_eligible(node.env.now, self.table)
        if soonest is None or soonest > node.env.now:
            # the row it was set for went meanwhile (done, deleted) or falls due later: the
            # server holds the request still (an answer it never sent is no poll)
            if soonest is not None:
                self._answer(soonest)
            return
        self._woken = True  # the grid's wake-up, if any, is void
        self.wake.succeed(-self.pending() - 1)  # off the grid, at its rank of this instant

    # --- the end of the sleep ---------------------------------------------------------------

    def count(self, upto: int) -> None:
        """Count the polls slept through, up to index ``upto`` (excluded)."""
        node = self.node
        skipped = upto - self.k0
        if skipped > 0:
            node.polls += skipped
            node.polls_skipped += skipped
            node.db.statements += skipped
            node.trace.add(node.env.now, K["polls_skipped"], node.code, a=skipped)

    def stop(self) -> None:
        """The node crashed or the run ended: count the polls made until now (a wake-up
        due at this very instant never comes)."""
        if not self.wake.processed:
            self._woken = True  # a grid wake-up or an insert's poll still to come is void
            if not self.wake.triggered:
                self.wake.succeed(None)
            self.grid.k = m = self.pending()
            self.count(m)
