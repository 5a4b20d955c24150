"""Operations that are the Zeebe-like server's own — ``fail`` on an activated job's key, the
deadline as Unix epoch milliseconds — and operations that name a job they cannot act on,
which say so instead of doing nothing silently."""

import numpy as np
import pytest

from jobsim.analysis.narrative import narrate
from jobsim.base.errors import ScenarioError
from jobsim.base.trace import K
from jobsim.format import scenario
from jobsim.format.lint import lint
from jobsim.output.report import analyse
from jobsim.output.words import sentences
from jobsim.sim.world import run

BASE = """
name: ops
until: drained
horizon: 1h
policy: zeebe_like
{clock}
nodes: [{{name: w1}}, {{name: w2, start_at: 100ms}}]
handlers:
  ok: {{duration: 2s}}
  long: {{duration: 120s}}
workload:
  jobs: [{{name: j, handler: ok}}, {{name: l, handler: long, at: 200s}}]
faults: [{{at: 1s, crash: w1}}]
operations: {ops}
"""


def make(ops, clock=""):
    return scenario.loads(BASE.format(ops=ops, clock=clock))


def events(result, kind):
    c = result.trace.arrays()
    return {k: v[c["kind"] == K[kind]] for k, v in c.items()}


def test_a_fail_with_retries_left_releases_a_crashed_workers_job_at_that_instant():
    """w1 activates j and crashes at 1 s: nothing expires, and no restart comes. An operator's
    fail with 2 retries at 30 s hands the job back at once (stored as sent), and w2's held
    request takes it at that instant; it runs and is done."""
    r = run(make("[{at: 30s, fail: j, retries: 2, error: worker gone}]"))
    locked = events(r, "locked")
    assert locked["job"][:2].tolist() == [1, 1]
    assert locked["time"][1] == 30.0 and r.trace.nodes[locked["node"][1]] == "w2"
    revived = events(r, "revived")
    assert revived["time"].tolist() == [30.0] and revived["a"].tolist() == [2]
    a = analyse(r)
    assert a.summary["jobs"]["done"] == 2 and a.violations == []
    assert a.summary["crash_recovery"]["delay"]["max"] == pytest.approx(29.0, abs=0.2)
    assert "job 1 FAILED by an operator's call at t=30s with 2 retries left" in \
        "\n".join(narrate(r.trace))


def test_a_fail_with_no_retries_makes_an_incident_at_that_instant():
    """retries omitted counts as 0: the job becomes an incident (JOB_FAILED), not waiting."""
    r = run(make("[{at: 30s, fail: j}]"))
    dead = events(r, "dead_lettered")
    assert dead["time"].tolist() == [30.0] and dead["a"].tolist() == [1]
    a = analyse(r)
    assert a.summary["jobs"]["incident"] == 1 and a.violations == []


def test_a_fail_on_a_job_its_worker_still_runs_is_left_to_it_and_said():
    """l runs for 120 s on w2 (w1 is down): a fail at 250 s finds its worker still running
    it; it does nothing, and the run says so."""
    r = run(make("[{at: 250s, fail: l, retries: 2}]"))
    ignored = events(r, "operation_ignored")
    assert ignored["a"].tolist() == [7] and ignored["job"].tolist() == [2]
    assert r.trace.nodes[ignored["node"][0]] == "w2"
    assert len(events(r, "exec_start")["job"]) == 2  # j once, l once: nothing ran twice
    a = analyse(r)
    assert a.summary["operations_ignored"] == 1
    assert any("1 operation named a job it could not act on" in s
               for s in sentences(a.summary))
    assert "WARNING: fail at t=250s did nothing: job 2 is held by a worker that still runs " \
        "or holds it (w2)" in "\n".join(narrate(r.trace))


@pytest.mark.parametrize("op, where, words", [
    ("retry", 2, "job 1 is held by a node (w1); retry acts on a failed task"),
    ("move", 2, "job 1 is held by a node (w1); move acts on a dead letter"),
    ("activate", 2, "job 1 is held by a node (w1); activate acts on a suspended job"),
])
def test_an_operation_on_a_stuck_job_is_ignored_with_a_warning(op, where, words):
    """The crashed worker's job is activated (held by w1): retry, move and activate cannot
    act on it. Each says so, in the transcript and in the trace, and the job stays."""
    r = run(make(f"[{{at: 30s, {op}: j}}]"))
    ignored = events(r, "operation_ignored")
    assert ignored["a"].tolist() == [where] and ignored["time"].tolist() == [30.0]
    assert r.trace.texts[ignored["text"][0]] == op
    assert f"WARNING: {op} at t=30s did nothing: {words}" in "\n".join(narrate(r.trace))


def test_an_operation_before_its_job_exists_says_so():
    r = run(make("[{at: 100s, fail: l}]"))  # l is created at 200 s
    ignored = events(r, "operation_ignored")
    assert ignored["job"].tolist() == [-1] and ignored["a"].tolist() == [0]
    assert "fail at t=100s did nothing: no job of that name was created yet" in \
        "\n".join(narrate(r.trace))


def test_operations_that_never_find_a_job_where_they_act_are_linted():
    """On the Zeebe-like server exhausted jobs become incidents: a retry (failed tasks) or a
    move (dead letters) can never act; fail can."""
    found = {w.path: w for w in lint(make("[{at: 30s, retry: j}, {at: 40s, fail: j}, "
                                          "{at: 50s, move: j}]"))
             if w.code == "operation-cannot-act"}
    assert sorted(found) == ["operations[0].retry", "operations[2].move"]
    assert "incidents, which no operation revives" in found["operations[0].retry"].message


def test_fail_needs_a_server():
    text = BASE.format(ops="[{at: 30s, fail: j}]", clock="").replace(
        "policy: zeebe_like", "policy: flowable")
    with pytest.raises(ScenarioError) as e:
        scenario.loads(text)
    assert "operations[0].fail" in str(e.value) and "no server to call fail on" in str(e.value)


def test_the_deadline_counts_from_the_runs_start_instant_when_given():
    r = run(make("[]", clock="clock: {epoch: 2030-06-01T12:00:00+02:00}"))
    locked = events(r, "locked")
    epoch = 1_906_538_400_000  # 2030-06-01T10:00:00Z
    assert (locked["c"] == epoch + np.round((locked["time"] + 300.0) * 1000)).all()


@pytest.mark.parametrize("value, expected", [
    ("2030-06-01T12:00:00", "(this one has no zone)"), ("tomorrow", "an ISO-8601 time")])
def test_a_start_instant_without_a_zone_or_not_a_time_is_refused(value, expected):
    with pytest.raises(ScenarioError) as e:
        make("[]", clock=f"clock: {{epoch: '{value}'}}")
    assert "clock.epoch" in str(e.value) and expected in str(e.value)
