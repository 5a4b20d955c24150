"""Defects found in review, each held by the smallest scenario that showed it."""

import random

import pytest

from jobsim.format import scenario
from jobsim.cli import main
from jobsim.analysis.history import histories
from jobsim.output.report import analyse
from jobsim.database.store import Store
from jobsim.sim.world import run


def _run(text):
    sc = scenario.loads(text)
    return sc, run(sc)


def test_a_crash_while_waiting_for_a_connection_gives_it_back():
    _, r = _run("""
name: pool
until: drained
horizon: 1h
db: {latency: 1s, connections: 1}
executor: {poll_interval: 1s, lock_time: 10s}
nodes: [{name: a}, {name: b}]
handlers: {w: {duration: 1s}}
workload: {jobs: [{handler: w}, {handler: w, at: 5s}]}
faults: [{at: 0.5s, crash: b, restart_after: 1s}]
""")
    assert r.drained and analyse(r).summary["jobs"]["done"] == 2


def test_notify_sees_an_insert_after_a_reschedule_woke_it():
    _, r = _run("""
name: notify
until: drained
executor: {wakeup: notify, poll_interval: 10s, retry: {attempts: 3, backoff: [100s]}}
nodes: 1
handlers:
  flaky: {outcome: {fail_first: 1}, duration: 1s}
  ok: {duration: 0s}
workload: {jobs: [{handler: flaky, name: a}, {handler: ok, at: 2s, name: b}]}
""")
    assert analyse(r).summary["named"]["b"]["start_delay"] == 0.0


def test_a_paused_node_starts_nothing_until_it_resumes():
    _, r = _run("""
name: pausegate
until: drained
db: {latency: 100ms}
executor: {poll_interval: 1s, lock_time: 1m}
nodes: [{name: a, start_at: 0s}]
handlers: {w: {duration: 0s}}
workload: {jobs: [{handler: w}]}
faults: [{at: 50ms, pause: a, for: 10s}]
""")
    assert histories(r.trace).jobs[1].first_start == pytest.approx(10.05)


@pytest.mark.parametrize("name,text,cause", [
    ("relock", """
name: relock
until: drained
executor: {poll_interval: 1s, lock_time: 5s, heartbeat: 2s, threads: 1, queue_size: 2,
           batch_size: 2}
nodes: [{name: a}]
handlers: {long: {duration: 30s}, short: {duration: 1s}}
workload: {jobs: [{handler: long, id: 1}, {handler: short, id: 2}]}
""", "lock_expired"),
    ("crash-during-commit", """
name: crash-during-commit
until: drained
db: {latency: 1s}
executor: {poll_interval: 1s, lock_time: 5s}
nodes: 2
handlers: {pay: {duration: 1s, side_effect: {at: end}}}
workload: {jobs: [{handler: pay}]}
faults: [{at: 2.5s, crash: node-1}]
""", "crash"),
])
def test_duplicates_in_commit_windows_and_local_queues_are_explained(name, text, cause):
    sc, r = _run(text)
    a = analyse(r)
    assert a.violations == [] and r.drained
    assert {d.cause for d in a.histories.duplicates} == {cause}


def test_a_run_that_ends_in_its_commit_window_is_not_a_duplicate_of_itself():
    _, r = _run("""
name: commit-window
until: drained
db: {latency: 400ms}
executor: {poll_interval: 100ms, lock_time: 2s, threads: 2}
nodes: 1
handlers: {pay: {duration: 2.1s}}
workload: {jobs: [{handler: pay}]}
""")
    assert analyse(r).violations == []


def test_a_partial_retry_override_keeps_the_rest():
    sc = scenario.loads("""
name: r
policy: lesson
executor: {retry: {attempts: 5}}
nodes: [{name: a}]
clock: {ticks: [{at: 0s, nodes: [a]}]}
handlers: {h: {retry: {backoff: [2s]}}}
workload: {jobs: [{handler: h}]}
""")
    assert sc.executor.retry.attempts == 5
    assert sc.executor.retry.backoff.delays == (10.0, 60.0)
    assert sc.handlers["h"].retry.attempts == 5


