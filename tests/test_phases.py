"""Nodes that are not in lock-step: each node's first poll at its own phase, ties between
nodes' polls not always won by the same node, poll jitter, an initial delay — and the
4-node scenario a new user writes with defaults everywhere gives what a real cluster does."""

from __future__ import annotations

import numpy as np
import pytest

from jobsim.base.trace import K
from jobsim.format.scenario import loads
from jobsim.output.report import analyse
from jobsim.sim.world import run

FOUR_NODES = """
name: four-nodes
seed: {seed}
nodes: 4
executor: {{threads: 3, poll_interval: 2s, lock_time: 30s}}
handlers:
  work: {{duration: {{exponential: {{mean: 1.6s}}}}}}
workload:
  streams: [{{handler: work, count: 1500, rate: 2/s}}]
faults: [{{at: 5m, crash: node-2, restart_after: 1m}}]
"""


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_a_newcomers_four_node_scenario_has_no_lock_step_artefact(seed):
    """4 nodes × 3 threads polling every 2 s, 2 jobs/s (27 % load), a 30 s lock, one crash,
    defaults elsewhere: no job runs twice from lock expiry, every node does its share, and
    jobs start within about one poll interval."""
    s = analyse(run(loads(FOUR_NODES.format(seed=seed)))).summary
    assert s["duplicate_executions"]["by_cause"]["lock_expired"] == 0
    shares = [n["executions"] / s["executions"] for n in s["nodes"].values()]
    assert min(shares) >= 0.10, shares
    assert s["latency"]["start_delay"]["p90"] < 2.5
    assert s["invariants"] and not any(s["invariants"].values())


def _first_polls(text: str) -> dict[str, float]:
    r = run(loads(text))
    c = r.trace.arrays()
    acq = c["kind"] == K["acquire"]
    first = {}
    for t, n in zip(c["time"][acq], c["node"][acq]):
        first.setdefault(r.trace.nodes[n], float(t))
    return first


BASE = """
name: p
seed: {seed}
until: 1m
executor: {{poll_interval: 10s{extra}}}
nodes: {nodes}
handlers: {{h: {{duration: 1s}}}}
workload: {{streams: [{{handler: h, count: 100, rate: 1/s}}]}}
"""


def test_each_node_polls_first_at_its_own_phase_within_one_interval():
    seen = []
    for seed in range(20):
        first = _first_polls(BASE.format(seed=seed, extra="", nodes=4))
        assert all(0.0 <= t < 10.0 for t in first.values()), first
        assert len(set(first.values())) == 4
        seen += first.values()
    # spread over the interval, not bunched at its start
    assert np.histogram(seen, bins=5, range=(0, 10))[0].min() >= 8


def test_a_pinned_start_and_an_initial_delay_fix_the_first_poll():
    first = _first_polls(BASE.format(seed=1, extra=", initial_delay: 3s",
                                     nodes="[{name: a, start_at: 0s}, {name: b, start_at: 2s}]"))
    assert first == {"a": 3.0, "b": 5.0}


def test_a_restarted_node_polls_after_its_initial_delay():
    r = run(loads(BASE.format(seed=1, extra=", initial_delay: 3s", nodes="[{name: a}]")
                  + "faults: [{at: 20s, crash: a, restart_after: 5s}]\n"))
    c = r.trace.arrays()
    t = c["time"][(c["kind"] == K["acquire"]) & (c["time"] > 20)]
    assert t[0] == pytest.approx(28.0)


def test_poll_jitter_spreads_the_waits_within_its_fraction():
    r = run(loads(BASE.format(seed=1, extra=", poll_jitter: 0.3", nodes="[{name: a}]")
                  .replace("rate: 1/s", "rate: 1/h").replace("until: 1m", "until: 2h")
                  .replace("count: 100", "count: 3") + "\n"), idle_shortcut=False)
    c = r.trace.arrays()
    gaps = np.diff(c["time"][c["kind"] == K["acquire"]])
    gaps = gaps[gaps > 1.5]  # the waits between empty polls (not the re-poll after a claim)
    assert len(gaps) > 500
    assert gaps.min() >= 7.0 and gaps.max() <= 13.0
    assert gaps.std() > 1.0  # uniform on ±3 s: sd ≈ 1.73 s


def test_ties_between_pinned_nodes_are_not_always_won_by_the_same_node():
    """Two nodes pinned on one poll grid: at each shared instant one of them claims first;
    both must win some of these ties."""
    text = """
name: ties
seed: 5
until: 30m
executor: {poll_interval: 2s, threads: 1, batch_size: 1}
nodes: [{name: a, start_at: 0s}, {name: b, start_at: 0s}]
handlers: {h: {duration: 100ms}}
workload: {streams: [{handler: h, count: 400, rate: 12/m}]}
"""
    r = run(loads(text))
    c = r.trace.arrays()
    locked = c["kind"] == K["locked"]
    winners = {r.trace.nodes[n] for n in c["node"][locked]}
    wins = {name: int((c["node"][locked] == r.trace.nodes.index(name)).sum())
            for name in winners}
    assert set(wins) == {"a", "b"} and min(wins.values()) > 0.3 * sum(wins.values()), wins


def test_failsafe_nodes_at_half_load_lose_no_races_and_start_within_seconds():
    """failsafe-executor's optimistic lock, 4 nodes at ρ = 0.5: nodes in lock-step lost
    thousands of races; nodes at their own phases lose (nearly) none."""
    s = analyse(run(loads("""
name: failsafe4
seed: 1
policy: failsafe
nodes: 4
until: 30m
handlers: {work: {duration: {exponential: {mean: 2s}}}}
workload: {streams: [{handler: work, count: 100000, rate: 5/s}]}
"""))).summary
    assert s["acquisition"]["lost_races"] <= 10
    assert s["latency"]["start_delay"]["p50"] < 5.0
