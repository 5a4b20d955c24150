"""The Zeebe-like server of seed 003, behaviour by behaviour."""

import numpy as np

from jobsim.format import scenario
from jobsim.analysis.history import histories
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


def test_the_zeebe_like_scenario_runs_as_it_always_has():
    """Boundary timers became timer jobs under a timer table only: the shipped scenario's
    trace, boundary timer included, is byte for byte what it was."""
    from conftest import SCENARIOS

    r = run(scenario.load(SCENARIOS / "zeebe_like.yaml"))
    assert r.trace_sha256 == \
        "3d6c829dd2d35dde01280a896fdbe6e4b5646e1a4cbf0b79b4553f21197eff86"
    assert len(r.trace) == 342
