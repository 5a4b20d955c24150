"""failsafe-executor (seed 002), behaviour by behaviour."""

import numpy as np
import pytest

from jobsim.analysis.narrative import narrate
from jobsim.cli import main
from jobsim.format import scenario
from jobsim.format.lint import lint
from jobsim.output.report import analyse
from jobsim.base.trace import K
from jobsim.sim.world import run

BASE = """
name: f
until: {until}
horizon: 2h
policy: {policy}
executor: {executor}
nodes:
  - {{name: a, handles: [mail, bad], start_at: 0s}}
  - {{name: b, handles: [report], start_at: 0s}}
handlers:
  mail: {{duration: 1s}}
  bad: {{duration: 1s, outcome: always_fail, error: boom}}
  report: {{duration: 7m}}
workload:
  jobs: {jobs}
operations: {ops}
"""


def make(jobs, ops="[]", until="drained", policy="failsafe", executor="{}"):
    return scenario.loads(BASE.format(jobs=jobs, ops=ops, until=until, policy=policy,
                                      executor=executor))


def starts(result, job=None):
    c = result.trace.arrays()
    sel = c["kind"] == K["exec_start"]
    if job is not None:
        sel &= c["job"] == job
    return c["time"][sel], c["job"][sel]


def test_a_failed_task_is_never_run_again_until_retry():
    r = run(make("[{name: x, handler: bad}]", until="30m"))
    s = analyse(r).summary
    assert s["jobs"]["failed"] == 1 and s["named"]["x"]["executions"] == 1


def test_retry_runs_it_again_once_and_cancel_removes_it():
    r = run(make("[{name: x, handler: bad}, {name: y, handler: bad}]",
                 "[{at: 10m, retry: x}, {at: 11m, cancel: y}]"))
    a = analyse(r)
    assert a.summary["named"]["x"]["executions"] == 2  # failed again after the retry
    assert a.summary["named"]["x"]["outcome"] == "failed"
    assert a.summary["named"]["y"]["outcome"] == "cancelled"
    c = r.trace.arrays()
    starts = c["time"][(c["kind"] == K["exec_start"]) & (c["job"] == 1)]
    assert starts[1] >= 600.0  # not before the operator's retry
    assert a.violations == []
    from jobsim.analysis.narrative import narrate

    lines = narrate(r.trace)
    assert "      job 1 RETRIED by an operator at t=600s" in lines
    assert not any("MOVED" in line for line in lines)


def test_tasks_route_to_the_nodes_that_registered_them():
    r = run(make("[{handler: mail}, {handler: report}, {handler: mail}]"))
    c = r.trace.arrays()
    locked = c["kind"] == K["locked"]
    by_job = dict(zip(c["job"][locked].tolist(), c["node"][locked].tolist()))
    a, b = r.trace.nodes.index("a"), r.trace.nodes.index("b")
    assert by_job == {1: a, 2: b, 3: a}


def test_the_heartbeat_keeps_a_long_task_from_running_twice():
    """A 7-minute report against a 5-minute lock: extended every 75 s, it runs once."""
    r = run(make("[{name: r, handler: report}]"))
    a = analyse(r)
    assert a.summary["named"]["r"]["executions"] == 1
    extended = r.trace.arrays()["kind"] == K["lock_extended"]
    assert extended.sum() >= 5


def test_the_preset_matches_the_reference_defaults():
    sc = make("[{handler: mail}]")
    ex = sc.executor
    assert (ex.acquisition, ex.order, ex.threads, ex.queue_size, ex.poll_interval,
            ex.lock_time, ex.heartbeat, ex.heartbeat_scope, ex.exhausted,
            ex.retry.attempts) == (
        "optimistic", "created", 5, 30, 5.0, 300.0, 75.0, "held", "failed", 1)


