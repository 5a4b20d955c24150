"""Overlapping fault windows have defined semantics (see ``jobsim/sim/faults.py``): slow-downs
multiply, a node's pauses, partitions and down times are unioned, a pause acts only on a
node that is up; windows that overlap nothing run as they always did.

The scenarios run to a fixed ``until`` so that every fault's end is in the trace, and those
about one node's work run that node alone, so that it is the one that takes the job."""

import numpy as np
import pytest

from jobsim.analysis.checks import check
from jobsim.base.trace import K
from jobsim.cli import main
from jobsim.executor.config import Fault
from jobsim.format import scenario
from jobsim.sim.faults import Stretch, plan
from jobsim.sim.world import run

BASE = """
name: overlap
seed: 2
until: {until}
db: {{latency: 2ms}}
executor: {{acquisition: guarded_update, wakeup: poll, poll_interval: 1s, batch_size: 2,
           queue_size: 2, threads: 2, lock_time: 30s}}
nodes: {nodes}
handlers:
  work: {{duration: {duration}}}
workload:
  jobs: {jobs}
faults: {faults}
"""
BOTH = "[{name: node-A}, {name: node-B, start_at: 500ms}]"
ALONE = "[{name: node-A}]"


def text(faults: str, duration: str = "10s", jobs: str = "[{handler: work}]",
         until: str = "90s", nodes: str = BOTH) -> str:
    return BASE.format(duration=duration, jobs=jobs, faults=faults, until=until, nodes=nodes)


def make(faults: str, **kw):
    return scenario.loads(text(faults, **kw))


def events(result, kind, node=None):
    cols = result.trace.arrays()
    sel = cols["kind"] == K[kind]
    if node is not None:
        sel &= cols["node"] == result.trace.nodes.index(node)
    return {c: cols[c][sel] for c in cols}


def times(result, kind, node=None):
    return events(result, kind, node)["time"].tolist()


# --- slow_db: factors multiply ----------------------------------------------------------------

SPREAD = "[" + ", ".join("{handler: work, at: %ds}" % t
                         for t in (12, 15, 22, 25, 32, 35, 45)) + "]"


def test_overlapping_slowdowns_multiply_and_end_with_the_last_window():
    """×2 over 10–30 s and ×5 over 20–40 s: ×2, then ×10, then ×5, then normal again at 40 s
    (before, the first window's end reset the factor to 1 at 30 s)."""
    sc = make("[{at: 10s, slow_db: 2, for: 20s}, {at: 20s, slow_db: 5, for: 20s}]",
              duration="100ms", jobs=SPREAD)
    result = run(sc)
    slowed = events(result, "db_slowed")
    assert slowed["time"].tolist() == [10.0, 20.0, 30.0, 40.0]
    assert slowed["x"].tolist() == [2.0, 10.0, 5.0, 1.0]
    acq = events(result, "acquire")  # a claim's latency: 2 ms times the factor in force
    for low, high, latency in ((10, 20, 0.004), (20, 30, 0.02), (30, 40, 0.01), (41, 99, 0.002)):
        inside = (acq["time"] > low + 0.1) & (acq["time"] < high)
        assert inside.any() and np.allclose(acq["x"][inside], latency), (low, high)


def test_slowdowns_in_any_order_and_nested_give_the_same_steps():
    """A window inside another, listed first: ×3 over 5–50 s around ×2 over 10–20 s."""
    result = run(make("[{at: 10s, slow_db: 2, for: 10s}, {at: 5s, slow_db: 3, for: 45s}]",
                      duration="100ms", jobs=SPREAD))
    slowed = events(result, "db_slowed")
    assert slowed["time"].tolist() == [5.0, 10.0, 20.0, 50.0]
    assert slowed["x"].tolist() == [3.0, 6.0, 3.0, 1.0]