def test_retry_checks_hold_late_in_a_long_run():
    sc, r = _run("""
name: tol
until: drained
horizon: 400d
executor: {poll_interval: 1s, retry: {attempts: 3, backoff: [100ms]}}
nodes: [{name: a}]
handlers: {f: {outcome: always_fail, duration: 0.3s}}
workload: {jobs: [{handler: f, at: 300d}]}
""")
    assert analyse(r).violations == []


@pytest.mark.parametrize("text,at", [
    ("""
name: g
until: drained
db: {latency: 1s}
executor: {poll_interval: 10s}
nodes: [{name: node-1, start_at: 0s}]
handlers: {ok: {}}
workload: {jobs: [{handler: ok, at: 25s}]}
""", 34.0),
    ("""
name: g
until: drained
executor: {poll_interval: 10s}
nodes: [{name: node-1, start_at: 0s}]
handlers: {ok: {}}
workload: {jobs: [{handler: ok, at: 16s}]}
faults: [{at: 5s, pause: node-1, for: 10s}]
""", 25.0),
], ids=["latency", "pause"])
def test_skipped_idle_polls_land_where_naive_polls_would(text, at, monkeypatch):
    """The same run with idle polls skipped and with every poll simulated (as if something
    were always due): the job is locked at the same instant, and the polls count the same."""
    def first_lock(result):
        cols = result.trace.arrays()
        from jobsim.base.trace import K
        return float(cols["time"][cols["kind"] == K["locked"]][0])

    sc = scenario.loads(text)
    skipped = run(sc)
    monkeypatch.setattr(Store, "next_eligible", lambda self, now, table="job": now)
    naive = run(sc)
    assert first_lock(skipped) == first_lock(naive) == at


@pytest.mark.parametrize("argv_tail", [["--out", "."], ["--out", ".."]])
def test_the_report_never_replaces_the_working_folder(tmp_path, monkeypatch, argv_tail,
                                                      lesson_path, capsys):
    work = tmp_path / "w"
    work.mkdir()
    (work / "keep.txt").write_text("precious")
    monkeypatch.chdir(work)
    assert main(["run", str(lesson_path), "--quiet", *argv_tail]) == 2
    assert (work / "keep.txt").read_text() == "precious"
    assert "refusing" in capsys.readouterr().err


def test_a_scenario_name_is_one_safe_folder_name():
    for bad in ("..", ".", "a/b", "", "a\0b", "/"):
        doc = {"name": bad, "nodes": 1, "handlers": {"w": {}},
               "workload": {"jobs": [{"handler": "w"}]}}
        with pytest.raises(Exception) as err:
            scenario.from_dict(doc)
        assert "name" in str(err.value)


def test_bench_needs_two_replications(capsys):
    assert main(["bench", "--replications", "1"]) == 2
    assert "at least 2" in capsys.readouterr().err


def test_a_run_after_a_dead_letter_is_a_duplicate():
    """node-A prefetches job 2; its lock expires in A's queue, node-B runs it and dead-letters
    it; A then runs its stale copy: a duplicate execution, explained by the lock's expiry."""
    _, r = _run("""
name: dl
until: drained
executor: {poll_interval: 1s, batch_size: 2, queue_size: 2, threads: 1, lock_time: 5s,
           retry: {attempts: 1, backoff: {fixed: 1s}}}
nodes: [{name: node-A}, {name: node-B, start_at: 2s}]
handlers:
  slow: {duration: 20s}
  bad: {duration: 1s, outcome: always_fail, error: boom}
workload: {jobs: [{id: 1, handler: slow}, {id: 2, handler: bad}]}
""")
    a = analyse(r)
    assert (2, "lock_expired") in {(d.job, d.cause) for d in a.histories.duplicates
                                   if d.what == "execution"}
    assert a.violations == []


def test_a_job_finished_twice_breaks_terminal_once(lesson_path):
    from jobsim.analysis.checks import check
    from jobsim.base.trace import K, Trace

    t = Trace()
    t.node("node-A")
    t.add(0.0, K["job_created"], -1, 2, x=0.0, text=t.text("bureau-call"))
    t.add(0.0, K["exec_start"], 0, 2, 1)
    t.add(1.0, K["exec_end"], 0, 2, 1, a=1)
    t.add(1.0, K["completed"], 0, 2, 1, a=1)
    t.add(2.0, K["completed"], 0, 2, 1, a=1)
    vs = check(t, scenario.load(lesson_path))
    assert [v.invariant for v in vs] == ["terminal_once"]


