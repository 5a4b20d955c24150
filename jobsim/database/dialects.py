"""How concurrent claims interact on a real database: PostgreSQL and SQLite.

The ``atomic`` dialect (``claims``) applies each statement at one instant. Real databases
overlap statements; what real PostgreSQL and SQLite do then, as documented and measured,
this module follows:

**PostgreSQL, READ COMMITTED.** A statement reads the snapshot taken at its start — the
committed rows at that instant — and takes row locks as it writes them, held until commit.
A writer that meets a row locked by an open transaction waits for it to end; if it
committed, only the *outer* WHERE is re-checked on the row's newest version (EvalPlanQual):
the subquery's candidate list is fixed, never recomputed and never refilled. So
``guarded_update`` is safe but all-or-nothing (a loser gets 0 rows), ``unguarded_update``
and ``read_then_write`` overwrite the winner's lock (double acquisitions), ``optimistic``
loses races (the version moved), and ``skip_locked`` skips rows locked by open
transactions and keeps pulling to its LIMIT: full, disjoint batches. Under REPEATABLE READ
or SERIALIZABLE a committed concurrent update of a target row is a serialization failure
(SQLSTATE 40001) instead of a re-check; the attempt gets nothing and the node tries again.
``now()`` is the transaction's start, so a claim's ``lock_until`` is its start plus the lock.

**SQLite (WAL).** One database-wide write lock. An autocommit write takes it (waiting in the
busy handler), then reads the newest state, so ``guarded_update`` and ``unguarded_update``
are the same and both safe. A plain SELECT takes no lock: ``read_then_write`` as two
autocommit statements double-acquires. Inside ``BEGIN DEFERRED`` the UPDATE cannot wait to
upgrade: SQLITE_BUSY at once if another connection holds the write lock, SQLITE_BUSY_SNAPSHOT
if anything committed since its SELECT. ``BEGIN IMMEDIATE`` takes the lock first: serial.

Every statement takes its latency from the database's model; a transaction holds one
connection from the pool from BEGIN to COMMIT. ``hold``, when given, keeps the transaction
open after its statements until the event fires with ``"commit"`` or ``"rollback"`` — the
two-session interleavings of db-semantics.md §3 are written with it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from .claims import Attempt
from .store import JOB

if TYPE_CHECKING:
    from .db import Database

ISOLATIONS = ("read_committed", "repeatable_read", "serializable")
SQLITE_BEGIN = ("autocommit", "deferred", "immediate")


class SerializationFailure(Exception):
    """SQLSTATE 40001: could not serialize access due to concurrent update."""


class Txn:
    """An open transaction: its row locks (PostgreSQL) and the event of its end."""

    __slots__ = ("start", "end", "committed", "rows", "conn")

    def __init__(self, env: simpy.Environment):
        self.start = env.now
        self.end = env.event()
        self.committed = False
        self.rows: list[int] = []
        self.conn: Any = None


Gen = Generator[Any, Any, Attempt]


def _open(db: "Database") -> Generator[Any, Any, Txn]:
    """BEGIN: take a connection from the pool (if bounded) for the whole transaction."""
    txn = Txn(db.env)
    if db.pool is not None:
        req = db.pool.request()
        try:
            yield req
        except BaseException:
            req.cancel()
            raise
        txn.conn = req
        txn.start = db.env.now
    return txn


def _finish(db: "Database", txn: Txn, commit: bool) -> None:
    """COMMIT or ROLLBACK: release the row locks and the connection, wake the waiters."""
    for rid in txn.rows:
        if db.row_locks.get(rid) is txn:
            del db.row_locks[rid]
    txn.committed = commit
    if commit and txn.rows:
        db.commits += 1
    if txn.conn is not None:
        db.pool.release(txn.conn)
        txn.conn = None
    if not txn.end.triggered:
        txn.end.succeed(commit)


def _statement(db: "Database", me: str) -> Generator[Any, Any, float]:
    """One statement's latency (counted); a node cut off from the database waits its
    partition's timeout and gets ``StatementFailed`` (the transaction then rolls back)."""
    db.statements += 1
    yield from db.refuse_if_cut(me)
    return (yield from db.transit(me))


