"""The comparison policies beyond the seeds, behaviour by behaviour:
the SKIP LOCKED family (Oban's numbers), db-scheduler and real Zeebe."""

import copy

import numpy as np
import pytest

from jobsim.format import scenario
from jobsim.output.report import analyse
from jobsim.sim.world import World, run
from test_flowable import events

HANDLERS = {
    "ok": {"duration": "1s"},
    "bad": {"duration": "1s", "outcome": "always_fail", "error": "boom"},
    "flaky": {"duration": "1s", "outcome": {"fail_first": 3}, "error": "boom"},
    "long": {"duration": "5m"},
    "huge": {"duration": "45m"},
    "slow": {"duration": "7m"},
    "once": {"duration": "5m", "retry": {"attempts": 1}},
}


def make(policy, jobs, db=None, nodes=("a", "b"), **top):
    doc = {"name": "t", "until": "drained", "horizon": "4h", "policy": policy,
           # pinned at 0 s unless a test says otherwise: these tests time each poll
           "nodes": [{"name": n, "start_at": "0s"} if isinstance(n, str)
                     else {"start_at": "0s", **n} for n in nodes],
           "handlers": copy.deepcopy(HANDLERS), "workload": {"jobs": list(jobs)}}
    if db:
        doc["db"] = db
    doc.update(top)
    return scenario.from_dict(doc)


# --- the SKIP LOCKED family ----------------------------------------------------------------

PG = {"dialect": "postgres", "latency": "2ms"}


def test_skip_locked_backoff_is_15s_plus_2_to_the_attempt():
    r = run(make("skip_locked", [{"name": "x", "handler": "flaky"}], PG))
    start = events(r, "exec_start", 1)["time"]
    gaps = np.diff(start) - 1.0  # each run takes 1 s
    assert gaps == pytest.approx([17.0, 19.0, 23.0], abs=0.05)
    assert analyse(r).violations == []


def test_skip_locked_counts_the_attempt_when_the_row_is_claimed():
    w = World(make("skip_locked", [{"name": "x", "handler": "long"}], PG, until="1m"))
    seen = []

    def watch():
        while True:
            row = w.store.get(1)
            if row is not None:
                seen.append(row.retries)
            yield w.env.timeout(0.5)

    w.env.process(watch())
    w.run()
    assert w.scenario.initial_retries("long") == 20
    assert set(seen) == {19}  # 20 attempts; the claim at t=0 used one


def test_skip_locked_rescues_a_stuck_job_after_60_minutes_with_an_attempt_used():
    r = run(make("skip_locked", [{"name": "x", "handler": "long"}], PG,
                 nodes=("a", {"name": "b", "start_at": "1s"}),
                 faults=[{"at": "10s", "crash": "a"}]))
    start = events(r, "exec_start", 1)
    assert len(start["time"]) == 2
    assert 3600.0 < start["time"][1] <= 3600.0 + 60.0 + 1.1
    unlocked = events(r, "unlocked", 1)
    assert [r.trace.texts[t] for t in unlocked["text"]] == ["lock expired (reset)"]
    assert analyse(r).summary["named"]["x"]["outcome"] == "done"


def test_skip_locked_discards_a_stuck_job_with_no_attempts_left():
    r = run(make("skip_locked", [{"name": "x", "handler": "once"}], PG,
                 nodes=("a", {"name": "b", "start_at": "1s"}),
                 faults=[{"at": "10s", "crash": "a"}]))
    s = analyse(r)
    assert s.summary["named"]["x"]["outcome"] == "dead_lettered"
    assert s.summary["named"]["x"]["executions"] == 1
    assert s.violations == []


def test_skip_locked_batches_on_postgres_are_full_and_disjoint():
    doc_streams = [{"name": "burst", "handler": "ok", "count": 200}]
    sc = make("skip_locked", [], PG, nodes=("a", "b", "c", "d"), until="5s",
              workload={"streams": doc_streams})
    r = run(sc)
    acq = events(r, "acquire")
    assert acq["b"][:4].tolist() == [10, 10, 10, 10] and acq["c"].sum() == 0
    locked = events(r, "locked")
    assert len(np.unique(locked["job"])) == len(locked["job"]) == 200
    assert analyse(r).summary["double_acquisitions"] == 0


def test_count_at_fetch_needs_a_rescue():
    with pytest.raises(Exception) as e:
        make("skip_locked", [{"handler": "ok"}], PG, executor={"lock_expiry": "claim"})
    assert "executor.count_attempt" in str(e.value)


# --- db-scheduler ---------------------------------------------------------------------------

