"""The lane of lock expiries (``database/indexes.py``): a lock's entry goes to a FIFO beside
the ``pending`` heap when its instant is no earlier than the last one's there. It moves
nothing: random scenarios over the whole format (nodes with their own lock times, clock
faults, heartbeats, resets, crashes) give the same trace, polls and statements with the lane
as with every entry in the heap. And it does what it is for: with one lock time the heap
keeps only rows waiting to fall due, however many locks were taken.

The fresh test starts from the session's ``fresh_seed`` (printed with the command that
replays it); ``JOBSIM_LANE_SEED`` and ``JOBSIM_LANE_N`` run given seeds instead.
"""

from __future__ import annotations

import math
import os

import pytest

import fuzzgen
from jobsim.database import indexes
from jobsim.database.store import JOB, Row, Store
from jobsim.sim.world import World, run


def _compare(seed: int) -> int:
    """Run every variant of fuzz draw ``seed`` with and without the lane; how many ran."""
    ran = 0
    for scenario in fuzzgen.built(seed):
        with_lane = run(scenario)
        indexes.LANE = False
        try:
            heap_only = run(scenario)
        finally:
            indexes.LANE = True
        assert with_lane.trace.sha256() == heap_only.trace.sha256(), (
            f"the lane changed the run of fuzz draw {seed} (replay: JOBSIM_LANE_SEED={seed} "
            f"JOBSIM_LANE_N=1 pytest {__file__} -k fresh)")
        assert (with_lane.polls, with_lane.statements, with_lane.end_time) == \
            (heap_only.polls, heap_only.statements, heap_only.end_time)
        ran += 1
    return ran


@pytest.mark.slow  # about 10 CPU s: fixed seeds; fresh ones run by default
def test_the_lane_moves_nothing_on_200_random_scenarios():
    assert sum(_compare(seed) for seed in range(200)) >= 150


def test_the_lane_moves_nothing_on_fresh_random_scenarios(fresh_seed):
    start = int(os.environ.get("JOBSIM_LANE_SEED", fresh_seed % 10**9))
    n = int(os.environ.get("JOBSIM_LANE_N", "25"))
    print(f"fresh lane seeds {start}..{start + n - 1}")
    for seed in range(start, start + n):
        _compare(seed)


def test_locks_in_order_go_to_the_lane_and_an_earlier_one_to_the_heap():
    store = Store()
    for i in range(1, 7):
        store.insert(Row(i, "job", "h", 0, 0.0, 0.0, 3))
    ix = store._ix[JOB]
    assert [lk.id for lk in store.claim("a", 1.0, 2, 31.0)] == [1, 2]
    assert [lk.id for lk in store.claim("b", 2.0, 2, 32.0)] == [3, 4]
    assert [e[2] for e in ix.lane] == [1, 2, 3, 4] and ix.pending == []
    # a shorter lock taken later expires before the lane's last: it goes to the heap
    assert [lk.id for lk in store.claim("c", 3.0, 1, 13.0)] == [5]
    assert [e[2] for e in ix.pending] == [5]
    assert store.next_eligible(4.0) == 4.0  # row 6 is eligible
    assert [lk.id for lk in store.claim("c", 4.0, 1, 40.0)] == [6]
    assert [e[2] for e in ix.lane] == [1, 2, 3, 4, 6]
    # every row locked: the next eligible is the earliest expiry of both, strict (just
    # after it), here the heap's
    assert store.next_eligible(5.0) == math.nextafter(13.0, math.inf)
    assert store.delete(1, "a") and store.delete(5, "c")  # done: their entries go stale
    assert store.next_eligible(14.0) == math.nextafter(31.0, math.inf)  # row 2's lock
    assert store.next_eligible(33.0) == 33.0  # rows 2, 3 and 4: their locks expired
    assert [lk.id for lk in store.claim("d", 33.0, 5, 100.0)] == [2, 3, 4]
    assert [e[2] for e in ix.lane] == [6, 2, 3, 4] and ix.pending == []


def test_one_lock_time_keeps_the_heap_to_rows_waiting_to_fall_due():
    """16 nodes, a 5 min lock, 170 claims a second: the lane holds the locks' entries (one
    per lock taken in the last 5 min, most of them stale), the heap a few score: the retries
    waiting out their backoff, and the few locks whose expiry came out of order (PostgreSQL's
    ``now()`` is the transaction's start, and transactions overlap)."""
    from jobsim.tools.bench_models import full_model_scenario

    world = World(full_model_scenario(20_000), None, True)
    biggest = []

    def look(fraction: float, now: float) -> None:
        ix = world.store._ix[JOB]
        biggest.append((len(ix.pending), len(ix.lane)))

    world.run(progress=look)
    assert max(p for p, _ in biggest) < 200 < 10_000 < max(lane for _, lane in biggest)