def _wait_row(db: "Database", rid: int, txn: Txn) -> Generator[Any, Any, Txn | None]:
    """Wait while another open transaction holds ``rid``; the one waited for, or None."""
    waited = None
    while True:
        other = db.row_locks.get(rid)
        if other is None or other is txn:
            return waited
        waited = other
        yield other.end


def _lock_row(db: "Database", rid: int, txn: Txn) -> None:
    db.row_locks[rid] = txn
    txn.rows.append(rid)


def _hold(hold: simpy.Event | None) -> Generator[Any, Any, bool]:
    if hold is None:
        return True
    decision = yield hold
    return decision != "rollback"


# --- PostgreSQL ---------------------------------------------------------------------------

def pg_update(db: "Database", me: str, n: int, lock_time: float, *, guard: bool,
              ids: list[int] | None = None, versions: dict[int, int] | None = None,
              snap: dict[int, int] | None = None,
              hold: simpy.Event | None = None, table: str = JOB,
              all_or_nothing: bool = False) -> Gen:
    """``UPDATE … WHERE id IN (<candidates>) [AND guard] [AND version = v]`` as one
    statement; the candidates are the subquery on the statement's snapshot unless ``ids``
    are given (read-then-write, optimistic; ``snap`` then holds the versions they were read
    at). Under REPEATABLE READ and SERIALIZABLE a target row changed since the snapshot is a
    serialization failure. ``all_or_nothing`` (Flowable's flush of per-row optimistic
    updates): one row whose version moved rolls the whole transaction back."""
    env, store = db.env, db.store
    txn = yield from _open(db)
    att = Attempt(n)
    try:
        now = txn.start
        if ids is None:
            seen = store.select(env.now, n, table, who=me)
            cands = [rid for rid, _ in seen]
            snap = dict(seen)
        else:
            cands = ids
        strict = db.isolation != "read_committed"
        got: list[int] = []
        for rid in cands:
            waited = yield from _wait_row(db, rid, txn)
            row = store.get(rid)
            if strict and snap is not None and (
                    row is None or row.version != snap.get(rid, row.version)) or \
                    strict and waited is not None and waited.committed:
                raise SerializationFailure
            if row is None or row.table != table:
                att.lost += 1 if ids is not None else 0
                continue
            if guard and not row.eligible(now, store.expiry):
                continue  # EvalPlanQual: the outer WHERE fails on the newest version
            if versions is not None and row.version != versions[rid]:
                att.lost += 1
                continue
            _lock_row(db, rid, txn)
            got.append(rid)
        att.latency += yield from _statement(db, me)
        att.statements += 1
        if all_or_nothing and att.lost:
            att.lost, att.errors, att.error = len(cands), 1, "optimistic_lock"
            _finish(db, txn, False)
            return att
        commit = yield from _hold(hold)
        if not commit:
            _finish(db, txn, False)
            return att
        att.locked = db.locked(me, store.lock(got, me, env.now, now + lock_time, guard=False,
                                              table=table))
        _finish(db, txn, True)
        return att
    except SerializationFailure:
        att.errors += 1
        att.statements += 1
        db.statements += 1
        att.error = "40001"
        _finish(db, txn, False)
        return att
    except BaseException:
        _finish(db, txn, False)
        raise


def pg_select(db: "Database", me: str, n: int,
              table: str = JOB) -> Generator[Any, Any, tuple[list, float]]:
    """A plain SELECT: the snapshot at its start; no locks, never blocks."""
    txn = yield from _open(db)
    try:
        seen = db.store.select(db.env.now, n, table, who=me)
        lat = yield from _statement(db, me)
    finally:
        _finish(db, txn, False)
    return seen, lat


def pg_guarded(db, me, n, lock_time, hold=None, table=JOB):
    return (yield from pg_update(db, me, n, lock_time, guard=True, hold=hold, table=table))


def pg_unguarded(db, me, n, lock_time, hold=None, table=JOB):
    return (yield from pg_update(db, me, n, lock_time, guard=False, hold=hold, table=table))


