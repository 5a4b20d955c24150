"""Faults on a schedule, recurring schedules, and what they do to a run."""

import numpy as np
import pytest

from jobsim.format import scenario
from jobsim.analysis.checks import check
from jobsim.analysis.history import histories
from jobsim.output.report import analyse
from jobsim.base.trace import K
from jobsim.sim.world import run

BASE = """
name: f
seed: 2
until: {until}
db: {{latency: 2ms}}
executor: {{acquisition: guarded_update, wakeup: poll, poll_interval: 1s, batch_size: 2,
           queue_size: 2, threads: 2, lock_time: {lock}{extra}}}
nodes: [{{name: node-A, start_at: 0s}}, {{name: node-B, start_at: 500ms}}]
handlers:
  work: {{duration: {duration}}}
workload:
  jobs: {jobs}
faults: {faults}
"""


def make(until="drained", lock="30s", extra="", duration="10s", jobs="[{handler: work}]",
         faults="[]"):
    return scenario.loads(BASE.format(until=until, lock=lock, extra=extra, duration=duration,
                                      jobs=jobs, faults=faults))


def events(result, kind):
    cols = result.trace.arrays()
    sel = cols["kind"] == K[kind]
    return {c: cols[c][sel] for c in cols}


def test_a_crash_loses_the_run_but_not_the_job():
    """node-A takes the job at t≈0 and crashes at 5s: the execution is gone, the row stays
    locked by node-A until its lock (30 s) expires; then node-B takes it and runs it again."""
    sc = make(faults="[{at: 5s, crash: node-A}]")
    result = run(sc)
    h = histories(result.trace)
    job = h.jobs[1]
    assert job.outcome == "done" and job.executions == 2
    assert job.nodes == ["node-A", "node-B"]
    assert [d.cause for d in h.duplicates] == ["crash"]
    locked = events(result, "locked")
    assert locked["time"][1] > 30.0  # not before the lock expired
    assert h.stranded == 1 and 25.0 <= h.recoveries[0] <= 27.0
    assert check(result.trace, sc) == []


def test_a_crashed_node_restarts_with_an_empty_queue():
    sc = make(jobs="[" + ", ".join("{handler: work}" for _ in range(6)) + "]",
              faults="[{at: 5s, crash: node-A, restart_after: 10s}]")
    result = run(sc)
    crashed = events(result, "node_crashed")
    assert crashed["a"].tolist() == [2] and crashed["b"].tolist() == [2]  # 2 run, 2 queued
    restarted = events(result, "node_restarted")
    assert restarted["time"].tolist() == [15.0]
    starts = events(result, "exec_start")
    a = result.trace.nodes.index("node-A")
    assert (starts["time"][starts["node"] == a] > 15.0).any()  # it works again
    assert analyse(result).violations == []


def test_a_pause_stalls_and_resumes_as_if_nothing_happened():
    """The run of 10 s started at t≈0 would end at 10 s; node-A freezes from 5 s to 45 s, so it
    ends at 45 s — after its lock expired and node-B ran the job again (a zombie)."""
    sc = make(faults="[{at: 5s, pause: node-A, for: 40s}]")
    result = run(sc)
    ends = events(result, "exec_end")
    a = result.trace.nodes.index("node-A")
    assert ends["time"][ends["node"] == a].tolist() == [45.0]
    h = histories(result.trace)
    assert [d.cause for d in h.duplicates if d.what == "execution"] == ["pause"]
    assert check(result.trace, sc) == []


def test_an_owner_guard_rejects_the_zombies_completion():
    sc = make(extra=", complete_guard: owner, heartbeat: 5s", duration="40s",
              faults="[{at: 5s, pause: node-A, for: 40s}]")
    a = analyse(run(sc))
    assert a.summary["completions"] == {"done": 1, "rejected_by_guard": 1, "row_gone": 0}
    assert a.summary["duplicate_side_effects"]["by_cause"]["pause"] == 1


