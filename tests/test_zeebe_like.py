"""The Zeebe-like server of seed 003, behaviour by behaviour."""

import numpy as np

from jobsim.format import scenario
from jobsim.analysis.history import histories
from jobsim.analysis.metrics import jobs_frame
from jobsim.output.report import analyse
from jobsim.base.trace import K
from jobsim.sim.world import run

BASE = """
name: z
until: {until}
horizon: 1h
policy: zeebe_like
nodes: [{{name: w1}}, {{name: w2, start_at: 100ms}}]
handlers:
  ok: {{duration: 2s}}
  bad: {{duration: 500ms, outcome: always_fail, error: boom}}
  slow: {{duration: 60s, boundary_timer: {{after: 30s, interrupting: {interrupting}}}}}
workload:
  jobs: {jobs}
faults: {faults}
"""


def make(jobs, faults="[]", until="drained", interrupting="true"):
    return scenario.loads(BASE.format(jobs=jobs, faults=faults, until=until,
                                      interrupting=interrupting))


def kinds(result, kind):
    c = result.trace.arrays()
    return {k: v[c["kind"] == K[kind]] for k, v in c.items()}


def test_a_crashed_workers_job_waits_for_a_server_restart():
    """Nothing expires: the job w1 held when it crashed is not taken by w2 until the server
    restarts and restores it with the same key and retries; then it runs."""
    sc = make("[{name: j, handler: ok}]",
              "[{at: 1s, crash: w1}, {at: 10m, restart_server: true}]")
    r = run(sc)
    locked = kinds(r, "locked")
    assert locked["time"].tolist()[0] < 1.0 and np.isinf(locked["x"][0])
    assert locked["time"].tolist()[1] == 600.0  # only after the restart
    assert locked["job"].tolist() == [1, 1]  # the same key
    h = histories(r.trace)
    assert h.jobs[1].outcome == "done" and h.stranded == 1
    assert analyse(r).violations == []


def test_without_a_restart_the_job_stays_activated_for_good():
    sc = make("[{name: j, handler: ok}]", "[{at: 1s, crash: w1}]", until="30m")
    a = analyse(run(sc))
    assert a.summary["jobs"]["pending"] == 1 and a.summary["jobs"]["done"] == 0


def test_retries_are_absolute_with_no_delay_then_an_incident():
    """3 executions back to back (no retry delay), then an incident, not a dead letter."""
    r = run(make("[{name: f, handler: bad}]"))
    retries = kinds(r, "retry_scheduled")
    assert retries["a"].tolist() == [2, 1]  # one less each time, as sent
    assert np.allclose(retries["x"], retries["time"])  # due again at once
    dead = kinds(r, "dead_lettered")
    assert dead["a"].tolist() == [1]  # an incident
    s = analyse(r).summary
    assert s["jobs"]["incident"] == 1 and s["jobs"]["dead_lettered"] == 0
    assert s["named"]["f"]["executions"] == 3


def test_an_interrupting_boundary_timer_withdraws_the_job_and_complete_answers_404():
    r = run(make("[{name: s, handler: slow}]"))
    a = analyse(r)
    assert a.summary["named"]["s"]["outcome"] == "withdrawn"
    assert kinds(r, "withdrawn")["time"].tolist() == [30.0]
    assert a.summary["completions"]["row_gone"] == 1  # the worker's complete: job not found
    assert a.summary["jobs"]["incident"] == 0 and a.violations == []


def test_a_non_interrupting_boundary_timer_leaves_the_job():
    r = run(make("[{name: s, handler: slow}]", interrupting="false"))
    a = analyse(r)
    assert a.summary["named"]["s"]["outcome"] == "done"
    assert kinds(r, "boundary_timer")["time"].tolist() == [30.0]


def test_a_task_needs_at_least_one_retry():
    text = BASE.format(jobs="[{handler: ok}]", faults="[]", until="drained",
                       interrupting="true").replace("  ok: {duration: 2s}",
                                                    "  ok: {duration: 2s, retry: {attempts: 0}}")
    import pytest

    from jobsim.base.errors import ScenarioError

    with pytest.raises(ScenarioError) as err:
        scenario.loads(text)
    assert err.value.problems[0].path == "handlers.ok.retry.attempts"


# --- activation: the worker's request is long-polled --------------------------------------------

FAILING = """
name: zf
until: drained
policy: zeebe_like
db: {{latency: {latency}}}
nodes: [{{name: w1}}]
handlers:
  bad: {{duration: 3s, outcome: always_fail, error: "Stripe rate limit"}}
  ok: {{duration: 1s}}
workload:
  jobs: [{{name: f, handler: bad, at: 2s}}, {{handler: ok, at: 40s}}]
"""


