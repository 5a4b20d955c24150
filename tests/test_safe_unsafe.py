"""Which claim strategies are safe on real PostgreSQL and SQLite: K = 2, 4, 8 nodes race over
10,000 due jobs with ORDER BY priority DESC, id LIMIT 10.

Nodes here only claim (each runs one day-long job and keeps claiming into its local queue),
so every acquisition is a race for the same top rows."""

import numpy as np
import pytest

from jobsim.format import scenario
from jobsim.analysis.history import histories
from jobsim.base.trace import K
from jobsim.sim.world import run

TEMPLATE = """
name: k
seed: 1
until: 1h
db: {{dialect: {dialect}, latency: {{uniform: {{low: 1ms, high: 3ms}}}},
     isolation: {isolation}, sqlite_begin: {begin}}}
executor: {{acquisition: {strategy}, wakeup: poll, poll_interval: 1s, batch_size: 10,
           queue_size: 100000, threads: 1, lock_time: 1d, order: priority}}
nodes: {k}
handlers:
  work: {{duration: 1d}}
workload:
  streams: [{{name: s, handler: work, count: 10000}}]
"""


def race(dialect, strategy, k, isolation="read_committed", begin="autocommit"):
    sc = scenario.loads(TEMPLATE.format(dialect=dialect, strategy=strategy, k=k,
                                        isolation=isolation, begin=begin))
    result = run(sc)
    c = result.trace.arrays()
    acq = c["kind"] == K["acquire"]
    claimed = np.unique(c["job"][c["kind"] == K["locked"]])
    return {"doubles": len(histories(result.trace).double_acquisitions),
            "claimed": len(claimed), "sizes": set(c["b"][acq].tolist()),
            "lost": int(c["c"][acq].sum()), "errors": int(c["attempt"][acq].sum())}


SAFE = [("postgres", "guarded_update"), ("postgres", "optimistic"),
        ("postgres", "skip_locked"), ("sqlite", "guarded_update"),
        ("sqlite", "unguarded_update"), ("sqlite", "optimistic")]
UNSAFE = [("postgres", "unguarded_update"), ("postgres", "read_then_write"),
          ("sqlite", "read_then_write")]


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("dialect,strategy", SAFE)
def test_safe_strategies_never_double_acquire(dialect, strategy, k):
    r = race(dialect, strategy, k)
    assert r["doubles"] == 0 and r["claimed"] == 10_000
    if strategy == "guarded_update" and dialect == "postgres":
        assert r["sizes"] == {0, 10}  # all-or-nothing: losers get nothing
    if strategy == "skip_locked":
        assert r["sizes"] == {0, 10}  # full, disjoint batches (0 only once drained)
    if strategy == "optimistic":
        assert r["lost"] > 0


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("dialect,strategy", UNSAFE)
def test_unsafe_strategies_double_acquire(dialect, strategy, k):
    r = race(dialect, strategy, k)
    assert r["doubles"] > 0


def test_postgres_repeatable_read_turns_losses_into_serialization_failures():
    r = race("postgres", "guarded_update", 4, isolation="repeatable_read")
    assert r["doubles"] == 0 and r["errors"] > 0


@pytest.mark.parametrize("begin,doubles,errors", [("deferred", False, True),
                                                  ("immediate", False, False)])
def test_sqlite_read_then_write_in_a_transaction(begin, doubles, errors):
    r = race("sqlite", "read_then_write", 4, begin=begin)
    assert (r["doubles"] > 0) == doubles and (r["errors"] > 0) == errors
