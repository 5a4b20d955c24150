"""Per-node figures (``nodes.<name>`` of the summary): executions, claims, lost races,
acquisition attempts, busy share, time down and paused, and the flag for a node that did no
work while work it could run waited — in summary.json, the printed summary and report.md."""

import json

import pytest

from conftest import SCENARIOS
from jobsim.analysis.expect import evaluate, figure
from jobsim.executor.config import Expectation
from jobsim.format import scenario
from jobsim.output.report import MAX_NODES_SHOWN, analyse, format_summary, node_lines, write
from jobsim.sim.world import run

# Two nodes, routed by handler so that who runs what is fixed; no statement latency, so every
# instant below is exact. node-1 (2 threads) takes both of its jobs at t=0 and is paused
# 5s-15s: the 10 s job's end waits for the pause (0-15 s), the 30 s job runs 0-30 s: 45
# thread-seconds of 2 × 100. node-2 (1 thread, first poll at 0.5 s) takes its 20 s job at
# 0.5 s and crashes at 10 s (9.5 s of it lost), down until 30 s; the job's lock (30 s) expires
# at 30.5 s and node-2 takes it again at its poll at 31 s: 31-51 s. 29.5 thread-seconds of
# 1 × 80 (up: 100 s less 20 s down).
HAND = """
name: hand
seed: 1
until: 100s
executor: {acquisition: guarded_update, wakeup: poll, poll_interval: 1s, batch_size: 10,
           queue_size: 10, lock_time: 30s}
nodes:
  - {name: node-1, threads: 2, start_at: 0s, handles: [short, long]}
  - {name: node-2, threads: 1, start_at: 500ms, handles: [b]}
handlers:
  short: {duration: 10s}
  long: {duration: 30s}
  b: {duration: 20s}
workload:
  jobs:
    - {handler: short}
    - {handler: long}
    - {handler: b}
faults:
  - {at: 5s, pause: node-1, for: 10s}
  - {at: 10s, crash: node-2, restart_after: 20s}
"""

# Twenty 5 s jobs at t=0 (no report job), two nodes of one thread each; node-2 polls first at
# 0.5 s.
TWO = """
name: two
seed: 1
until: drained
executor: {{acquisition: guarded_update, wakeup: poll, poll_interval: 1s, threads: 1,
           lock_time: 1h, batch_size: {batch}, queue_size: {queue}}}
nodes:
  - {{name: node-1, start_at: 0s}}
  - {{name: node-2, start_at: {start}{extra}}}
handlers:
  work: {{duration: 5s}}
  report: {{duration: 1s}}
workload:
  streams:
    - {{name: burst, handler: work, count: 20}}
"""


def two(batch=1, queue=0, start="500ms", extra=""):
    return analyse(run(scenario.loads(TWO.format(batch=batch, queue=queue, start=start,
                                                 extra=extra))))


@pytest.fixture(scope="module")
def hand():
    return analyse(run(scenario.loads(HAND)))


def test_hand_computed_figures(hand):
    n1, n2 = hand.summary["nodes"]["node-1"], hand.summary["nodes"]["node-2"]
    assert list(hand.summary["nodes"]) == ["node-1", "node-2"]
    assert list(n1) == sorted(n1)
    assert (n1["executions"], n1["claims"], n1["lost_races"], n1["threads"]) == (2, 2, 0, 2)
    assert (n1["time_down"], n1["time_up"], n1["time_paused"]) == (0.0, 100.0, 10.0)
    assert n1["busy_thread_seconds"] == 45.0 and n1["busy_share"] == 0.225
    assert n1["executions_after_restart"] is None
    # node-2 ran its job twice (the crash cut the first run at 10 s) and locked it twice
    assert (n2["executions"], n2["claims"], n2["lost_races"], n2["threads"]) == (2, 2, 0, 1)
    assert (n2["time_down"], n2["time_up"], n2["time_paused"]) == (20.0, 80.0, 0.0)
    assert n2["busy_thread_seconds"] == 29.5 and n2["busy_share"] == 29.5 / 80
    assert n2["executions_after_restart"] == 1
    # every job's handler has one node: its executions are that node's even share
    assert (n1["even_share"], n2["even_share"]) == (2.0, 2.0)
    # node-1 took its jobs at once; node-2's job waited 0.5 s for its first poll, idle
    assert (n1["longest_idle_wait"], n2["longest_idle_wait"]) == (0.0, 0.5)
    assert not n1["idle_while_work_waited"] and not n2["idle_while_work_waited"]


def test_attempts_are_the_polls_simulated_or_counted(hand):
    r = hand.result
    for name, f in hand.summary["nodes"].items():
        assert f["acquire_attempts"] == r.polls[name] > 0
    total = sum(f["acquire_attempts"] for f in hand.summary["nodes"].values())
    assert total == hand.summary["acquisition"]["attempts"]


