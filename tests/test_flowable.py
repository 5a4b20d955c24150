"""Flowable's async executor (seeds 000/001), behaviour by behaviour."""

import copy

import numpy as np
import pytest

from jobsim.format import scenario
from jobsim.output.report import analyse
from jobsim.database.store import DEADLETTER, TIMER
from jobsim.base.trace import K
from jobsim.sim.world import World, run

BASE = {
    "name": "f",
    "until": "drained",
    "horizon": "6h",
    "policy": "flowable",
    "db": {"latency": "2ms"},
    "nodes": [{"name": "a", "start_at": "0s"}, {"name": "b", "start_at": "3s"}],
    "handlers": {
        "ok": {"duration": "1s"},
        "bad": {"duration": "1s", "outcome": "always_fail", "error": "boom"},
        "twice": {"duration": "1s", "outcome": {"fail_first": 3}, "error": "boom"},
        "long": {"duration": "70m"},
        "mid": {"duration": "5m"},
    },
    "workload": {"jobs": []},
}


def make(jobs=(), streams=(), **over):
    doc = copy.deepcopy(BASE)
    doc["workload"] = {"jobs": list(jobs)}
    if streams:
        doc["workload"]["streams"] = list(streams)
    for path, value in over.items():
        cur = doc
        *steps, last = path.split("__")
        for s in steps:
            cur = cur.setdefault(s, {})
        cur[last] = value
    for node in doc["nodes"]:  # pinned at 0 s unless a test says otherwise: polls are timed
        node.setdefault("start_at", "0s")
    return scenario.from_dict(doc)


def events(result, kind, job=None):
    c = result.trace.arrays()
    sel = c["kind"] == K[kind]
    if job is not None:
        sel &= c["job"] == job
    return {k: v[sel] for k, v in c.items()}


def job_polls(result):
    """The acquisition attempts on the job table (not the timer loop's)."""
    acq = events(result, "acquire")
    texts = result.trace.texts
    sel = np.array([not texts[t].endswith("timer_job") for t in acq["text"]], dtype=bool)
    return {k: v[sel] for k, v in acq.items()}


def node_of(result, name):
    return result.trace.nodes.index(name)


def test_the_hint_path_locks_a_new_job_for_its_creator_and_runs_it_at_once():
    r = run(make([{"handler": "ok", "at": "10s", "node": "b"}]))
    locked, start = events(r, "locked", 1), events(r, "exec_start", 1)
    assert locked["time"].tolist() == [10.0] and locked["node"][0] == node_of(r, "b")
    assert locked["x"][0] == pytest.approx(10.0 + 3600.0)  # LOCK_EXP_TIME_ = now + 1 h
    assert start["time"].tolist() == [10.0] and start["node"][0] == node_of(r, "b")
    # no acquisition statement locked it: every acquire got 0 rows
    assert events(r, "acquire")["b"].sum() == 0


def test_without_the_hint_a_job_waits_for_an_acquisition_poll():
    r = run(make([{"handler": "ok", "at": "10s", "node": "b"}], executor__hint=False))
    start = events(r, "exec_start", 1)["time"][0]
    assert 10.0 < start <= 10.0 + 10.0 + 0.1  # the next acquisition, 10 s apart at most
    assert events(r, "locked", 1)["x"][0] > start  # locked by a poll, not at creation


def test_a_full_pool_unacquires_the_hinted_job_without_re_hinting():
    """Queue full → RejectedExecutionException → the job is unlocked in a new transaction
    and any node's acquisition takes it later; the creator is not hinted again."""
    jobs = [{"handler": "mid", "at": "10s", "node": "a"},
            {"handler": "ok", "at": "11s", "node": "a"},
            {"handler": "ok", "at": "12s", "node": "a"}]
    r = run(make(jobs, nodes=[{"name": "a", "threads": 1, "queue_size": 1}, {"name": "b"}]))
    unlocked = events(r, "unlocked")
    texts = [r.trace.texts[t] for t in unlocked["text"]]
    assert unlocked["job"].tolist() == [3] and texts == ["queue full"]
    assert events(r, "locked", 3)["node"].tolist() == [node_of(r, "a"), node_of(r, "b")]
    start = events(r, "exec_start", 3)
    assert start["node"].tolist() == [node_of(r, "b")]  # another node's poll took it
    assert start["time"][0] > 12.0


