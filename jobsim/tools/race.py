"""The model checked against real databases: K real worker processes racing to claim N due
jobs with a strategy's own SQL (``sql``), beside the simulator's prediction for the same
strategy, dialect, K and batch.

``race(db, strategy, workers, jobs, batch)`` loads N due jobs into a fresh table, starts the
workers together, and records every claim each makes: the rows it got, races lost (an
optimistic update that found its version moved), and errors (SQLSTATE 40001, a deadlock
40P01, SQLITE_BUSY, SQLITE_BUSY_SNAPSHOT), which the worker retries. A worker stops when
nothing claimable is left, or at a time or attempt limit. Two harness checks cannot be skipped: every job was
claimed, and the server's count of claims (the sum of the rows' versions, one per claim)
equals the workers' records.

``db`` is ``sqlite:PATH`` (Python's ``sqlite3``: WAL, a busy timeout) or a PostgreSQL DSN
(``postgresql://…``, with psycopg). Variants: ``isolation`` (PostgreSQL: read_committed,
repeatable_read, serializable) and ``begin`` (SQLite's read_then_write: autocommit,
deferred, immediate), as in a scenario's ``db:`` section.

The database is left as it was found: the race's table ``job`` carries a mark (a comment in
its SQLite ``CREATE`` text, a ``COMMENT ON TABLE`` on PostgreSQL), a ``job`` without it is
the user's and is never dropped (the race refuses instead), the table is dropped after the
race — also after an error or Ctrl-C, which stops the workers — and a SQLite file's journal
mode (the race switches it to WAL, which persists in the file) is put back.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..database.sql import POSTGRES, SQLITE

STRATEGIES = ("guarded_update", "unguarded_update", "read_then_write", "optimistic",
              "skip_locked")
ISOLATIONS = ("read_committed", "repeatable_read", "serializable")
BEGINS = ("autocommit", "deferred", "immediate")

# the bounds of a race (the command line checks them before anything runs)
MAX_JOBS = 1_000_000
MAX_WORKERS = 64
MAX_BATCH = 10_000
MAX_REPEAT = 1_000
MAX_SECONDS = 86_400.0

TABLE = "job"  # the name the claim SQL (``sql``) uses
MARK = "made by jobsim race"  # how the race knows its own table
_SQLITE_CREATE = ("CREATE TABLE job (id INTEGER PRIMARY KEY, priority INTEGER NOT NULL,"
                  " due REAL NOT NULL, locked_by TEXT, lock_until REAL,"
                  f" version INTEGER NOT NULL DEFAULT 0 /* {MARK} */)")
# what jobsim 0.x made, with an empty marker table ``jobsim_race`` beside it: still its own
_LEGACY_SQLITE = ("CREATE TABLE job (id INTEGER PRIMARY KEY, priority INTEGER NOT NULL,"
                  " due REAL NOT NULL, locked_by TEXT, lock_until REAL,"
                  " version INTEGER NOT NULL DEFAULT 0)")
_LEGACY_MARKER_SQLITE = "CREATE TABLE jobsim_race (made_by TEXT)"
_COLUMNS = ["id", "priority", "due", "locked_by", "lock_until", "version"]
_PNG = b"\x89PNG\r\n\x1a\n"


class RaceError(Exception):
    """Bad input, an unreachable database, or a failed harness check."""


# --- the bounds, for argparse -----------------------------------------------------------------

def count_arg(what: str, most: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of ``what`` from 1 to ``most``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= most:
            raise argparse.ArgumentTypeError(
                f"expected a whole number of {what} from 1 to {most:,} (got {text!r})")
        return value

    parse.__name__ = what
    return parse


def seconds_arg(text: str) -> float:
    """An argparse ``type``: a time limit in seconds, finite, > 0 and ≤ a day."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_SECONDS:  # also false for nan; inf is above the bound
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds above 0 and at most {MAX_SECONDS:,.0f} (a day) "
            f"(got {text!r})")
    return value


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

