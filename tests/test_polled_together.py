"""Nodes that poll at one phase inside a cluster that is not in lock-step as a whole: the
seed drew their phases within a few ms of each other, so they poll as one (a job waits for
a poll as with one node fewer) and their claims meet. The report names them and what their
claims met; before, it said "not in lock-step" of a Flowable run in which two of three
nodes rolled back 17 batches on conflicts with each other."""

import numpy as np

import jobsim
from conftest import SCENARIOS
from jobsim.analysis.phases import TOGETHER, together
from jobsim.output.effect_words import claims_met, effect_sentences
from jobsim.output.words import sentences

FLOWABLE = SCENARIOS / "flowable.yaml"


def _no_hint(seed):
    [sc] = [v for v in jobsim.load_variants(FLOWABLE) if v.variant == "no_hint"]
    return jobsim.analyse(jobsim.run(sc, seed=seed))


def test_nodes_within_a_hundredth_of_the_interval_most_of_the_run_are_together():
    T = 10.0
    rows = 20
    a = np.full(rows, 1.0)
    b = a + 0.5 * TOGETHER * T               # always near a
    c = np.full(rows, 6.0)                   # far from both
    d = np.where(np.arange(rows) < 8, 9.99, 4.0)   # near e (across 0) under half the run
    e = np.full(rows, 0.02)
    phase = np.stack([a, b, c, d, e], axis=1)
    assert together(phase, ["a", "b", "c", "d", "e"], T) == [["a", "b"]]
    # across the cycle's end, and a node down (NaN) counts only where both are up
    d2 = np.where(np.arange(rows) < 12, 9.99, np.nan)
    phase = np.stack([a, c, d2, e], axis=1)
    assert together(phase, ["a", "c", "d", "e"], T) == [["d", "e"]]
    # three in one group
    assert together(np.stack([a, b, b + 0.01], axis=1), ["x", "z", "y"], T) == [["x", "y", "z"]]


def test_flowable_nodes_the_seed_put_together_are_named_with_the_conflicts_they_met():
    """At seed 28 Flowable's no_hint run drew node-1's and node-3's phases 28 ms apart: 21
    batches rolled back, all theirs. The report names the pair, the wait of two phases, and
    their job claims' conflicts and lost rows, as the trace counts them."""
    a = _no_hint(28)
    p = a.summary["effects"]["poll_phases"]
    assert not p["lock_step"] and p["together"] == [["node-1", "node-3"]]
    assert p["phases_apart"] == 2
    t = jobsim.trace_frame(a.result.trace)
    acq = t[(t["kind"] == "acquire") & t["node"].isin(["node-1", "node-3"])
            & ~t["text"].str.endswith(" timer_job")]
    assert p["together_conflicts"] == acq["attempt"].sum() > 0
    assert p["together_lost"] == acq["c"].sum() > 0
    text = " ".join(sentences(a.summary))
    assert "But node-1 and node-3 polled together, within 100 ms of each other" in text
    assert "so the 3 nodes polled at 2 phases (3.33 s for a poll, T/(2+1))" in text
    assert (f"their claims met: {p['together_conflicts']} of their claims of jobs failed on a "
            f"conflict, and {p['together_lost']} rows they asked for went to another node"
            ) in text


def test_nodes_apart_are_not_together_and_nothing_is_said():
    a = _no_hint(4)   # the file's seed: phases apart, no batch rolled back
    p = a.summary["effects"]["poll_phases"]
    assert p["together"] == [] and p["phases_apart"] == 3
    assert p["together_conflicts"] == p["together_lost"] == 0
    assert a.summary["acquisition"]["errors"] == 0
    assert "polled together" not in " ".join(effect_sentences(a.summary))


def test_claims_that_met_are_told_on_their_own_where_the_wait_is_not_worth_a_sentence():
    p = {"interval": 1.0, "nodes": 4, "phases_apart": 2, "lock_step": False,
         "together": [["node-1", "node-4"], ["node-2", "node-3"]],
         "together_conflicts": 300, "together_lost": 0}
    assert claims_met(p) == ("node-1 and node-4 polled together, as did node-2 and node-3, "
                             "within 10 ms of each other for most of the run, and their claims "
                             "met: 300 of their claims of jobs failed on a conflict.")
    assert claims_met(p | {"together_conflicts": 0}) is None
