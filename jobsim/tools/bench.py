"""``jobsim bench``: the simulator's speed as a ratio to bare SimPy, and its M/M/c check.

With one node, ``c`` threads, notify wake-ups, no database latency and a local queue large
enough to hold every waiting job, jobsim's executor *is* an M/M/c queue: Poisson arrivals,
exponential service, ``c`` servers, first come first served. The bench runs it beside a bare
SimPy M/M/c — ``c`` worker processes pulling from a ``simpy.Store`` — in the same process,
each replication a pair run back to back (which runs first alternates), and reports:

- throughput of each (jobs per CPU second: ``time.process_time``, which the machine's other
  work does not inflate as it does wall time) and their ratio (jobsim / bare): the median
  of the replications' paired ratios, beside the ratio of the totals;
- jobsim's mean wait (start − due) with a 95% confidence interval over its replications,
  beside the Erlang-C value ``C(c, a) / (cμ − λ)``.

The ratio, not the absolute speed, is the figure: it does not drift with the machine. The
suite (``bench_suite``) measures the same M/M/8 and more, each run in a child process.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from ..executor.config import ExecutorConfig, NodeConfig, Scenario, StreamSpec
from ..base.dists import Exponential
from ..executor.handlers import Handler
from ..base.rng import Streams
from ..base.trace import K
from ..sim.world import run
# the suite's models, importable from here as before
from .bench_models import (bare_polling as bare_polling, full_model_scenario as full_model_scenario,
                           idle_scenario as idle_scenario)

# two-sided 95% Student t quantiles, df = 1..30
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t95(df: int) -> float:
    """The two-sided 95% Student-t quantile for ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("a confidence interval needs at least two replications")
    return _T95[df - 1] if df <= 30 else 1.96 + 2.4 / df


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95% confidence interval (t-based) of replication means."""
    x = np.asarray(values, dtype=float)
    m = float(x.mean())
    half = t95(len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return m, m - half, m + half


def erlang_c_wait(c: int, lam: float, mu: float) -> float:
    """Mean wait in queue of M/M/c (Erlang C): ``C(c, a) / (cμ − λ)``, ``a = λ/μ``."""
    a = lam / mu
    rho = a / c
    if rho >= 1:
        return math.inf
    term, total = 1.0, 1.0
    for k in range(1, c):
        term *= a / k
        total += term
    last = term * a / c / (1 - rho)
    p_wait = last / (total + last)
    return p_wait / (c * mu - lam)


def mmc_scenario(jobs: int, c: int = 8, rho: float = 0.8, service: float = 1.0,
                 seed: int = 1) -> Scenario:
    """One node, ``c`` threads, notify wake-ups, no DB latency, Poisson arrivals."""
    lam = rho * c / service
    ex = ExecutorConfig(acquisition="guarded_update", wakeup="notify", poll_interval=10.0,
                        batch_size=512, queue_size=max(jobs, 1), threads=c,
                        lock_time=365 * 86400.0, order="id")
    return Scenario(
        name="mmc", seed=seed,
        handlers={"work": Handler("work", Exponential(service))},
        nodes=(NodeConfig("node-1", ex),), executor=ex,
        streams=(StreamSpec("arrivals", "work", jobs, rate=lam),),
        horizon=max(30 * 86400.0, 100.0 * jobs / lam))


def jobsim_waits(scenario: Scenario) -> np.ndarray:
    """Start − due of every job's first execution, from the trace."""
    return first_waits(run(scenario).trace.arrays())


