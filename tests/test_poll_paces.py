"""Nodes that poll at different intervals split the work by their polls' pace, not by
their threads: whoever polls first after a job falls due takes it. The report names the
intervals and each node's share of those first polls; where that explains the spread it
says so plainly, and where a node that polled first had no thread free it says that too."""

import jobsim.api as api
from jobsim.format.scenario import from_dict
from jobsim.output.words import sentences

#: two nodes of 4 threads, one polling every second and one every 5 s, short jobs at 5/s:
#: defaults everywhere else
PACES = {
    "name": "paces", "seed": 1,
    "executor": {"poll_interval": "1s", "threads": 4},
    "nodes": [{"name": "fast"}, {"name": "slow", "poll_interval": "5s"}],
    "handlers": {"work": {"duration": {"exponential": {"mean": "200ms"}}}},
    "workload": {"streams": [{"name": "s", "handler": "work", "count": 2000,
                              "rate": "5/s"}]},
}


def _summary(doc: dict, seed: int) -> dict:
    return api.analyse(api.run(from_dict(doc), seed)).summary


def _check_paces(seed: int) -> None:
    s = _summary(PACES, seed)
    imb = s["effects"]["imbalance"]
    assert imb["imbalanced"] and imb["why"] == "poll_intervals", (seed, imb)
    assert imb["poll_interval"] == {"fast": 1.0, "slow": 5.0}
    # the slow node's poll comes first after about the gap between the fast node's last
    # poll and its own, of its 5 s: half a second on average, a tenth of the jobs
    assert 0.05 <= imb["first_poll_share"]["slow"] <= 0.15, (seed, imb)
    ran = s["nodes"]["slow"]["executions"] / 2000
    assert abs(ran - imb["first_poll_share"]["slow"]) <= 0.03, (seed, ran, imb)
    said = " ".join(sentences(s))
    assert "The nodes poll at different intervals (fast every 1 s, slow every 5 s): " \
           "whoever polls first after a job falls due takes it, and fast's poll was the " \
           "first after" in said, (seed, said)


def test_a_node_polling_five_times_as_often_takes_nine_jobs_in_ten_and_the_report_says_why():
    for seed in (1, 2, 3):
        _check_paces(seed)


def test_poll_paces_at_a_fresh_seed(fresh_seed):
    seed = fresh_seed % 10**6
    print(f"poll paces, fresh seed {seed}")
    _check_paces(seed)


def test_where_the_node_that_polls_first_has_no_thread_free_the_report_says_that_too():
    """Three nodes at 1, 2 and 3 s; the one polling every second has 2 threads and is busy
    almost all the time, the one at 3 s has 8: its first polls (under a tenth) are not its
    share (over two fifths), and the report does not say the intervals explain it."""
    doc = {**PACES, "executor": {"poll_interval": "1s", "threads": 2, "batch_size": 4},
           "nodes": [{"name": "a"}, {"name": "b", "poll_interval": "2s"},
                     {"name": "c", "poll_interval": "3s", "threads": 8}],
           "handlers": {"work": {"duration": {"exponential": {"mean": "1s"}}}},
           "workload": {"streams": [{"name": "s", "handler": "work", "count": 3000,
                                     "rate": "6/s"}]}}
    s = _summary(doc, 1)
    imb = s["effects"]["imbalance"]
    assert imb["imbalanced"] and imb["why"] is None, imb
    assert imb["most"] == "a" and imb["least"] == "c"
    assert imb["first_poll_share"]["c"] < 0.15 < 0.4 < s["nodes"]["c"]["executions"] / 3000
    said = " ".join(sentences(s))
    assert "takes it if it has a thread free, and a's poll was the first after" in said
    # the even share is by threads, which differ here: said
    assert "a ran 8" in said and "(even share for its 2 threads, 500), c " in said
    assert "(for its 8, 2,000)." in said


def test_nodes_at_one_interval_have_no_paces_to_tell():
    doc = {**PACES, "nodes": [{"name": "fast"}, {"name": "slow"}]}
    imb = _summary(doc, 1)["effects"]["imbalance"]
    assert imb["poll_interval"] is None and imb["first_poll_share"] is None
    assert imb["why"] != "poll_intervals"
