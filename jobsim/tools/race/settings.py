"""A race's settings and their checks: the strategies and variants a race knows, the bounds
of its numbers (with argparse types that hold them), the ``--db`` forms, and ``RaceError``,
the one error a race raises.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

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



def _parse_db(db: str) -> tuple[str, str]:
    if db.startswith("sqlite:"):
        path = db[len("sqlite:"):]
        if not path:
            raise RaceError("--db sqlite:PATH needs a file path (got 'sqlite:')")
        return "sqlite", path
    if db.startswith(("postgresql://", "postgres://")) or "dbname=" in db:
        return "postgres", db
    raise RaceError(f"--db: expected sqlite:PATH or a postgresql:// DSN (got {db!r})")



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
        raise RaceError("--isolation repeatable_read or serializable: for the guarded "
                        "UPDATE on PostgreSQL only (the one strategy jobsim races under them)")
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