def _connect(kind: str, target: str, autocommit: bool = True, wal: bool = True) -> Any:
    if kind == "sqlite":
        import sqlite3

        try:
            conn = sqlite3.connect(target, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA busy_timeout=30000")
            if wal:
                conn.execute("PRAGMA journal_mode=WAL")
            else:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # a database?
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
    conn = _connect(kind, target, wal=False)
    try:
        _refuse_foreign_table(kind, conn)  # before anything in the file changes
        _drop_own(kind, conn)
        if kind == "sqlite":
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SQLITE_CREATE)  # the mark is in its text: one statement
            now = time.time() - 1.0
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO job (id, priority, due) VALUES (?, ?, ?)",
                             [(i, 1_000_000 - i if distinct else i % 7, now)
                              for i in range(1, jobs + 1)])
            conn.execute("COMMIT")
            conn.execute("CREATE INDEX job_order ON job (priority DESC, id)")
        else:
            with conn.transaction():  # created and marked at once, or not at all
                conn.execute("CREATE TABLE job (id BIGINT PRIMARY KEY, priority INT NOT NULL,"
                             " due TIMESTAMPTZ NOT NULL, locked_by TEXT,"
                             " lock_until TIMESTAMPTZ, version INT NOT NULL DEFAULT 0)")
                conn.execute(f"COMMENT ON TABLE job IS '{MARK}'")
                conn.execute(f"INSERT INTO job (id, priority, due) SELECT i, {prio}, "
                             "now() - interval '1 second' FROM generate_series(1, %s) i",
                             (jobs,))
                conn.execute("CREATE INDEX job_order ON job (priority DESC, id)")
            conn.execute("ANALYZE job")
    except RaceError:
        raise
    except Exception as exc:  # sqlite3.Error, psycopg.Error: reported, not a traceback
        raise RaceError(f"cannot load the jobs table: {str(exc).strip()}") from exc
    finally:
        conn.close()


def _owner(kind: str, conn: Any) -> str | None:
    """Whose is the relation ``job``: None (there is none), "race" (marked as the race's),
    "legacy" (an older jobsim's, with its empty marker table) or "user"."""
    if kind == "sqlite":
        rows = conn.execute("SELECT type, sql FROM sqlite_master WHERE lower(name) = 'job'"
                            ).fetchall()
        if not rows:
            return None
        kind_, sql = rows[0]
        if len(rows) > 1 or kind_ != "table":
            return "user"
        if sql == _SQLITE_CREATE:
            return "race"
        marker = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'jobsim_race'"
                              ).fetchone()
        if sql == _LEGACY_SQLITE and marker and marker[0] == _LEGACY_MARKER_SQLITE and \
                not conn.execute("SELECT count(*) FROM jobsim_race").fetchone()[0]:
            return "legacy"
        return "user"
    row = conn.execute("SELECT c.relkind, obj_description(c.oid, 'pg_class'), c.oid "
                       "FROM pg_class c WHERE c.oid = to_regclass('job')").fetchone()
    if row is None:
        return None
    relkind, comment, oid = row
    if relkind != "r":
        return "user"
    if comment == MARK:
        return "race"
    cols = [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT "
        "attisdropped ORDER BY attnum", (oid,))]
    marker = conn.execute("SELECT to_regclass('jobsim_race')").fetchone()[0]
    if cols == _COLUMNS and comment is None and marker is not None and not conn.execute(
            "SELECT count(*) FROM jobsim_race").fetchone()[0]:
        return "legacy"
    return "user"


def _refuse_foreign_table(kind: str, conn: Any) -> None:
    """The race drops and re-creates the table ``job``: only one it made itself."""
    if _owner(kind, conn) == "user":
        raise RaceError("the database has a table 'job' that jobsim race did not create; "
                        "the race needs that name for its own table (it drops it after the "
                        "race): race on another database")


def _drop_own(kind: str, conn: Any) -> None:
    """Drop the race's own table ``job`` (an older jobsim's too, with its marker), and
    nothing else."""
    owner = _owner(kind, conn)
    if owner in ("race", "legacy"):
        conn.execute("DROP TABLE job")
    if owner == "legacy":
        conn.execute("DROP TABLE jobsim_race")


def _journal_mode(target: str) -> str:
    """A SQLite file's journal mode as a new connection finds it (only WAL persists)."""
    conn = _connect("sqlite", target, wal=False)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    finally:
        conn.close()


