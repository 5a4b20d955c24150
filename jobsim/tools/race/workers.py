"""One worker process of a real race: a claim attempt with the strategy's own SQL on SQLite
or PostgreSQL, the errors a worker retries, and the loop that records every attempt until
nothing claimable is left or a limit is reached.
"""

from __future__ import annotations

import time
from typing import Any

from ...database.sql import POSTGRES, SQLITE
from .settings import RaceError
from .table import _connect


def _error_kind(exc: Exception) -> str | None:
    text = str(exc)
    if getattr(exc, "sqlstate", None) == "40001" or "could not serialize" in text:
        return "40001"
    if getattr(exc, "sqlstate", None) == "40P01" or "deadlock detected" in text:
        # unguarded UPDATEs of overlapping rows in different orders: PostgreSQL breaks the
        # cycle by failing one; a worker retries, as it does on 40001
        return "40P01"
    if "database is locked" in text or "SQLITE_BUSY" in text:
        return "SQLITE_BUSY"
    if "snapshot" in text.lower():
        return "SQLITE_BUSY_SNAPSHOT"
    return None


def _optimistic(conn: Any, sql: dict[str, str], p: dict[str, Any]) -> tuple[list[int], int]:
    """D: read ids and versions, then one version-checked UPDATE per row (autocommit);
    a row whose update count is 0 is a lost race."""
    got, lost = [], 0
    for rid, v in conn.execute(sql["D_SEL"], p).fetchall():
        if conn.execute(sql["D_UPD"], {**p, "id": rid, "v": v}).rowcount == 1:
            got.append(rid)
        else:
            lost += 1
    return got, lost


def _claim_sqlite(conn: Any, strategy: str, me: str, n: int, begin: str
                  ) -> tuple[list[int], int]:
    """One attempt: (ids claimed, races lost)."""
    now = time.time()
    p = {"me": me, "now": now, "n": n}
    if strategy in ("guarded_update", "unguarded_update"):
        q = SQLITE["A" if strategy == "guarded_update" else "B"]
        return [r[0] for r in conn.execute(q, p).fetchall()], 0
    if strategy == "optimistic":
        return _optimistic(conn, SQLITE, p)
    if strategy != "read_then_write":
        raise RaceError(f"SQLite has no {strategy} (FOR UPDATE SKIP LOCKED is PostgreSQL's)")
    if begin == "autocommit":
        ids = [r[0] for r in conn.execute(SQLITE["C_SEL"], p).fetchall()]
        if not ids:
            return [], 0
        q = SQLITE["C_UPD"].replace("{ids}", ",".join("?" * len(ids)))
        q = q.replace(":me", "?").replace(":now", "?")
        rows = conn.execute(q, [me, time.time(), *ids]).fetchall()
        return [r[0] for r in rows], 0
    conn.execute("BEGIN IMMEDIATE" if begin == "immediate" else "BEGIN DEFERRED")
    try:
        ids = [r[0] for r in conn.execute(SQLITE["C_SEL"], p).fetchall()]
        rows = []
        if ids:
            q = SQLITE["C_UPD"].replace("{ids}", ",".join("?" * len(ids)))
            q = q.replace(":me", "?").replace(":now", "?")
            rows = conn.execute(q, [me, time.time(), *ids]).fetchall()
        conn.execute("COMMIT")
        return [r[0] for r in rows], 0
    except Exception:
        conn.execute("ROLLBACK")
        raise


def _claim_pg(conn: Any, strategy: str, me: str, n: int, isolation: str
              ) -> tuple[list[int], int]:
    p = {"me": me, "n": n}
    if strategy == "guarded_update" and isolation != "read_committed":
        level = "REPEATABLE READ" if isolation == "repeatable_read" else "SERIALIZABLE"
        with conn.transaction():
            conn.execute(f"SET TRANSACTION ISOLATION LEVEL {level}")
            return [r[0] for r in conn.execute(POSTGRES["A"], p).fetchall()], 0
    if strategy in ("guarded_update", "unguarded_update"):
        q = POSTGRES["A" if strategy == "guarded_update" else "B"]
        return [r[0] for r in conn.execute(q, p).fetchall()], 0
    if strategy == "read_then_write":
        ids = [r[0] for r in conn.execute(POSTGRES["C_SEL"], p).fetchall()]
        if not ids:
            return [], 0
        return [r[0] for r in conn.execute(POSTGRES["C_UPD"], {**p, "ids": ids}).fetchall()], 0
    if strategy == "optimistic":
        return _optimistic(conn, POSTGRES, p)
    with conn.transaction():
        ids = [r[0] for r in conn.execute(POSTGRES["E_SEL"], p).fetchall()]
        if not ids:
            return [], 0
        return [r[0] for r in conn.execute(POSTGRES["E_UPD"], {**p, "ids": ids}).fetchall()], 0


def _worker(args: tuple) -> dict[str, Any]:
    (kind, target, strategy, me, n, isolation, begin, start_at, deadline,
     max_attempts) = args
    conn = _connect(kind, target)
    records: list[tuple[list[int], int, str | None]] = []
    try:
        while time.time() < start_at:  # all workers start together
            time.sleep(0.0005)
        attempts = 0
        while time.time() < deadline and attempts < max_attempts:
            attempts += 1
            try:
                if kind == "sqlite":
                    ids, lost = _claim_sqlite(conn, strategy, me, n, begin)
                else:
                    ids, lost = _claim_pg(conn, strategy, me, n, isolation)
            except Exception as exc:  # a 40001 or SQLITE_BUSY: recorded, retried
                why = _error_kind(exc)
                if why is None:
                    raise
                records.append(([], 0, why))
                continue
            records.append((ids, lost, None))
            if not ids and not lost:
                if kind == "sqlite":
                    left = conn.execute(SQLITE["ANY_LEFT"], {"now": time.time()}).fetchone()[0]
                else:
                    left = conn.execute(POSTGRES["ANY_LEFT"]).fetchone()[0]
                if not left:
                    break
    finally:
        conn.close()
    return {"me": me, "records": records}