def test_acquisition_repolls_at_once_after_a_full_batch_of_512_else_waits_10s():
    streams = [{"name": "burst", "handler": "ok", "count": 1100},
               {"name": "late", "handler": "ok", "count": 1, "start": "5s"}]
    r = run(make(streams=streams, nodes=[{"name": "a", "queue_size": 5000, "hint": False}],
                 until="30s"))
    acq = job_polls(r)
    t, got = acq["time"], acq["b"]
    assert got[:3].tolist() == [512, 512, 76]
    assert t[2] - t[0] < 0.1  # the full batches were followed at once
    assert t[3] - t[2] == pytest.approx(10.0, abs=0.01)  # then the 10 s acquire wait
    assert got[3] == 1


def test_one_rev_conflict_rolls_back_the_whole_batch_and_the_node_sleeps_10s():
    """Two nodes read the same unlocked rows (no ORDER BY) at the same instant; the first
    flush wins all of them, the second finds one REV_ moved and rolls its whole batch back
    (FlowableOptimisticLockingException), then waits the acquire wait."""
    streams = [{"name": "burst", "handler": "ok", "count": 40}]
    r = run(make(streams=streams, until="60s", executor__hint=False,
                 nodes=[{"name": "a"}, {"name": "b"}]))
    acq = job_polls(r)
    first = acq["time"] == acq["time"][0]
    assert sorted(acq["b"][first].tolist()) == [0, 40]
    loser = acq["node"][first][acq["b"][first] == 0][0]
    lost = acq["attempt"][first][acq["node"][first] == loser]
    assert lost.tolist() == [1]  # counted as an error of the attempt
    assert acq["c"][first][acq["node"][first] == loser][0] == 40  # the whole batch lost
    nxt = acq["time"][(acq["node"] == loser) & (acq["time"] > acq["time"][0])][0]
    assert nxt - acq["time"][0] == pytest.approx(10.0, abs=0.05)


def test_the_global_acquire_lock_stops_the_rollbacks():
    streams = [{"name": "burst", "handler": "ok", "count": 40}]
    r = run(make(streams=streams, until="60s", executor__hint=False,
                 executor__global_lock=True, nodes=[{"name": "a"}, {"name": "b"}]))
    a = analyse(r).summary
    assert a["acquisition"]["errors"] == 0 and a["acquisition"]["lost_races"] == 0
    assert a["jobs"]["done"] == 40 and a["double_acquisitions"] == 0


def test_a_crashed_holder_of_the_global_lock_is_overridden_after_10_minutes():
    streams = [{"name": "later", "handler": "ok", "count": 5, "start": "2m"}]
    # a's statements take 1 s: it dies while holding the lock (taken at t=1 s, bulk select
    # and update take 2 s more)
    r = run(make(streams=streams, executor__hint=False, executor__global_lock=True,
                 db={"latency": "1s"},
                 nodes=[{"name": "a"}, {"name": "b", "start_at": "1500ms"}],
                 faults=[{"at": "2s", "crash": "a"}]))
    start = events(r, "exec_start")
    assert len(start["time"]) == 5 and set(start["node"].tolist()) == {node_of(r, "b")}
    assert start["time"].min() >= 1.0 + 600.0  # not before the lock is 10 min old


def test_a_lock_without_heartbeat_expires_after_an_hour_and_the_job_runs_twice():
    """No heartbeat: a 70-minute job's 1 h lock expires, the reset thread frees it and
    another node runs it concurrently."""
    r = run(make([{"name": "x", "handler": "long", "node": "a"}]))
    start = events(r, "exec_start", 1)
    assert len(start["time"]) == 2
    assert 3600.0 < start["time"][1] - start["time"][0] <= 3600.0 + 60.0 + 10.0 + 1.0
    s = analyse(r).summary
    assert s["duplicate_executions"]["by_cause"]["lock_expired"] == 1
    reason = events(r, "unlocked", 1)["text"][0]
    assert r.trace.texts[reason] == "lock expired (reset)"


