"""Queue-full waits that cap what polling nodes take in (``analysis/intake.py``, the lint's
``queue-full-wait-caps-intake``): a user's own scenario, defaults everywhere but a local
queue, whose jobs waited a median 30 s at a third of its threads' capacity while the report
said nothing of why."""

from pathlib import Path

import numpy as np
import pytest

import jobsim.api as api
from jobsim.analysis.effects import executions
from jobsim.base.trace import K
from jobsim.format.lint import lint
from jobsim.format.scenario import from_dict, load
from jobsim.output.words import sentences

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"

#: 3 nodes with the defaults (4 threads, 10 s polls, queue_full_wait 5 s) and a local queue of
#: 10: each takes in at most 14 jobs per 5 s, 8.4/s for the three, their threads 24/s
QUEUED = {"name": "queued", "until": "drained", "nodes": 3,
          "executor": {"queue_size": 10},
          "handlers": {"work": {"duration": "500ms"}},
          "workload": {"streams": [{"name": "s", "handler": "work", "count": 3000,
                                    "rate": "10/s"}]}}

CODE = "queue-full-wait-caps-intake"


def _doc(rate: str = "10/s", **executor) -> dict:
    return {**QUEUED, "executor": {**QUEUED["executor"], **executor},
            "workload": {"streams": [{**QUEUED["workload"]["streams"][0], "rate": rate}]}}


def _idle_in_waits_by_hand(a) -> tuple[int, float]:
    """From the trace, event by event: each node's claims that came back full and were
    followed by its next claim 5 s later, also full; its threads' idle seconds in them."""
    c = a.result.trace.arrays()
    began, ended, node = executions(c, a.summary["end_time"])[:3]
    waits, idle = 0, 0.0
    for code in range(3):
        mine = (c["kind"] == K["acquire"]) & (c["node"] == code)
        t, full = c["time"][mine], c["b"][mine] >= c["a"][mine]
        for k in range(len(t) - 1):
            if full[k] and full[k + 1] and t[k + 1] - t[k] >= 5.0 - 1e-9:
                lo, hi = t[k], t[k + 1]
                busy = sum(max(0.0, min(e, hi) - max(b, lo))
                           for b, e, n in zip(began, ended, node) if n == code)
                waits += 1
                idle += 4 * (hi - lo) - busy
    return waits, idle


def test_a_queue_full_wait_that_caps_the_intake_is_warned_of_and_told():
    warned = [w for w in lint(from_dict(_doc())) if w.code == CODE]
    assert len(warned) == 1 and warned[0].path == "executor.queue_full_wait", warned
    assert "a queue_size above 12" in warned[0].message
    assert ("it takes in at most 14 jobs per 5s, 8.4 jobs/s for the cluster (3 nodes so "
            "capped), against 10/s arriving") in warned[0].message, warned[0].message
    for seed in (0, 1):
        a = api.analyse(api.run(from_dict(_doc()), seed))
        q = a.summary["effects"]["queue_full"]
        waits, idle = _idle_in_waits_by_hand(a)
        assert q["waits"] == waits > 100 and q["idle"] == pytest.approx(idle, rel=1e-6), q
        assert q["intake"] == pytest.approx(8.4) and 9.5 < q["arriving"] < 10.5, q
        assert q["share"] > 0.5 and a.summary["latency"]["start_delay"]["p50"] > 20, q
        said = " ".join(sentences(a.summary))
        assert "The nodes took in fewer jobs than fell due" in said, said
        assert (f"{q['waits']:,} times with due rows waiting" in said and
                "at most 14 jobs per 5 s, 8.4 jobs/s in all, against "
                f"{q['arriving']:.3g}/s falling due" in said), said


@pytest.mark.parametrize("fix", [{"queue_full_wait": "1s"}, {"queue_size": 13},
                                 {"wakeup": "notify"}])
