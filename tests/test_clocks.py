"""Clock skew: a node whose clock runs ahead takes rows whose locks are still live on the node
that holds them (a node behind writes its locks short), when the claims compare and write
each node's own clock (``executor.clock: node``); with the database's clock
(``clock: database``) an offset changes nothing the table sees. The duplicates it causes are
told apart from lock expiry (``clock_skew``), the lint warns, and a hunt finds and shrinks a
clock fault."""

import json
import math
import subprocess
import sys

import pytest
import yaml

import jobsim
from jobsim.analysis.metrics import trace_frame
from jobsim.database.clocks import NodeClock
from jobsim.format.lint import lint


def doc(offset="0s", clock="node", drift=0.0, seed=1, count=30, faults=(), heartbeat=None,
        **executor):
    """Two nodes, a 30 s lock, 10 s runs, one thread each, a job every 20 s on average:
    one node is often idle while the other runs a job (the acceptance's configuration)."""
    ex = {"acquisition": "guarded_update", "lock_time": "30s", "poll_interval": "1s",
          "threads": 1, "batch_size": 1, "clock": clock, "heartbeat": heartbeat, **executor}
    return {"name": "skew", "seed": seed, "until": "drained", "executor": ex,
            "nodes": [{"name": "node-A", "start_at": "0s"},
                      {"name": "node-B", "start_at": "0s", "clock_offset": offset,
                       "clock_drift": drift}],
            "handlers": {"h": {"duration": "10s"}},
            "workload": {"streams": [{"name": "s", "handler": "h", "count": count,
                                      "rate": "0.05/s"}]},
            "faults": list(faults)}


def summary(d):
    return jobsim.analyse(jobsim.run(jobsim.from_dict(d))).summary


def dups(s):
    return s["duplicate_executions"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_clock_25s_ahead_runs_jobs_twice_with_the_skew_cause(seed):
    s = summary(doc("25s", seed=seed))
    d = dups(s)
    assert d["total"] > 0 and d["by_cause"]["clock_skew"] == d["total"]
    assert s["double_acquisitions"] == 0  # the guard saw each lock expired, by its clock
    assert all(v == 0 for v in s["invariants"].values())  # duplicates_explained among them
    assert s["duplicate_side_effects"]["by_cause"]["clock_skew"] > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_15s_ahead_leaves_a_lock_more_than_a_run_and_nothing_runs_twice(seed):
    assert dups(summary(doc("15s", seed=seed)))["total"] == 0


@pytest.mark.parametrize("offset", ["25s", "15s", "-25s", "-15s"])
def test_with_the_database_clock_no_offset_matters(offset):
    base = summary(doc("0s", clock="database"))
    s = summary(doc(offset, clock="database"))
    assert dups(s)["total"] == 0
    assert s["trace_sha256"] == base["trace_sha256"]  # the very same run


def test_a_node_behind_writes_its_locks_short_and_the_other_takes_them():
    """node-A 25 s behind sees the job due at 0 only when its clock reads 0 (true 25 s), claims
    it and writes lock_until = 0 + 30 = 30 s; node-B, on true time, sees that lock expired at
    30 s, 5 s into node-A's 10 s run, and runs the job again."""
    d = doc(count=1)
    d["nodes"] = [{"name": "node-A", "start_at": "0s", "clock_offset": "-25s"},
                  {"name": "node-B", "start_at": "26s"}]
    d["workload"] = {"jobs": [{"name": "only", "handler": "h"}]}
    r = jobsim.run(jobsim.from_dict(d))
    s = jobsim.analyse(r).summary
    assert dups(s)["by_cause"]["clock_skew"] == 1 == dups(s)["total"]
    t = trace_frame(r.trace)
    starts = t[t["kind"] == "exec_start"]
    assert list(starts["node"]) == ["node-A", "node-B"]
    assert starts["time"].iloc[0] == pytest.approx(25.0)  # due by node-A's clock
    assert 30.0 < starts["time"].iloc[1] <= 31.0  # node-B's next poll after the short lock
    locked = t[t["kind"] == "locked"]
    assert locked["x"].iloc[0] == pytest.approx(30.0)  # written by node-A's clock


def test_a_clock_fault_steps_a_node_ahead_mid_run_and_is_traced():
    d = doc("0s", faults=[{"at": "2m", "clock": "node-B", "step": "25s"}])
    r = jobsim.run(jobsim.from_dict(d))
    t = trace_frame(r.trace)
    sets = t[t["kind"] == "clock_set"]
    assert list(sets["time"]) == [120.0] and sets["x"].iloc[0] == pytest.approx(25.0)
    h = jobsim.histories(r)
    times = [x.time for x in h.duplicates if x.what == "execution"]
    assert times and min(times) > 120.0  # none before the step
    assert {x.cause for x in h.duplicates} == {"clock_skew"}


def test_drift_builds_an_offset_that_starts_duplicates_only_once_it_is_large_enough():
    """node-B gains 0.1 s a second: 20 s ahead after 200 s, when a 30 s lock minus a 10 s
    run leaves nothing to spare; before that no job runs twice."""
    r = jobsim.run(jobsim.from_dict(doc("0s", drift=0.1, count=60)))
    h = jobsim.histories(r)
    times = [d.time for d in h.duplicates if d.what == "execution"]
    assert times and min(times) > 190.0
    assert {d.cause for d in h.duplicates} == {"clock_skew"}


def test_a_heartbeat_keeps_a_skewed_clock_from_taking_live_locks():
    """A heartbeat every 2 s re-writes the lock 30 s ahead of the holder's clock: a rival
    25 s ahead would need 5 s without one."""
    assert dups(summary(doc("25s", heartbeat="2s")))["total"] == 0


def test_node_clock_reads_and_inverts():
    c = NodeClock(25.0, 0.01, 0.0)
    assert c.read(100.0) == pytest.approx(126.0)
    assert c.true_time(c.read(77.0)) == pytest.approx(77.0)
    c.set(50.0, -10.0, 0.0)
    assert c.offset(50.0) == pytest.approx(15.5) and c.offset(80.0) == pytest.approx(15.5)


def test_skewed_runs_are_deterministic_under_any_hash_seed(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(doc("25s", drift=0.001,
                                   faults=[{"at": "1m", "clock": "node-A", "step": "-3s"}])))
    code = ("import sys, jobsim; print(jobsim.analyse(jobsim.run(jobsim.load(sys.argv[1])))"
            ".summary['trace_sha256'])")
    got = {subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, check=True, env={"PYTHONHASHSEED": h, "PATH": ""}
                          ).stdout for h in ("0", "7")}
    assert len(got) == 1