def test_crash_recovery_counts_a_job_once_across_two_crashes():
    text = """
name: cc
until: drained
executor: {poll_interval: 1s, lock_time: 60s, threads: 1, queue_size: 1, batch_size: 1}
nodes: [{name: a}, {name: b, start_at: 30s}]
handlers: {w: {duration: 100s}}
workload: {jobs: [{handler: w}]}
faults: [{at: 10s, crash: a, restart_after: 5s}, {at: 20s, crash: a, restart_after: 5s}]
"""
    _, r = _run(text)
    h = histories(r.trace)
    assert h.stranded == 1
    assert h.recoveries == [pytest.approx(51.0, abs=1.5)]  # from the first crash at 10 s


def test_a_guarded_completion_of_a_rescheduled_row_is_told_as_such():
    from jobsim.analysis.narrative import narrate

    _, r = _run("""
name: zr
until: drained
db: {latency: 2ms}
executor: {poll_interval: 1s, lock_time: 30s, complete_guard: owner, threads: 1,
           queue_size: 1, batch_size: 1, retry: {attempts: 3, backoff: [100s]}}
nodes: [{name: node-A}, {name: node-B, start_at: 500ms}]
handlers:
  pay: {duration: 60s, outcome: {fail_first: 2}}
workload: {jobs: [{name: pay, handler: pay}]}
faults: [{at: 5s, pause: node-A, for: 120s}]
""")
    lines = narrate(r.trace, limit=None)
    assert any("no longer locked by this node" in line for line in lines)
    assert analyse(r).summary["completions"]["rejected_by_guard"] >= 1


# --- found by the random-scenario generators on seeds beyond the suite's ----------------------

def _job_events(result, job=1):
    """(time, kind name, node, attempt) of one job's events, in order."""
    from jobsim.base.trace import KIND_NAMES

    cols = result.trace.arrays()
    out = []
    for seq in (cols["job"] == job).nonzero()[0].tolist():
        node = int(cols["node"][seq])
        out.append((float(cols["time"][seq]), KIND_NAMES[cols["kind"][seq]],
                    result.trace.nodes[node] if node >= 0 else None,
                    int(cols["attempt"][seq])))
    return out


STALE_AFTER_MOVE = """
name: stale-failure-after-move
until: drained
horizon: 1h
policy: skip_locked
executor: {reset_interval: 5s, lock_time: 20s, threads: 1}
nodes: NODES
handlers:
  w: {duration: DURATION, outcome: {fail_first: 1}, retry: {attempts: 1}}
  other: {}
workload: {jobs: [{name: j, handler: w}]}
faults: FAULTS
operations: [{at: 60s, move: all}]
"""


@pytest.mark.parametrize("nodes,duration,faults,threads,refetched_by", [
    # node a runs the job past its lock while paused; b's rescue discards it (no attempts
    # left, counted at fetch); the operator moves it back at 60 s; a resumes at 65 s and its
    # run fails. Before: that stale failure rescheduled the revived row from its fresh
    # retries ("1 retries left after failure 1; the policy says 0": policy seeds 100252,
    # 100324, 100465, 100792, 101257 …). b runs only other tasks, so nothing fetched it again.
    ("[{name: a}, {name: b, handles: [other]}]", "10s", "[{at: 5s, pause: a, for: 60s}]", 1,
     None),
    # … and b fetches the revived row at once: before, a's stale failure dead-lettered the
    # row b was running (no violation, but a job that then succeeded ended dead-lettered)
    ("[{name: a}, {name: b, start_at: 1s}]", "10s", "[{at: 5s, pause: a, for: 60s}]", 1, "b"),
    # … and a's own second thread fetches it again (seed 36: the first run lasts 69 s, the
    # second 13 s): a guard by owner alone lets the stale failure through; the fetch (the
    # row's attempt) tells them apart
    ("[{name: a}]", "{exponential: {mean: 40s}}", "[]", 2, "a"),
], ids=["revived-unfetched", "refetched-by-another-node", "refetched-by-the-same-node"])
def test_a_stale_failure_is_a_no_op_on_a_moved_dead_letter(nodes, duration, faults, threads,
                                                            refetched_by):
    text = (STALE_AFTER_MOVE.replace("NODES", nodes).replace("DURATION", duration)
            .replace("FAULTS", faults).replace("threads: 1", f"threads: {threads}"))
    if refetched_by == "a":
        text = text.replace("name: stale-failure-after-move", "name: s\nseed: 36")
    sc, r = _run(text)
    a = analyse(r)
    assert a.violations == []
    ev = _job_events(r)
    kinds = [k for _, k, _, _ in ev]
    # the rescue discarded it, the operator revived it
    assert kinds.count("dead_lettered") == 1 and kinds.index("dead_lettered") < \
        kinds.index("revived")
    revived_at = ev[kinds.index("revived")][0]
    # the first execution's failure comes after the revival and is refused: no retry, no
    # dead letter from it
    fail = next(e for e in ev if e[1] == "exec_end" and e[3] == 1)
    assert fail[0] > revived_at
    assert ("stale_write", fail[0]) in {(k, t) for t, k, _, _ in ev}
    assert "retry_scheduled" not in kinds
    assert [e for e in ev if e[1] == "dead_lettered" and e[3] == 1] == []
    # the revived job's own run succeeds and completes it
    second = [e for e in ev if e[1] == "exec_start" and e[3] == 2]
    assert len(second) == 1
    if refetched_by is not None:
        assert second[0][0] == revived_at and second[0][2] == refetched_by
        assert second[0][0] < fail[0]  # fetched again before the stale failure arrived
    assert a.summary["jobs"]["done"] == 1 and kinds[-1] == "completed"