def test_each_fix_the_warning_names_keeps_the_threads_at_work(fix):
    """The waits fall from a median of 26-33 s to a few seconds, and nothing is warned of
    or told (a median of 4-5 s is what a 10 s poll gives these jobs without a queue)."""
    doc = _doc(**fix)
    assert not [w for w in lint(from_dict(doc)) if w.code == CODE]
    s = api.analyse(api.run(from_dict(doc), 0)).summary
    assert s["latency"]["start_delay"]["p50"] < 6.0, s["latency"]["start_delay"]
    assert "took in fewer jobs" not in " ".join(sentences(s))


def test_under_the_cap_nothing_is_warned_of_or_told():
    """At 8 jobs/s, under the 8.4/s the nodes take in, the queue-full waits come round but
    the backlog does not grow (a median of 3.6-3.7 s); at 9/s it does (8-20 s)."""
    doc = _doc("8/s")
    assert not [w for w in lint(from_dict(doc)) if w.code == CODE]
    s = api.analyse(api.run(from_dict(doc), 0)).summary
    assert s["effects"]["queue_full"]["waits"] > 100  # the waits are there all the same
    assert s["latency"]["start_delay"]["p50"] < 4.0
    assert "took in fewer jobs" not in " ".join(sentences(s))
    over = api.analyse(api.run(from_dict(_doc("9/s")), 0)).summary
    assert [w for w in lint(from_dict(_doc("9/s"))) if w.code == CODE]
    assert over["latency"]["start_delay"]["p50"] > 8.0
    assert "took in fewer jobs" in " ".join(sentences(over))


def test_polls_that_empty_the_table_never_meet_the_queue_full_wait():
    """The race's two nodes (a queue of 20, 4 threads of 300 ms, 1 s polls, 10 jobs/s): 5
    jobs an interval each never fill a queue, so the 9.6/s a queue-full wait would allow
    is never what bounds them (a median start delay of 0.73 s); the first version of the
    check warned of it."""
    sc = load(SCENARIOS / "race.yaml")
    assert not [w for w in lint(sc) if w.code == CODE]
    q = api.analyse(api.run(sc)).summary["effects"]["queue_full"]
    assert q is None or q["arriving"] < q["intake"] or q["share"] < 0.1, q


def test_a_shipped_report_tells_no_capped_intake():
    """Every shipped scenario's report: queue-full waits are there in some (the challenge's
    and the lesson's queues), but none capped what the nodes took in."""
    import json

    for path in sorted((SCENARIOS.parent / "reports").glob("*/report.md")):
        assert "took in fewer jobs than fell due" not in path.read_text(encoding="utf-8"), path
    node_crash = json.loads((SCENARIOS.parent / "reports" / "node_crash" /
                             "summary.json").read_text())
    q = node_crash["effects"]["queue_full"]
    assert q["waits"] > 0 and q["arriving"] < q["intake"], q
    assert np.isfinite(q["intake"])


def test_a_crash_is_not_a_queue_full_wait():
    """A node down for a minute between two full claims: its gap is not a wait of its own
    (every counted wait is the 5 s queue_full_wait, with no statement latency here); nor is
    a node's paused time its threads' time to be idle in."""
    doc = {**_doc(), "faults": [{"at": "100s", "crash": "node-2", "restart_after": "1m"},
                                {"at": "200s", "pause": "node-3", "for": "30s"}]}
    s = api.analyse(api.run(from_dict(doc), 0)).summary
    q = s["effects"]["queue_full"]
    assert q["waits"] > 100 and q["time"] == pytest.approx(q["waits"] * 5.0), q
    # the share is of the threads' time up and not paused
    up = sum(4 * (f["time_up"] - f["time_paused"]) for f in s["nodes"].values())
    assert s["nodes"]["node-3"]["time_paused"] == pytest.approx(30.0)
    assert q["share"] == pytest.approx(q["idle"] / up, rel=1e-6), q