# --- the lint ---------------------------------------------------------------------------------

def _codes(d):
    return {(w.code, w.path) for w in lint(jobsim.from_dict(d))}


def test_the_lint_warns_of_a_skew_larger_than_the_lock_can_spare():
    assert ("clock-skew", "nodes[1].clock_offset") in _codes(doc("25s"))
    assert not any(c == "clock-skew" for c, _ in _codes(doc("15s")))
    assert not any(c == "clock-skew" for c, _ in _codes(doc("25s", clock="database")))
    found = _codes(doc("0s", faults=[{"at": "1m", "clock": "node-B", "step": "25s"}]))
    assert ("clock-skew", "faults[0]") in found
    behind = doc("0s")
    behind["nodes"][0]["clock_offset"] = "-25s"
    assert ("clock-skew", "nodes[0].clock_offset") in _codes(behind)


# --- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("change, path, expected", [
    (lambda d: d["nodes"][1].update(clock_offset=25), "nodes[1].clock_offset",
     "a duration with a unit"),
    (lambda d: d["nodes"][1].update(clock_offset="soon"), "nodes[1].clock_offset",
     "a duration with a unit"),
    (lambda d: d["nodes"][1].update(clock_drift=-1), "nodes[1].clock_drift",
     "runs backwards"),
    (lambda d: d["nodes"][1].update(clock_drift=-3.5), "nodes[1].clock_drift",
     "runs backwards"),
    (lambda d: d["executor"].update(clock="wall"), "executor.clock", "one of node, database"),
    (lambda d: d["faults"].append({"at": "1s", "clock": "node-C", "step": "5s"}),
     "faults[0].clock", "the name of a node"),
    (lambda d: d["faults"].append({"at": "1s", "clock": "node-A"}), "faults[0]",
     "a step, a drift or both"),
    (lambda d: d["faults"].append({"at": "1s", "clock": "node-A", "drift": -2}),
     "faults[0].drift", "runs backwards"),
    (lambda d: d["executor"].update(acquisition="broker", lock_expiry="never"),
     "executor.clock", "database where a node's clock may be off"),
])
def test_bad_clock_settings_exit_2_naming_file_path_and_value(tmp_path, change, path,
                                                              expected):
    d = doc("25s")
    change(d)
    f = tmp_path / "bad.yaml"
    f.write_text(json.dumps(d))
    proc = subprocess.run([sys.executable, "-m", "jobsim", "run", str(f), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert f"{f}: {path}: expected" in proc.stderr and expected in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


# --- the hunt ---------------------------------------------------------------------------------

@pytest.mark.slow  # ~12 CPU s: a hunt and its shrinking
def test_a_hunt_over_clock_faults_shrinks_to_one_skew_fault(tmp_path):
    d = doc("0s")
    f = tmp_path / "skew.yaml"
    f.write_text(json.dumps(d))
    out = tmp_path / "hunt"
    proc = subprocess.run([sys.executable, "-m", "jobsim", "hunt", str(f), "--break",
                           "duplicate_executions == 0", "--faults", "clock", "--budget", "60",
                           "--workers", "2", "--seed", "1", "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    minimal = jobsim.load(out / "minimal.yaml")
    assert [f.kind for f in minimal.faults] == ["clock"]
    step = minimal.faults[0].step
    assert abs(step) > 20.0 and math.isfinite(step)  # beyond the 20 s the lock spares
    s = jobsim.analyse(jobsim.run(minimal)).summary
    assert s["duplicate_executions"]["by_cause"]["clock_skew"] >= 1


# --- the checkers read each node's clock (found by the fuzz) ----------------------------------

def test_nodes_all_behind_leave_due_jobs_waiting_without_a_liveness_break():
    """Every node 90 s behind, a run of 60 s: no node's clock reaches the jobs' due times, so
    they wait, as they would in production; that is skew, not starvation."""
    d = doc("-90s", count=5)
    d["nodes"][0]["clock_offset"] = "-90s"
    d["until"] = "60s"
    s = summary(d)
    assert s["executions"] == 0
    assert s["invariants"]["liveness"] == 0


def test_a_reset_by_a_node_ahead_frees_rows_the_others_take_in_true_time():
    """Flowable's reset thread on a node 25 s ahead unlocks hung jobs early; a row it freed is
    claimable from the unlock event on (true time), not from its due time read on that node's
    clock: liveness holds (a checker that read the whole of 'claimable since' on the claimer's
    clock called four jobs created at 11 s 'starved since t=0s'; a fuzz draw)."""
    d = yaml.safe_load("""\
name: fuzz
seed: 106678
until: 1min
horizon: 3600000ms
policy: flowable
executor: {poll_jitter: 0.1, batch_size: 6, queue_size: 5, queue_full_wait: 500ms, lock_time: 30s, reset_interval: 2s,
  poll_interval: 2000ms, lock_expiry: reset}
nodes:
- {name: worker-1, batch_size: 6, heartbeat: 2s, complete_guard: owner, hint: true, on_queue_full: queue,
  stager_interval: none}
- {name: node-2, queue_full_wait: 500ms, on_queue_full: unacquire, global_lock_force: 5000ms, clock_offset: 25000ms}
handlers:
  h1:
    duration: {constant: 10s}
    outcome: hang
    retry: {}
    fail_wait: [2s]
  h2:
    error: bureau 502 (attempt {attempt})
    retry: {attempts: 5, backoff: R2/PT2S}
    fail_wait: {fixed: 0s}
  h3:
    duration: 500ms
    outcome: {fail_first: 2}
    error: boom
    side_effect: {at: start, say: effect}
    retry:
      attempts: 4
      backoff: [1000ms, 1s]
workload:
  jobs:
  - {handler: h1, name: j0, at: 0s, due_in: 0s, priority: 10, node: worker-1}
  streams:
  - {handler: h1, count: 24, name: s0, rate: 2/s, priority: 1}
  recurring:
  - {name: every0, handler: h2, every: 2s, count: 1, mode: fixed_delay, priority: 0}
db:
  dialect: atomic
  latency:
    lognormal: {median: 0.5ms, p99: 2ms}
  connections: 2
""")
    s = summary(d)
    assert all(v == 0 for v in s["invariants"].values()), s["invariants"]


@pytest.mark.parametrize("offset", ["25s", "-7s"])
def test_a_failure_on_a_skewed_node_waits_its_backoff_by_that_nodes_clock(offset):
    """due = the failing node's now + backoff: the retry check reads that node's clock."""
    d = doc(offset, count=10)
    d["handlers"]["h"] = {"duration": "1s", "outcome": {"fail_first": 2},
                          "retry": {"attempts": 4, "backoff": {"fixed": "10s"}}}
    s = summary(d)
    assert s["invariants"]["retries_follow_policy"] == 0
    assert s["invariants"]["liveness"] == 0


def test_by_clock_finds_when_a_clock_reads_a_due_time_for_good():
    from jobsim.analysis.liveness import by_clock
    import numpy as np

    ahead = [(0.0, NodeClock(25.0, 0.0, 0.0))]
    assert by_clock(ahead, np.array([30.0, 10.0])).tolist() == [5.0, 0.0]
    # 25 s ahead from 0, then stepped 20 s back at 10 s (reads 15 s there): a due time of
    # 20 s was read at 0 s but taken away again by the step; read for good from 15 s
    stepped = [(0.0, NodeClock(25.0, 0.0, 0.0)), (10.0, NodeClock(5.0, 0.0, 10.0))]
    assert by_clock(stepped, np.array([20.0, 40.0, 12.0])).tolist() == [15.0, 35.0, 0.0]
    assert by_clock([], np.array([3.0])).tolist() == [3.0]


# --- exactness: what a clock setting must not change ------------------------------------------

def _without_clocks(doc):
    """The draw with every node clock true and no clock fault (and no variants)."""
    d = json.loads(json.dumps(doc))
    for k in ("variants", "sweep", "hunt", "report"):
        d.pop(k, None)
    d.get("executor", {}).pop("clock_offset", None)
    d.get("executor", {}).pop("clock_drift", None)
    for n in d["nodes"] if isinstance(d["nodes"], list) else ():
        n.pop("clock_offset", None)
        n.pop("clock_drift", None)
    d["faults"] = [f for f in d.get("faults", []) if "clock" not in f]
    if not d["faults"]:
        del d["faults"]
    return d


def _skewed(doc, r):
    """The same draw with clocks off on every node and a clock fault."""
    d = _without_clocks(doc)
    nodes = d["nodes"] if isinstance(d["nodes"], list) else [
        {"name": f"node-{i + 1}"} for i in range(d["nodes"])]
    for n in nodes:
        n["clock_offset"] = f"{r.choice([-30, -2, 3, 40])}s"
        n["clock_drift"] = r.choice([0.0, 0.001, -0.01])
    d["nodes"] = nodes
    d.setdefault("faults", []).append({"at": "20s", "clock": nodes[0]["name"], "step": "-7s"})
    return d


def _hash(doc):
    sc = jobsim.from_dict(doc)
    return jobsim.analyse(jobsim.run(sc)).summary["trace_sha256"]


def test_with_the_database_clock_node_clocks_change_no_event_of_random_scenarios(fresh_seed):
    """Full fuzz draws (tests/fuzzgen.py) under ``clock: database``: every node's offset and
    drift, and a clock fault, leave the trace as it was, byte for byte; and a node clock
    that is true (no offset, no drift) is the database's."""
    import random
    import fuzzgen

    start = fresh_seed % 10**9
    print(f"fresh clock-exactness seeds {start}..{start + 11}")
    for seed in range(start, start + 12):
        r = random.Random(seed)
        doc = _without_clocks(fuzzgen.scenario(r))
        base = dict(doc, executor={**doc.get("executor", {}), "clock": "database"})
        skewed = _skewed(base, r)
        skewed["executor"] = {**skewed.get("executor", {}), "clock": "database"}
        try:
            want = _hash(base)
        except Exception as exc:  # noqa: BLE001 - a draw beyond what this test runs
            if "budget" in str(exc).lower():
                continue
            raise
        assert _hash(skewed) == want, f"seed {seed}: offsets moved a database-clock run"
        true_node = dict(doc, executor={**doc.get("executor", {}), "clock": "node"})
        assert _hash(true_node) == want, f"seed {seed}: a true node clock differs"