def test_db_scheduler_retries_a_failed_task_every_5_minutes_forever():
    r = run(make("db_scheduler", [{"name": "x", "handler": "bad"}], until="2h"))
    start = events(r, "exec_start", 1)["time"]
    assert len(start) >= 20
    assert np.diff(start) == pytest.approx([301.0] * (len(start) - 1), abs=10.1)
    s = analyse(r).summary
    assert s["jobs"]["dead_lettered"] == 0 and s["named"]["x"]["outcome"] == "pending"


def test_db_scheduler_heartbeat_keeps_a_long_execution_alive():
    r = run(make("db_scheduler", [{"name": "x", "handler": "huge"}]))
    assert len(events(r, "exec_start", 1)["time"]) == 1
    # every 5 min while it runs (the 9th beat falls at the instant it ends)
    assert len(events(r, "lock_extended", 1)["time"]) in (8, 9)


def test_db_scheduler_revives_a_dead_execution_30_to_40_minutes_after_its_heartbeat():
    r = run(make("db_scheduler", [{"name": "x", "handler": "long"}],
                 nodes=("a", {"name": "b", "start_at": "1s"}),
                 faults=[{"at": "10s", "crash": "a"}]))
    start = events(r, "exec_start", 1)["time"]
    assert len(start) == 2
    # the last heartbeat was the pick at t=0: dead at 30 min, found by a check every 10 min
    assert 1800.0 < start[1] <= 2400.0 + 10.0 + 1.0
    assert analyse(r).summary["named"]["x"]["outcome"] == "done"


# --- real Zeebe -----------------------------------------------------------------------------

def test_zeebe_a_crashed_workers_job_times_out_and_comes_back_with_its_retries():
    w = World(make("zeebe", [{"name": "x", "handler": "ok"}],
                   nodes=("a", {"name": "b", "start_at": "100ms"}),
                   faults=[{"at": "500ms", "crash": "a"}]))
    retries = []

    def watch():
        while True:
            row = w.store.get(1)
            if row is not None:
                retries.append(row.retries)
            yield w.env.timeout(1.0)

    w.env.process(watch())
    r = w.run()
    locked = events(r, "locked", 1)
    assert locked["x"][0] == pytest.approx(300.0)  # deadline = activation + 5 min
    # activatable again at the deadline; the worker's next poll (100 ms) takes it
    assert 300.0 < locked["time"][1] <= 300.0 + 0.11
    assert set(retries) == {3}  # the timeout leaves retries as they were
    assert analyse(r).summary["named"]["x"]["outcome"] == "done"


def test_zeebe_a_slow_job_runs_twice_and_the_late_completion_wins():
    r = run(make("zeebe", [{"name": "x", "handler": "slow"}],
                 nodes=("a", {"name": "b", "start_at": "100ms"})))
    start = events(r, "exec_start", 1)
    # re-activated at its deadline by a worker with room (here a itself, which prefetches it
    # behind its own running copy), so it runs twice
    assert len(start["time"]) == 2 and start["time"][1] > 300.0
    assert 300.0 < events(r, "locked", 1)["time"][1] <= 300.11
    done = events(r, "completed", 1)
    assert done["a"].tolist() == [1, 0]  # the first worker's (late) complete is accepted
    s = analyse(r).summary
    assert s["duplicate_executions"]["by_cause"]["lock_expired"] == 1
    assert s["completions"]["row_gone"] == 1


def test_zeebe_raises_an_incident_when_retries_run_out():
    r = run(make("zeebe", [{"name": "x", "handler": "bad"}]))
    s = analyse(r).summary
    assert s["named"]["x"]["outcome"] == "incident" and s["named"]["x"]["executions"] == 3


def test_zeebe_a_broker_restart_keeps_activated_jobs_activated():
    """Review finding: restart_server restored jobs under real Zeebe too; its broker
    recovers its state, deadlines included."""
    r = run(make("zeebe", [{"name": "x", "handler": "long"}],
                 faults=[{"at": "10s", "restart_server": True}]))
    s = analyse(r).summary
    assert s["named"]["x"]["executions"] == 1 and s["duplicate_executions"]["total"] == 0


def test_db_scheduler_a_crash_strands_only_what_was_executing():
    """Review finding: candidates fetched but not yet running were locked too, and a crash
    stranded them for 30-40 minutes. LOCK_AND_FETCH at 1.0 x threads fetches only for idle
    threads."""
    jobs = [{"handler": "ok"} for _ in range(30)]
    r = run(make("db_scheduler", jobs, nodes=({"name": "a", "threads": 2},
                                               {"name": "b", "threads": 2, "start_at": "5s"}),
                 faults=[{"at": "1500ms", "crash": "a"}]))
    s = analyse(r).summary
    assert s["crash_recovery"]["stranded_jobs"] == 2 and s["jobs"]["done"] == 30