def test_a_cap_reached_by_a_cascade_is_warned_of_too():
    """Four nodes of 4 threads (100 ms) and a queue of 4, 1 s polls, 10 jobs/s: 2.5 jobs a
    node a poll with the polls apart, yet a node that sees a whole interval's arrivals fills
    its queue and waits 5 s, which leaves more for the others: all came to wait after each
    claim, and jobs a mean 77-85 s. The first version of the check, judging a node by its
    share of an interval's arrivals, said nothing (a newcomer's trial found it)."""
    doc = {"name": "cascade", "until": "drained",
           "executor": {"poll_interval": "1s", "queue_size": 4, "batch_size": 4},
           "nodes": 4, "handlers": {"work": {"duration": "100ms"}},
           "workload": {"streams": [{"name": "a", "handler": "work", "count": 3000,
                                     "rate": "10/s"}]}}
    warned = [w for w in lint(from_dict(doc)) if w.code == CODE]
    assert warned and "a queue_size above 8" in warned[0].message, warned
    s = api.analyse(api.run(from_dict(doc), 1)).summary
    assert s["latency"]["start_delay"]["mean"] > 30, s["latency"]["start_delay"]
    assert "The nodes took in fewer jobs than fell due" in " ".join(sentences(s))
    # the queue the warning names is enough
    fixed = api.analyse(api.run(from_dict({**doc, "executor": {**doc["executor"],
                                                               "queue_size": 9}}), 1)).summary
    assert fixed["latency"]["start_delay"]["mean"] < 2.0, fixed["latency"]["start_delay"]


#: two nodes of 2 threads with queues of 20, 5 s polls, 3 jobs/s of a mean 1 s: the node that
#: polls first takes up to 20 rows for its 2 threads while the other's threads idle
PREFETCH = {"name": "s2", "until": "drained", "executor": {"poll_interval": "5s", "threads": 2,
                                                           "queue_size": 20, "batch_size": 20},
            "nodes": [{"name": "n1"}, {"name": "n2"}],
            "handlers": {"work": {"duration": {"exponential": {"mean": "1s"}}}},
            "workload": {"streams": [{"name": "a", "handler": "work", "count": 3000,
                                      "rate": "3/s"}]}}


def _queued_by_hand(a) -> list[float]:
    """From the trace, event by event: each job's first start less its node's latest claim
    of it at or before that start."""
    c = a.result.trace.arrays()
    claims: dict[tuple[int, int], list[float]] = {}
    first: dict[int, tuple[int, float]] = {}
    for k, j, n, t in zip(c["kind"].tolist(), c["job"].tolist(), c["node"].tolist(),
                          c["time"].tolist()):
        if k == K["locked"]:
            claims.setdefault((j, n), []).append(t)
        elif k == K["exec_start"] and j not in first:
            first[j] = (n, t)
    return [t - max(x for x in claims[(j, n)] if x <= t) for j, (n, t) in first.items()]


def test_jobs_held_in_a_local_queue_while_the_other_node_idles_are_told():
    """A mean start delay of 5.4-6.2 s, 3.9-4.5 s of it in a local queue, and the report
    gave only the median (a newcomer's trial); queue_size: 0, which it names, gives 2.71 s.
    The queue's share checked by hand: each first start against its node's latest claim of
    the job."""
    for seed in (1, 2):
        a = api.analyse(api.run(from_dict(PREFETCH), seed))
        q = a.summary["effects"]["local_queues"]
        held = _queued_by_hand(a)
        assert q["jobs"] == len(held) == 3000
        assert q["queued_mean"] == pytest.approx(np.mean(held), rel=1e-6), q
        assert q["queued_mean"] > q["start_delay_mean"] / 2 > 1.0 and \
            q["idle_elsewhere"] > 0.5, q
        said = " ".join(sentences(a.summary))
        assert (f"Local queues made much of the wait: jobs started a mean "
                f"{q['start_delay_mean']:.3g} s after they were due, {q['queued_mean']:.3g} s "
                f"of it in a node's local queue") in said, said
    none = {**PREFETCH, "executor": {**PREFETCH["executor"], "queue_size": 0}}
    s = api.analyse(api.run(from_dict(none), 1)).summary
    assert s["effects"]["local_queues"] is None
    assert s["latency"]["start_delay"]["mean"] < 3.0, s["latency"]["start_delay"]
    # a queue of 4 beside 2 threads of 1 s, with the 5 s wait, caps the intake instead
    small = {**PREFETCH, "executor": {**PREFETCH["executor"], "queue_size": 4}}
    assert [w for w in lint(from_dict(small)) if w.code == CODE]
    said = " ".join(sentences(api.analyse(api.run(from_dict(small), 1)).summary))
    assert "The nodes took in fewer jobs than fell due" in said and "Local queues" not in said



