"""Transactions on the PostgreSQL and SQLite models: BEGIN, the statements, COMMIT.

Every statement takes its latency from the database's model; a transaction holds one
connection from the pool from BEGIN to COMMIT. ``hold``, when given, keeps the transaction
open after its statements until the event fires with ``"commit"`` or ``"rollback"`` — the
two-session interleavings of the tests are written with it. Row locks held by open
transactions (PostgreSQL) are kept in the database's ``row_locks``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from .claims import Attempt
from .measured import serve

if TYPE_CHECKING:
    from .db import Database


class SerializationFailure(Exception):
    """SQLSTATE 40001: could not serialize access due to concurrent update."""


class Txn:
    """An open transaction: its row locks (PostgreSQL) and the event of its end (made
    when a statement first waits for it: most transactions end with nobody waiting)."""

    __slots__ = ("start", "_env", "_end", "committed", "rows", "conn")

    def __init__(self, env: simpy.Environment):
        self._env = env
        self.start = env._now  # type: ignore[attr-defined]
        self._end: simpy.Event | None = None
        self.committed = False
        self.rows: list[int] = []
        self.conn: Any = None

    @property
    def end(self) -> simpy.Event:
        if self._end is None:
            self._end = self._env.event()
        return self._end


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
    end = txn._end
    if end is not None and not end.triggered:
        end.succeed(commit)


def _statement(db: "Database", me: str, kind: str = "update",
               changes: bool = True, part: str = "all") -> Generator[Any, Any, float]:
    """One statement's latency (counted); a node cut off from the database waits its
    partition's timeout and gets ``StatementFailed`` (the transaction then rolls back). A
    claim statement on a measured database or a CPU takes ``serve``'s time for ``kind``."""
    db.statements += 1
    yield from db.refuse_if_cut(me)
    if db.timed:
        return (yield from serve(db, me, kind, changes, part))
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
