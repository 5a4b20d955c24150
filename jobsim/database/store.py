"""The jobs tables and their statement semantics — pure: no time source, no SimPy.

A row is a job; a table is a state (Flowable's way): ``job`` holds what may run,
``timer_job`` timers not yet moved, ``deadletter_job`` what ran out of retries. Every method
takes the instant ``now`` at which its statement applies; the ``db`` module decides when that
is. Each write bumps the row's ``version``, which never goes down.

``Store`` holds the rows and writes them; the indexes that answer its polls (the pending and
ready heaps, the order of acquisition) are its base class, in ``indexes``. The rows and the
tables' names are in ``rows`` and are imported from here too.
"""

from __future__ import annotations

import heapq
import math

from .indexes import Indexes
from .rows import (ACQUIRABLE, DEADLETTER, FAILED, INCIDENT, JOB, LOCK_EXPIRY, ORDERS,
                   SUSPENDED, TABLES, TIMER, Locked, Row)

__all__ = ["ACQUIRABLE", "DEADLETTER", "FAILED", "INCIDENT", "JOB", "LOCK_EXPIRY", "ORDERS",
           "SUSPENDED", "TABLES", "TIMER", "Locked", "Row", "Store"]


new_tuple = tuple.__new__


class Store(Indexes):
    """The tables, their rows and indexes.

    ``order`` is the ORDER BY of acquisition: ``id`` (database/insertion order, Flowable),
    ``due``, ``created``, ``priority`` (highest first, then due) or ``aging`` (highest
    ``priority + aging_rate × age`` first, the age counted from the due time or, with
    ``aging_from: created``, from creation; kept as the static key ``priority − rate × since``).
    """

    def __init__(self, order: str = "id", aging_rate: float = 0.0, lock_expiry: str = "claim",
                 count_at_fetch: bool = False, aging_from: str = "due"):
        super().__init__(order, aging_rate, lock_expiry, count_at_fetch, aging_from)
        #: an execution is counted when its row is claimed (Oban, River), not when it fails
        self.count_at_fetch = count_at_fetch
        self.rows: dict[int, Row] = {}
        self._count = {t: 0 for t in TABLES}
        #: rows of each table with a lock set (valid or expired): the rows a claim's index
        #: scan passes before it finds free ones (``database/cpu.py``)
        self._held = {t: 0 for t in TABLES}
        #: node -> the task names (handlers) it registered; a node not here takes any task
        self.routes: dict[str, frozenset[str]] = {}

    # --- reads ------------------------------------------------------------------------------

    def get(self, rid: int) -> Row | None:
        return self.rows.get(rid)

    def count(self, table: str) -> int:
        return self._count[table]

    def in_table(self, table: str) -> list[Row]:
        """Rows of a table in id order (for end-of-run reports, not for polls)."""
        return in_table(self, table)

    def held(self, table: str = JOB) -> int:  # rows of ``table`` locked (valid or expired)
        return self._held[table]

    # --- writes -----------------------------------------------------------------------------

    def insert(self, row: Row, table: str = JOB, owner: str | None = None,
               lock_until: float = -math.inf) -> None:
        """``INSERT``; optionally already locked by ``owner`` (Flowable's hint path): with
        attempts counted at fetch, that is the row's first fetch, counted as a claim's is."""
        if row.id in self.rows:
            raise ValueError(f"duplicate job id {row.id}")
        row.table = table
        row.locked_by = owner
        row.lock_until = lock_until if owner is not None else -math.inf
        if owner is not None:
            self._held[table] += 1
            _count_fetch(self, row)
        if row.queue is not None:
            self.has_queues = self._general = True
            if owner is not None:
                self._queue_holder[row.queue] = row.id
        self.rows[row.id] = row
        self._count[table] += 1
        self._reindex(row, row.created)

    def insert_new(self, row: Row) -> None:
        """``insert`` of a new row as ``Row()`` makes it — in the job table, unlocked, in no
        serial queue — without the general case's steps (a stream's plain insert)."""
        rows = self.rows
        if row.id in rows:
            raise ValueError(f"duplicate job id {row.id}")
        rows[row.id] = row
        self._count[JOB] += 1
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
        strict, horizon, took = 1, self.horizon, 0
        expiring = ix.expiries(lock_until)  # where every lock's entry goes
        while ready and len(out) < n:
            _, _, rid, stamp = pop(ready)
            row = rows.get(rid)
            if row is None or row.stamp != stamp or row.table != table:
                continue
            # Locked(rid, row.locked_by, False, lock_until, row.handler, row.kind), made
            # without the named tuple's Python-level constructor
            row.fetched += 1  # the lock's generation: the run's fencing token
            out.append(new_tuple(Locked, (rid, row.locked_by, False, lock_until, row.handler,
                                          row.kind, row.fetched)))
            if row.locked_by is None:
                took += 1
            row.locked_by, row.lock_until = owner, lock_until
            row.version += 1
            # re-index inline (the hot path of every poll): eligible again at lock expiry
            self._stamp += 1
            row.stamp = self._stamp
            if lock_until >= row.due:
                if lock_until < horizon:
                    expiring((lock_until, strict, rid, row.stamp))
            elif row.due < horizon:
                push(pending, (row.due, 0, rid, row.stamp))
        self._held[table] += took
        return out

    def lock(self, ids: list[int], owner: str, now: float, lock_until: float,
             guard: bool = True, versions: dict[int, int] | None = None,
             table: str = JOB) -> list[Locked]:
        """``UPDATE … SET locked_by, lock_until WHERE id IN (ids)`` [AND guard]
        [AND version = ?]. Rows gone, moved, or failing the guard or version are skipped."""
        out = []
        rows, expiry, take = self.rows, self.expiry, self._take_lock
        for rid in ids:
            row = rows.get(rid)
            if row is None or row.table != table:
                continue
            if guard and not row.eligible(now, expiry):
                continue
            if versions is not None and row.version != versions[rid]:
                continue
            previous = row.locked_by  # held, unexpired (``lock_valid``), by another?
            valid = previous is not None and row.lock_until >= now and previous != owner
            take(row, owner, lock_until)
            out.append(new_tuple(Locked, (rid, previous, valid, lock_until, row.handler,
                                          row.kind, row.fetched)))
        return out

    def _take_lock(self, row: Row, owner: str, lock_until: float) -> None:
        if row.locked_by is None:
            self._held[row.table] += 1
        row.locked_by, row.lock_until = owner, lock_until
        row.version += 1
        if row.queue is not None:
            self._queue_holder[row.queue] = row.id
        _count_fetch(self, row)
        self._reindex(row)

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
        self._held[row.table] -= 1
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
        if row.locked_by is not None:
            self._held[row.table] -= 1
        self._stamp += 1
        row.stamp = self._stamp
        return True

    def _retable(self, row: Row, table: str) -> None:
        """Move ``row`` to ``table``, unlocked, keeping the per-table counts."""
        self._count[row.table] -= 1
        self._count[table] += 1
        if row.locked_by is not None:
            self._held[row.table] -= 1
        row.table = table
        row.locked_by, row.lock_until = None, -math.inf

    def reschedule(self, rid: int, due: float, retries: int, error: str,
                   owner: str | None = None, table: str = JOB,
                   delay: float | None = None) -> bool:
        """A failure with retries left: unlock, new due date, retries and error recorded,
        and the ``delay`` it waits (the next failure's decorrelated jitter grows from it)."""
        row = self.rows.get(rid)
        if row is None or row.table not in ACQUIRABLE:
            return False
        if owner is not None and row.locked_by != owner:
            return False
        self._retable(row, table)
        row.due, row.retries, row.error = due, retries, error
        row.failures += 1
        row.last_delay = delay
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
        self._retable(row, table)
        if error is not None:
            row.error = error
            row.failures += 1
        if retries is not None:
            row.retries = retries
        row.version += 1
        self._reindex(row)
        return True

    def remove(self, rid: int) -> bool:
        """Delete a row from whatever table holds it (cancel a failed job)."""
        row = self.rows.pop(rid, None)
        if row is None:
            return False
        self._count[row.table] -= 1
        if row.locked_by is not None:
            self._held[row.table] -= 1
        self._stamp += 1
        row.stamp = self._stamp
        return True

    def revive(self, rid: int, now: float, retries: int) -> bool:
        """A failed or dead-lettered row back to waiting, due now, with fresh retries."""
        row = self.rows.get(rid)
        if row is None or row.table in ACQUIRABLE:
            return False
        self._retable(row, JOB)
        row.due, row.retries, row.failures, row.last_delay = now, retries, 0, None
        row.version += 1
        self._reindex(row, now)
        return True


def _count_fetch(store: Store, row: Row) -> None:
    """A lock taken: the row's lock generation goes up (the fencing token its run holds);
    counted at fetch (Oban's ``attempt``), a lock taken on a job row uses an attempt."""
    row.fetched += 1
    if store.count_at_fetch and row.table == JOB:
        row.retries -= 1


def unlock_all(store: Store, table: str = JOB) -> list[int]:
    """Every locked row of ``table`` back to waiting, same id and retries (the Zeebe-like
    server's restart); the ids, in order."""
    ids = [rid for rid, r in sorted(store.rows.items())
           if r.table == table and r.locked_by is not None]
    for rid in ids:
        store.unlock(rid)
    return ids


def in_table(store: Store, table: str) -> list[Row]:
    """Rows of a table in id order (for end-of-run reports, not for polls)."""
    return [r for _, r in sorted(store.rows.items()) if r.table == table]
