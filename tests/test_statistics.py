"""Statistical validations beside the M/M/c check (tests/test_bench.py): Little's law on a
Poisson workload, and the T/2 wait a polling node adds. Each holds as a 95% confidence
interval over independent replications."""

import numpy as np

import jobsim

POISSON = {
    "name": "little", "until": "drained",
    "executor": {"wakeup": "notify", "threads": 4, "queue_size": 1000, "batch_size": 100},
    "nodes": 1,
    "handlers": {"w": {"duration": {"exponential": {"mean": "1s"}}}},
    "workload": {"streams": [{"name": "s", "handler": "w", "count": 4000, "rate": 3.0}]},
}


def _in_system(jobs, t1, t2):
    """L: the time-average number of jobs in the system (created, not yet ended) over
    [t1, t2], integrated from the jobs' own intervals."""
    created = jobs["created"].to_numpy(float)
    end = jobs["end"].to_numpy(float)
    overlap = np.clip(np.minimum(end, t2) - np.maximum(created, t1), 0.0, None)
    return overlap.sum() / (t2 - t1)


def test_littles_law_holds_within_the_confidence_interval():
    """L = λW, each side measured on its own over a steady window: L by time-averaging the
    number in the system, λ by counting arrivals, W by averaging the sojourns of the jobs
    that arrived in the window."""
    ratios = []
    for seed in range(1, 11):
        r = jobsim.run(jobsim.from_dict({**POISSON, "seed": seed}))
        jobs = jobsim.jobs_frame(jobsim.analyse(r).histories)
        t1, t2 = 200.0, 1200.0  # after the warm-up, before the stream ends (~1333 s)
        inside = jobs[(jobs["created"] >= t1) & (jobs["created"] < t2)]
        lam = len(inside) / (t2 - t1)
        w = float((inside["end"] - inside["created"]).mean())
        ratios.append(_in_system(jobs, t1, t2) / (lam * w))
    m, lo, hi = jobsim.mean_ci(ratios)
    assert lo <= 1.0 <= hi, (m, lo, hi)
    assert abs(m - 1.0) < 0.05


def test_a_polling_node_adds_half_its_poll_interval_on_average():
    """Light load, one node polling every T = 2 s, no statement latency: a job waits for
    the next poll, uniformly 0..T, so T/2 on average."""
    means = []
    for seed in range(1, 11):
        doc = {"name": "poll", "seed": seed, "until": "drained",
               "executor": {"wakeup": "poll", "poll_interval": "2s"}, "nodes": 1,
               "handlers": {"w": {"duration": "10ms"}},
               "workload": {"streams": [{"name": "s", "handler": "w", "count": 300,
                                         "rate": 0.1}]}}
        a = jobsim.analyse(jobsim.run(jobsim.from_dict(doc)))
        jobs = jobsim.jobs_frame(a.histories)
        means.append(float((jobs["first_start"] - jobs["due"]).mean()))
    m, lo, hi = jobsim.mean_ci(means)
    assert lo <= 1.0 <= hi, (m, lo, hi)