def test_a_stale_completion_is_a_no_op_on_a_row_fetched_again():
    """Counted at fetch, a completion is guarded by its fetch too: a run that outlived its
    lock, was rescued back to available and fetched again, cannot delete the row the new
    fetch is running (it would end a job whose current run may still fail)."""
    from jobsim.database.store import Row, Store

    s = Store(lock_expiry="reset", count_at_fetch=True)
    s.insert(Row(1, "async", "h", 0, 0.0, 0.0, 3))
    first = s.lock([1], "a", 0.0, 10.0)[0]
    assert first.fetched == 1 and s.get(1).retries == 2
    assert s.unlock(1)  # the rescue: back to available
    second = s.lock([1], "a", 20.0, 30.0)[0]
    assert second.fetched == 2 and s.get(1).retries == 1
    assert s.delete(1, "a", first.fetched) is False  # the stale run: a no-op
    assert s.delete(1, "a", second.fetched) is True


def test_a_statement_waits_until_every_row_it_writes_is_free():
    """Plain seed 100119 (PostgreSQL, a heartbeat, a pause): the heartbeat's UPDATE of rows
    [6, 37] waited for a claim holding 37; meanwhile the next claim selected 6 (its lock had
    expired during the pause) and locked it; the heartbeat then applied without looking at 6
    again, and the claim took the row from the node still running it — a duplicate with "no
    known cause". A statement applies only when none of its rows is held."""
    import simpy

    from jobsim.database.db import Database
    from jobsim.database.dialects import Txn, _finish, _lock_row
    from jobsim.base.rng import Streams
    from jobsim.database.store import Store

    env = simpy.Environment()
    db = Database(env, Store(), Streams(0), dialect="postgres")
    applied = []

    def holder(rid, start, end):
        if start:
            yield env.timeout(start)
        txn = Txn(env)
        _lock_row(db, rid, txn)
        yield env.timeout(end - start)
        _finish(db, txn, True)

    def heartbeat():
        yield from db.run("a", lambda now: applied.append(now), rows=[1, 2])

    env.process(holder(2, 0.0, 2.0))  # holds row 2 from 0 s to 2 s
    env.process(heartbeat())  # waits for row 2 …
    env.process(holder(1, 1.0, 3.0))  # … while another transaction takes row 1 at 1 s
    env.run()
    assert applied == [3.0]  # not 2.0: row 1 was held then


