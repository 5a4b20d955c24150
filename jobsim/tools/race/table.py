"""The race's side of a real database: connections (SQLite or PostgreSQL), the race's own
table ``job`` — loaded, recognised by its mark, dropped — and the clean-up that leaves the
database as it was found, a SQLite file's journal mode included.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...base.signals import Stopped
from .settings import RaceError

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
    with the id, so that the top 10 are ids 1..10 (the two-session interleavings' table)."""
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
            if isinstance(primary, Stopped):
                raise Stopped(primary.signum, text) from None
            if isinstance(primary, KeyboardInterrupt):
                raise KeyboardInterrupt(text) from None
            if isinstance(primary, RaceError):
                raise RaceError(f"{primary}; and then {text}") from primary
            primary.add_note(text)
        raise
    problems = _clean_up(kind, target, mode)
    if problems:
        raise RaceError("; ".join(problems))