def test_touching_slowdowns_hand_over_without_a_gap():
    """×2 until 20 s, ×3 from 20 s: one change at 20 s, never back to 1 in between."""
    result = run(make("[{at: 20s, slow_db: 3, for: 10s}, {at: 10s, slow_db: 2, for: 10s}]",
                      duration="100ms", jobs=SPREAD))
    slowed = events(result, "db_slowed")
    assert slowed["time"].tolist() == [10.0, 20.0, 30.0]
    assert slowed["x"].tolist() == [2.0, 3.0, 1.0]


def test_separate_slowdowns_are_unchanged():
    faults = "[{at: 10s, slow_db: 2, for: 5s}, {at: 25s, slow_db: 3, for: 10s}]"
    result = run(make(faults, duration="100ms", jobs=SPREAD))
    slowed = events(result, "db_slowed")
    assert slowed["time"].tolist() == [10.0, 15.0, 25.0, 35.0]
    assert slowed["x"].tolist() == [2.0, 1.0, 3.0, 1.0]
    assert plan(make(faults).faults) == [Stretch("slow_db", None, 10.0, 2.0, ((5.0, 1.0),)),
                                         Stretch("slow_db", None, 25.0, 3.0, ((10.0, 1.0),))]


# --- pause: unioned -----------------------------------------------------------------------------

@pytest.mark.parametrize("faults", [
    "[{at: 5s, pause: node-A, for: 20s}, {at: 15s, pause: node-A, for: 30s}]",
    "[{at: 15s, pause: node-A, for: 30s}, {at: 5s, pause: node-A, for: 20s}]",
    "[{at: 5s, pause: node-A, for: 40s}, {at: 15s, pause: node-A, for: 5s}]",
    "[{at: 5s, pause: node-A, for: 15s}, {at: 20s, pause: node-A, for: 25s}]",  # touching
])
def test_overlapping_pauses_are_one_pause_to_the_latest_end(faults):
    """However they overlap, the pauses stall node-A from 5 s to 45 s: one pause, and the run
    it started in its first second ends at 45 s (before, a second pause during the first was
    dropped)."""
    sc = make(faults, until="drained", nodes=ALONE)
    result = run(sc)
    assert times(result, "node_paused", "node-A") == [5.0]
    assert events(result, "node_paused")["x"].tolist() == [40.0]
    assert times(result, "node_resumed", "node-A") == [45.0]
    assert times(result, "exec_start", "node-A")[0] < 1.0
    assert times(result, "exec_end", "node-A") == [45.0]
    assert check(result.trace, sc) == []


def test_separate_pauses_are_unchanged():
    faults = "[{at: 2s, pause: node-A, for: 3s}, {at: 7s, pause: node-A, for: 2s}]"
    sc = make(faults, until="drained", nodes=ALONE)
    assert plan(sc.faults) == list(sc.faults)
    result = run(sc)
    assert times(result, "node_paused", "node-A") == [2.0, 7.0]
    assert times(result, "node_resumed", "node-A") == [5.0, 9.0]
    start, = times(result, "exec_start", "node-A")
    # the run's end, 10 s after its start, falls in neither pause
    assert times(result, "exec_end", "node-A") == [pytest.approx(start + 10.0)]


# --- partition: unioned, the shortest timeout in force ------------------------------------------

def test_overlapping_partitions_heal_when_the_last_one_ends():
    """Cut off over 5–25 s and 15–65 s: one cut, healed at 65 s (before: at 25 s)."""
    sc = make("[{at: 5s, partition: node-A, for: 20s, timeout: 2s},"
              " {at: 15s, partition: node-A, for: 50s, timeout: 2s}]")
    result = run(sc)
    cut = events(result, "partition")
    assert cut["time"].tolist() == [5.0, 65.0] and cut["a"].tolist() == [1, 0]
    assert cut["x"].tolist() == [2.0, 2.0]
    assert check(result.trace, sc) == []


