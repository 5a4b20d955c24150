"""The model checked against real databases: K real worker processes racing to claim N due
jobs with a strategy's own SQL (``sql``), beside the simulator's prediction for the same
strategy, dialect, K and batch.

``race(db, strategy, workers, jobs, batch)`` loads N due jobs into a fresh table, starts the
workers together, and records every claim each makes: the rows it got, races lost (an
optimistic update that found its version moved), and errors (SQLSTATE 40001, a deadlock
40P01, SQLITE_BUSY, SQLITE_BUSY_SNAPSHOT), which the worker retries. A worker stops when nothing claimable is
left, or at a time or attempt limit. Two harness checks cannot be skipped: every job was
claimed, and the server's count of claims (the sum of the rows' versions, one per claim)
equals the workers' records.

``db`` is ``sqlite:PATH`` (Python's ``sqlite3``: WAL, a busy timeout) or a PostgreSQL DSN
(``postgresql://…``, with psycopg). Variants: ``isolation`` (PostgreSQL: read_committed,
repeatable_read, serializable) and ``begin`` (SQLite's read_then_write: autocommit,
deferred, immediate), as in a scenario's ``db:`` section.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .sql import POSTGRES, SQLITE

STRATEGIES = ("guarded_update", "unguarded_update", "read_then_write", "optimistic",
              "skip_locked")
ISOLATIONS = ("read_committed", "repeatable_read", "serializable")
BEGINS = ("autocommit", "deferred", "immediate")


class RaceError(Exception):
    """Bad input, an unreachable database, or a failed harness check."""


@dataclass
class Outcome:
    """What one race (real or simulated) showed."""

    source: str  # "real" or "simulated"
    jobs: int
    workers: int
    batch: int
    attempts: int = 0
    claims: int = 0  # rows claimed, a job claimed twice counts twice
    jobs_claimed: int = 0
    doubled_jobs: int = 0  # jobs claimed by more than one claim
    extra_claims: int = 0  # claims beyond the first of a job
    lost_races: int = 0
    errors: int = 0
    empty: int = 0
    partial: int = 0
    full: int = 0
    seconds: float = float("nan")
    error_kinds: dict[str, int] = field(default_factory=dict)

    @property
    def double_share(self) -> float:
        """Share of the jobs claimed more than once."""
        return self.doubled_jobs / self.jobs if self.jobs else 0.0

    @property
    def per_second(self) -> float:
        return self.claims / self.seconds if self.seconds and self.seconds > 0 else math.nan

    def row(self) -> dict[str, Any]:
        a = max(self.attempts, 1)
        return {"double acquisitions (jobs)": self.doubled_jobs,
                "share of jobs claimed twice or more": round(self.double_share, 4),
                "extra claims": self.extra_claims, "lost races": self.lost_races,
                "errors (40001 / BUSY)": self.errors, "attempts": self.attempts,
                "empty attempts": round(self.empty / a, 4),
                "partial batches": round(self.partial / a, 4),
                "full batches": round(self.full / a, 4),
                "jobs claimed": self.jobs_claimed,
                "claims per second": round(self.per_second, 1)}


def _parse_db(db: str) -> tuple[str, str]:
    if db.startswith("sqlite:"):
        path = db[len("sqlite:"):]
        if not path:
            raise RaceError("--db sqlite:PATH needs a file path (got 'sqlite:')")
        return "sqlite", path
    if db.startswith(("postgresql://", "postgres://")) or "dbname=" in db:
        return "postgres", db
    raise RaceError(f"--db: expected sqlite:PATH or a postgresql:// DSN (got {db!r})")


# --- the table ----------------------------------------------------------------------------

def _connect(kind: str, target: str, autocommit: bool = True) -> Any:
    if kind == "sqlite":
        import sqlite3

        try:
            conn = sqlite3.connect(target, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
        except sqlite3.Error as exc:
            raise RaceError(f"cannot open the SQLite database {target}: {exc}") from exc
        return conn
    try:
        import psycopg
    except ImportError as exc:
        raise RaceError("PostgreSQL needs psycopg: pip install 'psycopg[binary]'") from exc
    try:
        return psycopg.connect(target, autocommit=autocommit, connect_timeout=10)
    except psycopg.Error as exc:
        raise RaceError(f"cannot connect to PostgreSQL: {str(exc).strip()}") from exc


def load(kind: str, target: str, jobs: int, distinct: bool = False) -> None:
    """A fresh ``job`` table with ``jobs`` due rows: priorities in 7 classes, so that the
    order ``priority DESC, id`` interleaves them, or (``distinct``) all different and falling
    with the id, so that the top 10 are ids 1..10 (the two-session table of §3)."""
    prio = "(1000000 - i)" if distinct else "(i %% 7)"
    conn = _connect(kind, target)
    try:
        _refuse_foreign_table(kind, conn)
        if kind == "sqlite":
            conn.execute("DROP TABLE IF EXISTS job")
            conn.execute("CREATE TABLE job (id INTEGER PRIMARY KEY, priority INTEGER NOT NULL,"
                         " due REAL NOT NULL, locked_by TEXT, lock_until REAL,"
                         " version INTEGER NOT NULL DEFAULT 0)")
            now = time.time() - 1.0
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO job (id, priority, due) VALUES (?, ?, ?)",
                             [(i, 1_000_000 - i if distinct else i % 7, now)
                              for i in range(1, jobs + 1)])
            conn.execute("COMMIT")
            conn.execute("CREATE INDEX job_order ON job (priority DESC, id)")
            conn.execute("CREATE TABLE IF NOT EXISTS jobsim_race (made_by TEXT)")
        else:
            conn.execute("DROP TABLE IF EXISTS job")
            conn.execute("CREATE TABLE job (id BIGINT PRIMARY KEY, priority INT NOT NULL,"
                         " due TIMESTAMPTZ NOT NULL, locked_by TEXT, lock_until TIMESTAMPTZ,"
                         " version INT NOT NULL DEFAULT 0)")
            conn.execute(f"INSERT INTO job (id, priority, due) SELECT i, {prio}, "
                         "now() - interval '1 second' FROM generate_series(1, %s) i",
                         (jobs,))
            conn.execute("CREATE INDEX job_order ON job (priority DESC, id)")
            conn.execute("CREATE TABLE IF NOT EXISTS jobsim_race (made_by TEXT)")
            conn.execute("ANALYZE job")
    except RaceError:
        raise
    except Exception as exc:  # sqlite3.Error, psycopg.Error: reported, not a traceback
        raise RaceError(f"cannot load the jobs table: {str(exc).strip()}") from exc
    finally:
        conn.close()


def _refuse_foreign_table(kind: str, conn: Any) -> None:
    """The race drops and re-creates the table ``job``: only one it made itself."""
    if kind == "sqlite":
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    else:
        names = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema()")}
    if "job" in names and "jobsim_race" not in names:
        raise RaceError("the database has a table 'job' that jobsim race did not create; "
                        "race on an empty database (the race drops and re-creates it)")


# --- a worker -----------------------------------------------------------------------------

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


# --- the race -------------------------------------------------------------------------------

def race(db: str, strategy: str, workers: int, jobs: int, batch: int = 10,
         isolation: str = "read_committed", begin: str = "autocommit",
         time_limit: float = 120.0, max_attempts: int = 1_000_000) -> Outcome:
    """One real race; raises ``RaceError`` on bad input or a failed harness check."""
    kind, target = _parse_db(db)
    if strategy not in STRATEGIES:
        raise RaceError(f"--strategy: expected one of {', '.join(STRATEGIES)} "
                        f"(got {strategy!r})")
    if kind == "sqlite" and strategy == "skip_locked":
        raise RaceError("--strategy skip_locked: SQLite has no FOR UPDATE SKIP LOCKED")
    if isolation not in ISOLATIONS or begin not in BEGINS:
        raise RaceError(f"--isolation: one of {ISOLATIONS}; --begin: one of {BEGINS}")
    if isolation != "read_committed" and (kind != "postgres" or strategy != "guarded_update"):
        raise RaceError("--isolation repeatable_read or serializable: the reference runs them "
                        "for the guarded UPDATE on PostgreSQL only (F_RR, F_SER)")
    if begin != "autocommit" and (kind != "sqlite" or strategy != "read_then_write"):
        raise RaceError("--begin deferred or immediate: SQLite's read_then_write only")
    if not (1 <= workers <= 64 and 1 <= jobs <= 1_000_000 and 1 <= batch <= 1000):
        raise RaceError("bounds: 1 ≤ workers ≤ 64, 1 ≤ jobs ≤ 1,000,000, 1 ≤ batch ≤ 1000")
    load(kind, target, jobs)
    start_at = time.time() + 0.3 + 0.05 * workers
    deadline = start_at + time_limit
    args = [(kind, target, strategy, f"w{i + 1}", batch, isolation, begin, start_at, deadline,
             max_attempts) for i in range(workers)]
    ctx = multiprocessing.get_context("fork" if "fork" in
                                      multiprocessing.get_all_start_methods() else "spawn")
    with ctx.Pool(workers) as pool:
        results = pool.map(_worker, args)
    wall = time.time() - start_at
    out = Outcome("real", jobs, workers, batch, seconds=wall)
    count = np.zeros(jobs + 1, dtype=np.int64)
    for res in results:
        for ids, lost, why in res["records"]:
            out.attempts += 1
            out.lost_races += lost
            if why is not None:
                out.errors += 1
                out.error_kinds[why] = out.error_kinds.get(why, 0) + 1
                continue
            k = len(ids)
            out.claims += k
            out.empty += k == 0
            out.full += k == batch
            out.partial += 0 < k < batch
            np.add.at(count, np.asarray(ids, dtype=np.int64), 1)
    out.jobs_claimed = int((count[1:] > 0).sum())
    out.doubled_jobs = int((count[1:] > 1).sum())
    out.extra_claims = int(np.clip(count[1:] - 1, 0, None).sum())
    _check(kind, target, out)
    return out


def _check(kind: str, target: str, out: Outcome) -> None:
    """The harness checks: every job claimed; the server's claims = the workers' records."""
    conn = _connect(kind, target)
    try:
        unclaimed = conn.execute("SELECT count(*) FROM job WHERE locked_by IS NULL"
                                 ).fetchone()[0]
        server = conn.execute("SELECT coalesce(sum(version), 0) FROM job").fetchone()[0]
    finally:
        conn.close()
    if unclaimed:
        raise RaceError(f"harness check failed: {unclaimed} of {out.jobs} jobs were never "
                        "claimed (the time or attempt limit was reached)")
    if int(server) != out.claims:
        raise RaceError(f"harness check failed: the server counts {server} claims, the "
                        f"workers recorded {out.claims}")


# --- the prediction -------------------------------------------------------------------------

def predict(dialect: str, strategy: str, workers: int, jobs: int, batch: int = 10,
            isolation: str = "read_committed", begin: str = "autocommit",
            seed: int = 1) -> Outcome:
    """The simulator's race: ``workers`` nodes polling at once for ``batch`` rows over
    ``jobs`` due jobs that never finish, with statements of 0.2–2 ms on PostgreSQL (a
    round trip to a server) and 20–100 µs on SQLite (a library call on a local file)."""
    from .report import analyse
    from .scenario import from_dict
    from .trace import K
    from .world import run

    doc = {
        "name": "race", "seed": seed, "until": "10m",
        "db": {"dialect": dialect,
               "latency": {"uniform": {"low": "0.2ms", "high": "2ms"}} if dialect ==
               "postgres" else {"uniform": {"low": "0.02ms", "high": "0.1ms"}},
               **({"isolation": isolation} if dialect == "postgres" else
                  {"sqlite_begin": begin})},
        "executor": {"acquisition": strategy, "wakeup": "poll", "poll_interval": "1ms",
                     "batch_size": batch, "queue_size": 1_000_000, "threads": 1,
                     "lock_time": "1d", "order": "priority"},
        "nodes": workers,
        "handlers": {"w": {"duration": "1d"}},
        "workload": {"jobs": [{"handler": "w", "priority": i % 7}
                              for i in range(1, jobs + 1)]},
    }
    r = run(from_dict(doc, "<race prediction>"))
    a = analyse(r)
    c = r.trace.arrays()
    acq = c["kind"] == K["acquire"]
    got = c["b"][acq]
    out = Outcome("simulated", jobs, workers, batch)
    out.attempts = int(acq.sum())
    out.errors = int(c["attempt"][acq].sum())
    out.lost_races = int(c["c"][acq].sum())
    ok = c["attempt"][acq] == 0
    out.empty = int(((got == 0) & ok).sum())
    out.full = int((got == batch).sum())
    out.partial = int(((got > 0) & (got < batch)).sum())
    locked = c["job"][c["kind"] == K["locked"]]
    count = np.bincount(locked, minlength=jobs + 1)
    out.claims = int(count.sum())
    out.jobs_claimed = int((count[1:] > 0).sum())
    out.doubled_jobs = int((count[1:] > 1).sum())
    out.extra_claims = int(np.clip(count[1:] - 1, 0, None).sum())
    hit = np.flatnonzero(got > 0)
    t = c["time"][acq]
    out.seconds = float(t[hit[-1]] - t[0]) if len(hit) else math.nan
    out.error_kinds = {"doubles seen by the checks": len(a.histories.double_acquisitions)}
    return out


def verdict(o: Outcome) -> dict[str, Any]:
    """The qualitative outcome the real and simulated runs must agree on."""
    a = max(o.attempts - o.errors, 1)
    return {"safe": o.doubled_jobs == 0,
            "all_or_nothing": o.partial == 0 and o.full > 0,
            "lost_races": o.lost_races > 0,
            "errors": o.errors > 0,
            "full_share": o.full / a}


# --- two sessions (db-semantics.md §3) ------------------------------------------------------

def two_sessions_pg(dsn: str, strategy: str, s1_end: str, isolation: str = "read_committed",
                    n: int = 10) -> tuple[list[int], bool, list[int], str | None, int]:
    """On a real PostgreSQL: S1 claims ``n`` rows with ``strategy`` in an open transaction;
    S2 runs the same strategy (under ``isolation``); an observer looks in pg_stat_activity
    whether S2 waits on a lock; then S1 commits or rolls back. Returns (S1 claimed, S2
    blocked?, S2 got, S2's error, rows both hold)."""
    import threading

    load("postgres", dsn, 40, distinct=True)
    s1 = _connect("postgres", dsn, autocommit=False)
    s2 = _connect("postgres", dsn)
    watch = _connect("postgres", dsn)
    out: dict[str, Any] = {}
    try:
        s1_ids, _ = _claim_pg(s1, strategy, "S1", n, "read_committed")
        pid = s2.info.backend_pid

        def session2() -> None:
            try:
                out["ids"], out["lost"] = _claim_pg(s2, strategy, "S2", n, isolation)
            except Exception as exc:
                out["error"] = _error_kind(exc) or type(exc).__name__
                out["ids"] = []

        t = threading.Thread(target=session2)
        t.start()
        blocked = False
        for _ in range(200):  # up to 2 s for S2 to reach its lock wait
            row = watch.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                                (pid,)).fetchone()
            if row and row[0] == "Lock":
                blocked = True
                break
            if not t.is_alive():
                break
            time.sleep(0.01)
        if s1_end == "commit":
            s1.commit()
        else:
            s1.rollback()
        t.join(timeout=30)
    finally:
        for c in (s1, s2, watch):
            c.close()
    s2_ids = sorted(out.get("ids", []))
    overlap = len(set(s1_ids) & set(s2_ids)) if s1_end == "commit" else 0
    return sorted(s1_ids), blocked, s2_ids, out.get("error"), overlap
