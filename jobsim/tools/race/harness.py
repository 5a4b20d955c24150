"""After a real race: the workers' records counted into an ``Outcome``, and the harness
checks that cannot be skipped (every job claimed; the server's count of claims equals the
workers' records).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .outcome import Outcome
from .settings import RaceError
from .table import _connect


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
    machine = [r["machine"] for r in results if r.get("machine") is not None]
    if machine:  # each worker's reading spans its own start to end: the longest, the race
        out.cpu_seconds = max(machine)
    sched = [r["sched"] for r in results if r.get("sched") is not None]
    if sched and sum(s[2] for s in sched) > 0:
        out.cpu_wait = sum(s[1] for s in sched) / sum(s[2] for s in sched)
    out.timings = [{"stmts": r["stmts"], "starts": r["starts"], "sched": r.get("sched"),
                    "machine": r.get("machine"), "probe": r.get("probe"),
                    "got": [len(ids) for ids, _, _ in r["records"]]} for r in results]
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