def pg_read_then_write(db, me, n, lock_time, hold=None, table=JOB):
    seen, lat = yield from pg_select(db, me, n, table)
    if not seen:
        return Attempt(n, [], 0, 1, lat)
    att = yield from pg_update(db, me, n, lock_time, guard=False,
                               ids=[rid for rid, _ in seen], snap=dict(seen), hold=hold,
                               table=table)
    att.statements += 1
    att.latency += lat
    return att


def pg_optimistic_batch(db, me, n, lock_time, hold=None, table=JOB):
    """Flowable: a SELECT of ids and REV_, then at flush one ``UPDATE … WHERE ID_ = ? AND
    REV_ = ?`` per row in one transaction; a single 0-row update rolls it all back."""
    seen, lat = yield from pg_select(db, me, n, table)
    if not seen:
        return Attempt(n, [], 0, 1, lat)
    versions = dict(seen)
    att = yield from pg_update(db, me, n, lock_time, guard=False, ids=list(versions),
                               versions=versions, snap=versions, hold=hold, table=table,
                               all_or_nothing=True)
    att.statements += 1
    att.latency += lat
    return att


def pg_optimistic(db, me, n, lock_time, hold=None, table=JOB):
    seen, lat = yield from pg_select(db, me, n, table)
    total = Attempt(n, [], 0, 1, lat)
    for i, (rid, version) in enumerate(seen):
        one = yield from pg_update(db, me, 1, lock_time, guard=False, ids=[rid],
                                   versions={rid: version}, snap={rid: version},
                                   hold=hold if i == 0 else None, table=table)
        total.locked += one.locked
        total.lost += one.lost
        total.errors += one.errors
        total.error = one.error or total.error
        total.statements += one.statements
        total.latency += one.latency
    return total


def pg_skip_locked(db, me, n, lock_time, hold=None, table=JOB):
    """``SELECT … FOR UPDATE SKIP LOCKED LIMIT n`` then ``UPDATE … WHERE id = ANY(ids)`` in
    one transaction: rows locked by open transactions are skipped, the LIMIT keeps pulling."""
    env, store = db.env, db.store
    txn = yield from _open(db)
    att = Attempt(n)
    try:
        skip = sum(1 for t in db.row_locks.values() if t is not txn)
        got = []
        for rid, _ in store.select(env.now, n + skip, table, who=me):
            if rid in db.row_locks:
                continue
            _lock_row(db, rid, txn)
            got.append(rid)
            if len(got) == n:
                break
        att.latency += yield from _statement(db, me)  # the SELECT … FOR UPDATE
        att.statements += 1
        if got:
            att.latency += yield from _statement(db, me)  # the UPDATE and COMMIT
            att.statements += 1
        commit = yield from _hold(hold)
        if commit:
            att.locked = db.locked(me, store.lock(got, me, env.now, txn.start + lock_time,
                                                  guard=False, table=table))
        _finish(db, txn, commit)
        return att
    except BaseException:
        _finish(db, txn, False)
        raise


# --- SQLite -------------------------------------------------------------------------------

def _write_lock(db: "Database") -> Generator[Any, Any, Any]:
    req = db.write_lock.request()
    try:
        yield req  # the busy handler waits
    except BaseException:
        if req.triggered:
            db.write_lock.release(req)
        else:
            req.cancel()
        raise
    return req


def sq_write(db, me, n, lock_time, *, guard, ids=None, versions=None, hold=None, table=JOB,
             all_or_nothing=False):
    """An autocommit write: take the write lock, read the newest state, write, commit
    (``all_or_nothing``: one row whose version moved rolls the whole write back)."""
    env, store = db.env, db.store
    txn = yield from _open(db)
    try:
        req = yield from _write_lock(db)
    except BaseException:
        _finish(db, txn, False)
        raise
    att = Attempt(n)
    try:
        att.latency += yield from _statement(db, me)
        att.statements += 1
        commit = yield from _hold(hold)
        if commit and all_or_nothing and any(
                (r := store.get(rid)) is None or r.table != table or r.version != v
                for rid, v in versions.items()):
            att.lost, att.errors, att.error = len(versions), 1, "optimistic_lock"
            return att
        if commit:
            now = env.now
            if ids is None:
                ids = [rid for rid, _ in store.select(now, n, table, who=me)]
            before = len(ids)
            att.locked = db.locked(me, store.lock(ids, me, now, now + lock_time, guard=guard,
                                                  versions=versions, table=table))
            if versions is not None:
                att.lost += before - len(att.locked)
            db.commits += 1
        return att
    finally:
        db.write_lock.release(req)
        _finish(db, txn, False)