def test_a_job_claimed_again_after_its_start_keeps_its_first_claim():
    """Half the runs fail and are retried a second later, often claimed again by the same
    node: each job's first start is measured from the claim before it, not the node's last
    claim of the job (which dropped 31 % of the jobs from the figures; a review found it)."""
    doc = {"name": "s5_retry", "until": "drained",
           "executor": {"poll_interval": "1s", "threads": 2, "queue_size": 20,
                        "retry": {"attempts": 3, "backoff": {"fixed": "1s"}}},
           "nodes": [{"name": "node-a"}, {"name": "node-b"}],
           "handlers": {"work": {"duration": {"exponential": {"mean": "500ms"}},
                                 "outcome": {"fail_rate": 0.5}}},
           "workload": {"streams": [{"name": "s", "handler": "work", "count": 1500,
                                     "rate": "2/s"}]}}
    a = api.analyse(api.run(from_dict(doc), 1))
    q = a.summary["effects"]["local_queues"]
    held = _queued_by_hand(a)
    assert q["jobs"] == len(held) == 1500
    assert q["queued_mean"] == pytest.approx(np.mean(held), rel=1e-6), q


def test_idle_threads_elsewhere_count_only_nodes_that_run_the_job():
    """node-b runs only b's jobs: its four idle threads could not have run a's, which wait
    in node-a's queue behind node-a's two threads. The report said they waited 'while the
    other nodes had 3.9 threads idle', and named queue_size: 0 as the fix (a review)."""
    doc = {"name": "s2_handles", "until": "drained",
           "executor": {"poll_interval": "1s", "batch_size": 10, "poll_jitter": 0.5},
           "nodes": [{"name": "node-a", "handles": ["a"], "queue_size": 20, "threads": 2},
                     {"name": "node-b", "handles": ["b"], "threads": 4}],
           "handlers": {"a": {"duration": {"exponential": {"mean": "500ms"}}},
                        "b": {"duration": {"exponential": {"mean": "500ms"}}}},
           "workload": {"streams": [{"name": "sa", "handler": "a", "count": 2500,
                                     "rate": "3.4/s"},
                                    {"name": "sb", "handler": "b", "count": 150,
                                     "rate": "0.2/s"}]}}
    s = api.analyse(api.run(from_dict(doc), 1)).summary
    q = s["effects"]["local_queues"]
    assert q["idle_elsewhere"] < 0.05 and q["queued_mean"] > 1.0, q
    assert "Local queues made much of the wait" not in " ".join(sentences(s))