def test_a_success_lost_to_a_crash_explains_every_later_run():
    """Plain seed 105106 in small: job 1 succeeds on a, whose completion is in flight when a
    crashes; b runs it again (a duplicate caused by the crash), fails, and retries: each
    later run is a duplicate of the lost success, caused by the crash too (before: the crash
    explained only the first re-run, and the retries had "no known cause")."""
    _, r = _run("""
name: lost-success
seed: 0
until: drained
horizon: 1h
db: {latency: 1s}
executor: {poll_interval: 1s, lock_time: 10s, retry: {attempts: 4, backoff: [5s]}}
nodes: [{name: a, start_at: 0s}, {name: b, start_at: 1s}]
handlers: {w: {duration: 1s, outcome: {fail_rate: 0.5}, side_effect: {at: end}}}
workload: {jobs: [{name: j, handler: w}]}
faults: [{at: 2.5s, crash: a}]
""")
    a = analyse(r)
    assert a.violations == []
    ends = [(t, node, att) for t, k, node, att in _job_events(r) if k == "exec_end"]
    cols = r.trace.arrays()
    from jobsim.base.trace import K
    ok = {int(cols["attempt"][i]): int(cols["a"][i])
          for i in (cols["kind"] == K["exec_end"]).nonzero()[0].tolist()}
    assert ends[0][1] == "a" and ok[1] == 1 and ok[2] == 0  # a succeeded, then a failure
    crash = float(cols["time"][cols["kind"] == K["node_crashed"]][0])
    assert ends[0][0] < crash  # the success ended before the crash, its completion not
    dups = [d for d in a.histories.duplicates if d.what == "execution"]
    assert len(dups) == len(ends) - 1 >= 3
    assert {d.cause for d in a.histories.duplicates} == {"crash"}
    assert a.summary["jobs"]["done"] == 1


def test_a_rescue_between_a_success_and_its_completion_explains_the_rerun():
    """Policy seed 102799 in small: a paused node's run outlives its lock and ends with a
    success as the node resumes; the rescue discards the job (no attempts left) before the
    completion commits (refused: the row is a dead letter); moved back, the job runs again.
    That re-run's cause is the lock that expired in the pause, the 15 s run being shorter
    than its 20 s lock (before: "no known cause", the rescue's own dead-letter event having
    cleared the run's pending outcome; then "lock_expired", the node being awake when the
    rescue came)."""
    _, r = _run("""
name: discarded-before-its-completion
seed: 8
until: drained
horizon: 1h
policy: skip_locked
db: {latency: {uniform: {low: 1ms, high: 20ms}}}
executor: {reset_interval: 5s, lock_time: 20s, threads: 1}
nodes: [{name: a}]
handlers: {w: {duration: 15s, retry: {attempts: 1}, side_effect: {at: end}}}
workload: {jobs: [{name: j, handler: w}]}
faults: [{at: 10s, pause: a, for: 40s}]
operations: [{at: 100s, move: all}]
""")
    a = analyse(r)
    assert a.violations == []
    kinds = [k for _, k, _, _ in _job_events(r)]
    assert kinds[kinds.index("exec_end"):kinds.index("revived")] == \
        ["exec_end", "dead_lettered", "completed"]
    assert {d.cause for d in a.histories.duplicates} == {"pause"}
    assert a.summary["jobs"]["done"] == 1


@pytest.mark.parametrize("kind,seed", [
    ("policy", 100252), ("policy", 100324), ("policy", 102799),
    ("plain", 100119), ("plain", 105106),
])
def test_generator_seeds_that_broke_an_invariant(kind, seed):
    from test_fuzz import GENERATORS

    text = GENERATORS[kind](random.Random(seed))
    a = analyse(run(scenario.loads(text)))
    assert a.violations == []
    assert "unexplained" not in {d.cause for d in a.histories.duplicates}


# --- exponential backoff: the power before the cap ---------------------------------------------

