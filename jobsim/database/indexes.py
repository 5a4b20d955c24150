"""The store's indexes: which rows a poll may take, and in what order — never by a scan.

The question every poll asks — "the next ``n`` due, unlocked rows in order" — is answered from
two heaps per acquirable table:

- ``pending``: every row keyed by the instant it becomes eligible, ``max(due, lock_until)``
  (a lock is expired only when ``lock_until < now``, so lock-bound entries are strict);
- ``ready``: rows already eligible, keyed by the policy's order.

A query first promotes pending entries whose instant has come, then reads the top of
``ready``. Entries are invalidated lazily by a stamp (from one store-wide counter), so every
change is O(log n).

A lock-bound entry whose instant is no earlier than the last one's goes to ``lane``, a FIFO
beside the ``pending`` heap. With one lock time every claim's expiry is the latest yet, so
every lock lands there, in order, pushed and promoted in O(1), and the heap keeps the rows
waiting to fall due. A lock's entry mostly outlives its job (done long before the lock would
expire): a 5-minute lock at 170 claims a second leaves ~54,000 of them waiting, and in the
heap every pop would sift through them. Which entries a query promotes, and the instant it
reads as the next, are those of one heap (``LANE`` off: the tests compare); the order of a
promotion does not matter, as ``ready`` is a heap of distinct keys.

Serial queues set aside the rows that must wait their turn, and with ``lock_expiry: reset``
a heap of leases answers the reset thread's query.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Container
from functools import partial

from .rows import ACQUIRABLE, JOB, LOCK_EXPIRY, ORDERS, Locked, Row


#: what a job's age for ``order: aging`` counts from
AGING_FROM = ("due", "created")

#: whether lock-bound entries in key order go to the lane (``_Index.expiries``); the tests
#: turn it off to check that the lane moves nothing
LANE = True

class _Index:
    __slots__ = ("pending", "ready", "lane")

    def __init__(self) -> None:
        self.pending: list[tuple[float, int, int, int]] = []
        self.ready: list[tuple[float, float, int, int]] = []
        #: lock-bound (strict) entries of ``pending``'s kind, in order of their instant
        self.lane: deque[tuple[float, int, int, int]] = deque()

    def expiries(self, at: float) -> Callable[[tuple[float, int, int, int]], None]:
        """Where the entry of a lock that expires at ``at`` goes: ``lane`` if that is no
        earlier than its last entry's instant, else the heap."""
        lane = self.lane
        if LANE and (not lane or at >= lane[-1][0]):
            return lane.append
        return partial(heapq.heappush, self.pending)

    def push(self, entry: tuple[float, int, int, int]) -> None:
        """An entry of ``pending``'s kind: a lock's (strict) where ``expiries`` says, a due
        time's to the heap."""
        if entry[1]:
            self.expiries(entry[0])(entry)
        else:
            heapq.heappush(self.pending, entry)

    def promote_lane(self, now: float, rows: dict[int, Row], table: str,
                     key: Callable[[Row], tuple[float, float]]) -> None:
        """Move the lane's entries whose instant has passed (they are strict) to ``ready``,
        in order, up to the first that has not."""
        lane, ready, push = self.lane, self.ready, heapq.heappush
        while lane:
            at, _, rid, stamp = lane[0]
            if at >= now:
                break
            lane.popleft()
            row = rows.get(rid)
            if row is not None and row.stamp == stamp and row.table == table:
                k1, k2 = key(row)
                push(ready, (k1, k2, rid, stamp))