def test_a_timer_loops_claims_are_not_the_job_tables():
    """A Flowable-like node's timer loop claims its own table on its own grid: its claims
    split the job table's queue-full waits in two and stood for 'the first poll after a job
    fell due' (a review: 277 waits counted of 444, 0.28 s for a poll of 1.29 s)."""
    doc = {"name": "s6_flow", "until": "drained", "policy": "flowable",
           "executor": {"hint": False, "queue_size": 4, "threads": 4, "poll_interval": "1s"},
           "nodes": [{"name": f"node-{i}"} for i in (1, 2, 3)],
           "handlers": {"order": {"duration": {"exponential": {"mean": "500ms"}}},
                        "reminder": {"duration": "200ms"}},
           "workload": {"streams": [
               {"name": "orders", "handler": "order", "count": 3000, "rate": "10/s"},
               {"name": "reminders", "handler": "reminder", "kind": "timer",
                "due_in": "10s", "count": 600, "rate": "2/s"}]}}
    a = api.analyse(api.run(from_dict(doc), 1))
    e = a.summary["effects"]
    assert e["queue_full"]["waits"] == 444, e["queue_full"]
    c = a.result.trace.arrays()
    texts = a.result.trace.texts
    timer = np.array([t.endswith(" timer_job") for t in texts] + [False])
    job_claims = (c["kind"] == K["acquire"]) & ~timer[c["text"]]
    assert job_claims.sum() < (c["kind"] == K["acquire"]).sum()
    # the review's own count over the job table's claims gave about 1.29 s
    assert e["poll_phases"]["wait_for_poll_free"] == pytest.approx(1.29, abs=0.01)


def test_nodes_whose_queues_differ_are_not_told_as_one():
    """node-a's queue of 2 and 2 s wait beside the others' 10 and 5 s: the warning and the
    report spoke of 'its queue of 2 ... 6 jobs per 2 s' for all three, and the fix 'a
    queue_size above 2' meant nothing to the other two (a review)."""
    doc = {"name": "s1b_mixed", "until": "drained",
           "executor": {"threads": 4, "queue_size": 10, "queue_full_wait": "5s"},
           "nodes": [{"name": "node-a", "queue_size": 2, "queue_full_wait": "2s"},
                     {"name": "node-b"}, {"name": "node-c"}],
           "handlers": {"work": {"duration": {"exponential": {"mean": "500ms"}}}},
           "workload": {"streams": [{"name": "s", "handler": "work", "count": 3000,
                                     "rate": "10/s"}]}}
    warned = [w for w in lint(from_dict(doc)) if w.code == CODE]
    assert len(warned) == 1 and "claims again only after its queue_full_wait" in \
        warned[0].message and "queue of 2" not in warned[0].message, warned
    s = api.analyse(api.run(from_dict(doc), 1)).summary
    q = s["effects"]["queue_full"]
    assert q["queue_size"] is None and q["threads"] is None and q["wait"] == 5.0, q
    said = " ".join(sentences(s))
    assert "its queue_full_wait (up to 5 s)" in said and "queue of 2" not in said, said


def test_an_overloaded_stream_is_not_blamed_on_the_queue():
    """30 jobs/s against three nodes whose threads run 24/s: no queue keeps up, so neither
    the warning (whose 'queue_size above 46' could not work) nor the queue-full sentence is
    given; the load sentence says overloaded (a review)."""
    doc = _doc("30/s", poll_interval="1s")
    assert not [w for w in lint(from_dict(doc)) if w.code == CODE]
    s = api.analyse(api.run(from_dict({**doc, "workload": {"streams": [
        {**doc["workload"]["streams"][0], "count": 4000}]}}), 1)).summary
    said = " ".join(sentences(s))
    assert "Overloaded" in said and "took in fewer jobs" not in said, said


def test_with_a_local_queue_the_wait_after_a_poll_is_not_blamed_on_full_claims():
    """The race's nodes hold queues of 20: the 216 ms after the first poll are mostly time in
    a queue after the job's own claim (its local_queues figure, 213 ms), not rows a full
    claim took first, as the lock-step sentence said (a review)."""
    s = api.analyse(api.run(load(SCENARIOS / "race.yaml"))).summary
    said = " ".join(sentences(s))
    assert "then 216 ms more after it (in a node's local queue, or until a later claim " \
        "took them)" in said, said
    assert "their rows taken before these" not in said
    assert s["effects"]["local_queues"]["queued_mean"] == pytest.approx(0.213, abs=0.001)


