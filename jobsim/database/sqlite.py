"""The claim strategies on SQLite: concurrent statements as SQLite runs them.

**SQLite (WAL).** One database-wide write lock. An autocommit write takes it (waiting in the
busy handler), then reads the newest state, so ``guarded_update`` and ``unguarded_update``
are the same and both safe. A plain SELECT takes no lock: ``read_then_write`` as two
autocommit statements double-acquires. Inside ``BEGIN DEFERRED`` the UPDATE cannot wait to
upgrade: SQLITE_BUSY at once if another connection holds the write lock, SQLITE_BUSY_SNAPSHOT
if anything committed since its SELECT. ``BEGIN IMMEDIATE`` takes the lock first: serial.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from .claims import Attempt
from .cpu import BUSY_SLEEPS
from .measured import think
from .postgres import pg_select
from .rows import JOB
from .transactions import _finish, _hold, _open, _statement

if TYPE_CHECKING:
    from .db import Database


def _write_lock(db: "Database") -> Generator[Any, Any, Any]:
    lock = db.write_lock
    if db.busy_sleep:  # SQLite's busy handler: sleep, try again, sleep longer
        tries = 0
        while lock.count or lock.queue:
            yield db.env.timeout(BUSY_SLEEPS[min(tries, len(BUSY_SLEEPS) - 1)])
            tries += 1
    req = lock.request()
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
        if db.timed:
            yield from think(db, me, ids is None)
        req = yield from _write_lock(db)
    except BaseException:
        _finish(db, txn, False)
        raise
    att = Attempt(n)
    try:
        # under the write lock nothing moves: whether the UPDATE will write a row is known
        changes = not db.timed or versions is None or any(
            (r := store.get(rid)) is not None and r.version == v for rid, v in versions.items())
        att.latency += yield from _statement(db, me, "update", changes)
        att.statements += 1
        commit = yield from _hold(hold)
        if commit and all_or_nothing and any(
                (r := store.get(rid)) is None or r.table != table or r.version != v
                for rid, v in versions.items()):
            att.lost, att.errors, att.error = len(versions), 1, "optimistic_lock"
            return att
        if commit:
            now = db.now_of(me, env.now)
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
        if db.timed:
            yield from think(db, me, True)
        if begin == "immediate":
            req = yield from _write_lock(db)
        snapshot = db.commits
        seen = store.select(db.now_of(me, env.now), n, table, who=me)
        lat = yield from _statement(db, me, "select")
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
        if db.timed:
            yield from think(db, me, False)
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
            now = db.now_of(me, env.now)
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