def test_v2_heartbeats_the_tasks_waiting_in_its_pool_too():
    """v2's WorkerPool registers a task with the heartbeat when it is handed to the pool,
    before it waits there for a thread: 15 reports of up to 8 minutes on one node of 5
    threads wait far longer than the 5-minute lock, and none runs twice. With the heartbeat
    over the running tasks only, the queued ones' locks run out and they do."""
    jobs = "[" + ", ".join("{handler: report}" for _ in range(15)) + "]"
    s = analyse(run(make(jobs))).summary
    assert s["duplicate_executions"]["total"] == 0 and s["jobs"]["done"] == 15
    running = make(jobs, executor="{heartbeat_scope: running}")
    assert analyse(run(running)).summary["duplicate_executions"]["by_cause"][
        "lock_expired"] > 0


def test_a_serial_queue_runs_one_task_at_a_time_in_order_and_skips_failed_ones():
    """registerQueue (v3): tasks of one queue never overlap, run in planned order, and a
    failed one does not block those behind it."""
    jobs = ("[{handler: mail, queue: q}, {handler: bad, queue: q}, {handler: mail, queue: q},"
            " {handler: mail, queue: q}, {handler: mail}, {handler: mail}]")
    r = run(make(jobs, policy="failsafe_v3"))
    t, j = starts(r)
    queued = [(tt, jj) for tt, jj in zip(t.tolist(), j.tolist()) if jj <= 4]
    assert [jj for _, jj in queued] == [1, 2, 3, 4]  # in order, the failed one skipped
    times = [tt for tt, _ in queued]
    assert all(b - a >= 1.0 for a, b in zip(times, times[1:]))  # never two at once
    free = [tt for tt, jj in zip(t.tolist(), j.tolist()) if jj > 4]
    # tasks outside the queue run in parallel at once, at the first poll (initial delay 10 s)
    assert free == [10.0, 10.0]
    s = analyse(r).summary
    assert s["jobs"]["failed"] == 1 and s["jobs"]["done"] == 5


def test_record_failure_inserts_a_failed_task_that_runs_only_after_retry():
    r = run(make('[{name: x, handler: mail, record_failure: "timeout upstream"}]',
                 "[{at: 5m, retry: x}]"))
    t, _ = starts(r, 1)
    assert t.tolist() == [300.0]
    c = r.trace.arrays()
    dead = c["kind"] == K["dead_lettered"]
    assert c["time"][dead].tolist() == [0.0] and c["a"][dead].tolist() == [2]
    assert analyse(r).summary["named"]["x"]["outcome"] == "done"
    assert analyse(r).violations == []


def test_an_idempotent_submit_with_a_taken_id_does_nothing():
    r = run(make("[{id: 7, handler: report}, {id: 7, handler: report, at: 1m},"
                 " {id: 8, handler: mail}]"))
    c = r.trace.arrays()
    assert (c["kind"] == K["job_created"]).sum() == 2
    ignored = c["kind"] == K["submit_ignored"]
    assert c["job"][ignored].tolist() == [7] and c["time"][ignored].tolist() == [60.0]
    t, _ = starts(r, 7)
    assert len(t) == 1


def test_v3_picks_a_full_queue_size_and_heartbeats_the_queued_tasks_too():
    """v3 asks for queueSize rows whatever is free: 40 reports on one node of 5 threads are
    all held after two polls, and the heartbeat over held tasks keeps the queued ones'
    locks alive, so none runs twice though they wait far longer than the 5-minute lock."""
    jobs = "[" + ", ".join("{handler: report}" for _ in range(40)) + "]"
    r = run(make(jobs, policy="failsafe_v3"))
    c = r.trace.arrays()
    acq = (c["kind"] == K["acquire"]) & (c["node"] == r.trace.nodes.index("b"))
    assert c["b"][acq][:2].tolist() == [30, 10]
    s = analyse(r).summary
    assert s["duplicate_executions"]["total"] == 0 and s["jobs"]["done"] == 40


def test_a_v3_preset_is_v2_with_its_documented_changes():
    ex = make("[{handler: mail}]", policy="failsafe_v3").executor
    assert (ex.acquisition, ex.order, ex.heartbeat, ex.heartbeat_scope, ex.threads,
            ex.lock_time) == ("skip_locked", "due", 100.0, "held", 5, 300.0)


