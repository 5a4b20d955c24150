"""failsafe-executor (seed 002), behaviour by behaviour."""

from jobsim import scenario
from jobsim.report import analyse
from jobsim.trace import K
from jobsim.world import run

BASE = """
name: f
until: {until}
horizon: 2h
policy: failsafe
nodes:
  - {{name: a, handles: [mail, bad]}}
  - {{name: b, handles: [report]}}
handlers:
  mail: {{duration: 1s}}
  bad: {{duration: 1s, outcome: always_fail, error: boom}}
  report: {{duration: 7m}}
workload:
  jobs: {jobs}
operations: {ops}
"""


def make(jobs, ops="[]", until="drained"):
    return scenario.loads(BASE.format(jobs=jobs, ops=ops, until=until))


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
            ex.lock_time, ex.heartbeat, ex.exhausted, ex.retry.attempts) == (
        "optimistic", "created", 5, 30, 5.0, 300.0, 75.0, "failed", 1)
