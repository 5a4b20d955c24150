"""Flowable's async executor, behaviour by behaviour."""

import copy

import numpy as np
import pytest

from jobsim.analysis.narrative import narrate
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


# --- boundary timers: timer jobs of the timer table -------------------------------------------

def bounded(duration="60s", interrupting=True, nodes=None, **over):
    """One task ``s`` (job 1) with a 30 s boundary timer (its timer job: job 2), created at
    t=0 by a client; one node pinned at 4 s, so its timer loop polls at 4, 14, 24, 34 s…; no
    statement latency, so every instant below is exact."""
    over.setdefault("db", {"latency": "0s"})
    return make([{"name": "s", "handler": "review"}],
                handlers__review={"duration": duration,
                                  "boundary_timer": {"after": "30s",
                                                     "interrupting": interrupting}},
                nodes=nodes or [{"name": "a", "start_at": "4s"}], **over)


def test_an_interrupting_boundary_timer_is_a_timer_job_run_at_the_first_timer_poll_after_it():
    """The timer row is in the timer table from the task's creation, due at 30 s; the timer
    loop (every 10 s from 4 s) locks and moves it at its first poll at or after 30 s — 34 s —
    straight to the node's pool; a thread runs it, and only then is the task's job withdrawn.
    The worker's completion of the task at 64 s finds the row gone: told as the job being
    gone, not as a duplicate run."""
    w = World(bounded())
    env, seen = w.env, {}

    def look():
        for t in (0.5, 29.0, 33.0):
            yield env.timeout(t - env.now)
            row = w.store.get(2)
            seen[t] = (row.table, row.locked_by, row.due)
    env.process(look())
    r = w.run()
    assert seen == {t: (TIMER, None, 30.0) for t in (0.5, 29.0, 33.0)}
    created = events(r, "job_created", 2)
    assert created["time"].tolist() == [0.0] and created["a"].tolist() == [2]  # kind 2
    assert created["x"].tolist() == [30.0] and r.trace.texts[created["text"][0]] == "review"
    timer_polls = [(t, got) for t, got, text in zip(*(events(r, "acquire")[c] for c in
                                                      ("time", "b", "text")))
                   if r.trace.texts[text].endswith("timer_job")]
    assert timer_polls == [(4.0, 0), (34.0, 1)]  # 14 and 24 s: slept through, found nothing
    assert events(r, "locked", 2)["time"].tolist() == [34.0, 34.0]  # claimed, then moved
    moved = events(r, "timer_due", 2)
    assert moved["time"].tolist() == [34.0] and moved["x"].tolist() == [30.0]
    run_ = events(r, "exec_start", 2)
    assert run_["time"].tolist() == [34.0] and run_["a"].tolist() == [1]  # thread 1 of a
    assert run_["node"].tolist() == [node_of(r, "a")]
    gone = events(r, "withdrawn")
    assert gone["job"].tolist() == [1] and gone["time"].tolist() == [34.0]
    assert gone["a"].tolist() == [2] and gone["x"].tolist() == [30.0]
    done = events(r, "completed", 1)
    assert done["time"].tolist() == [64.0] and done["a"].tolist() == [0]  # row gone
    assert r.end_time == 64.0
    a = analyse(r)
    assert a.violations == []
    s = a.summary
    assert s["jobs"]["created"] == 2 and s["jobs"]["done"] == 1  # the timer job ran
    assert s["jobs"]["withdrawn"] == 1 and s["named"]["s"]["outcome"] == "withdrawn"
    assert s["completions"] == {"done": 1, "rejected_by_guard": 0, "row_gone": 1}
    assert s["duplicate_executions"]["total"] == 0 and s["executions"] == 2
    assert s["boundary_timers"] == {
        "timer_jobs": 1, "done": 1, "cancelled": 0, "pending": 0, "fired": 1, "withdrew": 1,
        "delay": {"n": 1, "mean": 4.0, "max": 4.0, "p50": 4.0, "p90": 4.0, "p99": 4.0}}
    lines = narrate(r.trace)
    assert ("  [a] job 1 WITHDRAWN by its interrupting boundary timer at t=34s: its timer "
            "job 2, due at t=30s, ran 4s late") in lines
    assert ("  [a] job 1 completion found no row: the job was withdrawn by its boundary "
            "timer (timer job 2)") in lines
    assert not any("duplicate" in line for line in lines)


def test_a_non_interrupting_boundary_timer_fires_when_its_timer_job_runs_and_leaves_the_job():
    r = run(bounded(interrupting=False))
    fired = events(r, "boundary_timer")
    assert fired["job"].tolist() == [1] and fired["time"].tolist() == [34.0]
    assert fired["a"].tolist() == [2] and fired["x"].tolist() == [30.0]
    assert len(events(r, "withdrawn")["time"]) == 0
    assert events(r, "completed", 1)["time"].tolist() == [64.0]
    assert events(r, "completed", 1)["a"].tolist() == [1]  # the task's job is done
    a = analyse(r)
    assert a.violations == []
    assert a.summary["jobs"]["done"] == 2 and a.summary["named"]["s"]["outcome"] == "done"
    assert a.summary["boundary_timers"]["fired"] == 1
    assert a.summary["boundary_timers"]["withdrew"] == 0
    assert ("  [a] job 1's non-interrupting boundary timer FIRED at t=34s: its timer job 2, "
            "due at t=30s, ran 4s late; the job stays") in narrate(r.trace)


