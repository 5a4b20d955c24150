"""Nodes that split the handlers between them, read set by set: the nodes with the same
``handles``, which no other node shares a handler with, compete for their own rows alone,
so their polls, phases and the wait they make are measured over those nodes and jobs,
warned of before the run and told in the report with the set named; where no set is
closed (a node that handles everything, one on the hint path) nothing is."""

import pytest

import jobsim.api as api
from jobsim.format.lint import lint
from jobsim.format.lint_polls import group_words, poll_groups
from jobsim.format.scenario import from_dict
from jobsim.output.words import sentences


def _doc(jitter: float | None = None, **more) -> dict:
    """Three nodes that alone run `wa` (3 jobs/s) and one that alone runs `wb` (1 job/s),
    polling every 10 s with 8 threads; defaults everywhere else."""
    executor = {"poll_interval": "10s", "threads": 8}
    if jitter is not None:
        executor["poll_jitter"] = jitter
    return {"name": "sets", "until": "20m", "executor": executor,
            "nodes": [{"name": "a", "handles": ["wa"]}, {"name": "b", "handles": ["wb"]},
                      {"name": "c", "handles": ["wa"]}, {"name": "d", "handles": ["wa"]}],
            "handlers": {"wa": {"duration": "200ms"}, "wb": {"duration": "200ms"}},
            "workload": {"streams": [
                {"name": "sa", "handler": "wa", "rate": "3/s", "count": 3600},
                {"name": "sb", "handler": "wb", "rate": "1/s", "count": 1200}]}, **more}


def test_the_sets_are_the_nodes_with_the_same_handles_that_share_no_handler_with_others():
    sc = from_dict(_doc())
    sets = [([n.name for n in g], hs) for g, hs in poll_groups(sc.nodes)]
    assert sets == [(["a", "c", "d"], ("wa",)), (["b"], ("wb",))]
    # handles in another order are the same set
    same = {**_doc(), "nodes": [{"name": "a", "handles": ["x", "y"]},
                                {"name": "b", "handles": ["y", "x"]}],
            "handlers": {"x": {"duration": "1s"}, "y": {"duration": "1s"}},
            "workload": {"jobs": [{"handler": "x"}]}}
    assert [hs for _, hs in poll_groups(from_dict(same).nodes)] == [None]
    # a node that handles everything competes with every set: none is its own
    open_ = {**_doc(), "nodes": [{"name": "a", "handles": ["wa"]}, {"name": "b"},
                                 {"name": "c", "handles": ["wa"]}]}
    assert poll_groups(from_dict(open_).nodes) == []
    # sets that share a handler are not closed: only the one that shares none is
    overlap = {**_doc(), "nodes": [{"name": "a", "handles": ["wa"]},
                                   {"name": "b", "handles": ["wa", "wb"]},
                                   {"name": "c", "handles": ["wc"]},
                                   {"name": "d", "handles": ["wc"]}],
               "handlers": {**_doc()["handlers"], "wc": {"duration": "1s"}}}
    assert [hs for _, hs in poll_groups(from_dict(overlap).nodes)] == [("wc",)]
    assert group_words(["a", "c"], ("wa", "wb", "wc")) == \
        "the 2 nodes that alone run wa, wb and wc (a, c)"
    assert group_words(["a", "c"], None) == "the 2 nodes"