def test_a_failed_job_is_activated_again_at_once_then_an_incident():
    """"A job failed with retries above 0 can be activated again immediately": with the
    preset's defaults each failure of a 3-retry job is followed by its activation within two
    statement latencies (the fail, then the held request's answer); after the third, an
    incident and no further activation. The deadline is activation + 300 s."""
    for latency in ("0s", "5ms"):
        r = run(scenario.loads(FAILING.format(latency=latency)))
        lat = 0.005 if latency == "5ms" else 0.0
        ends = kinds(r, "exec_end")
        fails = ends["time"][ends["job"] == 1].tolist()
        locked = kinds(r, "locked")
        acts = locked["time"][locked["job"] == 1].tolist()
        assert len(fails) == 3 and len(acts) == 3
        assert acts[0] == 2.0 + lat  # created at 2 s: the held request is answered
        for fail_at, again in zip(fails, acts[1:]):
            assert fail_at <= again <= fail_at + 2 * lat + 1e-9, (latency, fail_at, again)
        assert kinds(r, "dead_lettered")["a"].tolist() == [1]  # the incident
        assert acts[-1] < fails[-1]  # nothing after the incident
        # the deadline, in Unix epoch milliseconds: the run's start instant (clock.epoch,
        # 2026-01-01T00:00:00Z unless given) + activation + 300000
        assert (locked["c"] == 1_767_225_600_000 + np.round((locked["time"] + 300.0) * 1000)
                ).all()
        assert np.isinf(locked["x"]).all()  # informational: the lock never expires
        a = analyse(r)
        frame = jobs_frame(a.histories).set_index("id")
        assert frame.loc[1, "deadline"] == 1_767_225_600_000 + round((acts[-1] + 300.0) * 1000)
        assert a.violations == []


def test_a_failure_wakes_the_held_request_not_the_next_poll():
    """Failures at 3 / 13 / 23 s (10 s runs) are activated again at 3 / 13 / 23 s, not at a
    later poll; an empty request is answered only after the 10 s long-poll timeout."""
    text = FAILING.format(latency="0s").replace("duration: 3s", "duration: 10s") \
        .replace("at: 2s", "at: 0s").replace("- {name: w1}", "- {name: w1, start_at: 0s}") \
        .replace("nodes: [{name: w1}]", "nodes: [{name: w1, start_at: 0s}]")
    r = run(scenario.loads(text))
    locked = kinds(r, "locked")
    assert locked["time"][locked["job"] == 1].tolist() == [0.0, 10.0, 20.0]
    acq = kinds(r, "acquire")
    assert acq["time"].tolist()[:4] == [0.0, 10.0, 20.0, 40.0]  # no poll in between


def test_polling_stays_available_and_is_slower():
    """wakeup: poll is still a setting: a failed job then waits for the worker's next poll."""
    text = FAILING.format(latency="0s").replace("nodes: [{name: w1}]",
                                                "executor: {wakeup: poll, poll_interval: 10s}\n"
                                                "nodes: [{name: w1, start_at: 0s}]")
    r = run(scenario.loads(text))
    locked = kinds(r, "locked")
    ends = kinds(r, "exec_end")
    fails = ends["time"][ends["job"] == 1].tolist()
    acts = locked["time"][locked["job"] == 1].tolist()
    assert all(again - fail_at > 1.0 for fail_at, again in zip(fails, acts[1:]))


def test_long_poll_needs_a_broker():
    import pytest

    from jobsim.base.errors import ScenarioError

    text = FAILING.format(latency="0s").replace(
        "policy: zeebe_like", "executor: {acquisition: guarded_update, wakeup: long_poll}")
    with pytest.raises(ScenarioError) as err:
        scenario.loads(text)
    assert err.value.problems[0].path == "executor.wakeup"


# --- the worker: what its fail call sends, its wait before failing, its own timeout -------------

WORKER = """
name: zw
until: {until}
horizon: 1h
policy: zeebe_like
nodes: [{{name: w1, start_at: 0s}}, {{name: w2, start_at: 0s}}]
handlers:
  h: {handler}
workload:
  jobs: [{{name: j, handler: h}}]
"""


def worker_run(handler: str, until: str = "drained"):
    return run(scenario.loads(WORKER.format(handler=handler, until=until)))


def test_fail_with_retries_minus_one_uses_one():
    r = worker_run("{duration: 1s, outcome: always_fail, fail_retries: decrement}")
    assert kinds(r, "retry_scheduled")["a"].tolist() == [2, 1]
    assert kinds(r, "dead_lettered")["a"].tolist() == [1]  # an incident at 0
    assert analyse(r).violations == []


def test_fail_with_retries_unchanged_hands_the_job_back_for_free():
    """job.retries unchanged: the job never reaches an incident by failing; here it fails
    five times, then succeeds, still holding its 3 retries."""
    r = worker_run("{duration: 1s, outcome: {fail_first: 5}, fail_retries: unchanged}")
    assert kinds(r, "retry_scheduled")["a"].tolist() == [3] * 5
    assert len(kinds(r, "dead_lettered")["job"]) == 0
    a = analyse(r)
    assert a.summary["named"]["j"]["outcome"] == "done"
    assert a.summary["named"]["j"]["executions"] == 6 and a.violations == []