def first_waits(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Start − due of every job's first execution, from a trace's columns."""
    kind, job, t = cols["kind"], cols["job"], cols["time"]
    created = kind == K["job_created"]
    due = np.full(int(job.max()) + 1, np.nan)
    due[job[created]] = cols["x"][created]
    starts = (kind == K["exec_start"]) & (cols["attempt"] == 1)
    return t[starts] - due[job[starts]]


def bare_mmc(jobs: int, c: int, lam: float, service: float, seed: int) -> np.ndarray:
    """The baseline: a plain SimPy M/M/c — arrivals into a Store, ``c`` workers."""
    env = simpy.Environment()
    streams = Streams(seed)
    arrivals, work = streams.stream("bare/arrivals"), streams.stream("bare/service")
    store = simpy.Store(env)
    waits: list[float] = []
    mean_gap = 1.0 / lam

    def source():
        for _ in range(jobs):
            yield env.timeout(mean_gap * arrivals.exponential())
            store.put(env.now)

    def worker():
        while True:
            arrived = yield store.get()
            waits.append(env.now - arrived)
            yield env.timeout(service * work.exponential())

    env.process(source())
    for _ in range(c):
        env.process(worker())
    env.run()
    return np.asarray(waits)


@dataclass
class BenchResult:
    jobs: int
    replications: int
    c: int
    rho: float
    #: jobs per CPU second of each
    jobsim_jobs_per_s: float
    bare_jobs_per_s: float
    ratio: float
    wait_mean: float
    wait_ci: tuple[float, float]
    bare_wait_mean: float
    erlang_c: float
    ratio_of_totals: float = float("nan")

    @property
    def erlang_inside_ci(self) -> bool:
        return self.wait_ci[0] <= self.erlang_c <= self.wait_ci[1]


def mmc_bench(jobs: int = 100_000, replications: int = 5, seed: int = 1, c: int = 8,
              rho: float = 0.8, service: float = 1.0,
              progress: Callable[[str], None] | None = None) -> BenchResult:
    """Run both models ``replications`` times, alternating, and compare."""
    if replications < 2:
        raise ValueError("replications must be at least 2 for a confidence interval")
    lam = rho * c / service
    js_time = bare_time = 0.0
    js_means: list[float] = []
    paired: list[float] = []
    bare_means: list[float] = []
    for r in range(replications):
        sc = mmc_scenario(jobs, c, rho, service, seed + r)
        cpu: dict[str, float] = {}
        for side in (("jobsim", "bare") if r % 2 == 0 else ("bare", "jobsim")):
            t0 = time.process_time()  # the simulations are timed, not the waits' arithmetic
            if side == "jobsim":
                result = run(sc)
                cpu[side] = time.process_time() - t0
                js_means.append(float(first_waits(result.trace.arrays()).mean()))
            else:
                waits = bare_mmc(jobs, c, lam, service, seed + r)
                cpu[side] = time.process_time() - t0
                bare_means.append(float(waits.mean()))
        js_time += cpu["jobsim"]
        bare_time += cpu["bare"]
        paired.append(cpu["bare"] / cpu["jobsim"])
        if progress:
            progress(f"  replication {r + 1}/{replications}: jobsim {cpu['jobsim']:.2f} CPU s, "
                     f"bare SimPy {cpu['bare']:.2f} CPU s")
    m, lo, hi = mean_ci(js_means)
    js_tp = jobs * replications / js_time
    bare_tp = jobs * replications / bare_time
    # The ratio is the median of the paired ratios: each replication runs jobsim and the
    # baseline back to back, so a slow moment of the machine touches both sides of a pair.
    return BenchResult(jobs, replications, c, rho, js_tp, bare_tp, float(np.median(paired)),
                       m, (lo, hi), float(np.mean(bare_means)),
                       erlang_c_wait(c, lam, 1.0 / service), js_tp / bare_tp)


def format_bench(b: BenchResult) -> list[str]:
    verdict = "inside" if b.erlang_inside_ci else "OUTSIDE"
    return [
        f"M/M/{b.c} at ρ = {b.rho:g}, {b.jobs:,} jobs × {b.replications} replications",
        f"  bare SimPy M/M/{b.c} (baseline)   {b.bare_jobs_per_s:>12,.0f} jobs per CPU second",
        f"  jobsim (1 node, {b.c} threads, notify)  {b.jobsim_jobs_per_s:>10,.0f} jobs per CPU "
        "second",
        f"  ratio jobsim / baseline        {b.ratio:>12.3f}   (median of the {b.replications} "
        f"paired replications; ratio of the totals {b.ratio_of_totals:.3f})",
        f"  mean wait: jobsim {b.wait_mean:.4f}s (95% CI {b.wait_ci[0]:.4f}..{b.wait_ci[1]:.4f}),"
        f" bare SimPy {b.bare_wait_mean:.4f}s, Erlang C {b.erlang_c:.4f}s — {verdict} the CI",
    ]
