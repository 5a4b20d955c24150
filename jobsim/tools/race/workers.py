"""One worker process of a real race: a claim attempt with the strategy's own SQL on SQLite
or PostgreSQL, the errors a worker retries, and the loop that records every attempt until
nothing claimable is left or a limit is reached.

Every statement is timed (``Clock``): its kind, when it started and ended on the wall clock
(``perf_counter``) and the worker's own CPU time spent inside it. The scheduler's account of
the worker (``/proc/self/schedstat`` on Linux: CPU time and time spent runnable but waiting
for a core) is read at the start and the end. A profile (``profile``) is drawn from these.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ...database.sql import POSTGRES, SQLITE
from .settings import RaceError
from .table import _connect

# a statement's kind, as recorded: what the profile measures
SELECT, UPDATE, BEGIN, COMMIT, UNCHANGED = 0, 1, 2, 3, 4
KINDS = ("select", "update", "begin", "commit", "update_unchanged")


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


def schedstat() -> tuple[float, float, int] | None:
    """(CPU seconds, seconds runnable but waiting for a core, time slices) of this process
    so far, from Linux's scheduler statistics; None where the system does not give them."""
    try:
        with open("/proc/self/schedstat") as f:
            cpu, wait, slices = f.read().split()[:3]
        return int(cpu) / 1e9, int(wait) / 1e9, int(slices)
    except (OSError, ValueError):
        return None


