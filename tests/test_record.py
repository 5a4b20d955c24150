"""Rows of docs/policies.md that had no test: each test quotes the statement of the system's
text it checks, and the row cites it."""

from pathlib import Path

import numpy as np
import pytest

import jobsim
from jobsim.analysis.narrative import narrate
from jobsim.base.trace import K
from jobsim.format.scenario import loads
from jobsim.sim.world import World

ROOT = Path(__file__).resolve().parent.parent


def events(result, kind, job=None):
    c = result.trace.arrays()
    sel = c["kind"] == K[kind]
    if job is not None:
        sel &= c["job"] == job
    return {k: v[sel] for k, v in c.items()}


def texts(result, ev):
    return [result.trace.texts[t] for t in ev["text"]]


# --- lesson ------------------------------------------------------------------------------

def test_a_lesson_lock_lasts_lock_time_from_the_claim():
    """``job.lock_until = now + LOCK_SECONDS``: the lesson gives no value; the preset's
    ``lock_time`` is 5 minutes, so each of the demo's 7 claims writes its instant + 300 s."""
    r = jobsim.run(ROOT / "scenarios" / "lesson.yaml")
    locked = events(r, "locked")
    assert locked["time"].tolist() == [0.0, 0.0, 10.0, 10.0, 70.0, 70.0, 370.0]
    assert locked["x"].tolist() == [300.0, 300.0, 310.0, 310.0, 370.0, 370.0, 670.0]


LESSON_MOVE = """
name: moved
policy: lesson
until: drained
nodes: [{name: node-A}]
clock:
  ticks: [{at: 0s, nodes: [node-A]}, {at: 10s, nodes: [node-A]}, {at: 70s, nodes: [node-A]},
          {at: 370s, nodes: [node-A]}, {at: 400s, nodes: [node-A]}, {at: 500s, nodes: [node-A]}]
handlers:
  bad: {outcome: {fail_first: 3}, error: bad config}
workload: {jobs: [{name: x, handler: bad}]}
operations: [{at: 450s, move: x}]
"""


def test_a_lesson_dead_letter_runs_again_only_once_moved_back():
    """Q2: at zero retries the job "moves to the dead-letter table, where nothing runs it
    until a human (or automation) moves it back": dead-lettered at 70 s, the ticks at 370 s
    and 400 s run nothing; moved at 450 s with the handler's 3 retries, it runs at the next
    tick (500 s) and is done."""
    r = jobsim.run(loads(LESSON_MOVE))
    assert events(r, "exec_start", 1)["time"].tolist() == [0.0, 10.0, 70.0, 500.0]
    assert events(r, "dead_lettered", 1)["time"].tolist() == [70.0]
    revived = events(r, "revived", 1)
    assert revived["time"].tolist() == [450.0] and revived["a"].tolist() == [3]
    s = jobsim.analyse(r).summary
    assert s["named"]["x"]["outcome"] == "done" and s["jobs"]["dead_lettered"] == 0
    assert narrate(r.trace)[-1] == "dead letters: []"


LESSON_CRASH = """
name: crash
policy: lesson
until: drained
db: {{latency: 1s}}
nodes: [{{name: node-A}}, {{name: node-B}}]
clock: {{ticks: [{{at: 0s, nodes: [node-A]}}, {{at: 400s, nodes: [node-B]}}]}}
handlers:
  pay: {{duration: 2s, side_effect: {{{at}say: charged}}}}
workload: {{jobs: [{{name: p, handler: pay}}]}}
faults: [{{at: 3500ms, crash: node-A}}]
"""


@pytest.mark.parametrize("at, effects, duplicates", [("", [3.0, 403.0], 1),
                                                    ("at: commit, ", [404.0], 0)])
def test_a_lesson_runs_work_is_not_in_its_outcomes_transaction(at, effects, duplicates):
    """"Execute — in a fresh transaction": the claim commits at 1 s (1 s statements), the run
    ends at 3 s and node-A crashes at 3.5 s, before its DELETE (due at 4 s) is made. The run's
    effect at its end (3 s) stays, and node-B's run after the lock expired makes it again:
    the run and its outcome are not one transaction. Only an effect ``at: commit`` is
    written with the DELETE (404 s), once."""
    r = jobsim.run(loads(LESSON_CRASH.format(at=at)))
    assert events(r, "exec_start", 1)["time"].tolist() == [1.0, 401.0]
    assert events(r, "completed", 1)["time"].tolist() == [404.0]
    ends = events(r, "exec_end", 1)
    said = [t for t, b in zip(ends["time"].tolist(), ends["b"].tolist()) if b == 1]
    said += events(r, "side_effect", 1)["time"].tolist()
    assert sorted(said) == effects
    s = jobsim.analyse(r).summary
    assert s["duplicate_side_effects"]["total"] == duplicates
    assert s["named"]["p"]["executions"] == 2


# --- failsafe ----------------------------------------------------------------------------