def test_a_serial_queue_drains_back_to_back_and_cheaply():
    """Review finding: a claim stepped over every waiting row of a busy queue (quadratic),
    and the queue ran one task per poll; failsafe's poller runs them one after another."""
    import time

    jobs = "[" + ", ".join("{handler: mail, queue: q}" for _ in range(2000)) + "]"
    sc = make(jobs, policy="failsafe_v3")
    t0 = time.process_time()  # CPU seconds: a machine's other work does not count
    r = run(sc)
    cpu = time.process_time() - t0
    t, j = starts(r)
    assert len(t) == 2000 and sorted(j.tolist()) == j.tolist()  # in order
    assert np.all(np.diff(t) == 1.0)  # each starts as the one before ends: no poll between
    c = r.trace.arrays()
    assert (c["kind"] == K["acquire"]).sum() < 50  # handed over, not claimed one by one
    assert analyse(r).violations == []
    assert cpu < 30  # generous: it takes well under a second; quadratic took minutes


# --- an id is free again once its task is gone --------------------------------------------------

def test_an_id_is_free_again_once_its_task_is_done():
    """INSERT … WHERE NOT EXISTS skips only while a task holds the id: the invoice done, the
    same id submitted again inserts a new task, which runs. jobsim numbers it afresh (after
    the largest explicit id) and says which id it was submitted under."""
    r = run(make("[{name: first, id: 1001, handler: mail},"
                 " {name: again, id: 1001, handler: mail, at: 1m}]"))
    a = analyse(r)
    s = a.summary
    assert (s["jobs"]["created"], s["jobs"]["done"], s["executions"]) == (2, 2, 2)
    assert (s["jobs"]["submits_ignored"], s["jobs"]["resubmitted"]) == (0, 1)
    assert (s["named"]["first"]["id"], s["named"]["again"]["id"]) == (1001, 1002)
    t, j = starts(r)
    assert list(zip(t.tolist(), j.tolist())) == [(10.0, 1001), (60.0, 1002)]
    c = r.trace.arrays()
    again = c["kind"] == K["resubmitted"]
    assert (c["time"][again].tolist(), c["job"][again].tolist(), c["a"][again].tolist()) == (
        [60.0], [1002], [1001])
    assert "      id 1001 submitted again after its task was gone: a new task, job 1002" in \
        narrate(r.trace)
    assert a.violations == []


def test_a_cancelled_task_frees_its_id_a_failed_one_keeps_it():
    """A failed task keeps its row, so a submit of its id does nothing; cancelled (deleted),
    the id takes a new task."""
    r = run(make("[{name: x, id: 5, handler: bad}, {id: 5, handler: mail, at: 5m},"
                 " {name: later, id: 5, handler: mail, at: 12m}]", "[{at: 10m, cancel: x}]"))
    s = analyse(r).summary
    assert (s["jobs"]["submits_ignored"], s["jobs"]["resubmitted"]) == (1, 1)
    assert (s["jobs"]["cancelled"], s["jobs"]["done"], s["executions"]) == (1, 1, 2)
    assert s["named"]["x"]["outcome"] == "cancelled"
    assert (s["named"]["later"]["id"], s["named"]["later"]["outcome"]) == (6, "done")
    assert analyse(r).violations == []


@pytest.mark.parametrize("first, at", [("mail", "5s"),     # waiting: the first poll is at 10 s
                                       ("report", "1m"),   # running (7 minutes)
                                       ("bad", "1m")],     # failed at 11 s, kept
                         ids=["waiting", "running", "failed"])
def test_a_second_submit_while_the_task_is_there_is_ignored(first, at):
    r = run(make(f"[{{name: x, id: 1001, handler: {first}}}, {{id: 1001, handler: {first},"
                 f" at: {at}}}]", until="30m"))
    s = analyse(r).summary
    assert (s["jobs"]["created"], s["jobs"]["submits_ignored"], s["jobs"]["resubmitted"]) == (
        1, 1, 0)
    assert s["named"]["x"]["executions"] == 1 and s["executions"] == 1


