"""Liveness: no job is stranded (no node can ever claim it) or starved (due and claimable
while a node that may claim it passes it over or sits idle) at the end of a run, unless the
scenario says it expects that."""

import dataclasses

import pytest
import yaml

import jobsim

from jobsim.analysis.checks import INVARIANTS, check, idle_grace
from jobsim.base.trace import K, Trace
from jobsim.cli import main
from jobsim.executor.config import Expectation
from jobsim.executor.node import Node
from jobsim.format import scenario
from jobsim.format.fileformat import SUMMARY_SHAPE
from jobsim.output.report import analyse, format_summary
from jobsim.sim.world import run


def liveness(a):
    return [v for v in a.violations if v.invariant == "liveness"]


def write(tmp_path, text, name="s.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the timer table on the fake clock ---------------------------------------------------------

@pytest.mark.parametrize("latency", ["0s", "5ms", "{uniform: {low: 1ms, high: 20ms}}"])
def test_the_lesson_with_a_timer_table_runs_its_timer_and_retries(lesson_path, latency):
    """Timers and retries wait in timer_job and a tick's timer round moves them to the job
    table: the tick's job round runs them — also when statement latency lets the job round
    end before the move commits (the move then runs the job round again)."""
    sets = ["executor.timer_table=true", f"db.latency={latency}"]
    a = analyse(run(scenario.load(lesson_path, sets=sets)))
    j = a.histories.jobs
    assert (j[1].outcome, j[2].outcome, j[3].outcome) == ("done", "done", "dead_lettered")
    assert a.summary["executions"] == 7 and a.result.drained
    assert 370.0 <= j[1].first_start < 371.0  # the reminder at the tick after its due time
    assert a.violations == [] and a.ok


def test_the_timer_table_run_passes_the_command_line(lesson_path, tmp_path, capsys):
    argv = ["run", str(lesson_path), "--set", "executor.timer_table=true", "--out",
            str(tmp_path / "o"), "--quiet", "--no-plots"]
    assert main(argv) == 0
    assert f"invariants   all {len(INVARIANTS)} hold" in capsys.readouterr().out


@pytest.mark.parametrize("timer_table", ["false", "true"])
def test_a_timer_due_after_the_last_tick_is_stranded(lesson_path, tmp_path, capsys,
                                                     timer_table):
    """Without the tick at +370s nothing ever claims the reminder (due at +300s): it waits in
    the job table (or, with a timer table, in timer_job) and the run fails on liveness."""
    text = lesson_path.read_text(encoding="utf-8")
    text = "\n".join(line for line in text.splitlines() if "at: 370s" not in line)
    path = write(tmp_path, text)
    a = analyse(run(scenario.load(path, sets=[f"executor.timer_table={timer_table}"])))
    table = "timer_job" if timer_table == "true" else "job"
    assert [(v.job, v.message.split(":")[0]) for v in liveness(a)] == [
        (1, f"job 1 is stranded in {table}")]
    assert "no tick left for them (node-A, node-B)" in liveness(a)[0].message
    out = tmp_path / "o"
    argv = ["run", str(path), "--set", f"executor.timer_table={timer_table}", "--out", str(out),
            "--quiet", "--no-plots"]
    assert main(argv) == 1
    printed = capsys.readouterr().out
    assert "invariants   FAILED: liveness (1)" in printed
    assert "liveness: job 1 is stranded" in (out / "violations.txt").read_text()


# --- routing: a task no node registered ---------------------------------------------------------

ROUTING = """# a task no node registered
name: routing
seed: 1
until: drained
horizon: 1h
policy: failsafe
nodes:
  - {{name: a, handles: [mail]}}
  - {{name: b, handles: [mail]}}
handlers:
  mail: {{duration: 1s}}
  sms: {{duration: 1s}}
workload:
  jobs:
    - {{name: m, handler: mail}}
    - {{name: s, handler: sms, at: 5s}}
expect:
  jobs.lost: "== 0"{extra}
"""


def test_a_task_no_node_runs_fails_liveness(tmp_path, capsys):
    path = write(tmp_path, ROUTING.format(extra=""))
    out = tmp_path / "o"
    assert main(["run", str(path), "--out", str(out), "--quiet", "--no-plots"]) == 1
    printed = capsys.readouterr().out
    assert "invariants   FAILED: liveness (1)" in printed
    assert "liveness: job 2 is stranded in job: no node runs 'sms'" in printed
    a = analyse(run(scenario.load(path)))
    created = a.histories.jobs[2].created_seq
    assert [(v.job, v.events) for v in liveness(a)] == [(2, (created, len(a.result.trace) - 2))]


def test_a_scenario_that_expects_the_task_to_stay_pending_passes(tmp_path, capsys):
    """``named.<job>.outcome: "== pending"`` says the job is meant to stay unfinished: the
    run passes (exit 0) and its summary shows the job still pending."""
    extra = '\n  named.s.outcome: "== pending"\n  jobs.pending: "== 1"'
    path = write(tmp_path, ROUTING.format(extra=extra))
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "expect       ok   named.s.outcome == pending  (actual: 'pending')" in printed
    assert "1 pending" in printed


def test_invariants_liveness_makes_the_finding_expected_and_shown(tmp_path):
    """``invariants.liveness`` (the mechanism every invariant has): the finding stays in the
    violations (``violations.txt``) and the summary, marked as expected; the run passes."""
    sc = scenario.loads(ROUTING.format(extra=""))
    sc = dataclasses.replace(sc, expect=sc.expect + (
        Expectation("invariants.liveness", "==", 1.0, 'invariants.liveness == 1'),))
    a = analyse(run(sc))
    assert a.ok and len(a.violations) == 1 and a.unexpected_violations == []
    assert "invariants   FAILED: liveness (1, as this scenario expects)" in format_summary(a)


@pytest.mark.skipif("liveness" not in SUMMARY_SHAPE["invariants"],
                    reason="the file format does not know invariants.liveness yet")
def test_invariants_liveness_in_a_file(tmp_path, capsys):
    path = write(tmp_path, ROUTING.format(extra='\n  invariants.liveness: "== 1"'))
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet", "--no-plots"]) == 0
    assert "liveness (1, as this scenario expects)" in capsys.readouterr().out


# --- suspension, locks that never free ----------------------------------------------------------

SUSPENDED = """
name: suspended
until: 10m
nodes: 2
executor: {{poll_interval: 5s}}
handlers: {{w: {{duration: 1s}}}}
workload:
  jobs:
    - {{name: later, handler: w, due_in: 5m}}
    - {{handler: w, at: 1s}}
operations: [{{at: 1m, suspend: later}}{activate}]
"""


@pytest.mark.parametrize("activate, stranded", [
    ("", True),                                  # never activated
    (", {at: 2m, activate: later}", False),      # activated, then run when due
    (", {at: 20m, activate: later}", False),     # activated after the run's end: not forever
])
def test_a_suspended_job_is_stranded_only_with_no_activation_to_come(activate, stranded):
    a = analyse(run(scenario.loads(SUSPENDED.format(activate=activate))))
    found = [(v.job, v.message) for v in liveness(a)]
    if stranded:
        assert found == [(1, "job 1 is stranded in suspended_job: it was suspended and no "
                             "activation is scheduled")]
    else:
        assert found == []


ZEEBE = """
name: zeebe-crash
seed: 3
until: drained
horizon: 1h
policy: zeebe_like
nodes: [{{name: node-1, start_at: 0s}}, {{name: node-2, start_at: 1s}}]  # node-1 takes both
handlers: {{w: {{duration: 30s}}}}
workload: {{jobs: [{{handler: w}}, {{handler: w}}, {{handler: w, at: 2m}}]}}
faults: [{{at: 10s, crash: node-1, restart_after: 1m}}]
{expect}
"""


def test_a_crashed_workers_job_under_a_lock_that_never_expires_is_stranded():
    a = analyse(run(scenario.loads(ZEEBE.format(expect=""))))
    found = liveness(a)
    assert found and all("node-1 crashed while holding it, and the lock never frees "
                         "(lock_expiry: never)" in v.message for v in found)
    assert a.summary["crash_recovery"]["unrecovered"] == len(found)


def test_expecting_unrecovered_crash_victims_declares_them():
    """A scenario that expects ``crash_recovery.unrecovered`` above 0 says those jobs stay
    stranded (the Zeebe-like variant of executors_side_by_side does)."""
    expect = 'expect: {crash_recovery.unrecovered: "> 0"}'
    a = analyse(run(scenario.loads(ZEEBE.format(expect=expect))))
    assert a.summary["crash_recovery"]["unrecovered"] > 0
    assert liveness(a) == [] and a.ok


# --- starvation -----------------------------------------------------------------------------

STARVE = """
name: starve
until: 2m
nodes: [{name: node-A}]
executor: {wakeup: poll, poll_interval: 5s, threads: 2, queue_size: 4}
handlers: {a: {duration: 1s}, b: {duration: 1s}}
workload: {jobs: [{handler: a}, {handler: b, at: 3s}, {handler: a, at: 30s}]}
"""


def test_a_node_that_passes_a_due_job_over_starves_it(monkeypatch):
    """A node configured to run every task but registered (a bug) for ``a`` alone: its
    claims keep coming back with room and without job 2, while it sits idle."""
    start = Node.start

    def narrow(self):
        start(self)
        self.db.store.routes[self.name] = frozenset({"a"})

    monkeypatch.setattr(Node, "start", narrow)
    a = analyse(run(scenario.loads(STARVE)))
    assert [v.job for v in a.violations] == [2]
    v = a.violations[0]
    assert v.invariant == "liveness" and v.message.startswith(
        "job 2 is starved: due and claimable since t=3s, but node-A's claim at t=")
    assert "passed it over" in v.message


def _hand_made(events, end=100.0):
    t = Trace()
    t.node("node-A")
    t.add(0.0, K["job_created"], -1, 1, x=0.0, text=t.text("a"))
    for e in events:
        t.add(*e)
    t.add(end, K["pending"], -1, 1, text=t.text("job"))
    t.add(end, K["run_end"], a=1, b=1)
    return t


def test_a_node_idle_past_its_grace_while_a_job_waits_starves_it():
    sc = scenario.loads(STARVE)
    grace = idle_grace(sc.nodes[0].executor, 0.0)
    assert grace == 2 * (5.0 + 5.0) + 1.0  # two polls and the queue-full wait, and a second
    found = check(_hand_made([]), sc)
    assert [(v.invariant, v.job) for v in found] == [("liveness", 1)]
    assert "sat idle (up, a thread free) for 100s from t=0s" in found[0].message
    assert check(_hand_made([], end=grace - 0.5), sc) == []  # not long enough


@pytest.mark.parametrize("events", [
    [(0.0, K["exec_start"], 0, 7, 1), (0.0, K["exec_start"], 0, 8, 1)],   # both threads busy
    [(1.0, K["node_crashed"], 0)],                                         # down for good
    [(1.0, K["node_paused"], 0, -1, 0, 0, 0, 0, 200.0)],                   # paused to the end
    [(1.0, K["partition"], 0, -1, 0, 1), (99.0, K["partition"], 0, -1, 0, 0)],  # cut off
    [(1.0, K["db_slowed"], -1, -1, 0, 0, 0, 0, 50.0)],                     # a slow database
    [(15.0, K["node_crashed"], 0), (85.0, K["node_restarted"], 0)],        # idle < grace
])
def test_a_node_that_could_not_claim_starves_nothing(events):
    assert [v for v in check(_hand_made(events), scenario.loads(STARVE))
            if v.invariant == "liveness"] == []


def test_a_claim_before_the_job_was_due_is_no_evidence():
    t = _hand_made([(0.0, K["acquire"], 0, -1, 0, 4, 0, 0, 0.0)], end=15.0)
    sc = scenario.loads(STARVE)
    assert check(t, sc) == []
    late = _hand_made([(0.5, K["acquire"], 0, -1, 0, 4, 0, 0, 0.0)], end=15.0)
    assert [v.events for v in check(late, sc)] == [(0, 1, 2)]


@pytest.mark.parametrize("wakeup, nodes", [("poll", 1), ("notify", 3), ("poll", 3)])
def test_a_backlog_cut_off_by_until_is_not_starved(wakeup, nodes):
    """The run ends (``until``) while a backlog is still being worked off: every node is
    busy, so the jobs still due at the end are waiting their turn, not starved."""
    text = f"""
name: backlog
until: 2m
nodes: {nodes}
executor: {{wakeup: {wakeup}, poll_interval: 2s, threads: 4, queue_size: 8, batch_size: 4}}
handlers: {{w: {{duration: {{exponential: {{mean: 3s}}}}}}}}
workload: {{streams: [{{name: s, handler: w, count: 600, rate: 5/s}}]}}
"""
    a = analyse(run(scenario.loads(text)))
    assert a.summary["jobs"]["pending"] > 100
    assert a.violations == []


def test_a_node_that_loses_each_claim_to_a_concurrent_one_is_not_idle():
    """PostgreSQL, guarded UPDATEs: worker-3's polls fall beside other nodes' (10 s apart,
    each after another's), and its claims at 60.03 s and 80.07 s come back empty because a
    concurrent claim took the rows its subquery chose; it was racing, not idle, and the jobs
    it did not get wait for threads that their hanging handlers hold for ever (a fresh-seed
    fuzz draw, seed 571692345913, called three jobs starved by an idle node)."""
    d = yaml.safe_load("""\
name: f.1
seed: 640250
until: 600s
horizon: 1800s
executor:
  wakeup: notify
  long_poll_timeout: 5000ms
  queue_full_wait: 500ms
  complete_guard: none
  order: priority
  idempotent_submit: true
  retry:
    attempts: 2
    backoff:
      exponential: {base: 200ms, offset: 3s, jitter: 1}
nodes:
- {name: worker-1, long_poll_timeout: 1s, hint: false}
- name: n2
  batch_size: 2
  heartbeat_scope: held
  complete_guard: owner
  error_wait: 1s
  global_lock_wait: 1s
  start_at: 0s
  handles: [h1, h2]
- {name: worker-3, long_poll_timeout: 1s}
- {name: node-4, poll_jitter: 0.1, batch_size: 3, queue_full_wait: 500ms, reset_page: 2, global_lock: false,
  start_at: 10s}
handlers:
  h1:
    outcome: {fail_first: 0}
    retry:
      attempts: 5
      backoff:
        exponential: {base: 1s, cap: 5s, jitter: equal}
    fail_wait:
      exponential: {base: PT1S, jitter: equal}
  h2: {outcome: hang}
workload:
  jobs:
  - {handler: h2, at: 1s, kind: timer, id: 3, node: worker-1}
  streams:
  - handler: h2
    count: 18
    name: s0
    start: 0s
    priority: 0
    nodes: [worker-1, worker-3, node-4]
db:
  dialect: postgres
  latency: {constant: 10ms}
faults:
- {at: 0s, pause: n2, for: 30000ms}
operations:
- {at: 3min, retry: all}
- {at: 30000ms, suspend: all}
- {at: 0s, suspend: all}
- {at: 1min, activate: all}
expect: {duplicate_executions.by_cause.unexplained: == 0, latency.start_delay.n: '>= 0', throughput_per_s: '>=
    0'}
""")
    s = jobsim.analyse(jobsim.run(jobsim.from_dict(d))).summary
    assert s["invariants"]["liveness"] == 0


def test_a_statement_sent_while_cut_off_that_fails_after_the_heal_is_no_idleness():
    """A broker's activation request sent at 107.1 s, while worker-1 was cut off (partition
    20-110 s, statement timeout 5 s), fails at 112.1 s; worker-1 claims at 112.2 s. The 2.2 s
    from the heal were spent waiting on that statement: the grace counts the partition's
    timeout (a fresh-seed fuzz draw, seed 46347512157, called 24 jobs starved)."""
    d = yaml.safe_load("""\
name: f.1
seed: 389291
description: a fuzz draw
until: drained
horizon: 1800000ms
policy: zeebe_like
executor: {wakeup: long_poll, long_poll_timeout: 10000ms, threads: 1, lock_time: 30000ms, heartbeat_scope: held,
  queue_full_wait: 500ms, on_queue_full: queue, global_lock_poll: 2s, aging_rate: 0.0, aging_from: created,
  lock_expiry: reset, timer_table: true, count_attempt: fetch}
nodes:
- {name: worker-1, heartbeat: 20s, stager_interval: 1s}
- {name: worker-2, poll_interval: 200ms, queue_size: 5, reset_interval: none}
services:
  svc-a:
    capacity: 3
    when_full: refuse
    rate_limit: {rate: 100/m, over: refuse}
    outages:
    - {at: 30s, for: 10s, fail: timeout}
    - {at: 101s, for: 60s, fail: timeout}
  svc-b:
    capacity: 2
    when_full: refuse
    outages:
    - {at: 0s, for: 60s, fail: fast}
    - {at: 91s, for: 2s, fail: fast}
handlers:
  h1:
    calls:
    - {work: 100ms}
    - work:
        uniform: {low: 500ms, high: 2s}
    - {service: svc-a, effect: true}
    side_effect: {say: called}
    fail_wait:
      exponential: {base: 200ms, factor: 2, cap: 5s, jitter: 0.5}
  h2:
    calls:
    - work:
        uniform: {low: 100ms, high: 400ms}
    - work:
        uniform: {low: 5ms, high: 20ms}
    - svc-a
    retry:
      attempts: 4
      backoff:
        exponential: {base: 1s, factor: 1, offset: 3s}
    boundary_timer: {after: 120s, interrupting: false}
workload:
  streams:
  - {handler: h2, count: 18, rate: 0.5, priority: 1}
  - handler: h2
    count: 45
    rate: 0.5
    nodes: [worker-1]
db:
  latency:
    exponential: {mean: 0.5ms}
faults:
- {at: 20s, partition: worker-1, for: 90s, timeout: 5s}
- {at: 60000ms, partition: worker-2, for: 5s, timeout: 1s}
""")
    s = jobsim.analyse(jobsim.run(jobsim.from_dict(d))).summary
    assert s["invariants"]["liveness"] == 0
