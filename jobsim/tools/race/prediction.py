"""The simulator's prediction of a race: the same strategy, dialect, workers and batch run as
a scenario, its trace counted into an ``Outcome`` like a real race's records.

Two predictions: **uncalibrated** — statements of an assumed 0.2–2 ms on PostgreSQL (a round
trip to a server) and 20–100 µs on SQLite (a library call on a local file), every node
running at once — and **calibrated**, with a measured profile (``profile``): each statement
and each client gap as measured, the machine's cores shared through the CPU model, and
SQLite's busy handler sleeping as it does. Only the calibrated one's seconds stand for the
machine's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .outcome import Outcome


class _Claimed(Exception):
    """Every job has been claimed and every node has had time for its last attempt."""


def race_scenario(dialect: str, strategy: str, workers: int, jobs: int, batch: int = 10,
                  isolation: str = "read_committed", begin: str = "autocommit",
                  seed: int = 1, profile: dict[str, Any] | None = None) -> dict[str, Any]:
    """The race as a scenario document: ``workers`` nodes polling at once for ``batch`` rows
    over ``jobs`` due jobs that never finish (with ``profile``: as measured, on its cores)."""
    variant = {"isolation": isolation} if dialect == "postgres" else {"sqlite_begin": begin}
    if profile is None:
        db = {"dialect": dialect,
              "latency": {"uniform": {"low": "0.2ms", "high": "2ms"}} if dialect ==
              "postgres" else {"uniform": {"low": "0.02ms", "high": "0.1ms"}}, **variant}
        poll = "1ms"
    else:  # a real worker tries again at once: the next attempt's client gap is the wait
        db = {"dialect": dialect, "profile": profile, "cpu": {}, **variant,
              **({"sqlite_busy": "sleep"} if dialect == "sqlite" else {})}
        poll = "0.001ms"
    return {
        "name": "race", "seed": seed, "until": f"{max(1.0, 0.01 * jobs):g}s", "db": db,
        "executor": {"acquisition": strategy, "wakeup": "poll", "poll_interval": poll,
                     "batch_size": batch, "queue_size": 1_000_000, "threads": 1,
                     "lock_time": "1d", "order": "priority"},
        "nodes": [{"name": f"node-{i + 1}", "start_at": "0s"} for i in range(workers)],
        "handlers": {"w": {"duration": "1d"}},
        "workload": {"jobs": [{"handler": "w", "priority": i % 7}
                              for i in range(1, jobs + 1)]},
    }


def predict(dialect: str, strategy: str, workers: int, jobs: int, batch: int = 10,
            isolation: str = "read_committed", begin: str = "autocommit",
            seed: int = 1, profile: dict[str, Any] | None = None) -> Outcome:
    """The simulator's race (see the module's note). The run stops once every job has been
    claimed and every node has had time for one more attempt, as the real workers stop."""
    from ...database.store import JOB
    from ...format.scenario import from_dict
    from ...sim.world import World

    doc = race_scenario(dialect, strategy, workers, jobs, batch, isolation, begin, seed,
                        profile)
    world = World(from_dict(doc, "<race prediction>"), None, True)
    store, cpu = world.store, world.db.cpu
    claimed: list[tuple[float, float, float]] = []  # (when, CPU spent, CPU waited for)

    def stop_when_claimed(_events: int, now: float) -> None:
        if not claimed:
            soonest = store.next_eligible(now, JOB)
            if soonest is None or soonest > now + 3600:  # the race's CPU: to this instant
                claimed.append((now, *_cpu_spent(cpu)))
        elif now > claimed[0][0] + 0.05:  # every node's attempt in flight has ended by now
            raise _Claimed

    try:
        world.run(guard=stop_when_claimed)
    except _Claimed:
        pass
    out = count(world.trace, cpu, jobs, workers, batch,
                "simulated" if profile is None else "calibrated")
    if claimed and cpu is not None and claimed[0][0] > 0:
        at, out.cpu_seconds, waited = claimed[0]
        out.cpu_wait = waited / (workers * at)
    return out


def _cpu_spent(cpu: Any) -> tuple[float, float]:
    """(CPU seconds run, seconds the nodes' own processes waited for a core) so far."""
    if cpu is None:
        return math.nan, math.nan
    return sum(cpu.busy.values()), sum(v for k, v in cpu.waited.items() if "/" not in k)


def count(trace: Any, cpu: Any, jobs: int, workers: int, batch: int,
          source: str = "simulated") -> Outcome:
    """A race's trace (of ``race_scenario``) counted as a real race's records are."""
    from ...base.trace import K

    c = trace.arrays()
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
    out = Outcome(source, jobs, workers, batch)
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
    if cpu is not None:  # a whole run's (``predict`` counts to the race's end instead)
        out.cpu_seconds, waited = _cpu_spent(cpu)
        if out.seconds > 0:
            out.cpu_wait = waited / (workers * out.seconds)
    return out