def test_a_job_handed_back_for_ever_runs_until_the_run_ends():
    r = worker_run("{duration: 1s, outcome: always_fail, fail_retries: unchanged}", "2m")
    a = analyse(r)
    assert a.summary["jobs"]["incident"] == 0 and a.summary["jobs"]["pending"] == 1
    assert a.summary["named"]["j"]["executions"] == 120  # one a second, back to back
    assert a.violations == []


def test_fail_with_retries_omitted_counts_as_zero():
    r = worker_run("{duration: 1s, outcome: always_fail, fail_retries: omitted}")
    assert len(kinds(r, "retry_scheduled")["job"]) == 0
    assert kinds(r, "dead_lettered")["a"].tolist() == [1]
    a = analyse(r)
    assert a.summary["jobs"]["incident"] == 1
    assert a.summary["named"]["j"]["executions"] == 1 and a.violations == []


def test_the_worker_waits_1s_2s_4s_before_failing_and_keeps_the_job():
    """``attempt = 3 - job.retries; sleep(2^attempt s)``: 1 s, 2 s, 4 s, the job locked to
    the worker meanwhile (no other worker is handed it)."""
    r = worker_run('{duration: 500ms, outcome: always_fail, error: "Stripe rate limit", '
                   'fail_wait: [1s, 2s, 4s]}')
    ends = kinds(r, "exec_end")["time"].tolist()
    fails = kinds(r, "retry_scheduled")
    dead = kinds(r, "dead_lettered")
    reported = fails["time"].tolist() + dead["time"].tolist()
    assert [b - a for a, b in zip(ends, reported)] == [1.0, 2.0, 4.0]
    assert fails["c"].tolist() + dead["c"].tolist() == [1000, 2000, 4000]
    locked = kinds(r, "locked")
    # each activation comes only after the previous failure was reported
    assert locked["time"].tolist() == [0.0] + fails["time"].tolist()
    assert len(set(locked["node"].tolist())) == 1  # it stayed the one worker's
    a = analyse(r)
    assert a.summary["jobs"]["incident"] == 1 and a.violations == []


def test_an_exponential_worker_wait_gives_the_same():
    r = worker_run("{duration: 500ms, outcome: always_fail, "
                   "fail_wait: {exponential: {base: 1s, factor: 2}}}")
    waits = kinds(r, "retry_scheduled")["c"].tolist() + kinds(r, "dead_lettered")["c"].tolist()
    assert waits == [1000, 2000, 4000]


def test_the_workers_60s_timeout_fails_a_hanging_job_with_one_retry_used():
    """``Promise.race([processPayment(job), timeout])``, then ``failJob(job.retries - 1)``."""
    r = worker_run("{outcome: hang, worker_timeout: 60s}")
    ends = kinds(r, "exec_end")
    assert ends["time"].tolist() == [60.0, 120.0, 180.0]
    assert {r.trace.texts[t] for t in ends["text"]} == {"processing took too long"}
    assert kinds(r, "retry_scheduled")["a"].tolist() == [2, 1]
    a = analyse(r)
    assert a.summary["jobs"]["incident"] == 1 and a.violations == []


def test_a_run_shorter_than_the_workers_timeout_is_untouched():
    r = worker_run("{duration: 20s, worker_timeout: 60s}")
    a = analyse(r)
    assert a.summary["named"]["j"]["outcome"] == "done"
    assert a.summary["named"]["j"]["executions"] == 1


def test_fail_retries_needs_a_server_that_stores_them_as_sent():
    import pytest

    from jobsim.base.errors import ScenarioError

    text = WORKER.format(handler="{duration: 1s, fail_retries: unchanged}", until="drained") \
        .replace("policy: zeebe_like", "policy: flowable")
    with pytest.raises(ScenarioError) as err:
        scenario.loads(text)
    assert err.value.problems[0].path == "handlers.h.fail_retries"


def test_the_engine_fires_its_own_timers_no_timer_job_and_the_404_is_not_a_duplicate():
    """No timer table: the server fires the timer at its instant, with no row of its own
    (one job, no boundary_timers figures); the worker's late complete is answered "job not
    found" (404), told as such and not as a duplicate run."""
    from jobsim.analysis.narrative import narrate

    r = run(make("[{name: s, handler: slow}]"))
    gone = kinds(r, "withdrawn")
    assert gone["a"].tolist() == [0] and gone["node"].tolist() == [-1]  # the engine's own
    s = analyse(r).summary
    assert s["jobs"]["created"] == 1 and "boundary_timers" not in s
    lines = narrate(r.trace)
    assert "      job 1 WITHDRAWN by its interrupting boundary timer at t=30s" in lines
    assert any(line.endswith('job 1 completion answered "job not found" (404): the job was '
                             "withdrawn by its boundary timer") for line in lines)
    assert not any("duplicate" in line for line in lines)