def test_a_task_done_before_its_timer_deletes_the_timer_with_it_and_nothing_fires():
    """The task runs 4..14 s: its completion ends the activity and deletes its boundary
    timer's row in the same statement; the timer loop never sees it, nothing fires."""
    r = run(bounded(duration="10s"))
    assert r.store.get(2) is None
    cancelled = events(r, "cancelled")
    assert cancelled["job"].tolist() == [2] and cancelled["time"].tolist() == [14.0]
    assert cancelled["a"].tolist() == [1]  # with its task
    assert len(events(r, "timer_due", 2)["time"]) == len(events(r, "exec_start", 2)["time"]) == 0
    assert len(events(r, "withdrawn")["time"]) == len(events(r, "boundary_timer")["time"]) == 0
    assert r.end_time == 14.0
    a = analyse(r)
    assert a.violations == []
    assert a.summary["jobs"]["done"] == 1 and a.summary["jobs"]["cancelled"] == 1
    assert a.summary["boundary_timers"]["cancelled"] == 1
    assert a.summary["boundary_timers"]["fired"] == 0


def test_a_timer_job_queued_behind_its_task_is_deleted_when_the_task_ends_first():
    """One thread, busy with the task: the timer moved at 34 s waits in the pool's queue;
    the task ends at 64 s, deleting it; the thread then runs it, and its completion finds
    its row gone — the timer fires nothing, and that is no duplicate run."""
    r = run(bounded(nodes=[{"name": "a", "start_at": "4s", "threads": 1}]))
    assert events(r, "timer_due", 2)["time"].tolist() == [34.0]
    assert events(r, "cancelled", 2)["time"].tolist() == [64.0]
    assert events(r, "exec_start", 2)["time"].tolist() == [64.0]
    assert events(r, "completed", 2)["a"].tolist() == [0]
    assert len(events(r, "withdrawn")["time"]) == 0
    a = analyse(r)
    assert a.violations == [] and a.summary["duplicate_executions"]["total"] == 0
    assert a.summary["named"]["s"]["outcome"] == "done"
    assert a.summary["completions"]["row_gone"] == 1
    assert a.summary["boundary_timers"] == {
        "timer_jobs": 1, "done": 0, "cancelled": 1, "pending": 0, "fired": 0, "withdrew": 0,
        "delay": {"n": 0}}
    assert ("  [a] job 2 (a boundary timer) ran, but its row is gone: deleted with its task, "
            "job 1, which ended first (the timer fires nothing)") in narrate(r.trace)


def test_a_crashed_holder_of_the_timer_job_delays_the_boundary_event_by_the_lock_and_reset():
    """a (one thread) runs the task it created at 0 s and holds the timer job it moved at
    30 s in its queue when it crashes at 40 s. Both locks (1 h) stay until b's reset thread
    frees them at its tick after they expired (3660 s); b claims both at its next poll
    (3665 s) and runs them: the timer job withdraws the task's job 3635 s late, and b's
    re-run of the task (a duplicate, by the crash) finds its row gone."""
    r = run(make([{"name": "s", "handler": "review", "node": "a"}], db={"latency": "0s"},
                 handlers__review={"duration": "60s", "boundary_timer": {"after": "30s"}},
                 nodes=[{"name": "a", "threads": 1}, {"name": "b", "start_at": "5s"}],
                 faults=[{"at": "40s", "crash": "a"}]))
    b = node_of(r, "b")
    assert events(r, "timer_due", 2)["time"].tolist() == [30.0]
    assert events(r, "node_crashed")["b"].tolist() == [1]  # the queued timer job
    unlocked = events(r, "unlocked")
    assert unlocked["job"].tolist() == [1, 2] and unlocked["time"].tolist() == [3660.0] * 2
    assert events(r, "exec_start", 2)["time"].tolist() == [3665.0]
    gone = events(r, "withdrawn")
    assert gone["time"].tolist() == [3665.0] and gone["node"].tolist() == [b]
    assert events(r, "completed", 1)["time"].tolist() == [3725.0]
    a = analyse(r)
    assert a.violations == []
    s = a.summary
    assert s["crash_recovery"]["stranded_jobs"] == 2 and s["crash_recovery"]["unrecovered"] == 0
    assert s["duplicate_executions"]["by_cause"]["crash"] == 1
    assert s["duplicate_executions"]["total"] == 1
    assert s["boundary_timers"]["delay"]["max"] == 3635.0
    assert s["completions"]["row_gone"] == 1 and s["jobs"]["lost"] == 0