def sq_guarded(db, me, n, lock_time, hold=None, table=JOB):
    return (yield from sq_write(db, me, n, lock_time, guard=True, hold=hold, table=table))


def sq_unguarded(db, me, n, lock_time, hold=None, table=JOB):
    return (yield from sq_write(db, me, n, lock_time, guard=False, hold=hold, table=table))


def sq_read_then_write(db, me, n, lock_time, hold=None, table=JOB):
    env, store = db.env, db.store
    begin = db.sqlite_begin
    req = None
    txn = yield from _open(db)
    try:
        if begin == "immediate":
            req = yield from _write_lock(db)
        snapshot = db.commits
        seen = store.select(env.now, n, table, who=me)
        lat = yield from _statement(db, me)
        if not seen:
            return Attempt(n, [], 0, 1, lat)
        ids = [rid for rid, _ in seen]
        if begin == "autocommit":
            _finish(db, txn, False)  # the SELECT's own connection; the UPDATE takes one
            att = yield from sq_write(db, me, n, lock_time, guard=False, ids=ids, hold=hold,
                                      table=table)
            att.statements += 1
            att.latency += lat
            return att
        if begin == "deferred":
            if db.write_lock.count or db.commits != snapshot:  # no waiting to upgrade
                att = Attempt(n, [], 0, 1, lat, errors=1)
                att.error = "SQLITE_BUSY" if db.write_lock.count else "SQLITE_BUSY_SNAPSHOT"
                return att
            req = yield from _write_lock(db)
        lat += yield from _statement(db, me)
        commit = yield from _hold(hold)
        att = Attempt(n, [], 0, 2, lat)
        if commit:
            now = env.now
            att.locked = db.locked(me, store.lock(ids, me, now, now + lock_time, guard=False,
                                                  table=table))
            db.commits += 1
        return att
    finally:
        if req is not None:
            db.write_lock.release(req)
        _finish(db, txn, False)


def sq_optimistic_batch(db, me, n, lock_time, hold=None, table=JOB):
    seen, lat = yield from pg_select(db, me, n, table)  # a plain SELECT: no lock
    if not seen:
        return Attempt(n, [], 0, 1, lat)
    versions = dict(seen)
    att = yield from sq_write(db, me, n, lock_time, guard=False, ids=list(versions),
                              versions=versions, hold=hold, table=table, all_or_nothing=True)
    att.statements += 1
    att.latency += lat
    return att


def sq_optimistic(db, me, n, lock_time, hold=None, table=JOB):
    seen, lat = yield from pg_select(db, me, n, table)  # a plain SELECT: no lock either way
    total = Attempt(n, [], 0, 1, lat)
    for i, (rid, version) in enumerate(seen):
        one = yield from sq_write(db, me, 1, lock_time, guard=False, ids=[rid],
                                  versions={rid: version}, hold=hold if i == 0 else None,
                                  table=table)
        total.locked += one.locked
        total.lost += one.lost
        total.statements += one.statements
        total.latency += one.latency
    return total


STRATEGIES = {
    "postgres": {"guarded_update": pg_guarded, "unguarded_update": pg_unguarded,
                 "read_then_write": pg_read_then_write, "optimistic": pg_optimistic,
                 "optimistic_batch": pg_optimistic_batch, "skip_locked": pg_skip_locked},
    "sqlite": {"guarded_update": sq_guarded, "unguarded_update": sq_unguarded,
               "read_then_write": sq_read_then_write, "optimistic": sq_optimistic,
               "optimistic_batch": sq_optimistic_batch},
}