def test_nodes_that_split_the_handlers_are_not_read_as_one_cluster():
    """Nodes that run different handlers do not compete for the same rows: a job whose
    handler one node polls for waits about T/2 however the phases fall, and one capped
    node's intake says nothing of another's backlog. The report said 'The polls made much
    of the wait though their phases were not in lock-step' against T/(N+1) of all three
    nodes, and 'The nodes took in fewer jobs than fell due' of a backlog that was the
    uncapped node's threads' (a second review)."""
    disjoint = {"name": "ls_handles", "until": "drained",
                "executor": {"poll_interval": "2s", "threads": 4, "queue_size": 0},
                "nodes": [{"name": f"node-{i}", "start_at": "0s", "handles": [f"h{i}"]}
                          for i in range(3)],
                "handlers": {f"h{i}": {"duration": {"exponential": {"mean": "300ms"}}}
                             for i in range(3)},
                "workload": {"streams": [{"name": f"s{i}", "handler": f"h{i}", "count": 600,
                                          "rate": "1/s"} for i in range(3)]}}
    s = api.analyse(api.run(from_dict(disjoint), 1)).summary
    assert s["effects"]["poll_phases"] is None
    assert "polls made much of the wait" not in " ".join(sentences(s))
    capped = {"name": "handles_cap", "until": "drained",
              "executor": {"poll_interval": "1s", "batch_size": 10},
              "nodes": [{"name": "node-a", "handles": ["a"], "threads": 2, "queue_size": 0},
                        {"name": "node-c", "handles": ["b"], "threads": 4, "queue_size": 4,
                         "queue_full_wait": "5s", "poll_interval": "6s"}],
              "handlers": {"a": {"duration": {"exponential": {"mean": "500ms"}}},
                           "b": {"duration": {"exponential": {"mean": "500ms"}}}},
              "workload": {"streams": [
                  {"name": "sa", "handler": "a", "count": 2500, "rate": "5/s"},
                  {"name": "sb", "handler": "b", "count": 750, "rate": "1.5/s"}]}}
    assert not [w for w in lint(from_dict(capped)) if w.code == CODE]
    s = api.analyse(api.run(from_dict(capped), 1)).summary
    q = s["effects"]["queue_full"]  # node-c's own: its stream of 1.5/s, under its 1.6/s
    assert q["group"] == ["node-c"] and q["handlers"] == ["b"], q
    assert q["intake"] == 1.6 and 1.3 < q["arriving"] < 1.7, q
    assert "took in fewer jobs" not in " ".join(sentences(s))


#: two nodes of 2 threads with local queues of 10, ordered by priority; 300 bulk jobs of 2 s
#: due at once and a priority-10 job of 200 ms every 5 s
PRIORITY_PREFETCH = {"name": "prio_prefetch", "until": "drained",
            "executor": {"order": "priority", "poll_interval": "2s", "threads": 2,
                         "queue_size": 10},
            "nodes": 2,
            "handlers": {"import": {"duration": "2s"}, "mail": {"duration": "200ms"}},
            "workload": {"streams": [
                {"name": "bulk", "handler": "import", "count": 300, "priority": 0},
                {"name": "resets", "handler": "mail", "count": 60, "rate": "0.2/s",
                 "priority": 10}]}}


def _check_prefetch(seed: int) -> None:
    s = api.analyse(api.run(from_dict(PRIORITY_PREFETCH), seed)).summary
    q = s["effects"]["queued_by_priority"]
    top = q["by_priority"]["10"]
    assert q["queue_size"] == 10 and top["jobs"] == 60, (seed, q)
    # most of the top class's wait is the queue's, behind rows claimed before them
    assert top["queued_mean"] >= top["start_delay_mean"] / 2 and top["lower_ahead_mean"] >= 1, \
        (seed, top)
    said = " ".join(sentences(s))
    assert (f"Priority 10's jobs waited a mean {top['start_delay_mean']:.3g} s to start") in said
    assert "in a node's local queue behind a mean" in said and "(queues of 10 here)" in said
    # (with every thread busy 150 s, full claims are the saturation's, not told as their own)
    assert "Claims that came back full" not in said
    # without the queues the top class waits in the table, where it comes first
    none = {**PRIORITY_PREFETCH,
            "executor": {**PRIORITY_PREFETCH["executor"], "queue_size": 0}}
    s0 = api.analyse(api.run(from_dict(none), seed)).summary
    assert s0["effects"]["queued_by_priority"] is None
    said0 = " ".join(sentences(s0))
    assert "local queue" not in said0 and "Claims that came back full" not in said0, said0
    assert "The executor was saturated" in said0
    mail = s0["latency"]["by_priority"]["10"]["start_delay"]["mean"]
    assert mail < top["start_delay_mean"] / 2, (seed, mail, top)