def test_a_node_that_handles_a_task_runs_its_boundary_timers_jobs():
    r = run(bounded(nodes=[{"name": "a", "start_at": "4s", "handles": ["review"]},
                           {"name": "b", "start_at": "0s", "handles": ["ok"]}]))
    assert events(r, "exec_start", 2)["node"].tolist() == [node_of(r, "a")]
    assert events(r, "withdrawn")["time"].tolist() == [34.0]
    assert analyse(r).violations == []


STORM = """
name: storm
seed: 7
until: drained
horizon: 12h
policy: flowable
db: {latency: LATENCY}
executor: {threads: 2}
nodes: [{name: a}, {name: b}, {name: c}]
handlers:
  review: {duration: {lognormal: {median: 25s, p99: 120s}}, boundary_timer: {after: 30s}}
  remind: {duration: {uniform: {low: 5s, high: 60s}},
           boundary_timer: {after: 20s, interrupting: false}}
  flaky: {duration: 2s, outcome: {fail_rate: 0.5}, boundary_timer: {after: 15s}}
workload:
  streams:
    - {name: r, handler: review, count: 120, rate: 0.5/s, nodes: [a, b, c]}
    - {name: m, handler: remind, count: 60, rate: 0.25/s}
    - {name: f, handler: flaky, count: 40, rate: 0.2/s}
faults:
  - {at: 90s, crash: b, restart_after: 2m}
  - {at: 200s, crash: c}
"""


def test_boundary_timers_under_load_crashes_and_retries_keep_every_invariant():
    """220 tasks with boundary timers (interrupting, not, on a flaky task that retries
    through the timer table), on 3 nodes with 2 threads each, two of them crashing: every
    invariant holds, and the timer jobs' figures add up."""
    r = run(scenario.loads(STORM.replace("LATENCY", "2ms")))
    a = analyse(r)
    assert a.violations == []
    s, bt = a.summary, a.summary["boundary_timers"]
    assert bt["timer_jobs"] == 220 and s["jobs"]["created"] == 440
    assert bt["done"] + bt["cancelled"] + bt["pending"] == bt["timer_jobs"]
    assert bt["withdrew"] == s["jobs"]["withdrawn"] and bt["fired"] <= bt["done"]
    assert (bt["done"], bt["cancelled"], bt["fired"], bt["withdrew"]) == (81, 139, 80, 66)
    assert s["jobs"]["lost"] == 0 and s["jobs"]["pending"] == 0
    assert s["duplicate_executions"]["by_cause"]["crash"] == 3
    assert s["duplicate_executions"]["total"] == 3


def test_the_idle_sleep_is_exact_with_boundary_timers():
    from test_idle_exact import _reduced

    sc = scenario.loads(STORM.replace("LATENCY", "0s"))
    on, off = run(sc), run(sc, idle_shortcut=False)
    assert sum(on.polls_skipped.values()) > 0
    assert _reduced(on) == _reduced(off) and on.end_time == off.end_time


@pytest.mark.slow  # 9 CPU s: three children; the default tier's test_determinism holds the property
def test_a_run_with_boundary_timers_is_the_same_under_any_hash_seed(tmp_path):
    from test_determinism import _hash_in_subprocess

    path = tmp_path / "storm.yaml"
    path.write_text("# boundary timers as timer jobs\n" + STORM.replace("LATENCY", "2ms"))
    assert _hash_in_subprocess(path, "0", tmp_path) == \
        _hash_in_subprocess(path, "4242", tmp_path)


def test_an_expectation_on_boundary_timers_needs_timer_jobs(tmp_path):
    """Without a timer table the engine fires its boundary timers itself: no
    ``boundary_timers`` figure, and an expectation naming one is refused at load."""
    from jobsim.base.errors import ScenarioError
    from jobsim.cli import main

    text = ("name: z\npolicy: zeebe_like\nnodes: 1\nhandlers: {h: {boundary_timer: "
            "{after: 1s}}}\nworkload: {jobs: [{handler: h}]}\n"
            "expect: {boundary_timers.fired: '== 1'}\n")
    with pytest.raises(ScenarioError) as err:
        scenario.loads(text)
    assert [p.path for p in err.value.problems] == ["expect.boundary_timers.fired"]
    path = tmp_path / "z.yaml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    assert "boundary_timers" not in analyse(run(scenario.loads(
        text.split("expect:")[0]))).summary
    assert "boundary_timers" in analyse(run(scenario.loads(
        text.replace("zeebe_like", "flowable")))).summary


def test_a_move_is_told_as_a_move_from_the_dead_letter_table_with_its_retries():
    r = run(make([{"name": "x", "handler": "twice", "node": "a"}],
                 operations=[{"at": "10m", "move": "x", "retries": 2}]))
    lines = narrate(r.trace)
    assert ("      job 1 MOVED back from the dead-letter table to the job table by an operator "
            "at t=600s, with 2 retries") in lines
    assert not any("RETRIED" in line for line in lines)