def test_a_slow_database_multiplies_latency_in_its_window():
    sc = make(jobs="[" + ", ".join("{handler: work, at: %ds}" % t for t in (1, 12, 30)) + "]",
              duration="100ms", faults="[{at: 10s, slow_db: 50, for: 10s}]")
    result = run(sc)
    acq = events(result, "acquire")
    inside = (acq["time"] > 10.2) & (acq["time"] < 20.0)
    outside = acq["time"] > 21.0
    assert np.allclose(acq["x"][inside], 0.1)
    assert np.allclose(acq["x"][outside], 0.002)
    slowed = events(result, "db_slowed")
    assert slowed["x"].tolist() == [50.0, 1.0]


def test_a_partitioned_node_fails_its_statements_and_its_job_comes_back():
    """node-A runs the job, is cut off at 5 s for 60 s: its completion fails after the
    timeout, the lock expires, node-B runs the job again (cause: partition)."""
    sc = make(faults="[{at: 5s, partition: node-A, for: 60s, timeout: 2s}]")
    result = run(sc)
    failed = events(result, "statement_failed")
    what = [result.trace.texts[t] for t in failed["text"]]
    # its polls fail too while it is cut off (every one is simulated: none is skipped)
    assert set(what) == {"complete", "acquire"}
    done = failed["time"][what.index("complete")]
    assert done == 12.002 or abs(done - 12.002) < 1e-9
    h = histories(result.trace)
    assert h.jobs[1].outcome == "done" and h.jobs[1].executions == 2
    assert [d.cause for d in h.duplicates if d.what == "execution"] == ["partition"]
    assert check(result.trace, sc) == []


def test_recurring_fixed_rate_and_fixed_delay():
    text = """
name: r
until: drained
executor: {wakeup: notify, threads: 1, queue_size: 1, batch_size: 1}
nodes: 1
handlers:
  tick: {duration: 3s}
workload:
  recurring:
    - {name: rate, handler: tick, every: 10s, count: 3, mode: fixed_rate}
    - {name: delay, handler: tick, every: 10s, count: 3, mode: fixed_delay, start: 1s}
"""
    result = run(scenario.loads(text))
    created = events(result, "job_created")
    t = sorted(created["time"].tolist())
    # fixed rate: 0, 10, 20; fixed delay: 1, then 10 s after each one finished (3 s runs,
    # waiting for the thread behind the fixed-rate job at t=0 is not needed: it starts at 1)
    assert [x for x in t if x in (0.0, 10.0, 20.0)] == [0.0, 10.0, 20.0]
    delays = [x for x in t if x not in (0.0, 10.0, 20.0)]
    assert delays[0] == 1.0 and delays[1] >= 14.0 and delays[2] - delays[1] >= 13.0


def test_progress_reports_without_changing_the_trace(race_text):
    sc = scenario.loads(race_text)
    seen = []
    with_progress = run(sc, progress=lambda f, t: seen.append(f))
    assert run(sc).trace_sha256 == with_progress.trace_sha256
    assert seen and seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen)


@pytest.mark.parametrize("dialect", ["postgres", "sqlite"])
def test_a_partition_cuts_claims_off_on_every_dialect(dialect):
    text = f"""
name: p
until: 1m
db: {{dialect: {dialect}, latency: 1ms}}
executor: {{poll_interval: 1s, lock_time: 30s}}
nodes: [{{name: a}}]
handlers: {{w: {{duration: 100ms}}}}
workload: {{streams: [{{name: s, handler: w, count: 200, rate: 2/s}}]}}
faults: [{{at: 10s, partition: a, for: 20s, timeout: 1s}}]
"""
    result = run(scenario.loads(text))
    locked = events(result, "locked")
    inside = (locked["time"] > 11.0) & (locked["time"] < 30.0)
    assert inside.sum() == 0
    assert len(events(result, "statement_failed")["time"]) > 0