def test_overlapping_partitions_fail_statements_after_the_shortest_timeout():
    """5 s timeout over 5–65 s, 2 s over 8–20 s: node-A's completion, issued at ≈10 s, fails
    2 s later; the timeout goes back to 5 s at 20 s; node-A heals at 65 s."""
    sc = make("[{at: 5s, partition: node-A, for: 60s, timeout: 5s},"
              " {at: 8s, partition: node-A, for: 12s, timeout: 2s}]", nodes=ALONE)
    result = run(sc)
    cut = events(result, "partition")
    assert cut["time"].tolist() == [5.0, 8.0, 20.0, 65.0]
    assert cut["a"].tolist() == [1, 1, 1, 0]
    assert cut["x"].tolist() == [5.0, 2.0, 5.0, 5.0]
    end = times(result, "exec_end", "node-A")[0]
    failed = events(result, "statement_failed", "node-A")
    complete = [t for t, x in zip(failed["time"], failed["text"])
                if result.trace.texts[x] == "complete"]
    assert 8.0 < end < 18.0 and complete[0] == pytest.approx(end + 2.0)


def test_touching_partitions_stay_cut_across_the_boundary():
    sc = make("[{at: 5s, partition: node-A, for: 10s, timeout: 2s},"
              " {at: 15s, partition: node-A, for: 10s, timeout: 2s}]")
    cut = events(run(sc), "partition")
    assert cut["time"].tolist() == [5.0, 25.0] and cut["a"].tolist() == [1, 0]


def test_separate_partitions_are_unchanged():
    sc = make("[{at: 5s, partition: node-A, for: 10s, timeout: 1s},"
              " {at: 20s, partition: node-A, for: 10s, timeout: 3s},"
              " {at: 7s, partition: node-B, for: 10s, timeout: 2s}]")
    cut = events(run(sc), "partition")
    assert cut["time"].tolist() == [5.0, 7.0, 15.0, 17.0, 20.0, 30.0]
    assert cut["a"].tolist() == [1, 1, 0, 0, 1, 0]
    assert cut["x"].tolist() == [1.0, 2.0, 1.0, 2.0, 3.0, 3.0]


def test_overlapping_partitions_with_different_timeouts_validate(tmp_path, capsys):
    """Not refused: the shortest timeout in force holds (a documented rule)."""
    path = tmp_path / "two_cuts.yaml"
    path.write_text(text("[{at: 5s, partition: node-A, for: 60s, timeout: 5s},"
                         " {at: 8s, partition: node-A, for: 12s, timeout: 2s}]"),
                    encoding="utf-8")
    assert main(["validate", str(path)]) == 0


# --- crash: down times unioned ------------------------------------------------------------------

def test_a_crash_while_down_extends_the_down_time_to_the_later_restart():
    """Down over 5–15 s and 8–28 s: one crash, one restart at 28 s (before: back at 15 s)."""
    sc = make("[{at: 5s, crash: node-A, restart_after: 10s},"
              " {at: 8s, crash: node-A, restart_after: 20s}]",
              jobs="[" + ", ".join("{handler: work, at: %ds}" % t for t in range(0, 40, 4)) + "]")
    result = run(sc)
    assert times(result, "node_crashed", "node-A") == [5.0]
    assert times(result, "node_restarted", "node-A") == [28.0]
    starts = times(result, "exec_start", "node-A")
    assert not [t for t in starts if 5.0 <= t < 28.0]
    assert check(result.trace, sc) == []


def test_a_crash_for_ever_while_down_keeps_the_node_down():
    sc = make("[{at: 5s, crash: node-A, restart_after: 10s}, {at: 8s, crash: node-A}]")
    result = run(sc)
    assert times(result, "node_crashed", "node-A") == [5.0]
    assert times(result, "node_restarted", "node-A") == []
    assert plan(sc.faults) == [Fault(5.0, "crash", "node-A", None)]


def test_a_crash_at_the_restart_instant_keeps_the_node_down():
    sc = make("[{at: 15s, crash: node-A, restart_after: 5s},"
              " {at: 5s, crash: node-A, restart_after: 10s}]")
    result = run(sc)
    assert times(result, "node_crashed", "node-A") == [5.0]
    assert times(result, "node_restarted", "node-A") == [20.0]