def test_attempts_are_the_same_whether_idle_polls_are_simulated_or_counted():
    sc = scenario.load(SCENARIOS / "polling_vs_notify.yaml")
    counted = analyse(run(sc)).summary
    simulated = analyse(run(sc, idle_shortcut=False)).summary
    assert counted["polls"]["skipped"] > 0 and simulated["polls"]["skipped"] == 0
    for key in ("acquisition", "nodes", "statements", "latency", "jobs"):
        assert counted[key] == simulated[key], key


def test_claims_and_lost_races_add_up_to_the_runs():
    """Summed over nodes: claims are the rows the claims got, lost races the run's."""
    for sc in scenario.load_variants(SCENARIOS / "acquisition_strategies.yaml"):
        if sc.variant not in ("pg-optimistic", "pg-guarded"):
            continue
        s = analyse(run(sc)).summary
        nodes = s["nodes"].values()
        assert sum(f["lost_races"] for f in nodes) == s["acquisition"]["lost_races"]
        assert sum(f["claims"] for f in nodes) == s["acquisition"]["rows"]
        assert sum(f["acquire_attempts"] for f in nodes) == s["acquisition"]["attempts"]
        assert sum(f["executions"] for f in nodes) == s["executions"]
    assert s["acquisition"]["lost_races"] > 0  # pg-optimistic, the last of the two


def test_a_node_that_prefetched_nothing_while_work_waited_is_flagged():
    """node-1 claims all twenty jobs at t=0 into its local queue and runs them one by one
    until t=100 s; node-2 finds every row locked and runs nothing, while the last job waits
    95 s with node-2's thread free."""
    a = two(batch=20, queue=20)
    n1, n2 = a.summary["nodes"]["node-1"], a.summary["nodes"]["node-2"]
    assert (n1["executions"], n2["executions"], n2["claims"]) == (20, 0, 0)
    assert n2["even_share"] == 10.0 and n2["longest_idle_wait"] == 95.0
    assert n2["idle_while_work_waited"] and not n1["idle_while_work_waited"]
    assert n2["busy_share"] == 0.0 and n1["busy_share"] == 1.0


def test_a_node_that_starts_too_late_is_flagged():
    """node-2 would start at t=200 s; the run drains at 100 s. It is up (idle) from the start
    of the run, so it ran nothing while the jobs waited in the table."""
    n2 = two(start="200s").summary["nodes"]["node-2"]
    assert n2["executions"] == 0 and n2["time_up"] == 100.0
    assert n2["longest_idle_wait"] == 95.0 and n2["idle_while_work_waited"]


def test_a_balanced_pair_is_not_flagged():
    a = two()
    nodes = a.summary["nodes"]
    assert [f["executions"] for f in nodes.values()] == [10, 10]
    assert not any(f["idle_while_work_waited"] for f in nodes.values())
    assert all(f["longest_idle_wait"] <= 1.0 for f in nodes.values())


def test_work_a_node_cannot_run_does_not_flag_it():
    """node-2 handles only a task that never comes: idle, but no job it could run waited."""
    a = two(batch=20, queue=20, extra=", handles: [report]")
    n2 = a.summary["nodes"]["node-2"]
    assert n2["executions"] == 0 and n2["even_share"] == 0.0
    assert n2["longest_idle_wait"] == 0.0 and not n2["idle_while_work_waited"]


def test_the_figures_are_addressable_as_summary_paths(hand):
    s = hand.summary
    assert figure(s, "nodes.node-1.busy_share") == 0.225
    assert figure(s, "nodes.node-2.time_down") == 20.0
    e = [Expectation("nodes.node-1.busy_share", "<", 0.5, "nodes.node-1.busy_share < 0.5"),
         Expectation("nodes.node-2.idle_while_work_waited", "==", False,
                     "nodes.node-2.idle_while_work_waited == false")]
    assert all(v.ok for v in evaluate(tuple(e), s))


def test_the_report_has_the_node_table_and_the_warning(tmp_path):
    a = two(batch=20, queue=20)
    out = write(a, tmp_path / "r", with_plots=False)
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "## Nodes" in text
    assert "| node | threads | executions | rows locked | acquire attempts | lost races | busy share " \
           "| up | down | paused | longest idle wait | even share | idle while work waited |" \
        in text
    rows = [line for line in text.splitlines() if line.startswith("| node-")]
    assert len(rows) == 2 and rows[1].startswith("| node-2 | 1 | 0 | 0 |")
    assert rows[1].endswith("| ⚠ **yes** |") and rows[0].endswith("| no |")
    warning = [line for line in text.splitlines() if line.startswith("> ⚠ **Idle node:**")]
    assert warning == ["> ⚠ **Idle node:** node-2 ran 0 executions (its even share: 10) while "
                       "a job it could run waited 95s with a thread of it free."]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["nodes"]["node-2"]["idle_while_work_waited"] is True
    printed = format_summary(a)
    assert [line for line in printed if line.startswith("WARNING")] == [
        "WARNING      " + warning[0].removeprefix("> ⚠ **Idle node:** ").rstrip(".")]


