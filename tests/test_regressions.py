"""Defects found in review, each held by the smallest scenario that showed it."""

import pytest

from jobsim import scenario
from jobsim.cli import main
from jobsim.history import histories
from jobsim.report import analyse
from jobsim.store import Store
from jobsim.world import run


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
nodes: [{name: a}]
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
nodes: 1
handlers: {ok: {}}
workload: {jobs: [{handler: ok, at: 25s}]}
""", 34.0),
    ("""
name: g
until: drained
executor: {poll_interval: 10s}
nodes: 1
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
        from jobsim.trace import K
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
    from jobsim.checks import check
    from jobsim.trace import K, Trace

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
    from jobsim.narrative import narrate

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