def machine_busy() -> float | None:
    """The CPU seconds every process of this machine has used so far (``/proc/stat``: user,
    nice, system, irq, softirq, steal), None where the system does not say."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        ticks = os.sysconf("SC_CLK_TCK")
        return sum(int(fields[i]) for i in (1, 2, 3, 6, 7, 8)) / ticks
    except (OSError, ValueError, IndexError):
        return None


class Clock:
    """The timed statements of one worker: ``(kind, start, end, cpu inside)`` each, in the
    order run, with the attempts' boundaries (the index of each attempt's first)."""

    __slots__ = ("conn", "stmts", "starts")

    def __init__(self, conn: Any):
        self.conn = conn
        self.stmts: list[tuple[int, float, float, float]] = []
        self.starts: list[int] = []

    def rows(self, kind: int, q: str, p: Any = None) -> list:
        """Run ``q`` and fetch all it returns (a SQLite statement runs as it is stepped, its
        autocommit ends when the last row is fetched: both inside the timing)."""
        c0, t0 = time.process_time(), time.perf_counter()
        rows = self.conn.execute(q, p).fetchall() if p is not None else \
            self.conn.execute(q).fetchall()
        t1, c1 = time.perf_counter(), time.process_time()
        self.stmts.append((kind, t0, t1, c1 - c0))
        return rows

    def count(self, kind: int, q: str, p: Any) -> int:
        """Run ``q``; the number of rows it changed."""
        c0, t0 = time.process_time(), time.perf_counter()
        n = self.conn.execute(q, p).rowcount
        t1, c1 = time.perf_counter(), time.process_time()
        self.stmts.append((kind, t0, t1, c1 - c0))
        return n

    def plain(self, kind: int, q: str) -> None:
        c0, t0 = time.process_time(), time.perf_counter()
        self.conn.execute(q)
        t1, c1 = time.perf_counter(), time.process_time()
        self.stmts.append((kind, t0, t1, c1 - c0))


def _optimistic(ck: Clock, sql: dict[str, str], p: dict[str, Any]) -> tuple[list[int], int]:
    """D: read ids and versions, then one version-checked UPDATE per row (autocommit);
    a row whose update count is 0 is a lost race."""
    got, lost = [], 0
    for rid, v in ck.rows(SELECT, sql["D_SEL"], p):
        if ck.count(UPDATE, sql["D_UPD"], {**p, "id": rid, "v": v}) == 1:
            got.append(rid)
        else:
            lost += 1
    return got, lost


def _ids_update(ck: Clock, me: str, ids: list[int]) -> list[int]:
    q = SQLITE["C_UPD"].replace("{ids}", ",".join("?" * len(ids)))
    q = q.replace(":me", "?").replace(":now", "?")
    return [r[0] for r in ck.rows(UPDATE, q, [me, time.time(), *ids])]


def _claim_sqlite(ck: Clock, strategy: str, me: str, n: int, begin: str
                  ) -> tuple[list[int], int]:
    """One attempt: (ids claimed, races lost)."""
    now = time.time()
    p = {"me": me, "now": now, "n": n}
    if strategy in ("guarded_update", "unguarded_update"):
        q = SQLITE["A" if strategy == "guarded_update" else "B"]
        return [r[0] for r in ck.rows(UPDATE, q, p)], 0
    if strategy == "optimistic":
        return _optimistic(ck, SQLITE, p)
    if strategy != "read_then_write":
        raise RaceError(f"SQLite has no {strategy} (FOR UPDATE SKIP LOCKED is PostgreSQL's)")
    if begin == "autocommit":
        ids = [r[0] for r in ck.rows(SELECT, SQLITE["C_SEL"], p)]
        return (_ids_update(ck, me, ids) if ids else []), 0
    ck.plain(BEGIN, "BEGIN IMMEDIATE" if begin == "immediate" else "BEGIN DEFERRED")
    try:
        ids = [r[0] for r in ck.rows(SELECT, SQLITE["C_SEL"], p)]
        rows = _ids_update(ck, me, ids) if ids else []
        ck.plain(COMMIT, "COMMIT")
        return rows, 0
    except Exception:
        ck.conn.execute("ROLLBACK")
        raise


def _claim_pg(ck: Clock, strategy: str, me: str, n: int, isolation: str
              ) -> tuple[list[int], int]:
    p = {"me": me, "n": n}
    if strategy == "guarded_update" and isolation != "read_committed":
        level = "REPEATABLE READ" if isolation == "repeatable_read" else "SERIALIZABLE"
        with ck.conn.transaction():
            ck.plain(BEGIN, f"SET TRANSACTION ISOLATION LEVEL {level}")
            return [r[0] for r in ck.rows(UPDATE, POSTGRES["A"], p)], 0
    if strategy in ("guarded_update", "unguarded_update"):
        q = POSTGRES["A" if strategy == "guarded_update" else "B"]
        return [r[0] for r in ck.rows(UPDATE, q, p)], 0
    if strategy == "read_then_write":
        ids = [r[0] for r in ck.rows(SELECT, POSTGRES["C_SEL"], p)]
        if not ids:
            return [], 0
        return [r[0] for r in ck.rows(UPDATE, POSTGRES["C_UPD"], {**p, "ids": ids})], 0
    if strategy == "optimistic":
        return _optimistic(ck, POSTGRES, p)
    if not ck.conn.autocommit:  # inside the caller's open transaction (two sessions)
        with ck.conn.transaction():
            return _skip_locked(ck, p), 0
    ck.plain(BEGIN, "BEGIN")  # a race's worker: BEGIN and COMMIT timed as statements
    try:
        rows = _skip_locked(ck, p)
        ck.plain(COMMIT, "COMMIT")
        return rows, 0
    except Exception:
        ck.conn.execute("ROLLBACK")
        raise


def _skip_locked(ck: Clock, p: dict[str, Any]) -> list[int]:
    ids = [r[0] for r in ck.rows(SELECT, POSTGRES["E_SEL"], p)]
    return [r[0] for r in ck.rows(UPDATE, POSTGRES["E_UPD"], {**p, "ids": ids})] if ids else []


def _prober(args: tuple) -> float:
    """A PostgreSQL connection's mean wall time of ``n`` no-op UPDATEs (a version that never
    matches), from ``start_at`` on: beside others, how fast a busy machine hands over."""
    target, n, start_at = args
    conn = _connect("postgres", target)
    try:
        while time.time() < start_at:
            time.sleep(0.0005)
        p = {"me": "probe", "n": 1, "id": 1, "v": -1}
        t0 = time.perf_counter()
        for _ in range(n):
            conn.execute(POSTGRES["D_UPD"], p)
        return (time.perf_counter() - t0) / n
    finally:
        conn.close()


def _worker(args: tuple) -> dict[str, Any]:
    (kind, target, strategy, me, n, isolation, begin, start_at, deadline,
     max_attempts, probe) = args
    conn = _connect(kind, target)
    ck = Clock(conn)
    records: list[tuple[list[int], int, str | None]] = []
    try:
        while time.time() < start_at:  # all workers start together
            time.sleep(0.0005)
        sched0, wall0, busy0 = schedstat(), time.perf_counter(), machine_busy()
        attempts = 0
        while time.time() < deadline and attempts < max_attempts:
            attempts += 1
            ck.starts.append(len(ck.stmts))
            try:
                if kind == "sqlite":
                    ids, lost = _claim_sqlite(ck, strategy, me, n, begin)
                else:
                    ids, lost = _claim_pg(ck, strategy, me, n, isolation)
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
        sched1, wall1, busy1 = schedstat(), time.perf_counter(), machine_busy()
        ck.starts.append(len(ck.stmts))  # the probe's statements: after the last attempt
        sql = SQLITE if kind == "sqlite" else POSTGRES
        p = {"me": me, "now": time.time(), "n": n, "id": 1, "v": -1}
        probe0 = schedstat(), machine_busy()
        for _ in range(probe):
            ck.count(UNCHANGED, sql["D_UPD"], p)
        probe1 = schedstat(), machine_busy()
    finally:
        conn.close()
    sched = None if sched0 is None or sched1 is None else \
        (sched1[0] - sched0[0], sched1[1] - sched0[1], wall1 - wall0)
    machine = None if busy0 is None or busy1 is None else busy1 - busy0
    # the probe's (machine CPU, this worker's CPU): what its no-op statements cost the cores
    probed = None if not probe or None in (*probe0, *probe1) else \
        (probe1[1] - probe0[1], probe1[0][0] - probe0[0][0])
    return {"me": me, "records": records, "stmts": ck.stmts, "starts": ck.starts,
            "sched": sched, "machine": machine, "probe": probed}