def test_a_set_that_may_drift_into_lock_step_is_warned_of_with_its_own_rate():
    """The set's own stream (3 jobs/s: 30 an interval) and nodes (T/(N+1) over 3, not 4);
    a node alone on its handler has no phases to drift; jitter written out is quiet."""
    warned = [w for w in lint(from_dict(_doc())) if w.code == "poll-lock-step"]
    assert len(warned) == 1, warned
    assert warned[0].message.startswith("3 nodes that alone run wa (a, c, d) poll every 10s")
    assert "about 30 jobs fall due per interval" in warned[0].message
    assert "T/(N+1) = 2.5s" in warned[0].message
    assert not [w for w in lint(from_dict(_doc(jitter=0.5))) if w.code == "poll-lock-step"]
    alone = {**_doc(), "nodes": [{"name": n, "handles": [h]} for n, h in
                                 (("a", "wa"), ("b", "wb"))]}
    assert not [w for w in lint(from_dict(alone)) if w.code == "poll-lock-step"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_sets_lock_step_is_measured_over_its_nodes_and_jobs_and_told(seed):
    s = api.analyse(api.run(from_dict(_doc()), seed)).summary
    p = s["effects"]["poll_phases"]
    assert p["group"] == ["a", "c", "d"] and p["handlers"] == ["wa"], p
    assert p["nodes"] == 3 and set(p["gap_share"]) == {"a", "c", "d"}
    assert p["start_delay_independent"] == 2.5 and p["lock_step"], p
    assert p["wait_for_poll_free"] > 1.6 * p["start_delay_independent"], p
    said = " ".join(sentences(s))
    assert "The 3 nodes that alone run wa (a, c, d) polled in lock-step" in said, said
    assert "executor.poll_jitter: 0.5 keeps them apart." in said
    # the advice holds: with jitter the set's wait for a poll is about T/(N+1)
    j = api.analyse(api.run(from_dict(_doc(jitter=0.5)), seed)).summary
    q = j["effects"]["poll_phases"]
    assert not q["lock_step"] and q["group"] == ["a", "c", "d"]
    assert q["wait_for_poll_free"] == pytest.approx(2.5, rel=0.15), q
    assert "polled in lock-step" not in " ".join(sentences(j))


def test_the_whole_cluster_is_no_set():
    doc = {**_doc(), "nodes": 3, "workload": {"streams": [_doc()["workload"]["streams"][0]]}}
    p = api.analyse(api.run(from_dict(doc), 0)).summary["effects"]["poll_phases"]
    assert p["group"] is None and p["handlers"] is None and p["nodes"] == 3


def test_a_set_whose_queues_cap_its_intake_is_warned_of_and_told_with_its_own_stream():
    """The README's capped nodes (three of 4 threads, a queue of 10, 10 jobs/s of 500 ms)
    alone on their handler, beside a node on another: the lint and the report weigh the
    set's intake against its own stream, and name it; before, a cluster whose nodes split
    the handlers had neither."""
    doc = {"name": "capped_set", "until": "drained",
           "executor": {"queue_size": 10, "batch_size": 20},
           "nodes": [{"name": f"n{i}", "handles": ["a"]} for i in range(3)] +
           [{"name": "nb", "handles": ["b"]}],
           "handlers": {"a": {"duration": "500ms"}, "b": {"duration": "500ms"}},
           "workload": {"streams": [
               {"name": "sa", "handler": "a", "rate": "10/s", "count": 3000},
               {"name": "sb", "handler": "b", "rate": "1/s", "count": 300}]}}
    warned = [w for w in lint(from_dict(doc)) if w.code == "queue-full-wait-caps-intake"]
    assert len(warned) == 1, warned
    assert "8.4 jobs/s for the 3 nodes that alone run a (n0, n1, n2)" in warned[0].message
    assert "against 10/s arriving" in warned[0].message
    for seed in (0, 1, 2):
        s = api.analyse(api.run(from_dict(doc), seed)).summary
        q = s["effects"]["queue_full"]
        assert q["group"] == ["n0", "n1", "n2"] and q["handlers"] == ["a"], q
        assert q["intake"] == 8.4 and 9.5 < q["arriving"] < 10.5, q  # the set's stream only
        said = " ".join(sentences(s))
        assert "The 3 nodes that alone run a (n0, n1, n2) took in fewer jobs than fell due" \
            in said, said


def test_handles_that_differ_only_by_a_handler_with_no_jobs_are_one_cluster():
    """a: [wa], b: [wa, legacy], c: [wa] with no legacy job: all three poll for wa's rows
    (the lint had gone quiet and the report had no phases since sets were read by their
    literal handles; a review)."""
    doc = {**_doc(), "nodes": [{"name": "a", "handles": ["wa"]},
                               {"name": "b", "handles": ["wa", "legacy"]},
                               {"name": "c", "handles": ["wa"]}],
           "handlers": {"wa": {"duration": "200ms"}, "legacy": {"duration": "1s"}},
           "workload": {"streams": [_doc()["workload"]["streams"][0]]}}
    warned = [w for w in lint(from_dict(doc)) if w.code == "poll-lock-step"]
    assert len(warned) == 1 and warned[0].message.startswith("3 nodes poll every 10s")
    p = api.analyse(api.run(from_dict(doc), 1)).summary["effects"]["poll_phases"]
    assert p["group"] is None and p["nodes"] == 3 and p["lock_step"], p


def test_every_set_is_told_and_each_sets_jitter_is_its_own():
    """Two sets, a, c, d on wa and b, e on wb: both drift into lock-step and both are told;
    jitter written on a, c and d quiets their warning, not b and e's (a review)."""
    def doc(jitter_on_wa: bool) -> dict:
        return {**_doc(), "nodes": [
            {"name": n, "handles": [h], **({"poll_jitter": 0.5} if jitter_on_wa and h == "wa"
                                           else {})}
            for n, h in (("a", "wa"), ("b", "wb"), ("c", "wa"), ("d", "wa"), ("e", "wb"))],
            "workload": {"streams": [
                {"name": "sa", "handler": "wa", "rate": "3/s", "count": 3600},
                {"name": "sb", "handler": "wb", "rate": "2/s", "count": 2400}]}}
    warned = [w.message for w in lint(from_dict(doc(False))) if w.code == "poll-lock-step"]
    assert [m[:28] for m in warned] == ["3 nodes that alone run wa (a",
                                        "2 nodes that alone run wb (b"]
    warned = [w.message for w in lint(from_dict(doc(True))) if w.code == "poll-lock-step"]
    assert [m[:28] for m in warned] == ["2 nodes that alone run wb (b"]
    for seed in (1, 2):
        s = api.analyse(api.run(from_dict(doc(False)), seed)).summary
        p = s["effects"]["poll_phases"]
        assert p["group"] == ["a", "c", "d"] and [o["group"] for o in p["other_sets"]] == [
            ["b", "e"]], p
        said = " ".join(sentences(s))
        assert "The 3 nodes that alone run wa (a, c, d) polled in lock-step" in said
        assert "The 2 nodes that alone run wb (b, e) polled in lock-step" in said, said
        s = api.analyse(api.run(from_dict(doc(True)), seed)).summary
        said = " ".join(sentences(s))
        assert "The 2 nodes that alone run wb (b, e) polled in lock-step" in said, said
        assert "(a, c, d) polled in lock-step" not in said
