"""The invariant checker can fail: hand-made traces that break each invariant."""

import math

from jobsim.format import scenario
from jobsim.analysis.checks import check
from jobsim.base.trace import K, Trace
from jobsim.sim.world import run


def _sc(lesson_path):
    return scenario.load(lesson_path)


def _trace():
    t = Trace()
    t.node("node-A"), t.node("node-B")
    return t


def test_a_lost_job_is_reported(lesson_path):
    t = _trace()
    t.add(0.0, K["job_created"], -1, 1, x=0.0, text=t.text("reminder"))
    vs = check(t, _sc(lesson_path))
    assert [(v.invariant, v.job) for v in vs] == [("no_job_lost", 1)]


def test_done_without_a_successful_run_is_reported(lesson_path):
    t = _trace()
    t.add(0.0, K["job_created"], -1, 1, x=0.0, text=t.text("reminder"))
    t.add(1.0, K["completed"], 0, 1, a=1)
    vs = check(t, _sc(lesson_path))
    assert [(v.invariant, v.job) for v in vs] == [("done_means_ran", 1)]


def test_overwriting_a_valid_lock_is_reported(lesson_path):
    t = _trace()
    t.add(0.0, K["job_created"], -1, 1, x=0.0, text=t.text("reminder"))
    t.add(0.0, K["locked"], 0, 1, a=-1, x=300.0)
    t.add(1.0, K["locked"], 1, 1, a=0, x=301.0)
    t.add(2.0, K["pending"], -1, 1, text=t.text("job"))
    vs = check(t, _sc(lesson_path))
    assert [(v.invariant, v.job, v.events) for v in vs] == [("exclusive_locks", 1, (1, 2))]


def test_taking_an_expired_lock_is_not_a_double_acquisition(lesson_path):
    t = _trace()
    t.add(0.0, K["job_created"], -1, 1, x=0.0, text=t.text("reminder"))
    t.add(0.0, K["locked"], 0, 1, a=-1, x=300.0)
    t.add(300.5, K["locked"], 1, 1, a=0, x=600.5)
    t.add(301.0, K["pending"], -1, 1, text=t.text("job"))
    assert check(t, _sc(lesson_path)) == []


def test_a_duplicate_without_cause_is_reported(lesson_path):
    t = _trace()
    t.add(0.0, K["job_created"], -1, 1, x=0.0, text=t.text("reminder"))
    t.add(0.0, K["exec_start"], 0, 1, 1)
    t.add(0.0, K["exec_start"], 1, 1, 2)
    t.add(1.0, K["pending"], -1, 1, text=t.text("job"))
    vs = check(t, _sc(lesson_path))
    assert [(v.invariant, v.job) for v in vs] == [("duplicates_explained", 1)]


def test_a_wrong_backoff_and_an_early_dead_letter_are_reported(lesson_path):
    """The lesson's policy: 3 attempts, 10s then 60s."""
    t = _trace()
    t.add(0.0, K["job_created"], -1, 2, x=0.0, text=t.text("bureau-call"))
    t.add(0.0, K["retry_scheduled"], 0, 2, 1, a=2, x=15.0)   # 15s, not 10s
    t.add(15.0, K["dead_lettered"], 0, 2, 2)                 # after 2 of 3 attempts
    vs = check(t, _sc(lesson_path))
    assert [v.invariant for v in vs] == ["retries_follow_policy"] * 2
    assert "waits 15s" in vs[0].message and "after 2 failures" in vs[1].message


def test_a_real_run_with_a_long_handler_explains_its_duplicates(lesson_path):
    """A run longer than its lock, without heartbeat: the lock expires, another node takes
    the job and runs it again; the duplicate is explained as lock_expired."""
    text = """
name: long-run
until: 10m
db: {latency: 1ms}
executor: {acquisition: guarded_update, wakeup: poll, poll_interval: 5s, lock_time: 30s}
nodes: [{name: node-A}, {name: node-B, start_at: 1s}]
handlers:
  slow: {duration: 100s}
workload:
  jobs: [{handler: slow}]
"""
    sc = scenario.loads(text)
    result = run(sc)
    from jobsim.analysis.history import histories

    h = histories(result.trace)
    assert h.jobs[1].duplicate_executions >= 1
    assert {d.cause for d in h.duplicates} == {"lock_expired"}
    assert check(result.trace, sc) == []
    assert h.double_acquisitions == []


def test_heartbeat_prevents_the_expiry(lesson_path):
    text = """
name: heartbeat
until: 10m
db: {latency: 1ms}
executor: {acquisition: guarded_update, wakeup: poll, poll_interval: 5s, lock_time: 30s,
           heartbeat: 7500ms}
nodes: [{name: node-A}, {name: node-B, start_at: 1s}]
handlers:
  slow: {duration: 100s}
workload:
  jobs: [{handler: slow}]
"""
    sc = scenario.loads(text)
    result = run(sc)
    from jobsim.analysis.history import histories

    h = histories(result.trace)
    assert h.jobs[1].executions == 1 and h.jobs[1].outcome == "done"
    assert not math.isnan(h.jobs[1].end)