def test_the_ignored_submit_names_the_task_that_holds_the_id():
    """Submitted a third time while the second task waits: ignored, on behalf of that task."""
    r = run(make("[{id: 1001, handler: mail}, {id: 1001, handler: mail, at: 1m},"
                 " {id: 1001, handler: mail, at: 61s}]"))
    c = r.trace.arrays()
    ignored = c["kind"] == K["submit_ignored"]
    assert (c["time"][ignored].tolist(), c["job"][ignored].tolist()) == ([61.0], [1002])
    assert analyse(r).summary["executions"] == 2


def test_a_resubmitted_task_is_expected_by_its_own_name():
    sc = scenario.loads(BASE.format(
        jobs="[{name: first, id: 9, handler: mail}, {name: again, id: 9, handler: mail, at: 1m}]",
        ops="[]", until="drained", policy="failsafe", executor="{}") + """
expect:
  jobs.resubmitted: "== 1"
  named.again.executions: "== 1"
  named.again.id: "== 10"
""")
    a = analyse(run(sc))
    assert a.verdicts and all(v.ok for v in a.verdicts), [v.format() for v in a.verdicts]


# --- a failed scheduled task stops its schedule until it is retried -----------------------------

SCHEDULE = """
name: nightly
seed: 8
until: drained
horizon: 6h
policy: {policy}
nodes: [{{name: a, start_at: 0s}}]
executor: {executor}
handlers:
  report: {{duration: 1m, outcome: {outcome}, error: "report server down"}}
workload:
  recurring:
    - {{name: nightly, handler: report, every: 30m, count: 6, mode: {mode}}}
operations: {ops}
"""
#: seed 8's draws from the handler's stream: the 2nd run fails, every other one succeeds
SECOND_FAILS = "{fail_rate: 0.25}"


def schedule(ops="[]", mode="fixed_rate", outcome=SECOND_FAILS, policy="failsafe",
             executor="{}"):
    r = run(scenario.loads(SCHEDULE.format(ops=ops, mode=mode, outcome=outcome, policy=policy,
                                           executor=executor)))
    c = r.trace.arrays()
    created = c["time"][c["kind"] == K["job_created"]].tolist()
    ends = c["kind"] == K["exec_end"]
    runs = list(zip(c["time"][ends].tolist(), c["job"][ends].tolist(), c["a"][ends].tolist()))
    return r, created, runs


def test_a_failed_scheduled_task_runs_no_more_until_the_operator_retries_it():
    """Every 30 minutes; the 2nd run (at 30 m) fails and the schedule stops: nothing is
    created or run until the retry at 1 h. The retried task runs and succeeds, and the
    schedule goes on at its next instant (1 h 30; the 1 h one passed while it was failed)."""
    r, created, runs = schedule("[{at: 1h, retry: nightly}]")
    assert created == [0.0, 1800.0, 5400.0, 7200.0, 9000.0, 10800.0]
    assert runs == [(70.0, 1, 1), (1860.0, 2, 0), (3660.0, 2, 1), (5460.0, 3, 1),
                    (7260.0, 4, 1), (9060.0, 5, 1), (10860.0, 6, 1)]
    t, _ = starts(r)
    assert not ((t > 1800.0) & (t < 3600.0)).any()
    a = analyse(r)
    s = a.summary
    assert (s["jobs"]["created"], s["jobs"]["done"], s["jobs"]["failed"], s["executions"],
            s["failures"]) == (6, 6, 0, 7, 1)
    assert a.violations == [] and r.drained


def test_a_fixed_delay_schedule_goes_on_every_after_the_retried_task_is_done():
    r, created, runs = schedule("[{at: 1h, retry: nightly}]", mode="fixed_delay")
    assert created == [0.0, 1870.0, 5460.0, 7320.0, 9180.0, 11040.0]
    assert runs[1:3] == [(1930.0, 2, 0), (3660.0, 2, 1)]
    assert created[2] == runs[2][0] + 1800.0  # 30 minutes after the retried run ended
    assert analyse(r).violations == []


