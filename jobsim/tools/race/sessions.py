"""Two sessions on a real PostgreSQL: one claims rows in an open transaction while a second
runs the same strategy, and an observer sees whether the second waits on a lock.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .table import _connect, own_table
from .workers import Clock, _claim_pg, _error_kind


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
        s1_ids, _ = _claim_pg(Clock(s1), strategy, "S1", n, "read_committed")
        pid = s2.info.backend_pid

        def session2() -> None:
            try:
                out["ids"], out["lost"] = _claim_pg(Clock(s2), strategy, "S2", n, isolation)
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
