"""Findings of a reliability audit that mixed every feature on fresh seeds, each held by the
few lines it was shrunk to. Every file here must run with every invariant holding and no
traceback, or be refused as bad input with its dotted path."""

import pytest

from jobsim.analysis.history import histories
from jobsim.analysis.metrics import trace_frame
from jobsim.base.errors import ScenarioError
from jobsim.cli import main
from jobsim.format import scenario
from jobsim.format.lint import lint
from jobsim.output.report import analyse
from jobsim.sim.world import run


def _analysed(text: str):
    sc = scenario.loads(text)
    result = run(sc)
    analysis = analyse(result)
    assert analysis.violations == [], [v.message for v in analysis.violations]
    return result, analysis


def _events(result, kind: str) -> list[tuple[float, int, int]]:
    """(time, job, a) of every event of ``kind``."""
    df = trace_frame(result.trace)
    df = df[df["kind"] == kind]
    return list(zip(df["time"].tolist(), df["job"].tolist(), df["a"].tolist()))


# --- a server restart with a job in the worker's local queue ----------------------------------

def test_a_job_waiting_in_the_local_queue_at_a_server_restart_runs_twice_with_its_cause():
    """The server hands back both activated jobs: the running one and the one waiting in the
    worker's queue. The worker runs the queued one all the same, and runs it again when the
    server activates it a second time: a duplicate whose cause is the restart."""
    result, analysis = _analysed("""
name: queued-at-restart
policy: zeebe_like
executor: {threads: 1, queue_size: 1, batch_size: 2}
nodes: 1
handlers: {h: {duration: 10s}}
workload: {jobs: [{handler: h}, {handler: h}]}
faults: [{at: 5s, restart_server: true}]
""")
    dups = histories(result.trace).duplicates
    assert [(d.job, d.cause) for d in dups if d.what == "execution"] == [(2, "server_restart")]
    causes = analysis.summary["duplicate_executions"]["by_cause"]
    assert {k: v for k, v in causes.items() if v} == {"server_restart": 1}


def test_a_server_restart_needs_a_server(capsys):
    """Rows claimed with SQL stay locked through a database's restart: ``restart_server``
    without a broker would unlock them as no real system does."""
    text = """
name: no-server
executor: {acquisition: guarded_update, lock_expiry: never}
nodes: 2
handlers: {h: {duration: 10s}}
workload: {jobs: [{handler: h}, {handler: h}]}
faults: [{at: 5s, restart_server: true}]
"""
    with pytest.raises(ScenarioError) as err:
        scenario.loads(text)
    (problem,) = err.value.problems
    assert problem.path == "faults[0].restart_server"
    assert "acquisition: broker" in problem.expected and "guarded_update" in problem.got


def test_a_server_restart_with_a_broker_on_a_mixed_cluster_is_refused():
    with pytest.raises(ScenarioError, match=r"faults\[0\]\.restart_server"):
        scenario.loads("""
name: mixed
policy: zeebe_like
nodes: [{name: a}, {name: b, acquisition: guarded_update, wakeup: poll}]
handlers: {h: {duration: 1s}}
workload: {jobs: [{handler: h}]}
faults: [{at: 5s, restart_server: true}]
""")


# --- retry accounting: the engine and the checker agree ----------------------------------------

def test_a_worker_that_sends_its_retries_unchanged_keeps_what_the_job_holds_under_a_cycle():
    """A cycle's repeat count replaces the retries in the engine's own count (Flowable's);
    a worker that sends the job's retries unchanged sends what the job holds: 1 here."""
    result, _ = _analysed("""
name: cycle-unchanged
policy: zeebe_like
until: 30s
nodes: 1
handlers:
  h: {duration: 1s, outcome: always_fail, fail_retries: unchanged,
      retry: {attempts: 1, backoff: R3/PT5S}}
workload: {jobs: [{handler: h}]}
""")
    retries = _events(result, "retry_scheduled")
    assert len(retries) >= 4 and {a for _, _, a in retries} == {1}
    # the cycle's interval is the wait: 1 s run + 5 s
    assert [round(t) for t, _, _ in retries[:3]] == [1, 7, 13]


