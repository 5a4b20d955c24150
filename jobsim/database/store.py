"""The jobs tables and their statement semantics — pure: no time source, no SimPy.

A row is a job; a table is a state (Flowable's way): ``job`` holds what may run,
``timer_job`` timers not yet moved, ``deadletter_job`` what ran out of retries. Every method
takes the instant ``now`` at which its statement applies; the ``db`` module decides when that
is. Each write bumps the row's ``version``, which never goes down.

The question every poll asks — "the next ``n`` due, unlocked rows in order" — is answered from
two heaps per acquirable table, never by a scan:

- ``pending``: every row keyed by the instant it becomes eligible, ``max(due, lock_until)``
  (a lock is expired only when ``lock_until < now``, so lock-bound entries are strict);
- ``ready``: rows already eligible, keyed by the policy's order.

A query first promotes pending entries whose instant has come, then reads the top of
``ready``. Entries are invalidated lazily by a stamp (from one store-wide counter), so every change is O(log n).
"""

from __future__ import annotations

import heapq
import math
from typing import NamedTuple

JOB, TIMER, DEADLETTER, SUSPENDED = "job", "timer_job", "deadletter_job", "suspended_job"
INCIDENT, FAILED = "incident", "failed"
TABLES = (JOB, TIMER, DEADLETTER, SUSPENDED, INCIDENT, FAILED)
ACQUIRABLE = (JOB, TIMER)
ORDERS = ("id", "due", "created", "priority", "aging")
#: when an expired lock frees its row: ``claim`` — the next claim's WHERE treats it as free
#: (the lesson, failsafe-executor, Zeebe's job timeout); ``reset`` — only a reset thread
#: clears it (Flowable's ResetExpiredJobsRunnable, db-scheduler's dead-execution detection,
#: Oban's Lifeline), since the claim selects ``LOCK_EXP_TIME_ IS NULL``; ``never`` — nothing
#: does (the Zeebe-like server: the deadline is informational)
LOCK_EXPIRY = ("claim", "reset", "never")


class Row:
    """One job row. Columns as in Flowable's ACT_RU_JOB, plus what policies need."""

    __slots__ = ("id", "kind", "handler", "priority", "created", "due", "retries", "failures",
                 "locked_by", "lock_until", "version", "table", "error", "stamp", "queue",
                 "fetched")

    def __init__(self, id: int, kind: str, handler: str, priority: int, created: float,
                 due: float, retries: int, queue: str | None = None):
        self.id = id
        self.kind = kind
        self.handler = handler
        self.priority = priority
        self.created = created
        self.due = due
        self.retries = retries
        self.failures = 0
        self.locked_by: str | None = None
        self.lock_until = -math.inf
        self.version = 0
        self.table = JOB
        self.error: str | None = None
        self.stamp = 0
        #: a serial queue (failsafe-executor's registerQueue): one of its rows runs at a time
        self.queue = queue
        #: claims counted at fetch so far (Oban's ``attempt``, River's): it only goes up, so
        #: an execution's final write can tell its own fetch from a later one
        self.fetched = 0

    def lock_valid(self, now: float) -> bool:
        """True while a lock is held and has not expired (expired means ``lock_until < now``)."""
        return self.locked_by is not None and self.lock_until >= now

    def eligible(self, now: float, expiry: bool = True) -> bool:
        """The guard of every acquisition: due, and unlocked or (when expired locks free
        their row at the claim, ``expiry``) expired."""
        return self.due <= now and (self.locked_by is None or
                                    (expiry and self.lock_until < now))

    def __repr__(self) -> str:
        return (f"Row(id={self.id}, {self.table}, due={self.due}, locked_by={self.locked_by}, "
                f"lock_until={self.lock_until}, v={self.version}, retries={self.retries})")


class Locked(NamedTuple):
    """The outcome of locking one row: who held it before and whether that lock was valid."""

    id: int
    previous_owner: str | None
    previous_valid: bool
    lock_until: float
    handler: str
    kind: str
    #: the row's ``fetched`` after this lock (counted at fetch: the fetch it stands for)
    fetched: int = 0