def test_exponential_backoff_survives_thousands_of_failures():
    """``base × factor^(n−1)`` was computed before the cap: ``2.0 ** 1024`` raises
    OverflowError, so a job's 1,025th failure crashed the run."""
    import math

    from jobsim.executor.retry import ExponentialBackoff, RetryPolicy
    from jobsim.base.rng import Streams

    oban = ExponentialBackoff(2.0, 2.0, offset=15.0)  # uncapped
    capped = ExponentialBackoff(2.0, 2.0, cap=3600.0, jitter=0.1)
    steep = ExponentialBackoff(0.001, 100.0, cap=86400.0)
    stream = Streams(0).stream("retry/jitter/a")
    for b in (oban, capped, steep):
        delays = [b.delay(k, stream) for k in range(1, 5001)]
        assert all(d > 0 and not math.isnan(d) for d in delays)
        assert all(d <= b.cap for d in delays)
        for k in (1, 2, 10, 1024, 1025, 1026, 5000):
            lo, hi = b.bounds(k)
            assert lo <= b.delay(k) <= hi
    assert [oban.delay(k) for k in (1, 2, 3, 10)] == [17.0, 19.0, 23.0, 1039.0]
    assert oban.delay(1025) == oban.delay(5000) == math.inf  # never due again, no crash
    assert capped.delay(5000) == 3600.0 and steep.delay(5000) == 86400.0
    assert [d for d in (capped.delay(k, stream) for k in range(13, 5001))
            if not 3600.0 * 0.9 <= d <= 3600.0] == []
    policy = RetryPolicy(6000, capped)
    decisions = [policy.on_failure(6000 - f + 1, f) for f in range(1, 5001)]
    assert [d.left for d in decisions[:2]] == [5999, 5998] and decisions[-1].left == 1000
    assert decisions[-1].delay == 3600.0


def test_a_job_failing_five_thousand_times_runs_to_its_dead_letter():
    _, r = _run("""
name: many-failures
until: drained
horizon: 2d
executor: {wakeup: notify, poll_interval: 1s, lock_time: 1m,
           retry: {attempts: 5000, backoff: {exponential: {base: 1ms, factor: 2, cap: 1s}}}}
nodes: 1
handlers: {f: {outcome: always_fail, duration: 0s}}
workload: {jobs: [{name: f, handler: f}]}
""")
    a = analyse(r)
    assert a.violations == []
    assert a.summary["jobs"]["dead_lettered"] == 1
    assert a.histories.jobs[1].failures == 5000


CRASH_AND_BACK = """
name: fs
seed: 11
until: drained
policy: failsafe
nodes: 3
handlers:
  task: {duration: {exponential: {mean: 4s}}}
workload:
  streams: [{name: tasks, handler: task, count: 600, rate: 3/s}]
faults:
  - {at: 60s, crash: node-2, restart_after: 30s}
"""


def test_a_crash_rerun_is_not_said_to_be_another_nodes_when_the_restarted_node_ran_it():
    """failsafe-executor's crashed node, back after 30 s, takes its own expired jobs again:
    report.md said "another node ran it again" of re-runs all by the crashed node."""
    from jobsim.output.words import sentences

    _, result = _run(CRASH_AND_BACK)
    a = analyse(result)
    crash_runs = [d for d in a.histories.duplicates if d.cause == "crash"]
    assert crash_runs and all(d.node == "node-2" for d in crash_runs)
    said = " ".join(sentences(a.summary))
    assert "because a node crashed while it ran the job" in said
    assert "another node ran it again" not in said
    assert "on the same one after its restart" in said


PAUSED_LONG_RUNS = """
name: expiry
seed: 3
until: drained
executor: {lock_time: 20s, poll_interval: 2s, threads: 2}
nodes: 2
handlers:
  report:
    duration: {lognormal: {median: 8s, p99: 40s}}
    side_effect: {at: end, say: emailed}
workload:
  streams: [{name: reports, handler: report, count: 120, rate: 0.25/s}]
faults: FAULTS
"""


def test_a_pause_duplicate_is_not_said_to_be_the_pauses_alone():
    """A run goes on through a pause and its end is told when the pause ends, so the trace
    cannot tell whether the run would have outlasted its lock unpaused: here job 27's run
    (21.9 s against a 20 s lock) is a duplicate without the pause too. The report says the
    lock expired during the pause and that the run without it tells the pause's share."""
    from jobsim.output.words import sentences

    paused = analyse(_run(PAUSED_LONG_RUNS.replace(
        "FAULTS", "[{at: 100s, pause: node-1, for: 30s}]"))[1])
    unpaused = analyse(_run(PAUSED_LONG_RUNS.replace("FAULTS", "[]"))[1])
    by_pause = {d.job for d in paused.histories.duplicates if d.cause == "pause"}
    anyway = {d.job for d in unpaused.histories.duplicates if d.cause == "lock_expired"}
    assert by_pause & anyway == {27}
    said = " ".join(sentences(paused.summary))
    assert "the job's lock expired while its holder was paused" in said
    assert "the scenario without the pause tells how many the pause alone caused" in said
    assert said.count("tells how many the pause alone caused") == 1