FAILSAFE = """
name: f
until: drained
horizon: 2h
policy: failsafe
nodes:
  - {{name: a, handles: [mail, bad], start_at: 0s}}
  - {{name: b, handles: [report], start_at: 0s}}
handlers:
  mail: {{duration: 1s}}
  bad: {{duration: 1s, outcome: always_fail, error: boom}}
  report: {{duration: 1m}}
workload:
  jobs: {jobs}
"""


def failsafe(jobs):
    return loads(FAILSAFE.format(jobs=jobs))


def test_a_failsafe_task_is_persisted_then_picked_up_by_a_poll():
    """"each task gets persisted into database before it's considered for execution": a
    task submitted at 12 s (by node a's code) is inserted unlocked, and node a's poll at
    15 s (10 s initial delay, then every 5 s) locks and starts it — not its insert."""
    r = jobsim.run(failsafe("[{handler: mail, node: a, at: 12s}]"))
    assert events(r, "job_created", 1)["time"].tolist() == [12.0]
    locked = events(r, "locked", 1)
    assert locked["time"].tolist() == [15.0] and locked["x"].tolist() == [315.0]
    assert events(r, "exec_start", 1)["time"].tolist() == [15.0]
    polls = events(r, "acquire")
    assert 15.0 in polls["time"].tolist()


def test_a_deferred_failsafe_task_starts_at_the_first_poll_after_its_planned_time():
    """"plan a one-time execution in future with method defer": a task deferred by 302 s is
    inserted at 0 s and first runs at the poll of 305 s, the first at or after 302 s."""
    r = jobsim.run(failsafe("[{handler: mail, due_in: 302s}]"))
    assert events(r, "job_created", 1)["x"].tolist() == [302.0]
    assert events(r, "exec_start", 1)["time"].tolist() == [305.0]
    polls = events(r, "acquire")
    assert polls["b"][polls["time"] < 302.0].sum() == 0  # no poll took it before


def test_a_failed_failsafe_tasks_row_keeps_its_exception_message():
    """"The exception's message and stacktrace are saved to the task": the failed task's
    row keeps the handler's error ("boom") — no stack trace — and its failure event and
    the transcript tell it."""
    w = World(failsafe("[{name: x, handler: bad}]"))
    r = w.run()
    row = w.store.get(1)
    assert (row.table, row.error) == ("failed", "boom")
    failed = events(r, "dead_lettered", 1)
    assert failed["a"].tolist() == [2] and texts(r, failed) == ["boom"]
    assert "  [a] job 1 FAILED: boom (kept until retried or cancelled)" in narrate(r.trace)


def test_failed_and_recorded_failsafe_tasks_are_both_reported_failed():
    """"To find failed tasks use ... failedTasks()" (recorded failures are "made visible
    through failedTasks()"): with no query API, a task that failed and one inserted by
    ``recordFailure`` are both counted in ``jobs.failed`` and have the outcome ``failed``."""
    r = jobsim.run(failsafe('[{name: x, handler: bad}, '
                            '{name: y, handler: mail, record_failure: "timeout upstream"}]'))
    s = jobsim.analyse(r).summary
    assert s["jobs"]["failed"] == 2 and s["jobs"]["done"] == 0
    assert (s["named"]["x"]["outcome"], s["named"]["y"]["outcome"]) == ("failed", "failed")
    assert (s["named"]["x"]["executions"], s["named"]["y"]["executions"]) == (1, 0)


def test_failsafe_execution_order_is_not_the_submission_order():
    """"execution order can not be guaranteed": 40 one-minute tasks submitted at once, two
    nodes of 5 threads. Node a's poll at 10 s locks tasks 1–35 and starts 1–5; node b's at
    11 s finds 36–40 and starts them, while tasks 6–35 wait in node a's queue until 70 s."""
    r = jobsim.run(loads("""
name: order
until: drained
policy: failsafe
nodes: [{name: a, start_at: 0s}, {name: b, start_at: 1s}]
handlers: {w: {duration: 1m}}
workload: {streams: [{name: s, handler: w, count: 40}]}
"""))
    st = events(r, "exec_start")
    first = {int(j): float(t) for t, j in zip(st["time"][::-1], st["job"][::-1])}
    b = r.trace.nodes.index("b")
    assert sorted(st["job"][(st["time"] == 11.0) & (st["node"] == b)].tolist()) == \
        [36, 37, 38, 39, 40]
    assert [first[j] for j in range(1, 6)] == [10.0] * 5
    assert [first[j] for j in range(6, 11)] == [70.0] * 5
    ids_by_start = [j for _, j in sorted((t, j) for j, t in first.items())]
    assert ids_by_start != sorted(ids_by_start)