def test_a_worker_count_beside_attempts_counted_at_fetch_is_refused():
    """Counted at fetch (Oban, River), the claim counts each execution; a worker that sends
    its own count (Zeebe) would contradict it: the engine stored -1 retries and retried for
    ever. No real system has both."""
    for form in ("unchanged", "omitted"):
        with pytest.raises(ScenarioError) as err:
            scenario.loads(f"""
name: fetch-{form}
executor: {{acquisition: broker, count_attempt: fetch, lock_expiry: reset,
           reset_interval: 5s, lock_time: 10s}}
nodes: 1
handlers:
  h: {{duration: 1s, outcome: always_fail, fail_retries: {form}}}
workload: {{jobs: [{{handler: h}}]}}
""")
        (problem,) = err.value.problems
        assert problem.path == "handlers.h.fail_retries" and "fetch" in problem.got


def test_a_dead_letter_moved_back_with_retries_keeps_them_under_a_cycle():
    """Flowable's cycle replaces the retries only at a job's first failure ever (its
    exception message still empty); a dead letter moved back keeps its exception, so the
    retries the operator gave are the ones it has: one more execution, then a dead letter."""
    result, analysis = _analysed("""
name: cycle-move
policy: flowable
until: 10m
nodes: 1
handlers: {h: {duration: 1s, outcome: always_fail, retry: {attempts: 3, backoff: R3/PT5S}}}
workload: {jobs: [{name: a, handler: h}]}
operations: [{at: 2m, move: a, retries: 1}]
""")
    assert analysis.summary["named"]["a"]["executions"] == 3 + 1
    assert len(_events(result, "dead_lettered")) == 2


def test_an_operators_retry_of_a_failed_task_under_a_cycle_is_one_more_execution():
    """failsafe-executor's retry gives the task one more go (the handler's attempts, 1):
    the cycle, applied at its first failure, does not come back."""
    _, analysis = _analysed("""
name: cycle-retry
policy: failsafe
until: 10m
nodes: 1
handlers: {h: {duration: 1s, outcome: always_fail, retry: {attempts: 1, backoff: R3/PT5S}}}
workload: {jobs: [{name: a, handler: h}]}
operations: [{at: 2m, retry: a}, {at: 4m, retry: a}]
""")
    assert analysis.summary["named"]["a"]["executions"] == 3 + 1 + 1


# --- a pause past the worker's timeout, inside a handler's steps -------------------------------

@pytest.mark.parametrize("pause_at", ["8s", "12s", "15s"])
def test_a_pause_past_the_worker_timeout_ends_the_run_at_the_next_step(pause_at):
    """The node stalls inside the first work step for longer than the worker's timeout: when
    it runs again the timeout has passed, and the run ends there, timed out (the remaining
    time was negative: ``ValueError: Negative delay``)."""
    result, analysis = _analysed(f"""
name: pause-in-steps
nodes: 1
services: {{api: {{latency: 1s}}}}
handlers:
  h:
    worker_timeout: 20s
    calls: [{{work: 10s}}, {{work: 1s}}, {{service: api, timeout: 5s}}]
workload: {{jobs: [{{handler: h}}]}}
faults: [{{at: {pause_at}, pause: node-1, for: 60s}}]
""")
    failed = [t for t, _, _ in _events(result, "retry_scheduled")]
    assert len(failed) == 1 and failed[0] >= 60
    assert analysis.summary["jobs"]["done"] == 1


def test_a_pause_before_a_service_call_past_the_worker_timeout_makes_no_call():
    result, _ = _analysed("""
name: pause-before-call
nodes: 1
services: {api: {latency: 1s}}
handlers:
  h:
    worker_timeout: 20s
    calls: [{work: 10s}, {service: api, timeout: 5s}]
workload: {jobs: [{handler: h}]}
faults: [{at: 12s, pause: node-1, for: 60s}]
""")
    first = min(t for t, _, _ in _events(result, "retry_scheduled"))
    calls = [t for t, _, _ in _events(result, "service_call")]
    assert calls and min(calls) > first  # the timed-out run called nothing; the retry did