def test_the_reset_thread_unlocks_in_pages_of_3_every_60s_leaving_retries():
    """A crashed node's 7 jobs: one reset pass unlocks them in pages of 3, 3, 1 (then an
    empty page) at the first tick after their locks expired; retries untouched."""
    jobs = [{"handler": "ok", "at": "10s", "node": "a"} for _ in range(7)]
    w = World(make(jobs, nodes=[{"name": "a", "threads": 1}, {"name": "b"}],
                   faults=[{"at": "10s", "crash": "a"}], until="2h"))
    env, retries = w.env, set()

    def watch():
        yield env.timeout(3600.0)
        while True:
            retries.update(r.retries for r in w.store.rows.values())
            yield env.timeout(0.5)

    env.process(watch())
    r = w.run()
    unlocked = events(r, "unlocked")
    t = unlocked["time"]
    # one reset pass: pages of 3, 3 and 1, each one statement (2 ms) after the other
    assert np.unique(t, return_counts=True)[1].tolist() == [3, 3, 1]
    assert 10.0 + 3600.0 < t[0] and t[-1] <= 10.0 + 3600.0 + 60.0 + 0.1
    assert len(set(unlocked["node"].tolist())) == 1
    assert retries == {3}  # the reset does not touch retries
    assert analyse(r).summary["jobs"]["done"] == 7


def test_retries_3_at_10s_through_the_timer_table_then_the_dead_letter_table():
    w = World(make([{"name": "x", "handler": "bad", "node": "a"}], until="5m"))
    env = w.env
    seen = []

    def watch():
        while True:
            row = w.store.get(1)
            seen.append(None if row is None else row.table)
            yield env.timeout(1.0)

    env.process(watch())
    r = w.run()
    start = events(r, "exec_start", 1)["time"]
    assert len(start) == 3
    # a 1 s run, the 10 s wait, then the timer loop's next poll (every 10 s) moves it
    assert all(11.0 <= d <= 21.1 for d in np.diff(start))
    assert TIMER in seen and w.store.get(1).table == DEADLETTER
    assert analyse(r).violations == []


def test_retry_cycle_r5_pt10m_runs_5_times_10_minutes_apart_then_dead_letters():
    r = run(make([{"name": "x", "handler": "bad", "node": "a"}],
                 handlers__bad__retry={"backoff": "R5/PT10M"}))
    start = events(r, "exec_start", 1)["time"]
    assert len(start) == 5
    assert all(601.0 <= d <= 611.1 for d in np.diff(start))  # 1 s + 10 min + a timer poll
    s = analyse(r).summary
    assert s["named"]["x"]["outcome"] == "dead_lettered" and s["jobs"]["dead_lettered"] == 1
    assert analyse(r).violations == []


def test_move_brings_a_dead_letter_back_with_the_retries_given():
    r = run(make([{"name": "x", "handler": "twice", "node": "a"}],
                 operations=[{"at": "10m", "move": "x", "retries": 2}]))
    start = events(r, "exec_start", 1)["time"]
    assert len(start) == 4 and start[3] >= 600.0
    revived = events(r, "revived", 1)
    assert revived["a"].tolist() == [2]
    assert analyse(r).summary["named"]["x"]["outcome"] == "done"


def test_a_suspended_job_is_never_acquired_until_activated():
    r = run(make([{"name": "x", "handler": "ok", "at": "5s"}],
                 executor__hint=False,
                 operations=[{"at": "5s", "suspend": "x"}, {"at": "20m", "activate": "x"}]))
    start = events(r, "exec_start", 1)["time"]
    assert len(start) == 1 and 1200.0 <= start[0] <= 1200.0 + 10.1
    assert events(r, "suspended", 1)["a"].tolist() == [1, 0]


def test_a_timer_waits_in_the_timer_table_and_is_moved_locked_and_hinted_when_due():
    w = World(make([{"name": "t", "handler": "ok", "kind": "timer", "due_in": "1m"}],
                   until="5m"))
    env = w.env
    tables = {}

    def look():
        yield env.timeout(30.0)
        tables["before"] = w.store.get(1).table
    env.process(look())
    r = w.run()
    assert tables["before"] == TIMER
    moved = events(r, "timer_due", 1)
    assert len(moved["time"]) == 1 and 60.0 <= moved["time"][0] <= 60.0 + 10.1
    start = events(r, "exec_start", 1)
    assert start["time"][0] == pytest.approx(moved["time"][0], abs=0.01)
    assert start["node"][0] == moved["node"][0]  # the mover ran it: hinted
    assert analyse(r).violations == []


def test_a_moved_dead_letter_gets_the_retries_given_and_the_check_follows_them():
    """Review finding: retries_follow_policy measured a moved job against the policy's 3."""
    r = run(make([{"name": "x", "handler": "bad", "node": "a"}],
                 operations=[{"at": "30m", "move": "x", "retries": 5}]))
    assert len(events(r, "exec_start", 1)["time"]) == 3 + 5
    a = analyse(r)
    assert a.violations == [] and a.summary["named"]["x"]["outcome"] == "dead_lettered"