class _Index:
    __slots__ = ("pending", "ready")

    def __init__(self) -> None:
        self.pending: list[tuple[float, int, int, int]] = []
        self.ready: list[tuple[float, float, int, int]] = []


class Store:
    """The tables, their rows and indexes.

    ``order`` is the ORDER BY of acquisition: ``id`` (database/insertion order, Flowable),
    ``due``, ``created``, ``priority`` (highest first, then due) or ``aging`` (highest
    ``priority + aging_rate × age`` first, kept as the static key ``priority − rate × created``).
    """

    def __init__(self, order: str = "id", aging_rate: float = 0.0, lock_expiry: str = "claim",
                 count_at_fetch: bool = False):
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS} (got {order!r})")
        if lock_expiry not in LOCK_EXPIRY:
            raise ValueError(f"lock_expiry must be one of {LOCK_EXPIRY} (got {lock_expiry!r})")
        self.order = order
        self.aging_rate = aging_rate
        self.lock_expiry = lock_expiry
        #: expired locks free their row at the next claim
        self.expiry = lock_expiry == "claim"
        #: an execution is counted when its row is claimed (Oban, River), not when it fails
        self.count_at_fetch = count_at_fetch
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
        self.rows: dict[int, Row] = {}
        self._ix = {t: _Index() for t in ACQUIRABLE}
        self._count = {t: 0 for t in TABLES}
        #: node -> the task names (handlers) it registered; a node not here takes any task
        self.routes: dict[str, frozenset[str]] = {}
        #: one counter for the whole store, so an id reused after a delete can never
        #: match an index entry left by the row that had it before
        self._stamp = 0

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
        return (-(row.priority - self.aging_rate * row.created), row.due)

    def _reindex(self, row: Row, now: float | None = None) -> None:
        """Give the row a new stamp (invalidating its old entries) and a new entry: in
        ``ready`` when it is already eligible at ``now`` (time never goes back, so it stays
        eligible until a write re-indexes it), else in ``pending``."""
        self._stamp += 1
        row.stamp = self._stamp
        ix = self._ix.get(row.table)
        if ix is None:
            return
        if row.locked_by is None and now is not None and row.due <= now:
            k1, k2 = self._key(row)
            heapq.heappush(ix.ready, (k1, k2, row.id, row.stamp))
            return
        if row.locked_by is not None and not self.expiry:
            # a lock only a reset (or nothing) clears: not eligible until a write unlocks it
            if self.lock_expiry == "reset":
                heapq.heappush(self._leases, (row.lock_until, row.id, row.stamp))
            return
        if row.locked_by is None:
            entry = (row.due, 0, row.id, row.stamp)
        elif row.lock_until >= row.due:
            entry = (row.lock_until, 1, row.id, row.stamp)
        else:
            entry = (row.due, 0, row.id, row.stamp)
        heapq.heappush(ix.pending, entry)

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
        return ix

    def _unpark(self, now: float) -> None:
        """Put back the set-aside rows of every serial queue that is no longer busy."""
        for q in [q for q in self._parked if not self.queue_busy(q, now)]:
            for entry in self._parked.pop(q):
                row = self.rows.get(entry[2])
                if row is not None and row.stamp == entry[3] and row.table in ACQUIRABLE:
                    heapq.heappush(self._ix[row.table].ready, entry)

    def hand_over(self, queue: str, owner: str, now: float,
                  lock_until: float) -> list[Locked]:
        """The serial queue's next waiting row, locked for ``owner`` (failsafe-executor's
        queue poller runs the queue's tasks one after another): [] if none is set aside."""
        heap = self._parked.get(queue)
        accept = self.routes.get(owner)
        while heap:
            entry = heapq.heappop(heap)
            row = self.rows.get(entry[2])
            if row is None or row.stamp != entry[3] or row.table not in ACQUIRABLE:
                continue
            if accept is not None and row.handler not in accept:
                heapq.heappush(heap, entry)  # another node's task: left for the claims
                break
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

    def _take(self, table: str, now: float, n: int, keep: bool,
              accept: frozenset[str] | None = None) -> list[Row]:
        ready, rows = self._promote(table, now).ready, self.rows
        out: list[Row] = []
        taken: list[tuple[float, float, int, int]] = []
        passed: list[tuple[float, float, int, int]] = []
        queues: set[str] = set()
        pop = heapq.heappop
        while ready and len(out) < n:
            entry = pop(ready)
            row = rows.get(entry[2])
            if row is None or row.stamp != entry[3] or row.table != table:
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

    # --- reads ------------------------------------------------------------------------------

    def get(self, rid: int) -> Row | None:
        return self.rows.get(rid)

    def count(self, table: str) -> int:
        return self._count[table]

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
        while ix.pending:
            at, strict, rid, stamp = ix.pending[0]
            if at == math.inf:
                break  # locked for good (a Zeebe-like activation): only a write frees it
            if self._valid(rid, stamp, table) is not None:
                at = math.nextafter(at, math.inf) if strict else at
                return at if at < soonest else soonest
            heapq.heappop(ix.pending)
        return None if soonest == math.inf else soonest

    # --- writes -----------------------------------------------------------------------------

    def insert(self, row: Row, table: str = JOB, owner: str | None = None,
               lock_until: float = -math.inf) -> None:
        """``INSERT``; optionally already locked by ``owner`` (Flowable's hint path)."""
        if row.id in self.rows:
            raise ValueError(f"duplicate job id {row.id}")
        row.table = table
        row.locked_by = owner
        row.lock_until = lock_until if owner is not None else -math.inf
        if row.queue is not None:
            self.has_queues = self._general = True
            if owner is not None:
                self._queue_holder[row.queue] = row.id
        self.rows[row.id] = row
        self._count[table] += 1
        self._reindex(row, row.created)

    def claim(self, owner: str, now: float, n: int, lock_until: float,
              table: str = JOB) -> list[Locked]:
        """The guarded UPDATE, applied at one instant: lock the next ``n`` eligible rows."""
        if self._general or (self.routes and owner in self.routes):
            # routing by task name, serial queues, attempts counted at fetch or locks only a
            # reset clears: the general path
            ids = [r.id for r in self._take(table, now, n, keep=True,
                                            accept=self.routes.get(owner))]
            return self.lock(ids, owner, now, lock_until, guard=True, table=table)
        ix = self._promote(table, now)
        ready, pending, rows = ix.ready, ix.pending, self.rows
        pop, push = heapq.heappop, heapq.heappush
        out: list[Locked] = []
        strict = 1
        while ready and len(out) < n:
            _, _, rid, stamp = pop(ready)
            row = rows.get(rid)
            if row is None or row.stamp != stamp or row.table != table:
                continue
            out.append(Locked(rid, row.locked_by, False, lock_until, row.handler, row.kind))
            row.locked_by, row.lock_until = owner, lock_until
            row.version += 1
            # re-index inline (the hot path of every poll): eligible again at lock expiry
            self._stamp += 1
            row.stamp = self._stamp
            if lock_until >= row.due:
                push(pending, (lock_until, strict, rid, row.stamp))
            else:
                push(pending, (row.due, 0, rid, row.stamp))
        return out

    def lock(self, ids: list[int], owner: str, now: float, lock_until: float,
             guard: bool = True, versions: dict[int, int] | None = None,
             table: str = JOB) -> list[Locked]:
        """``UPDATE … SET locked_by, lock_until WHERE id IN (ids)`` [AND guard]
        [AND version = ?]. Rows gone, moved, or failing the guard or version are skipped."""
        out = []
        for rid in ids:
            row = self.rows.get(rid)
            if row is None or row.table != table:
                continue
            if guard and not row.eligible(now, self.expiry):
                continue
            if versions is not None and row.version != versions[rid]:
                continue
            valid = row.lock_valid(now) and row.locked_by != owner
            previous = row.locked_by
            self._take_lock(row, owner, lock_until)
            out.append(Locked(rid, previous, valid, lock_until, row.handler, row.kind,
                              row.fetched))
        return out

    def _take_lock(self, row: Row, owner: str, lock_until: float) -> None:
        row.locked_by, row.lock_until = owner, lock_until
        row.version += 1
        if row.queue is not None:
            self._queue_holder[row.queue] = row.id
        if self.count_at_fetch and row.table == JOB:
            row.retries -= 1
            row.fetched += 1
        self._reindex(row)

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

    def extend(self, ids: list[int], owner: str, lock_until: float) -> list[int]:
        """The heartbeat: ``UPDATE … SET lock_until WHERE id IN (ids) AND locked_by = owner``."""
        out = []
        for rid in ids:
            row = self.rows.get(rid)
            if row is not None and row.locked_by == owner and row.table in ACQUIRABLE:
                row.lock_until = lock_until
                row.version += 1
                self._reindex(row)
                out.append(rid)
        return out

    def unlock(self, rid: int, owner: str | None = None) -> bool:
        """Clear the lock (queue full, reset of an expired lock); guarded by owner if given."""
        row = self.rows.get(rid)
        if row is None or row.locked_by is None or (owner is not None and row.locked_by != owner):
            return False
        row.locked_by, row.lock_until = None, -math.inf
        row.version += 1
        self._reindex(row)
        return True

    def delete(self, rid: int, owner: str | None = None, fetched: int | None = None) -> bool:
        """``DELETE FROM job WHERE id = ?`` [AND locked_by = owner] [AND fetched = ?]: a job
        done (by the execution of that fetch, when attempts are counted at fetch)."""
        row = self.rows.get(rid)
        if row is None or row.table not in ACQUIRABLE:
            return False
        if owner is not None and row.locked_by != owner:
            return False
        if fetched is not None and row.fetched != fetched:
            return False
        del self.rows[rid]
        self._count[row.table] -= 1
        self._stamp += 1
        row.stamp = self._stamp
        return True

    def reschedule(self, rid: int, due: float, retries: int, error: str,
                   owner: str | None = None, table: str = JOB) -> bool:
        """A failure with retries left: unlock, new due date, retries and error recorded."""
        row = self.rows.get(rid)
        if row is None or row.table not in ACQUIRABLE:
            return False
        if owner is not None and row.locked_by != owner:
            return False
        self._count[row.table] -= 1
        self._count[table] += 1
        row.table = table
        row.due, row.retries, row.error = due, retries, error
        row.failures += 1
        row.locked_by, row.lock_until = None, -math.inf
        row.version += 1
        self._reindex(row)
        return True

    def move(self, rid: int, table: str, error: str | None = None,
             owner: str | None = None, retries: int | None = None) -> bool:
        """Move a row to another table (dead letter, suspension, back to ``job``), unlocked."""
        row = self.rows.get(rid)
        if row is None or row.table == table:
            return False
        if owner is not None and row.locked_by != owner:
            return False
        self._count[row.table] -= 1
        self._count[table] += 1
        row.table = table
        if error is not None:
            row.error = error
            row.failures += 1
        if retries is not None:
            row.retries = retries
        row.locked_by, row.lock_until = None, -math.inf
        row.version += 1
        self._reindex(row)
        return True

    def remove(self, rid: int) -> bool:
        """Delete a row from whatever table holds it (cancel a failed job)."""
        row = self.rows.pop(rid, None)
        if row is None:
            return False
        self._count[row.table] -= 1
        self._stamp += 1
        row.stamp = self._stamp
        return True

    def revive(self, rid: int, now: float, retries: int) -> bool:
        """A failed or dead-lettered row back to waiting, due now, with fresh retries."""
        row = self.rows.get(rid)
        if row is None or row.table in ACQUIRABLE:
            return False
        self._count[row.table] -= 1
        self._count[JOB] += 1
        row.table, row.due, row.retries, row.failures = JOB, now, retries, 0
        row.locked_by, row.lock_until = None, -math.inf
        row.version += 1
        self._reindex(row, now)
        return True

    def unlock_all(self, table: str = JOB) -> list[int]:
        """Every locked row of ``table`` back to waiting, same id and retries (the Zeebe-like
        server's restart); the ids, in order."""
        ids = [rid for rid, r in sorted(self.rows.items())
               if r.table == table and r.locked_by is not None]
        for rid in ids:
            self.unlock(rid)
        return ids

    def in_table(self, table: str) -> list[Row]:
        """Rows of a table in id order (for end-of-run reports, not for polls)."""
        return [r for _, r in sorted(self.rows.items()) if r.table == table]