# --- a run in which no job is created --------------------------------------------------------

def test_a_run_that_ends_before_its_first_job_reports_and_warns(tmp_path, capsys):
    """A stream whose first arrival falls after ``until``: the run has no job. It reports
    (an ``IndexError`` in the stories before), and the file is warned about."""
    text = """
name: empty
until: 10s
nodes: 1
handlers: {h: {duration: 1s}}
workload: {streams: [{name: s, handler: h, count: 5, rate: 1/s, start: 1m}]}
"""
    sc = scenario.loads(text)
    assert [w.code for w in lint(sc)] == ["created-after-the-end"]
    assert lint(sc)[0].path == "workload.streams[0].start"
    _, analysis = _analysed(text)
    assert analysis.summary["jobs"]["created"] == 0
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr()
    assert "created-after-the-end" in out.err or "creates no job" in out.err
    assert (tmp_path / "out" / "jobs.csv").read_text().count("\n") == 1  # the header alone


# --- liveness: a thread that waits before failing is not idle ----------------------------------

def test_a_worker_waiting_before_it_fails_a_job_holds_its_thread():
    """With ``fail_wait`` the worker waits, the job still its own, before it reports the
    failure: its thread is busy all the while. The checker took it for free from the run's
    end, and called the next job, due and waiting, starved by an idle node."""
    result, analysis = _analysed("""
name: fail-wait-holds-the-thread
policy: zeebe_like
until: 60s
executor: {threads: 1, batch_size: 1, queue_size: 0}
nodes: 1
handlers:
  h: {duration: 1s, outcome: always_fail, fail_wait: {fixed: 20s}}
workload:
  jobs: [{handler: h}, {handler: h, at: 1s}]
""")
    assert analysis.summary["jobs"]["pending"] >= 1  # the liveness check judged a waiting job
    # the thread went from one failure's wait straight to the next run: no idle gap
    starts = [t for t, _, _ in _events(result, "exec_start")]
    fails = [t for t, _, _ in _events(result, "retry_scheduled")]
    assert all(any(abs(s - f) < 1e-6 for f in fails) for s in starts[1:])


# --- found by the fuzz over the whole format --------------------------------------------------

def test_a_ticks_node_takes_the_global_acquire_lock_as_a_polling_node_does():
    """Under the global lock the claim is a bulk UPDATE without the version check, safe only
    under the lock: two nodes ticking together both claimed the job."""
    _, analysis = _analysed("""
name: global_lock_ticks
executor: {wakeup: ticks, global_lock: true}
nodes: 2
handlers: {w: {}}
workload: {jobs: [{handler: w}]}
db: {latency: 1ms}
clock: {ticks: [{at: 1s, nodes: [node-1, node-2]}]}
""")
    assert analysis.summary["double_acquisitions"] == 0
    assert analysis.summary["executions"] == 1


def test_a_measured_statement_of_no_time_that_grows_per_locked_row_runs():
    """A profile's per-row time is a share of the statement's mean; with a mean of 0 there
    is no share (ZeroDivisionError): the per-row time is added as it is."""
    _, analysis = _analysed("""
name: profile_zero_update
db:
  dialect: sqlite
  profile:
    dialect: sqlite
    machine: {cores: 1}
    strategies:
      guarded_update: {select: 1ms, update: 0s, between_attempts: 0s, between_statements: 0s,
                       update_per_row: 0.1ms}
nodes: 1
handlers: {w: {}}
workload: {jobs: [{handler: w}]}
""")
    assert analysis.summary["jobs"]["done"] == 1