def _clean_up(kind: str, target: str, mode: str | None) -> list[str]:
    """After a race: its table dropped, a SQLite file's journal mode put back. Returns what
    could not be done (never raises)."""
    problems = []
    try:
        conn = _connect(kind, target, wal=False)
        try:
            if kind == "postgres":  # a stopped worker's backend may hold a lock a moment
                conn.execute("SET lock_timeout = '30s'")
            _drop_own(kind, conn)
        finally:
            conn.close()
    except Exception as exc:  # noqa: BLE001 - reported to the caller
        problems.append(f"could not drop the race's table '{TABLE}': {str(exc).strip()}")
    if kind == "sqlite" and mode is not None and mode in (
            "delete", "truncate", "persist", "memory", "wal", "off"):
        try:
            conn = _connect(kind, target, wal=False)
            try:
                now = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
                if now != mode:
                    conn.execute(f"PRAGMA journal_mode={mode}")
            finally:
                conn.close()
        except Exception as exc:  # noqa: BLE001 - reported to the caller
            problems.append(f"could not put {target} back in journal mode {mode} (it is in "
                            f"WAL mode now): {str(exc).strip()}")
    return problems


@contextmanager
def own_table(kind: str, target: str, jobs: int, distinct: bool = False) -> Iterator[None]:
    """``load`` the race's table for the ``with`` block; afterwards — also after an error or
    Ctrl-C — drop it and put a SQLite file's journal mode back."""
    mode = _journal_mode(target) if kind == "sqlite" else None
    try:
        load(kind, target, jobs, distinct)
        yield
    except BaseException as primary:
        problems = _clean_up(kind, target, mode)
        if problems:
            text = "; ".join(problems)
            if isinstance(primary, KeyboardInterrupt):
                raise KeyboardInterrupt(text) from None
            if isinstance(primary, RaceError):
                raise RaceError(f"{primary}; and then {text}") from primary
            primary.add_note(text)
        raise
    problems = _clean_up(kind, target, mode)
    if problems:
        raise RaceError("; ".join(problems))


# --- the plot file ------------------------------------------------------------------------------

def check_plot(path: str | os.PathLike) -> Path:
    """Raise RaceError unless the plot may be written to ``path``: its folder exists, and the
    path is new or a regular file holding a PNG (a user's other file is never replaced)."""
    p = Path(path)
    if str(path) == "" or p.name in ("", ".", ".."):
        raise RaceError(f"--plot {str(path)!r}: expected a file name, e.g. race.png")
    if not p.parent.is_dir():
        raise RaceError(f"--plot {p}: the folder {p.parent} does not exist")
    if p.is_symlink() or (p.exists() and not p.is_file()):
        raise RaceError(f"--plot {p}: it exists and is not a regular file; choose a new file")
    if p.exists():
        try:
            with open(p, "rb") as f:
                head = f.read(len(_PNG))
        except OSError as exc:
            raise RaceError(f"--plot {p}: cannot read it: {exc.strerror or exc}") from None
        if head != _PNG:
            raise RaceError(f"--plot {p}: it exists and is not a PNG; jobsim will not "
                            "overwrite it, choose a new file")
    if not os.access(p.parent, os.W_OK):
        raise RaceError(f"--plot {p}: the folder {p.parent} is not writable")
    return p


