"""The bench suite's scenarios and reference models: the full model (arriving and as a backlog),
the idle cluster and its every-poll baseline, and M/M/c in Ciw.

They are not shipped scenarios (no committed report depends on them); another module builds
on ``full_model_scenario(jobs, seed)``, so its signature stays.
"""

from __future__ import annotations

import math
from typing import Any

import simpy

from ..executor.config import Scenario

#: the full model's cluster and workload (``full_model_scenario``)
NODES, THREADS, HANDLER_MEAN, FAIL_RATE, ATTEMPTS = 16, 8, 0.5, 0.05, 3
LATENCY_MEDIAN, LATENCY_P99 = 0.001, 0.010
#: arrivals per second: ρ ≈ 0.70 (``full_model_utilisation``)
FULL_RATE = 170.0
_Z99 = 2.3263478740  # the standard normal's 99th percentile


def full_model_utilisation(rate: float = FULL_RATE) -> float:
    """The full model's offered utilisation ``λ × E[service incl. retries] / threads``.

    An attempt holds a thread for the handler (mean 0.5 s) and then its completion or
    failure statement (lognormal, median 1 ms, p99 10 ms: mean ``median × exp(σ²/2)`` with
    ``σ = ln(p99/median) / z₀.₉₉``, 1.63 ms); a job makes ``1 + p + p²`` attempts on average
    (5 % fail, at most 3 attempts: 1.0525). 170/s × 0.528 s / 128 threads = 0.70.
    """
    sigma = math.log(LATENCY_P99 / LATENCY_MEDIAN) / _Z99
    latency_mean = LATENCY_MEDIAN * math.exp(sigma * sigma / 2)
    attempts = sum(FAIL_RATE ** k for k in range(ATTEMPTS))
    return rate * attempts * (HANDLER_MEAN + latency_mean) / (NODES * THREADS)


def _full_doc(jobs: int, seed: int, rate: float | None, crash_at: float) -> dict[str, Any]:
    stream: dict[str, Any] = {"name": "s", "handler": "w", "count": jobs}
    if rate is not None:
        stream["rate"] = rate
    return {
        "name": "bench-full" if rate is not None else "bench-backlog", "seed": seed,
        "until": "drained", "horizon": "3650d",
        "db": {"dialect": "postgres", "latency": {"lognormal": {
            "median": f"{LATENCY_MEDIAN * 1000:g}ms", "p99": f"{LATENCY_P99 * 1000:g}ms"}}},
        "executor": {"acquisition": "guarded_update", "wakeup": "poll", "poll_interval": "1s",
                     "batch_size": 16, "queue_size": 16, "queue_full_wait": "1s",
                     "threads": THREADS, "lock_time": "5m",
                     "retry": {"attempts": ATTEMPTS, "backoff": ["5s", "30s"]}},
        "nodes": NODES,
        "handlers": {"w": {"duration": {"exponential": {"mean": f"{HANDLER_MEAN * 1000:g}ms"}},
                           "outcome": {"fail_rate": FAIL_RATE}}},
        "workload": {"streams": [stream]},
        "faults": [{"at": f"{crash_at:.3f}s", "crash": "node-3", "restart_after": "1m"}],
    }


def full_model_scenario(jobs: int, seed: int = 1) -> Scenario:
    """The full model: 16 nodes × 8 threads polling every second (batch 16, local queue 16),
    PostgreSQL with lognormal statement latency (median 1 ms, p99 10 ms), the guarded UPDATE,
    handlers of mean 0.5 s that fail 5 % of the time with 3 attempts, one node crash half-way
    through the arrivals (back a minute later; its claimed jobs wait out their 5 min lock).

    Poisson arrivals at 170/s: offered utilisation ρ = λ × E[service incl. retries] /
    threads = 0.70 (``full_model_utilisation``); the cluster keeps up, a job waits about half
    a poll interval.

    A node whose local queue is full claims again after one poll interval
    (``queue_full_wait: 1s``). With the default 5 s, a node claimed 16 + 8 jobs, found its
    queue full, and waited 5 s while its threads ran those 24 in about 1.5 s and then sat
    idle: 24 jobs per 5 s per node, ≈ 77 executions/s or ≈ 73 jobs/s for the cluster, against
    180/s arriving — the old full model was saturated (most jobs pending, waits growing
    with the run's length).
    """
    from ..format.scenario import from_dict

    return from_dict(_full_doc(jobs, seed, FULL_RATE, jobs / FULL_RATE / 2),
                     "<bench full model>")


def backlog_scenario(jobs: int, seed: int = 1) -> Scenario:
    """The full model's cluster with every job due at t = 0: the saturated regime. The crash
    comes half-way through the drain (at the cluster's capacity, ``threads / E[service]``)."""
    from ..format.scenario import from_dict

    capacity = FULL_RATE / full_model_utilisation()
    return from_dict(_full_doc(jobs, seed, None, jobs / capacity / 2), "<bench backlog>")


def idle_scenario(days: float = 30.0, nodes: int = 10, seed: int = 1) -> Scenario:
    """A quiet cluster: ``nodes`` nodes polling every 10 s for ``days`` days, one job an
    hour (each runs 2 s)."""
    from ..format.scenario import from_dict

    doc = {
        "name": "bench-idle", "seed": seed, "until": f"{days * 86400:.0f}s",
        "executor": {"wakeup": "poll", "poll_interval": "10s"},
        "nodes": nodes,
        "handlers": {"w": {"duration": "2s"}},
        "workload": {"streams": [{"name": "hourly", "handler": "w",
                                  "count": int(days * 24), "rate": "1/h"}]},
    }
    return from_dict(doc, "<bench idle>")


def bare_polling(days: float = 30.0, nodes: int = 10, period: float = 10.0) -> int:
    """The baseline of the idle case: the same nodes as bare SimPy processes that wake for
    every poll (what a simulator that does not skip idle polls does). Returns the polls."""
    env = simpy.Environment()
    polls = [0]

    def node() -> Any:
        while True:
            yield env.timeout(period)
            polls[0] += 1

    for _ in range(nodes):
        env.process(node())
    env.run(until=days * 86400.0)
    return polls[0]


def ciw_missing() -> str | None:
    """Why Ciw cannot run here (None: it can)."""
    try:
        import ciw  # noqa: F401
    except ImportError:
        return "ciw is not installed (pip install 'jobsim[bench]')"
    return None


def ciw_mmc(jobs: int, c: int, lam: float, service: float, seed: int) -> float:
    """The same M/M/c in Ciw until ``jobs`` customers completed; their mean wait."""
    import ciw

    net = ciw.create_network(arrival_distributions=[ciw.dists.Exponential(rate=lam)],
                             service_distributions=[ciw.dists.Exponential(rate=1 / service)],
                             number_of_servers=[c])
    ciw.seed(seed)
    q = ciw.Simulation(net)
    q.simulate_until_max_customers(jobs, method="Complete")
    waits = [r.waiting_time for r in q.get_all_records()]
    return sum(waits) / len(waits)
