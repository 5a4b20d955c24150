"""The simulator's prediction of a race: the same strategy, dialect, workers and batch run as
a scenario, its trace counted into an ``Outcome`` like a real race's records.
"""

from __future__ import annotations

import math

import numpy as np

from .outcome import Outcome


def predict(dialect: str, strategy: str, workers: int, jobs: int, batch: int = 10,
            isolation: str = "read_committed", begin: str = "autocommit",
            seed: int = 1) -> Outcome:
    """The simulator's race: ``workers`` nodes polling at once for ``batch`` rows over
    ``jobs`` due jobs that never finish, with statements of 0.2–2 ms on PostgreSQL (a
    round trip to a server) and 20–100 µs on SQLite (a library call on a local file)."""
    from ...output.report import analyse
    from ...format.scenario import from_dict
    from ...base.trace import K
    from ...sim.world import run

    # The workers start together, as the real race's do; the race is over long before its
    # end (every poll after the last claim finds nothing, and each is simulated here).
    doc = {
        "name": "race", "seed": seed, "until": f"{max(1.0, 0.01 * jobs):g}s",
        "db": {"dialect": dialect,
               "latency": {"uniform": {"low": "0.2ms", "high": "2ms"}} if dialect ==
               "postgres" else {"uniform": {"low": "0.02ms", "high": "0.1ms"}},
               **({"isolation": isolation} if dialect == "postgres" else
                  {"sqlite_begin": begin})},
        "executor": {"acquisition": strategy, "wakeup": "poll", "poll_interval": "1ms",
                     "batch_size": batch, "queue_size": 1_000_000, "threads": 1,
                     "lock_time": "1d", "order": "priority"},
        "nodes": [{"name": f"node-{i + 1}", "start_at": "0s"} for i in range(workers)],
        "handlers": {"w": {"duration": "1d"}},
        "workload": {"jobs": [{"handler": "w", "priority": i % 7}
                              for i in range(1, jobs + 1)]},
    }
    r = run(from_dict(doc, "<race prediction>"))
    a = analyse(r)
    c = r.trace.arrays()
    acq = c["kind"] == K["acquire"]
    # A real worker stops at its first empty attempt once no row is left: count a simulated
    # node's attempts up to the last claim, and then its next one only.
    claimed = acq & (c["b"] > 0)
    if claimed.any():
        last = float(c["time"][claimed].max())
        after = np.flatnonzero(acq & (c["time"] > last))
        _, first = np.unique(c["node"][after], return_index=True)
        acq = acq & (c["time"] <= last)
        acq[after[first]] = True
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
