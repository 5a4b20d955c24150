"""How concurrent claims interact on a real database: PostgreSQL and SQLite.

The ``atomic`` dialect (``claims``) applies each statement at one instant. Real databases
overlap statements; what real PostgreSQL and SQLite do then, as documented and measured,
``postgres`` and ``sqlite`` follow, on the transactions of ``transactions``. This module
names the isolation levels and SQLite's BEGIN modes, and maps each dialect's strategies to
the functions that run them (``STRATEGIES``).
"""

from __future__ import annotations

from .postgres import (pg_guarded, pg_optimistic, pg_optimistic_batch, pg_read_then_write,
                       pg_select, pg_skip_locked, pg_unguarded, pg_update)
from .sqlite import (sq_guarded, sq_optimistic, sq_optimistic_batch, sq_read_then_write,
                     sq_unguarded, sq_write)
from .transactions import Gen, SerializationFailure, Txn, _finish, _lock_row

__all__ = ["ISOLATIONS", "SQLITE_BEGIN", "STRATEGIES", "Gen", "SerializationFailure", "Txn",
           "_finish", "_lock_row", "pg_guarded", "pg_optimistic", "pg_optimistic_batch",
           "pg_read_then_write", "pg_select", "pg_skip_locked", "pg_unguarded", "pg_update",
           "sq_guarded", "sq_optimistic", "sq_optimistic_batch", "sq_read_then_write",
           "sq_unguarded", "sq_write"]

ISOLATIONS = ("read_committed", "repeatable_read", "serializable")
SQLITE_BEGIN = ("autocommit", "deferred", "immediate")


STRATEGIES = {
    "postgres": {"guarded_update": pg_guarded, "unguarded_update": pg_unguarded,
                 "read_then_write": pg_read_then_write, "optimistic": pg_optimistic,
                 "optimistic_batch": pg_optimistic_batch, "skip_locked": pg_skip_locked},
    "sqlite": {"guarded_update": sq_guarded, "unguarded_update": sq_unguarded,
               "read_then_write": sq_read_then_write, "optimistic": sq_optimistic,
               "optimistic_batch": sq_optimistic_batch},
}