def test_separate_crashes_are_unchanged():
    sc = make("[{at: 5s, crash: node-A, restart_after: 10s},"
              " {at: 20s, crash: node-A, restart_after: 5s}, {at: 8s, crash: node-B}]")
    assert plan(sc.faults) == list(sc.faults)
    result = run(sc)
    assert times(result, "node_crashed", "node-A") == [5.0, 20.0]
    assert times(result, "node_restarted", "node-A") == [15.0, 25.0]
    assert times(result, "node_crashed", "node-B") == [8.0]


# --- across kinds -------------------------------------------------------------------------------

@pytest.mark.parametrize("at", ["5s", "8s", "15s"])
def test_a_pause_that_starts_while_the_node_is_down_does_nothing(at):
    """Down over 5–15 s: a pause starting then (the crash and restart instants included)
    leaves the restarted node running."""
    sc = make("[{at: 5s, crash: node-A, restart_after: 10s},"
              " {at: %s, pause: node-A, for: 20s}]" % at)
    assert [f.kind for f in plan(sc.faults)] == ["crash"]
    result = run(sc)
    assert times(result, "node_paused", "node-A") == []
    assert times(result, "node_restarted", "node-A") == [15.0]


def test_a_crash_ends_a_pause_and_the_restarted_node_runs():
    """Paused over 2–42 s, down over 5–15 s: the node restarted at 15 s is not paused; it
    runs the job created at 20 s at once."""
    sc = make("[{at: 2s, pause: node-A, for: 40s}, {at: 5s, crash: node-A, restart_after: 10s}]",
              jobs="[{handler: work}, {handler: work, at: 20s}]", nodes=ALONE)
    result = run(sc)
    assert times(result, "node_paused", "node-A") == [2.0]
    assert times(result, "node_resumed", "node-A") == []
    assert times(result, "node_restarted", "node-A") == [15.0]
    assert [t for t in times(result, "exec_start", "node-A") if 15.0 < t < 22.0]


def test_pauses_of_two_lives_of_a_node_do_not_merge():
    """A pause over 2–8 s (ended by the crash at 5 s) and one over 12–20 s, after the restart
    at 10 s: two pauses, the second one whole."""
    sc = make("[{at: 2s, pause: node-A, for: 6s}, {at: 5s, crash: node-A, restart_after: 5s},"
              " {at: 12s, pause: node-A, for: 8s}]")
    assert [(f.kind, f.at, f.length) for f in plan(sc.faults)] == [
        ("pause", 2.0, 6.0), ("crash", 5.0, 5.0), ("pause", 12.0, 8.0)]
    result = run(sc)
    assert times(result, "node_paused", "node-A") == [2.0, 12.0]
    assert times(result, "node_resumed", "node-A") == [20.0]


def test_a_partition_outlives_a_crash():
    """Cut off over 3–60 s, down over 5–10 s: the node restarted at 10 s is still cut off —
    its claim for the job created at 20 s fails — until 60 s."""
    sc = make("[{at: 3s, partition: node-A, for: 57s, timeout: 1s},"
              " {at: 5s, crash: node-A, restart_after: 5s}]",
              jobs="[{handler: work, at: 20s}]", nodes=ALONE)
    result = run(sc)
    cut = events(result, "partition")
    assert cut["time"].tolist() == [3.0, 60.0]
    assert [t for t in times(result, "statement_failed", "node-A") if 20.0 <= t < 60.0]
    assert min(times(result, "exec_start", "node-A")) >= 60.0


def test_operations_and_server_restarts_keep_their_place():
    faults = (Fault(5.0, "slow_db", None, 10.0, factor=2.0), Fault(3.0, "restart_server"),
              Fault(8.0, "slow_db", None, 10.0, factor=3.0), Fault(1.0, "retry", "all"))
    planned = plan(faults)
    assert planned[1:] == [faults[1], faults[3]]
    assert planned[0] == Stretch("slow_db", None, 5.0, 2.0,
                                 ((3.0, 6.0), (7.0, 3.0), (3.0, 1.0)))
