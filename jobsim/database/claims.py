"""Acquisition strategies: the statements a node issues to claim jobs.

Each strategy is a generator over ``Database.run`` and returns an ``Attempt``. The SQL each
stands for is in ``sql.SQL``; traces and docs show it.

Under the ``atomic`` dialect:

- ``guarded_update`` — one statement; the guard is re-checked at the instant it applies, so a
  job can never be acquired twice while its lock is valid;
- ``unguarded_update`` — one statement whose subquery and update apply at the same instant,
  so under ``atomic`` it is as safe as the guarded one (as on SQLite); it double-acquires on
  a database whose statements overlap (PostgreSQL, a later dialect);
- ``read_then_write`` — a SELECT, then an UPDATE by id with no guard: when another node's
  statement commits between the two, both nodes hold the job (a double acquisition);
- ``optimistic`` — a SELECT of ids and versions, then one ``UPDATE … WHERE version = ?`` per
  row: a row whose version moved is a lost race, never a double acquisition;
- ``optimistic_batch`` — Flowable's: the same updates flushed in one transaction, where a
  single row whose version moved (``FlowableOptimisticLockingException``) rolls the whole
  batch back: the attempt gets nothing and counts as an error;
- ``skip_locked`` — ``SELECT … FOR UPDATE SKIP LOCKED`` then the UPDATE, in one transaction.
  Under ``atomic`` no transaction is ever open while another statement runs, so there is
  nothing to skip and it is the guarded UPDATE; on PostgreSQL it skips rows other claims
  hold (``dialects``);
- ``broker`` — no SQL: the Zeebe-like server activates jobs itself.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

from .db import Database
from .sql import STRATEGY_SQL
from .store import JOB, Locked

SQL = {
    # the statements themselves are in ``sql`` (what ``jobsim race`` runs on real databases)
    "guarded_update": STRATEGY_SQL["guarded_update"],
    "unguarded_update": STRATEGY_SQL["unguarded_update"],
    "read_then_write": STRATEGY_SQL["read_then_write"],
    "skip_locked": STRATEGY_SQL["skip_locked"],
    "optimistic": STRATEGY_SQL["optimistic"],
    "optimistic_batch": (
        "SELECT RES.* FROM ACT_RU_JOB RES WHERE LOCK_EXP_TIME_ is null LIMIT :n; then, in the "
        "same transaction, per row: update ACT_RU_JOB SET REV_ = :rev + 1, LOCK_EXP_TIME_ = "
        ":now + :lock_time, LOCK_OWNER_ = :me where ID_ = :id and REV_ = :rev; one 0-row "
        "update rolls back the whole transaction"),
}
SQL["broker"] = ("(no SQL: the server activates jobs itself, one at a time, and an "
                 "activated job never expires)")
STRATEGIES = tuple(SQL)


class Attempt:
    """One acquisition attempt: rows asked, rows locked (with what they overwrote), races
    lost, statements issued and their summed latency."""

    __slots__ = ("asked", "locked", "lost", "statements", "latency", "errors", "error")

    def __init__(self, asked: int, locked: list[Locked] | None = None, lost: int = 0,
                 statements: int = 0, latency: float = 0.0, errors: int = 0):
        self.asked = asked
        self.locked = [] if locked is None else locked
        self.lost = lost
        self.statements = statements
        self.latency = latency
        #: serialization failures (PostgreSQL 40001) or SQLITE_BUSY: the node tries again
        self.errors = errors
        #: the last error's name: "40001", "SQLITE_BUSY" or "SQLITE_BUSY_SNAPSHOT"
        self.error: str | None = None


Gen = Generator[Any, Any, Attempt]


def guarded_update(db: Database, me: str, n: int, lock_time: float, table: str = JOB) -> Gen:
    store = db.store
    locked, lat = yield from db.run(
        me, lambda now: db.locked(me, store.claim(me, now, n, now + lock_time, table)))
    return Attempt(n, locked, 0, 1, lat)


def guarded_update_now(db: Database, me: str, n: int, lock_time: float,
                       table: str = JOB) -> list[Locked]:
    """``guarded_update`` on an instant database, without the generator machinery: the
    rows it locked (already reported through ``db.locked``)."""
    db.statements += 1
    now = db.env._now
    return db.locked(me, db.store.claim(me, now, n, now + lock_time, table))


def unguarded_update(db: Database, me: str, n: int, lock_time: float, table: str = JOB) -> Gen:
    store = db.store

    def apply(now: float) -> list[Locked]:
        ids = [rid for rid, _ in store.select(now, n, table, who=me)]
        return db.locked(me, store.lock(ids, me, now, now + lock_time, guard=False,
                                        table=table))

    locked, lat = yield from db.run(me, apply)
    return Attempt(n, locked, 0, 1, lat)


def read_then_write(db: Database, me: str, n: int, lock_time: float, table: str = JOB) -> Gen:
    store = db.store
    seen, lat1 = yield from db.run(me, lambda now: store.select(now, n, table, who=me))
    if not seen:
        return Attempt(n, [], 0, 1, lat1)
    ids = [rid for rid, _ in seen]
    locked, lat2 = yield from db.run(
        me, lambda now: db.locked(me, store.lock(ids, me, now, now + lock_time, guard=False,
                                                 table=table)))
    return Attempt(n, locked, len(ids) - len(locked), 2, lat1 + lat2)


def optimistic(db: Database, me: str, n: int, lock_time: float, table: str = JOB) -> Gen:
    store = db.store
    seen, lat = yield from db.run(me, lambda now: store.select(now, n, table, who=me))
    attempt = Attempt(n, [], 0, 1, lat)
    for rid, version in seen:
        got, l2 = yield from db.run(
            me, lambda now, rid=rid, version=version: db.locked(me, store.lock(
                [rid], me, now, now + lock_time, guard=False, versions={rid: version},
                table=table)))
        attempt.statements += 1
        attempt.latency += l2
        if got:
            attempt.locked.extend(got)
        else:
            attempt.lost += 1
    return attempt


def broker(db: Database, me: str, n: int, lock_time: float, table: str = JOB) -> Gen:
    """The Zeebe-like server activates up to ``n`` waiting jobs for the worker; an activated
    job stays the worker's until completed, failed or a server restart (its deadline is
    informational: the lock never expires)."""
    store = db.store
    finite = store.lock_expiry == "claim"  # real Zeebe: the job times out at its deadline
    locked, lat = yield from db.run(
        me, lambda now: db.locked(me, store.claim(me, now, n, now + lock_time if finite
                                                  else math.inf, table)))
    return Attempt(n, locked, 0, 1, lat)


def broker_now(db: Database, me: str, n: int, lock_time: float,
               table: str = JOB) -> list[Locked]:
    db.statements += 1
    store, now = db.store, db.env.now
    until = now + lock_time if store.lock_expiry == "claim" else math.inf
    return db.locked(me, store.claim(me, now, n, until, table))


def optimistic_batch(db: Database, me: str, n: int, lock_time: float,
                     table: str = JOB) -> Gen:
    store = db.store
    seen, lat = yield from db.run(me, lambda now: store.select(now, n, table, who=me))
    if not seen:
        return Attempt(n, [], 0, 1, lat)
    versions = dict(seen)

    def flush(now: float) -> list[Locked] | None:
        for rid, v in versions.items():
            row = store.get(rid)
            if row is None or row.table != table or row.version != v:
                return None  # FlowableOptimisticLockingException: roll it all back
        return db.locked(me, store.lock(list(versions), me, now, now + lock_time,
                                        guard=False, versions=versions, table=table))

    locked, lat2 = yield from db.run(me, flush, rows=list(versions))
    if locked is None:
        att = Attempt(n, [], len(versions), 2, lat + lat2, errors=1)
        att.error = "optimistic_lock"
        return att
    return Attempt(n, locked, 0, 2, lat + lat2)


#: single-statement strategies applied directly when the database is instant (hot path)
INSTANT = {"guarded_update": guarded_update_now, "skip_locked": guarded_update_now,
           "broker": broker_now}

ACQUIRE = {
    "broker": broker,
    "guarded_update": guarded_update,
    "skip_locked": guarded_update,
    "optimistic_batch": optimistic_batch,
    "unguarded_update": unguarded_update,
    "read_then_write": read_then_write,
    "optimistic": optimistic,
}
