"""The bench suite's scenarios and reference models: the full model, the idle cluster and its
every-poll baseline.

They are not shipped scenarios (no committed report depends on them); another module builds
on ``full_model_scenario(jobs, seed)``, so its signature stays.
"""

from __future__ import annotations

from typing import Any

import simpy

from ..executor.config import Scenario


def full_model_scenario(jobs: int, seed: int = 1) -> Scenario:
    """The full model: 16 nodes × 8 threads polling every second, PostgreSQL with lognormal
    statement latency (median 1 ms, p99 10 ms), the guarded UPDATE, handlers that fail 5 %
    of the time with 3 attempts, one node crash half-way; ρ ≈ 0.7."""
    from ..format.scenario import from_dict

    rate = 180.0
    doc = {
        "name": "bench-full", "seed": seed, "until": "drained", "horizon": "3650d",
        "db": {"dialect": "postgres", "latency": {"lognormal": {"median": "1ms",
                                                                "p99": "10ms"}}},
        "executor": {"acquisition": "guarded_update", "wakeup": "poll", "poll_interval": "1s",
                     "batch_size": 16, "queue_size": 16, "threads": 8, "lock_time": "5m",
                     "retry": {"attempts": 3, "backoff": ["5s", "30s"]}},
        "nodes": 16,
        "handlers": {"w": {"duration": {"exponential": {"mean": "500ms"}},
                           "outcome": {"fail_rate": 0.05}}},
        "workload": {"streams": [{"name": "s", "handler": "w", "count": jobs,
                                  "rate": rate}]},
        "faults": [{"at": f"{jobs / rate / 2:.3f}s", "crash": "node-3",
                    "restart_after": "1m"}],
    }
    return from_dict(doc, "<bench full model>")


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