def test_top_priority_jobs_behind_lower_ones_in_a_local_queue_are_told():
    """A newcomer's run: the priority-10 jobs waited a mean 2.9-3.6 s with queues of 10 and
    0.8 s without (seeds 1-4); the report said nothing of the queues, and without them
    blamed full claims for what a 150 s saturation did."""
    for seed in (1, 2):
        _check_prefetch(seed)


def test_top_priority_behind_a_local_queue_at_a_fresh_seed(fresh_seed):
    seed = fresh_seed % 10**6
    print(f"priority behind a local queue, fresh seed {seed}")
    _check_prefetch(seed)


def test_capped_intake_of_a_set_of_nodes_names_them():
    """The sentence of a set of nodes that alone runs some handlers begins with them."""
    from jobsim.output.queue_words import capped_intake

    q = {"waits": 40, "wait": 5.0, "queue_size": 10, "threads": 4, "intake": 2.8,
         "arriving": 4.0, "window": 300.0, "idle": 120.0, "share": 0.2,
         "group": ["node-1", "node-3"], "handlers": ["work"]}
    said = capped_intake(q, {"verdict": "stable"})
    assert said.startswith("The 2 nodes that alone run work (node-1, node-3) took in fewer "
                           "jobs than fell due"), said
    assert capped_intake({**q, "group": None, "handlers": None}, None).startswith(
        "The nodes took in fewer jobs")


HETERO = """
name: hetero
seed: {seed}
until: 30m
nodes: [{{name: node-a}}, {{name: node-b}}, {{name: node-c, threads: 1, queue_size: 10}}]
handlers:
  work: {{duration: {{lognormal: {{median: 1s, p99: 10s}}}}}}
workload: {{streams: [{{name: s, handler: work, count: 6000, rate: 3.5/s}}]}}
"""


def test_one_nodes_local_queue_is_told_where_the_clusters_mean_hides_it():
    """A newcomer's finding: node-c, 1 thread and a queue of 10 beside two nodes of 4
    threads and none, made its jobs wait 16-17 s against 3.3-3.6 s (seeds 1-4), and the
    report never named its queue: the mean over every job (2.1 s in a queue) was under the
    bar. At seed 3 and a fresh seed (printed)."""
    import random

    import jobsim
    from jobsim.output.words import sentences

    for seed in (3, random.randrange(1, 10**6)):
        s = jobsim.analyse(jobsim.run(jobsim.loads(HETERO.format(seed=seed)))).summary
        q = s["effects"]["local_queues"]
        c = q["by_node"]["node-c"]
        assert list(q["by_node"]) == ["node-c"] and c["queue_size"] == 10, seed
        assert c["start_delay_mean"] > 2 * c["others_start_delay_mean"], (seed, c)
        assert c["queued_mean"] > c["start_delay_mean"] / 2, (seed, c)
        said = " ".join(sentences(s))
        assert f"node-c's local queue made much of its jobs' wait: the {c['jobs']:,} it ran " \
               f"first" in said, seed
        imb = s["effects"]["imbalance"]
        if imb["imbalanced"] and imb["most"] == "node-c":  # (984 against 667 is not: 1.48)
            assert imb["why"] == "local_queue", (seed, imb)
            assert "node-c claims for its local queue (10 places)" in said, seed