def test_a_cancel_ends_the_schedule():
    r, created, runs = schedule("[{at: 1h, cancel: nightly}]")
    assert created == [0.0, 1800.0] and runs == [(70.0, 1, 1), (1860.0, 2, 0)]
    s = analyse(r).summary
    assert (s["jobs"]["done"], s["jobs"]["cancelled"], s["executions"]) == (1, 1, 2)
    assert r.drained and r.end_time == 3600.0


def test_with_no_operator_the_failed_task_stays_and_the_run_drains():
    r, created, runs = schedule()
    assert created == [0.0, 1800.0] and runs[-1] == (1860.0, 2, 0)
    assert r.drained and r.end_time == 1860.0
    assert analyse(r).summary["jobs"]["failed"] == 1
    warned = lint(scenario.loads(SCHEDULE.format(ops="[]", mode="fixed_rate",
                                                 outcome=SECOND_FAILS, policy="failsafe",
                                                 executor="{}")))
    assert [(w.code, w.path) for w in warned] == [("schedule-stops-on-failure",
                                                   "workload.recurring[0]")]


def test_a_retried_task_that_fails_again_keeps_the_schedule_stopped():
    r, created, runs = schedule("[{at: 1h, retry: nightly}, {at: 2h, retry: all}]",
                                outcome="always_fail")
    assert created == [0.0]
    assert runs == [(70.0, 1, 0), (3660.0, 1, 0), (7260.0, 1, 0)]
    assert analyse(r).violations == []


@pytest.mark.parametrize("policy", ["failsafe", "failsafe_v3"])
def test_a_schedule_under_dead_letters_goes_on_after_a_failure(policy):
    """Where an exhausted job is dead-lettered, each run is a job of its own and the schedule
    keeps its times (as before)."""
    r, created, runs = schedule(outcome="always_fail", policy=policy,
                                executor="{exhausted: dead_letter}")
    assert created == [0.0, 1800.0, 3600.0, 5400.0, 7200.0, 9000.0]
    assert analyse(r).summary["jobs"]["dead_lettered"] == 6


def test_a_schedule_shares_no_name_with_a_job(tmp_path, capsys):
    """An operation may name a job or a schedule, so no two of them share a name."""
    path = tmp_path / "clash.yaml"
    path.write_text(SCHEDULE.format(ops="[{at: 1h, retry: nightly}]", mode="fixed_rate",
                                    outcome="succeed", policy="failsafe", executor="{}")
                    .replace("workload:\n", "workload:\n  jobs: [{name: nightly, handler: "
                             "report}]\n"), encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "Traceback" not in out
    assert f"{path}: workload.recurring[0].name: expected a name no job and no other " \
           "schedule has (got 'nightly')" in out, out


def test_a_one_minute_lock_heartbeats_every_15s_and_two_12_minute_tasks_run_once_each():
    """"The heartbeat runs every lockTimeout / 4": with a 1-minute lock, every 15 s, so two
    12-minute tasks on two nodes run once each (a fixed 75 s heartbeat ran each 10 times)."""
    from jobsim.base.trace import K
    from jobsim.format.scenario import loads
    from jobsim.output.report import analyse
    from jobsim.sim.world import run as run_world

    r = run_world(loads("""
name: hb
policy: failsafe
executor: {lock_time: 1m}
nodes: [{name: a}, {name: b}]
handlers: {long: {duration: 12m}}
workload: {jobs: [{name: one, handler: long}, {name: two, handler: long}]}
"""))
    c = r.trace.arrays()
    ext = c["time"][c["kind"] == K["lock_extended"]]
    by_node = {}
    for t, n in zip(ext.tolist(), c["node"][c["kind"] == K["lock_extended"]].tolist()):
        by_node.setdefault(n, []).append(t)
    # one heartbeat statement per beat, a lock_extended event per row it extends
    beats = [sorted(set(ts)) for ts in by_node.values()]
    gaps = {round(b - a, 9) for ts in beats for a, b in zip(ts, ts[1:])}
    assert gaps == {15.0}
    s = analyse(r).summary
    assert s["named"]["one"]["executions"] == 1 and s["named"]["two"]["executions"] == 1
    assert s["duplicate_executions"]["total"] == 0