def test_a_job_inserted_locked_by_its_creator_counts_that_as_its_first_fetch():
    """The hint path inserts a job locked by the node that created it; counted at fetch,
    that is a fetch: it ran once more than its attempts before."""
    _, analysis = _analysed("""
name: hint_fetch
executor: {hint: true, count_attempt: fetch, lock_expiry: reset}
nodes: 1
handlers: {w: {outcome: always_fail}}
workload: {jobs: [{handler: w, node: node-1}]}
""")
    assert analysis.summary["executions"] == 3


def test_a_node_that_claims_full_batches_is_busy_not_idle():
    """Runs of no length leave the thread free, but the node claimed a full batch each time
    its loop came round: a job its order keeps behind the retries of others is passed over
    by a busy node, not starved by an idle one."""
    _analysed("""
name: recurring_starved
until: 300s
executor: {queue_size: 1}
nodes: 1
handlers: {w: {outcome: always_fail}}
workload:
  streams: [{handler: w, count: 100}]
  recurring: [{name: every, handler: w, every: 2s, count: 1}]
""")


def test_a_named_submit_that_an_idempotent_submit_ignored_names_the_task_holding_its_id():
    _, analysis = _analysed("""
name: ignored_named
executor: {idempotent_submit: true}
nodes: 1
handlers: {w: {}}
workload:
  jobs:
  - {handler: w, id: 1}
  - {handler: w, id: 1, name: second, at: 1s}
expect:
  named.second.executions: "== 1"
""")
    assert analysis.summary["named"]["second"]["id"] == 1


def test_a_run_of_no_length_has_a_throughput_of_zero_when_nothing_was_done():
    """A task recorded failed at its creation, nothing else: the run ends at t=0. Nothing
    done is a rate of 0 (None before, which failed ``throughput_per_s >= 0``); an undefined
    figure says so where an expectation shows it."""
    from jobsim.analysis.expect import Verdict

    _, analysis = _analysed("""
name: no-length
until: drained
executor: {exhausted: failed}
nodes: 1
handlers: {h1: {duration: 50ms}}
workload: {jobs: [{handler: h1, name: j0, record_failure: recorded}]}
expect: {throughput_per_s: ">= 0"}
""")
    assert analysis.summary["end_time"] == 0 and analysis.summary["throughput_per_s"] == 0.0
    verdict = Verdict(scenario.loads("""
name: x
nodes: 1
handlers: {h: {}}
workload: {jobs: [{handler: h}]}
expect: {latency.start_delay.p50: "<= 1s"}
""").expect[0], None, False)
    assert "undefined in this run" in verdict.format()


def test_a_serial_queue_hands_over_no_row_a_claim_s_open_transaction_holds():
    """The 20,000-run fuzz (seed 871841034338, shrunk): on PostgreSQL, worker-2's SKIP
    LOCKED claim had selected and row-locked the next task of a serial queue when node-1's
    failure of that queue's task handed the next one over to itself at once, ignoring the
    row lock; the claim then committed over it — two live locks on one row. The hand-over
    now leaves a row an open transaction holds to it (it would wait for the lock and find
    the row taken)."""
    analysis = analyse(run(scenario.loads("""
name: fuzz
policy: flowable
executor: {acquisition: skip_locked, wakeup: ticks}
nodes: [{name: node-1}, {name: worker-2}]
handlers:
  h1: {outcome: {fail_rate: 1.0}}
  h2: {}
  h3: {}
workload:
  jobs: [{handler: h3}]
  streams:
    - {handler: h1, count: 16, name: s0, rate: 2/s, queue: qb}
    - {handler: h2, count: 1}
  recurring:
    - {name: every0, handler: h3, every: 2000ms, count: 3}
    - {name: every1, handler: h2, every: 2s, count: 2}
db: {dialect: postgres, latency: {exponential: {mean: 2ms}}}
clock:
  ticks:
    - {at: 5s, nodes: [worker-2]}
    - {at: 10s, nodes: [node-1, worker-2]}
    - {at: 20s, nodes: [node-1, worker-2]}
""")))
    # (the clock's last tick leaves jobs due that no node wakes for: liveness says so)
    assert {v.invariant for v in analysis.violations} == {"liveness"}
    assert analysis.summary["double_acquisitions"] == 0
