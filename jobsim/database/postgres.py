"""The claim strategies on PostgreSQL: concurrent statements as PostgreSQL runs them.

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
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from .claims import Attempt
from .rows import JOB
from .db import StatementFailed, delay
from .measured import serve, think
from .transactions import (Gen, SerializationFailure, Txn, _finish, _hold, _lock_row, _open,
                           _statement, _wait_row)

if TYPE_CHECKING:
    from .db import Database


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
    # BEGIN, the row waits, the statement and the hold are written out for their common
    # case (no pool, no lock to wait for, not cut off, no hold): this is every poll's path
    txn = Txn(env) if db.pool is None else (yield from _open(db))
    timed, pre = db.timed, 0.0
    if timed:  # measured: the client's time, then the statement's way to the server
        yield from think(db, me, ids is None)
        try:
            pre = yield from _statement(db, me, "update", part="pre")
        except BaseException:
            _finish(db, txn, False)
            raise
        txn.start = env.now
    att = Attempt(n)
    att.latency = pre
    row_locks, cut = db.row_locks, db._cut
    strict = db.isolation != "read_committed"
    try:
        now = db.now_of(me, txn.start)  # now(), or the node's clock (``clocks``)
        if ids is None:
            seen = store.select(db.now_of(me, env._now), n, table, who=me)
            cands = [rid for rid, _ in seen]
            snap = dict(seen) if strict else None  # read only where a change is a failure
        else:
            cands = ids
        if timed:
            # measured: the statement's scan on its snapshot comes first, then it locks its
            # rows (waiting only for a lock still held, re-checking a row committed
            # meanwhile), then it writes what it locked: a loser's scan runs beside the
            # winner's, and it writes nothing
            att.latency += yield from serve(db, me, "update", part="scan")
        expiry = store.expiry
        got: list[int] = []
        for rid in cands:
            other = row_locks.get(rid) if row_locks else None
            waited = None if other is None or other is txn else \
                (yield from _wait_row(db, rid, txn))
            row = store.get(rid)
            if strict and snap is not None and (
                    row is None or row.version != snap.get(rid, row.version)) or \
                    strict and waited is not None and waited.committed:
                raise SerializationFailure
            if row is None or row.table != table:
                att.lost += 1 if ids is not None else 0
                continue
            if guard and not (row.due <= now and (row.locked_by is None or (
                    expiry and row.lock_until < now))):  # ``row.eligible``, written out
                continue  # EvalPlanQual: the outer WHERE fails on the newest version
            if versions is not None and row.version != versions[rid]:
                att.lost += 1
                continue
            row_locks[rid] = txn
            txn.rows.append(rid)
            got.append(rid)
        if timed:
            if got:
                att.latency += yield from serve(db, me, "update", part="write")
        elif me in cut:
            att.latency += yield from _statement(db, me)
        else:  # _statement: counted, its latency, and cut off while in flight?
            db.statements += 1
            lat = db.sample_latency(me)
            if lat > 0:
                yield delay(env, lat)
            if me in cut:
                raise StatementFailed(me)
            att.latency += lat
        att.statements += 1
        if all_or_nothing and att.lost:
            att.lost, att.errors, att.error = len(cands), 1, "optimistic_lock"
            _finish(db, txn, False)
            return att
        commit = True if hold is None else (yield from _hold(hold))
        if not commit:
            _finish(db, txn, False)
            return att
        att.locked = db.locked(me, store.lock(got, me, db.now_of(me, env.now), now + lock_time,
                                              guard=False, table=table))
        _finish(db, txn, True)
        if timed:  # committed: the answer's way back
            att.latency += yield from serve(db, me, "update", part="post")
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
        if not db.timed:
            seen = db.store.select(db.now_of(me, db.env.now), n, table, who=me)
            lat = yield from _statement(db, me, "select")
        else:  # the client's time, the way there, the snapshot, the scan, the way back
            yield from think(db, me, True)
            lat = yield from _statement(db, me, "select", part="pre")
            seen = db.store.select(db.now_of(me, db.env.now), n, table, who=me)
            lat += yield from serve(db, me, "select", part="scan")
            lat += yield from serve(db, me, "select", part="post")
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
    timed = db.timed
    try:
        if timed:  # the client's time, the way there; the snapshot once the server runs
            yield from think(db, me, True)
            att.latency += yield from _statement(db, me, "select", part="pre")
            txn.start = env.now
        skip = sum(1 for t in db.row_locks.values() if t is not txn)
        got = []
        for rid, _ in store.select(db.now_of(me, env.now), n + skip, table, who=me):
            if rid in db.row_locks:
                continue
            _lock_row(db, rid, txn)
            got.append(rid)
            if len(got) == n:
                break
        if timed:  # the SELECT … FOR UPDATE's scan, then its way back
            att.latency += yield from serve(db, me, "select", part="scan")
            att.latency += yield from serve(db, me, "select", part="post")
        else:
            att.latency += yield from _statement(db, me, "select")
        att.statements += 1
        if got:
            if timed:
                yield from think(db, me, False)
            att.latency += yield from _statement(db, me)  # the UPDATE and COMMIT
            att.statements += 1
        commit = yield from _hold(hold)
        if commit:
            att.locked = db.locked(me, store.lock(got, me, db.now_of(me, env.now),
                                                  db.now_of(me, txn.start) + lock_time,
                                                  guard=False, table=table))
        _finish(db, txn, commit)
        return att
    except BaseException:
        _finish(db, txn, False)
        raise