def _next_pending(ix: _Index, rows: dict[int, Row], table: str,
                  soonest: float = math.inf) -> float | None:
    """The earliest valid entry of ``ix.pending`` and ``ix.lane`` (a strict one: just after
    its instant), or ``soonest`` if that is sooner; ``None`` for none."""
    pending, lane = ix.pending, ix.lane
    while lane:  # its entries are strict, their instants in order
        at, _, rid, stamp = lane[0]
        row = rows.get(rid)
        if row is not None and row.stamp == stamp and row.table == table:
            at = math.nextafter(at, math.inf)
            if at < soonest:
                soonest = at
            break
        lane.popleft()
    while pending:
        at, strict, rid, stamp = pending[0]
        if at == math.inf:
            break  # locked for good (a Zeebe-like activation): only a write frees it
        row = rows.get(rid)
        if row is not None and row.stamp == stamp and row.table == table:
            at = math.nextafter(at, math.inf) if strict else at
            return at if at < soonest else soonest
        heapq.heappop(pending)
    return None if soonest == math.inf else soonest


class Indexes:
    """The indexes half of ``Store`` (its base class): the heaps, their upkeep and the
    reads that use them. Its methods work on the store's own attributes (``rows``,
    ``routes``, ``lock``), so a poll goes through no extra object."""

    rows: dict[int, Row]
    routes: dict[str, frozenset[str]]

    def __init__(self, order: str, aging_rate: float, lock_expiry: str,
                 count_at_fetch: bool, aging_from: str = "due"):
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS} (got {order!r})")
        if lock_expiry not in LOCK_EXPIRY:
            raise ValueError(f"lock_expiry must be one of {LOCK_EXPIRY} (got {lock_expiry!r})")
        if aging_from not in AGING_FROM:
            raise ValueError(f"aging_from must be one of {AGING_FROM} (got {aging_from!r})")
        self.order = order
        self.aging_rate = aging_rate
        #: a job's age for ``order: aging``: since it fell due (time not yet due earns no
        #: priority), or since it was created
        self._aged_from_due = aging_from == "due"
        self.lock_expiry = lock_expiry
        #: expired locks free their row at the next claim
        self.expiry = lock_expiry == "claim"
        #: lock_expiry reset: every locked row by lock_until, for the reset thread
        self._leases: list[tuple[float, int, int]] = []
        #: serial queue -> the row that last took it (busy while that row holds a lock)
        self._queue_holder: dict[str, int] = {}
        #: serial queue -> ready entries of its rows set aside while it is busy (a heap in
        #: the table's order), so that a claim does not step over them again and again
        self._parked: dict[str, list[tuple[float, float, int, int]]] = {}
        self.has_queues = False
        #: a claim must take the general path (serial queues, count at fetch, no expiry)
        self._general = count_at_fetch or not self.expiry
        #: nodes' clocks disagree: each row read is checked at the reader's now (``clocks``)
        self.skewed = False
        self._ix = {t: _Index() for t in ACQUIRABLE}
        #: the run's end: a row eligible only at or after it is never put in ``pending``
        #: (no poll, sleep or answer of the run can see it; a run sets it)
        self.horizon = math.inf
        #: one counter for the whole store, so an id reused after a delete can never
        #: match an index entry left by the row that had it before
        self._stamp = 0

    #: the store's guarded UPDATE (``Store.lock``), which ``hand_over`` uses
    lock: Callable[..., list[Locked]]

    # --- keys and index upkeep -------------------------------------------------------------

    def _key(self, row: Row) -> tuple[float, float]:
        o = self.order
        if o == "id":
            return (row.id, 0.0)
        if o == "due":
            return (row.due, 0.0)
        if o == "created":
            return (row.created, 0.0)
        if o == "priority":
            return (-row.priority, row.due)
        # priority + rate × (now − since) orders as priority − rate × since: a static key
        since = row.due if self._aged_from_due else row.created
        return (-(row.priority - self.aging_rate * since), row.due)

    def _reindex(self, row: Row, now: float | None = None) -> None:
        """Give the row a new stamp (invalidating its old entries) and a new entry: in
        ``ready`` when it is already eligible at ``now`` (time never goes back, so it stays
        eligible until a write re-indexes it), else in ``pending``."""
        stamp = self._stamp = self._stamp + 1
        row.stamp = stamp
        ix = self._ix.get(row.table)
        if ix is None:
            return
        owner = row.locked_by
        if owner is None:
            if now is not None and row.due <= now:
                k1, k2 = self._key(row)
                heapq.heappush(ix.ready, (k1, k2, row.id, stamp))
                return
            entry = (row.due, 0, row.id, stamp)
        elif not self.expiry:
            # a lock only a reset (or nothing) clears: not eligible until a write unlocks it
            if self.lock_expiry == "reset":
                heapq.heappush(self._leases, (row.lock_until, row.id, stamp))
            return
        elif row.lock_until >= row.due:
            entry = (row.lock_until, 1, row.id, stamp)
        else:
            entry = (row.due, 0, row.id, stamp)
        if entry[0] < self.horizon:
            ix.push(entry)

    def _valid(self, rid: int, stamp: int, table: str) -> Row | None:
        row = self.rows.get(rid)
        if row is None or row.stamp != stamp or row.table != table:
            return None
        return row

    def _promote(self, table: str, now: float) -> _Index:
        if self._parked:
            self._unpark(now)
        ix = self._ix[table]
        pending, ready, rows, key = ix.pending, ix.ready, self.rows, self._key
        pop, push = heapq.heappop, heapq.heappush
        while pending:
            at, strict, rid, stamp = pending[0]
            if at > now or (at == now and strict):
                break
            pop(pending)
            row = rows.get(rid)
            if row is not None and row.stamp == stamp and row.table == table:
                k1, k2 = key(row)
                push(ready, (k1, k2, rid, stamp))
        if ix.lane:
            ix.promote_lane(now, rows, table, key)
        return ix

    def _take(self, table: str, now: float, n: int, keep: bool,
              accept: frozenset[str] | None = None) -> list[Row]:
        ready, rows = self._promote(table, now).ready, self.rows
        out: list[Row] = []
        taken: list[tuple[float, float, int, int]] = []
        passed: list[tuple[float, float, int, int]] = []
        queues: set[str] = set()
        pop = heapq.heappop
        skewed, expiry = self.skewed, self.expiry
        while ready and len(out) < n:
            entry = pop(ready)
            row = rows.get(entry[2])
            if row is None or row.stamp != entry[3] or row.table != table:
                continue
            if skewed and not row.eligible(now, expiry):
                passed.append(entry)  # eligible by another node's clock, not yet by this one's
                continue
            if accept is not None and row.handler not in accept:
                passed.append(entry)  # another node's task: it stays for them
                continue
            if row.queue is not None:
                if row.queue in queues or self.queue_busy(row.queue, now):
                    # its queue runs another task: it waits its turn, set aside
                    heapq.heappush(self._parked.setdefault(row.queue, []), entry)
                    continue
                queues.add(row.queue)
            out.append(row)
            taken.append(entry)
        for entry in passed:
            heapq.heappush(ready, entry)
        if keep:
            for entry in taken:
                heapq.heappush(ready, entry)
        return out

    # --- serial queues ----------------------------------------------------------------------

    def _unpark(self, now: float) -> None:
        """Put back the set-aside rows of every serial queue that is no longer busy."""
        for q in [q for q in self._parked if not self.queue_busy(q, now)]:
            for entry in self._parked.pop(q):
                row = self.rows.get(entry[2])
                if row is not None and row.stamp == entry[3] and row.table in ACQUIRABLE:
                    heapq.heappush(self._ix[row.table].ready, entry)

    def hand_over(self, queue: str, owner: str, now: float, lock_until: float,
                  held: Container[int] = ()) -> list[Locked]:
        """The serial queue's next waiting row, locked for ``owner`` (failsafe-executor's
        queue poller runs the queue's tasks one after another): [] if none is set aside.
        A row in ``held`` (a PostgreSQL row lock an open transaction holds: a claim that
        selected it) is that claim's: the hand-over would wait for it, find it taken on
        the re-check and lock nothing; if the claim rolls back, the row is still set aside
        for the next claim."""
        heap = self._parked.get(queue)
        accept = self.routes.get(owner)
        while heap:
            entry = heapq.heappop(heap)
            row = self.rows.get(entry[2])
            if row is None or row.stamp != entry[3] or row.table not in ACQUIRABLE:
                continue
            if accept is not None and row.handler not in accept or row.id in held:
                heapq.heappush(heap, entry)  # another node's task, or a claim's: left to
                break                        # the claims
            return self.lock([row.id], owner, now, lock_until, guard=True, table=row.table)
        if heap is not None and not heap:
            del self._parked[queue]
        return []

    def queue_busy(self, queue: str, now: float) -> bool:
        """Whether a row of the serial ``queue`` holds a lock (runs, or waits to) at ``now``."""
        rid = self._queue_holder.get(queue)
        row = self.rows.get(rid) if rid is not None else None
        return row is not None and row.table in ACQUIRABLE and row.queue == queue and \
            row.locked_by is not None and (row.lock_until >= now or not self.expiry)

    # --- reads of the indexes ---------------------------------------------------------------

    def select(self, now: float, n: int, table: str = JOB,
               who: str | None = None) -> list[tuple[int, int]]:
        """``SELECT id, version … WHERE due <= now AND (unlocked OR expired) [AND handler IN
        (the tasks ``who`` registered)] ORDER BY … LIMIT n``."""
        accept = self.routes.get(who) if who is not None and self.routes else None
        return [(r.id, r.version) for r in self._take(table, now, n, keep=True, accept=accept)]

    def next_eligible(self, now: float, table: str = JOB) -> float | None:
        """When the next row may become eligible: ``now`` if one is already, else the
        earliest ``max(due, lock_until)`` in the table (a strict one counts as just after
        it), or ``None`` if the table holds nothing acquirable."""
        ix = self._promote(table, now)
        soonest = math.inf
        if self._parked:
            for q in self._parked:  # a busy queue frees when its holder's lock expires
                holder = self.rows.get(self._queue_holder.get(q, -1))
                if holder is not None and self.expiry and holder.lock_until < math.inf:
                    soonest = min(soonest, math.nextafter(holder.lock_until, math.inf))
        while ix.ready:
            e = ix.ready[0]
            if self._valid(e[2], e[3], table) is not None:
                return now
            heapq.heappop(ix.ready)
        return _next_pending(ix, self.rows, table, soonest)

    def next_after_claim(self, owner: str, now: float, table: str = JOB) -> float | None:
        """``next_eligible`` right after ``owner``'s claim at ``now`` got fewer rows than it
        asked for, or ``None`` if that is not before ``horizon`` (the run's end: a sleep
        aims at nothing there either way). On the claim's plain path that claim emptied
        ``ready`` and promoted everything due, so only ``pending`` is left to read."""
        if self._general or self._parked or (self.routes and owner in self.routes):
            soonest = self.next_eligible(now, table)
        else:
            soonest = _next_pending(self._ix[table], self.rows, table)
        return None if soonest is None or soonest >= self.horizon else soonest

    def expired(self, now: float, n: int) -> list[int]:
        """``SELECT id … WHERE lock_until < now LIMIT n`` over the locked rows of every
        acquirable table (the reset thread's query; ``lock_expiry: reset`` only), oldest
        lock first. Rows stay locked until a write unlocks them."""
        leases, rows = self._leases, self.rows
        out: list[int] = []
        keep: list[tuple[float, int, int]] = []
        while leases and len(out) < n:
            entry = leases[0]
            if entry[0] >= now:
                break
            heapq.heappop(leases)
            row = rows.get(entry[1])
            if row is None or row.stamp != entry[2] or row.locked_by is None:
                continue
            out.append(row.id)
            keep.append(entry)
        for entry in keep:
            heapq.heappush(leases, entry)
        return out
