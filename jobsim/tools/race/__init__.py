"""The model checked against real databases: K real worker processes racing to claim N due
jobs with a strategy's own SQL (``sql``), beside the simulator's prediction for the same
strategy, dialect, K and batch.

``race(db, strategy, workers, jobs, batch)`` loads N due jobs into a fresh table, starts the
workers together, and records every claim each makes: the rows it got, races lost (an
optimistic update that found its version moved), and errors (SQLSTATE 40001, a deadlock
40P01, SQLITE_BUSY, SQLITE_BUSY_SNAPSHOT), which the worker retries. A worker stops when
nothing claimable is left, or at a time or attempt limit. Two harness checks cannot be
skipped: every job was claimed, and the server's count of claims (the sum of the rows'
versions, one per claim) equals the workers' records.

``db`` is ``sqlite:PATH`` (Python's ``sqlite3``: WAL, a busy timeout) or a PostgreSQL DSN
(``postgresql://…``, with psycopg). Variants: ``isolation`` (PostgreSQL: read_committed,
repeatable_read, serializable) and ``begin`` (SQLite's read_then_write: autocommit,
deferred, immediate), as in a scenario's ``db:`` section.

The database is left as it was found: the race's table ``job`` carries a mark (a comment in
its SQLite ``CREATE`` text, a ``COMMENT ON TABLE`` on PostgreSQL), a ``job`` without it is
the user's and is never dropped (the race refuses instead), the table is dropped after the
race — also after an error or Ctrl-C, which stops the workers — and a SQLite file's journal
mode (the race switches it to WAL, which persists in the file) is put back.

The package's modules: ``settings`` (the strategies, bounds and input checks), ``table`` (the
connections and the race's own table), ``workers`` (one worker process), ``harness`` (the
records counted, the harness checks), ``prediction`` (the simulator's race), ``outcome``
(what a race showed), ``sessions`` (two sessions on PostgreSQL) and ``plot`` (the plot
file). The race itself — the workers started, collected and stopped — is here.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from typing import Any

from ...base.signals import worker_defaults
from .harness import _check, _tally
from .outcome import Outcome, verdict
from .plot import check_plot, save_plot
from .prediction import predict
from .sessions import two_sessions_pg
from .settings import (BEGINS, ISOLATIONS, MAX_BATCH, MAX_JOBS, MAX_REPEAT, MAX_SECONDS,
                       MAX_WORKERS, STRATEGIES, RaceError, check, count_arg, seconds_arg)
from .table import (_LEGACY_MARKER_SQLITE, _LEGACY_SQLITE, _SQLITE_CREATE, MARK, TABLE, load,
                    own_table)
from .workers import _prober, _worker

__all__ = ["BEGINS", "ISOLATIONS", "MARK", "MAX_BATCH", "MAX_JOBS", "MAX_REPEAT", "MAX_SECONDS",
           "MAX_WORKERS", "STRATEGIES", "TABLE", "Outcome", "RaceError", "check",
           "check_plot", "count_arg", "handover", "load", "own_table", "predict", "race",
           "save_plot", "seconds_arg", "two_sessions_pg", "verdict"]

# the race's own table as its SQLite text, and an older jobsim's: the tests make them by hand
_OWN_TABLES = (_SQLITE_CREATE, _LEGACY_SQLITE, _LEGACY_MARKER_SQLITE)


def _ignore_sigint() -> None:
    """In a worker: Ctrl-C and a hang-up are the parent's to handle (it stops the workers);
    SIGTERM (the pool's own way to stop a worker) ends it at once."""
    worker_defaults()


def _collect(pending: Any, timeout: float) -> list[dict[str, Any]]:
    """Wait for the workers' records (a hook the tests replace to interrupt a race)."""
    return pending.get(timeout)


def _run_workers(args: list[tuple], timeout: float, work: Any = _worker) -> list[Any]:
    """The workers (``work`` of each of ``args``), one process each; on any way out (Ctrl-C
    too) they are stopped and reaped before this returns."""
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
        return _collect(pool.map_async(work, args), timeout)
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
         time_limit: float = 120.0, max_attempts: int = 1_000_000, probe: int = 0) -> Outcome:
    """One real race; raises ``RaceError`` on bad input or a failed harness check. The
    database is left as it was found (see the module's note), also on Ctrl-C, which is
    re-raised once the workers are stopped. ``probe``: after the race, each worker times
    that many UPDATEs that change nothing (a version that never matches: a lost race's
    statement), for a profile."""
    kind, target = check(db, strategy, workers, jobs, batch, isolation, begin, time_limit)
    with own_table(kind, target, jobs):
        start_at = time.time() + 0.3 + 0.05 * workers
        deadline = start_at + time_limit
        args = [(kind, target, strategy, f"w{i + 1}", batch, isolation, begin, start_at,
                 deadline, max_attempts, probe) for i in range(workers)]
        results = _run_workers(args, deadline - time.time() + 60.0)
        wall = time.time() - start_at
        out = _tally(results, jobs, workers, batch, wall)
        _check(kind, target, out)
    return out


def handover(db: str, cores: int, statements: int = 2000) -> float:
    """PostgreSQL: the seconds a hand-over between client and server saves when the other
    cores are busy: ``statements`` no-op UPDATEs timed on one connection alone, then on one
    connection per core at once (each pair of client and server keeps about a core busy);
    half the difference of their mean times (two hand-overs a statement), never below 0."""
    kind, target = check(db, "optimistic", 1, 10, 10, "read_committed", "autocommit", 60.0)
    if kind != "postgres":
        return 0.0
    with own_table(kind, target, 10):
        alone = _run_workers([(target, statements, time.time() + 0.3)], 120.0, _prober)
        start_at = time.time() + 0.3 + 0.05 * cores
        busy = _run_workers([(target, statements, start_at)] * max(2, cores), 120.0, _prober)
    return max(0.0, (alone[0] - sum(busy) / len(busy)) / 2)