def test_a_crashed_failsafe_nodes_task_runs_again_on_another_node():
    """"Guarantees at least once execution": node a crashes at 30 s, 20 s into the
    one-minute task it locked at 10 s (lock until 310 s); node b, which registered the task
    too, takes it at its first poll after the lock expired (315 s) and runs it to the end:
    two executions, nothing lost."""
    r = jobsim.run(loads("""
name: crash
until: drained
policy: failsafe
nodes: [{name: a, start_at: 0s}, {name: b, start_at: 0s}]
handlers: {report: {duration: 1m}}
workload: {jobs: [{name: r, handler: report}]}
faults: [{at: 30s, crash: a}]
"""))
    locked = events(r, "locked", 1)
    assert [r.trace.nodes[n] for n in locked["node"]] == ["a", "b"]
    assert locked["time"].tolist() == [10.0, 315.0] and locked["x"].tolist() == [310.0, 615.0]
    s = jobsim.analyse(r).summary
    assert s["named"]["r"]["outcome"] == "done" and s["named"]["r"]["executions"] == 2
    assert s["jobs"]["lost"] == 0 and s["jobs"]["done"] == 1


# --- zeebe_like --------------------------------------------------------------------------

ZEEBE = """
name: z
until: drained
horizon: 1h
policy: zeebe_like
nodes: [{name: w1}]
handlers:
  bad: {duration: 3s, outcome: always_fail, error: "Stripe rate limit"}
  slowbad: {duration: 60s, outcome: always_fail, error: boom,
            boundary_timer: {after: 30s, interrupting: true}}
  slow: {duration: 60s, boundary_timer: {after: 30s, interrupting: true}}
workload:
  jobs: JOBS
"""


def zeebe(jobs):
    return jobsim.run(loads(ZEEBE.replace("JOBS", jobs)))


def test_a_zeebe_like_fail_carries_the_handlers_error_as_its_error_message():
    """"the body is {"retries": int, "errorMessage": string}": each of the three fails of a
    3-retry job sends the handler's error, which the failure events and the transcript
    carry."""
    r = zeebe("[{name: f, handler: bad}]")
    retried = events(r, "retry_scheduled", 1)
    assert retried["a"].tolist() == [2, 1]
    assert texts(r, retried) == ["Stripe rate limit"] * 2
    assert texts(r, events(r, "dead_lettered", 1)) == ["Stripe rate limit"]
    lines = narrate(r.trace)
    assert "  [w1] job 1 failed (Stripe rate limit); retry in 0s (2 left)" in lines


def test_an_exhausted_zeebe_like_job_is_told_as_an_incident():
    """"the job is removed ... an incident record (JOB_FAILED, critical)": the third fail
    leaves 0 retries; the job becomes an incident (no dead letter) and the transcript says
    so."""
    r = zeebe("[{name: f, handler: bad}]")
    s = jobsim.analyse(r).summary
    assert (s["jobs"]["incident"], s["jobs"]["dead_lettered"]) == (1, 0)
    assert events(r, "dead_lettered", 1)["a"].tolist() == [1]  # 1: an incident
    lines = narrate(r.trace)
    assert "  [w1] job 1 failed with no retries left: INCIDENT (JOB_FAILED, critical): " \
        "Stripe rate limit" in lines
    assert lines[-1] == "dead letters: []"


def test_a_late_fail_or_complete_on_a_withdrawn_job_answers_404():
    """"a later complete or fail on its key answers 404": two 60 s jobs, each withdrawn by
    its 30 s interrupting boundary timer; at 60 s job 1's fail and job 2's complete find no
    row. The fail is a ``stale_write`` (no retry, no incident), told like the complete: "job
    not found" (404)."""
    r = zeebe("[{name: f, handler: slowbad}, {name: s, handler: slow}]")
    assert events(r, "withdrawn")["time"].tolist() == [30.0, 30.0]
    stale = events(r, "stale_write")
    assert stale["job"].tolist() == [1] and stale["time"].tolist() == [60.0]
    assert texts(r, stale) == ["fail"]
    done = events(r, "completed")
    assert done["job"].tolist() == [2] and done["a"].tolist() == [0]
    assert len(events(r, "retry_scheduled")["job"]) == 0
    s = jobsim.analyse(r).summary
    assert (s["jobs"]["withdrawn"], s["jobs"]["incident"]) == (2, 0)
    assert s["completions"]["row_gone"] == 1
    lines = narrate(r.trace)
    gone = 'answered "job not found" (404): the job was withdrawn by its boundary timer'
    assert lines[2:4] == [f"  [w1] job 1 failure {gone}", f"  [w1] job 2 completion {gone}"]
    assert np.sum([line.endswith(gone) for line in lines]) == 2


def test_a_late_fail_on_a_flowable_withdrawn_job_is_told_as_its_row_gone():
    """The same two jobs under Flowable: the interrupting timer is a timer job the timer loop
    runs (job 2 for job 1); job 1's fail at 60 s finds no row and is told so, with the timer
    job that withdrew it."""
    text = ZEEBE.replace("JOBS", "[{name: f, handler: slowbad}, {name: s, handler: slow}]")
    r = jobsim.run(loads(text.replace("policy: zeebe_like", "policy: flowable")))
    assert events(r, "withdrawn", 1)["a"].tolist() == [2]
    assert events(r, "stale_write")["job"].tolist() == [1]
    lines = narrate(r.trace)
    assert "  [w1] job 1 failure found no row: the job was withdrawn by its boundary timer " \
        "(timer job 2)" in lines