def save_plot(fig: Any, path: str | os.PathLike) -> Path:
    """Write ``fig`` as a PNG to ``path`` (checked again, then a temporary file renamed)."""
    from ..output.plots import save

    p = check_plot(path)
    tmp = p.parent / f".{p.name}.{os.getpid()}.tmp"
    try:
        save(fig, tmp)
        os.replace(tmp, p)
    except OSError as exc:
        raise RaceError(f"--plot {p}: cannot write it: {exc.strerror or exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return p


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

def check(db: str, strategy: str, workers: int, jobs: int, batch: int = 10,
          isolation: str = "read_committed", begin: str = "autocommit",
          time_limit: float = 120.0) -> tuple[str, str]:
    """Raise RaceError unless these are a race's valid settings (nothing is opened);
    return the database's kind and target."""
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
    if not (1 <= workers <= MAX_WORKERS and 1 <= jobs <= MAX_JOBS and
            1 <= batch <= MAX_BATCH):
        raise RaceError(f"bounds: 1 ≤ workers ≤ {MAX_WORKERS}, 1 ≤ jobs ≤ {MAX_JOBS:,}, "
                        f"1 ≤ batch ≤ {MAX_BATCH:,}")
    if not 0 < time_limit <= MAX_SECONDS:  # also false for nan
        raise RaceError(f"the time limit must be above 0 and at most {MAX_SECONDS:,.0f} "
                        f"seconds (got {time_limit})")
    return kind, target


def _ignore_sigint() -> None:
    """In a worker: Ctrl-C is the parent's to handle (it stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _collect(pending: Any, timeout: float) -> list[dict[str, Any]]:
    """Wait for the workers' records (a hook the tests replace to interrupt a race)."""
    return pending.get(timeout)


def _run_workers(args: list[tuple], timeout: float) -> list[dict[str, Any]]:
    """The workers, one process each; on any way out (Ctrl-C too) they are stopped and
    reaped before this returns."""
    ctx = multiprocessing.get_context("fork" if "fork" in
                                      multiprocessing.get_all_start_methods() else "spawn")
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:  # forked workers inherit "ignore Ctrl-C"; the initializer says it again
        pool = ctx.Pool(len(args), initializer=_ignore_sigint)
    finally:
        if main:
            signal.signal(signal.SIGINT, old)
    try:
        return _collect(pool.map_async(_worker, args), timeout)
    except multiprocessing.TimeoutError:
        raise RaceError(f"the workers did not stop within {timeout:,.0f} seconds") from None
    except RaceError:
        raise
    except Exception as exc:  # a worker's unexpected database error: reported, no traceback
        raise RaceError(f"a worker failed: {type(exc).__name__}: {str(exc).strip()}") from exc
    finally:
        pool.terminate()
        pool.join()


def race(db: str, strategy: str, workers: int, jobs: int, batch: int = 10,
         isolation: str = "read_committed", begin: str = "autocommit",
         time_limit: float = 120.0, max_attempts: int = 1_000_000) -> Outcome:
    """One real race; raises ``RaceError`` on bad input or a failed harness check. The
    database is left as it was found (see the module's note), also on Ctrl-C, which is
    re-raised once the workers are stopped."""
    kind, target = check(db, strategy, workers, jobs, batch, isolation, begin, time_limit)
    with own_table(kind, target, jobs):
        start_at = time.time() + 0.3 + 0.05 * workers
        deadline = start_at + time_limit
        args = [(kind, target, strategy, f"w{i + 1}", batch, isolation, begin, start_at,
                 deadline, max_attempts) for i in range(workers)]
        results = _run_workers(args, deadline - time.time() + 60.0)
        wall = time.time() - start_at
        out = _tally(results, jobs, workers, batch, wall)
        _check(kind, target, out)
    return out


def _tally(results: list[dict[str, Any]], jobs: int, workers: int, batch: int,
           wall: float) -> Outcome:
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
    return out


def _check(kind: str, target: str, out: Outcome) -> None:
    """The harness checks: every job claimed; the server's claims = the workers' records."""
    conn = _connect(kind, target)
    try:
        unclaimed = conn.execute("SELECT count(*) FROM job WHERE locked_by IS NULL"
                                 ).fetchone()[0]
        server = conn.execute("SELECT coalesce(sum(version), 0) FROM job").fetchone()[0]
    except Exception as exc:  # sqlite3.Error, psycopg.Error: reported, no traceback
        raise RaceError(f"harness check: cannot read the table: {str(exc).strip()}") from exc
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
    from ..output.report import analyse
    from ..format.scenario import from_dict
    from ..base.trace import K
    from ..sim.world import run

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
    with own_table("postgres", dsn, 40, distinct=True):
        return _two_sessions(dsn, strategy, s1_end, isolation, n)


def _two_sessions(dsn: str, strategy: str, s1_end: str, isolation: str, n: int
                  ) -> tuple[list[int], bool, list[int], str | None, int]:
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