def test_a_balanced_report_warns_of_nothing(tmp_path):
    out = write(two(), tmp_path / "r", with_plots=False)
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "## Nodes" in text and "Idle node" not in text and "⚠" not in text


def test_the_printed_summary_has_a_line_per_node(hand):
    lines = [line for line in format_summary(hand) if line.startswith(("nodes", " " * 13))]
    assert lines == [
        "nodes        node-1  2 executions · 2 rows locked · "
        f"{hand.summary['nodes']['node-1']['acquire_attempts']} acquisitions · 0 lost races · "
        "busy 22.5% · paused 10s",
        "             node-2  2 executions · 2 rows locked · "
        f"{hand.summary['nodes']['node-2']['acquire_attempts']} acquisitions · 0 lost races · "
        "busy 36.9% · down 20s"]


def test_the_printed_summary_writes_counts_with_separators():
    """Counts of thousands read 2,000, as the progress and the story write them, not 2000;
    the seconds and shares keep their own forms."""
    from jobsim.tools.bench import mmc_scenario

    a = analyse(run(mmc_scenario(2_000, seed=3)))
    lines = format_summary(a)
    text = "\n".join(lines)
    assert lines[1].startswith("jobs         2,000 created · 2,000 done")
    s = a.summary
    assert f"executions   {s['executions']:,} (" in text and f"{s['statements']:,} statements" \
        in text and f"trace        {s['trace_events']:,} events" in text
    node = [line for line in lines if line.startswith("nodes")][0]
    assert f"{s['nodes']['node-1']['executions']:,} executions" in node
    import re
    assert not re.search(r"(?<![\d.,])\d{4,}(?![\d.,]*(ms|s\b|%|…))", text.split("sha256")[0]
                         .replace("node-1", "")), text


def test_the_node_table_writes_thousands_as_a_reader_does():
    """report.md's node cells: counts with separators, and a float of thousands (an even
    share of 17,570 executions) without an exponent; small ones keep 4 digits."""
    from jobsim.output.report import node_cell

    f = {"executions": 17332, "even_share": 17570.4, "busy_share": 0.5, "acquire_attempts": 7,
         "time_down": 0.0, "longest_idle_wait": 0.948}
    assert [node_cell(f, k) for k in ("executions", "even_share", "busy_share",
                                      "acquire_attempts", "time_down", "longest_idle_wait")] \
        == ["17,332", "17,570", "50.0%", "7", "0s", "948ms"]
    assert node_cell({"even_share": 1669.25}, "even_share") == "1,669"
    assert node_cell({"even_share": 12.5}, "even_share") == "12.5"


def test_the_printed_summary_caps_the_nodes():
    f = {"executions": 1, "claims": 1, "acquire_attempts": 1, "lost_races": 0,
         "busy_share": 0.5, "time_down": 0.0, "time_paused": 0.0,
         "idle_while_work_waited": False}
    nodes = {f"n{i:02d}": dict(f) for i in range(40)}
    nodes["n39"].update(executions=0, idle_while_work_waited=True, even_share=12.0,
                        longest_idle_wait=60.0)
    lines = node_lines(nodes)
    assert len(lines) == MAX_NODES_SHOWN + 2
    assert lines[MAX_NODES_SHOWN] == f"{'':13}… and {40 - MAX_NODES_SHOWN} more nodes"
    assert lines[-1].startswith("WARNING      n39 ran 0 executions (its even share: 12)")
    assert node_lines({}) == []


@pytest.mark.parametrize("seed", [1, 2, None])
def test_the_longest_idle_wait_measured_longest_first_is_the_full_maximum(seed):
    """``_longest_idle`` measures the 4,096 longest waits and then only the waits longer
    than their best: the same maximum as measuring every wait, on random busy/idle spans
    (``None``: a fresh seed, printed)."""
    import random

    import numpy as np

    from jobsim.analysis.idle import _by_length, _idle_measure, _longest_idle
    seed = random.randrange(2 ** 32) if seed is None else seed
    print("seed", seed)
    rng = np.random.default_rng(seed)
    end, n = 3600.0, int(rng.integers(5_000, 40_000))
    start = np.sort(rng.uniform(0, end, n))
    runs = (start, start + rng.exponential(rng.uniform(0.05, 5), n))
    down = np.sort(rng.uniform(0, end, 4))
    blocked = (down[::2], down[1::2])
    due = rng.uniform(0, end, n)
    first = due + rng.exponential(rng.uniform(0.1, 3), n) * (rng.random(n) < 0.9)
    measure = _idle_measure(end, int(rng.integers(1, 9)), runs, blocked)
    full = float((measure(first) - measure(due)).max())
    assert _longest_idle(measure, *_by_length(due, first)) == full, seed
