"""The cost estimate before a run, the budget that refuses a run, and the guard that stops one.

Random valid scenarios — written as a newcomer would, with defaults where a newcomer leaves
them — are scaled so that their estimate sits just under a budget; each must then run to its
end and make within 3× of the events its estimate said. Fresh seeds every run (the session's
``fresh_seed``, printed with the command that replays it) beside fixed ones (both ``-m slow``).
``-m long`` does the same at the command line's default budget (by hand: hours).
"""

from __future__ import annotations

import random

import pytest

from jobsim.format import scenario
from jobsim.cli import main
from jobsim.sim.cost import (DEFAULT_EVENTS, DEFAULT_MEMORY, Budget, BudgetError, Guard, RunStopped,
                         check, estimate)
from jobsim.sim.world import run


def random_costed_scenario(r: random.Random, jobs: int) -> str:
    nodes = r.randint(1, 6)
    wakeup = r.choice(["poll", "poll", "notify"])
    dialect = r.choice(["atomic", "atomic", "postgres", "sqlite"])
    outcome = r.choice(["succeed", "succeed", "{fail_rate: 0.1}", "{fail_rate: 0.5}",
                        "{fail_first: 2}", "always_fail"])
    duration = r.choice(["0s", "50ms", "{exponential: {mean: 200ms}}",
                         "{uniform: {low: 1s, high: 3s}}", "{exponential: {mean: 20s}}"])
    threads = r.randint(1, 16)
    heartbeat = r.choice(["none", "none", "10s", "1m"])
    policy = r.choice([None, None, None, "flowable", "failsafe", "skip_locked", "db_scheduler",
                       "zeebe_like"])
    rate = r.choice([None, "1/s", "10/s", "100/s", "5/m"])
    stream = f"{{name: s, handler: w, count: {jobs}" + (f", rate: {rate}" if rate else "") + "}"
    executor = [f"threads: {threads}", f"heartbeat: {heartbeat}"]
    if r.random() < 0.5:
        executor.append(f"poll_interval: {r.choice(['100ms', '1s', '5s', '30s'])}")
    if r.random() < 0.5:
        executor.append(f"batch_size: {r.randint(1, 50)}")
    if r.random() < 0.3:
        executor.append(f"lock_time: {r.choice(['30s', '5m'])}")
    if policy is None:
        executor.append(f"wakeup: {wakeup}")
    if r.random() < 0.5 and policy not in ("failsafe",):
        executor.append(f"retry: {{attempts: {r.randint(1, 6)}, "
                        f"backoff: {r.choice(['[1s]', '[10s, 60s]', '{fixed: 5s}'])}}}")
    db = ""
    if policy not in ("failsafe", "skip_locked", "db_scheduler", "zeebe_like"):
        latency = r.choice(['0s', '1ms', '{uniform: {low: 1ms, high: 5ms}}'])
        db = f"db: {{dialect: {dialect}, latency: {latency}}}"
    if policy in ("skip_locked",):
        db = "db: {dialect: postgres, latency: 1ms}"
    until = r.choice(["", "", "until: 1h"])
    return f"""
name: costed
seed: {r.randint(0, 10_000)}
{until}
{f"policy: {policy}" if policy else ""}
{db}
executor: {{{", ".join(executor)}}}
nodes: {nodes}
handlers:
  w: {{duration: {duration}, outcome: {outcome}}}
workload:
  streams: [{stream}]
"""


def scaled(seed: int, budget: float) -> tuple[str, float]:
    """A random scenario whose estimate sits just under ``budget``: its job count is the
    largest whose estimate is within it (events, or memory in proportion). A shape that is
    beyond the budget with a single job (say, a heartbeat ticking for 30 days on 6 nodes), or
    that cannot come near it (5 jobs a minute for an hour), is drawn again from the next
    stream."""
    for attempt in range(100):
        found = _scaled(seed * 100 + attempt if attempt else seed, budget)
        if found is not None:
            return found
    raise AssertionError(f"seed {seed}: no shape fits in {budget:,.0f} events")


def _budget(events: float) -> Budget:
    return Budget(events=events, memory=min(DEFAULT_MEMORY, 2000.0 * events))


def _scaled(seed: int, budget: float) -> tuple[str, float] | None:
    r = random.Random(seed)
    shape = r.getstate()
    lo, hi = 1, 10_000_000
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        r.setstate(shape)
        text = random_costed_scenario(r, mid)
        est = estimate(scenario.loads(text))
        # within the events and a memory budget in proportion (a burst of millions of rows
        # costs memory, not events)
        if est.over(_budget(budget)) is None:
            best = (text, est)
            lo = mid + 1
        else:
            hi = mid - 1
    if best is None:
        return None
    text, est = best
    near = est.events >= NEAR * budget or est.memory_bytes >= NEAR * _budget(budget).memory
    return (text, est.events) if near else None


#: "just under the budget": at least this share of it, in events or in memory
NEAR = 0.5


def _measure(seed: int, budget: float) -> tuple[float, str]:
    """Run the scaled scenario of ``seed``; its measured/estimated events ratio. The run must
    finish: the guard (which stops at GUARD_FACTOR × the estimate, or the budget if higher)
    must not trip on a scenario the budget allowed."""
    text, ev = scaled(seed, budget)
    sc = scenario.loads(text)
    b = _budget(budget)
    check(estimate(sc), b, "scaled")  # under the budget: not refused
    result = run(sc, guard=Guard(estimate(sc), b))
    return result.events / ev, text


BUDGET = 100_000  # small enough for the default suite: ~0.5 s a run


def _judge(seeds: list[int], budget: float, replay: str, allowed_outside: int = 0) -> None:
    """Each scenario must run to its end within 3× of its estimate; ``allowed_outside``
    of them may miss (the fresh-seed tier: about 1 scenario in 100 does, mostly a lock-expiry
    cascade that feeds itself, which no formula of the settings foresees). A run the guard
    stops counts as a miss."""
    ratios: dict[int, float] = {}
    for seed in seeds:
        try:
            ratios[seed], _ = _measure(seed, budget)
        except RunStopped:
            ratios[seed] = float("inf")
    outside = {s: r for s, r in ratios.items() if not 1 / 3 <= r <= 3}
    report = ", ".join(f"seed {s}: {r:.2f}" for s, r in sorted(outside.items()))
    assert len(outside) <= allowed_outside, (
        f"{len(outside)} of {len(seeds)} outside 3× ({report}); replay: {replay}")


@pytest.mark.slow  # fixed seeds that once passed: the fresh-seed test below runs 25 new
def test_estimates_just_under_the_budget_are_within_3x_of_the_run():  # ones each time
    _judge(list(range(25)), BUDGET, "pytest tests/test_cost.py -k just_under")


@pytest.mark.slow  # 33 CPU s: 25 runs at a budget of 100,000 events
def test_fresh_seeds_are_within_3x_of_their_estimate(fresh_seed):
    # measured on 600 seeds: 5 outside 3× (1 of those stopped by the guard); 2 of 25 or
    # more happen about once in 400 runs, 3 or more once in 10,000
    _judge(list(range(fresh_seed, fresh_seed + 25)), BUDGET,
           f"the command printed above, or the seeds {fresh_seed}…{fresh_seed + 24} by hand",
           allowed_outside=2)


@pytest.mark.long  # by hand: about 260 CPU s a run (seed 1000: 258 s, 766 MB), 3.5 hours
def test_at_the_default_budget_50_runs_finish_within_3x():
    """The acceptance test: 50 random scenarios whose estimate sits just under the default
    budget (about 20 million events each: an hour or more in all)."""
    _judge(list(range(1000, 1050)), DEFAULT_EVENTS, "pytest -m long tests/test_cost.py")


def test_the_budget_refuses_with_the_estimate_its_drivers_and_the_way_out():
    sc = scenario.loads("""
name: big
nodes: 8
handlers: {w: {outcome: always_fail, retry: {attempts: 1000, backoff: {fixed: 1s}}}}
workload: {streams: [{name: s, handler: w, count: 100000}]}
""")
    with pytest.raises(BudgetError) as err:
        check(estimate(sc), Budget(), "big.yaml")
    text = str(err.value)
    assert "big.yaml" in text and "beyond the budget" in text
    assert "executions" in text  # what drives it
    assert "--budget" in text    # how to raise it


def test_the_guard_stops_a_run_far_past_its_estimate():
    sc = scenario.loads("""
name: g
nodes: 1
handlers: {w: {duration: 1s}}
workload: {streams: [{name: s, handler: w, count: 2000, rate: 10/s}]}
""")
    est = estimate(sc)
    est.events = 100  # pretend the estimate said far less than the run makes
    guard = Guard(est, Budget(events=1000))
    guard.max_events = 1000  # checked every 4,096 events: the first check stops it
    with pytest.raises(RunStopped) as err:
        run(sc, guard=guard)
    assert "estimate" in str(err.value) and "nothing was written" in str(err.value)


def test_a_guarded_run_has_the_same_trace_as_an_unguarded_one(lesson_path):
    sc = scenario.load(lesson_path)
    plain = run(sc)
    guarded = run(sc, guard=Guard(estimate(sc)), progress=lambda f, t: None)
    assert plain.trace_sha256 == guarded.trace_sha256
    assert plain.events == guarded.events > 0


def test_the_cli_refuses_before_running_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "huge.yaml"
    f.write_text("""
name: huge
nodes: 256
executor: {threads: 1024}
handlers: {w: {}}
workload: {streams: [{name: s, handler: w, count: 10000000, rate: 100/s}]}
""")
    assert main(["run", str(f), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "beyond the budget" in err and "--budget" in err
    assert not (tmp_path / "out").exists()
    assert main(["validate", str(f)]) == 2
    assert "refused" in capsys.readouterr().out


def test_validate_shows_the_estimate(lesson_path, capsys):
    assert main(["validate", str(lesson_path)]) == 0
    out = capsys.readouterr().out
    assert "events" in out and "memory" in out


def test_a_stager_is_priced():
    """A part that ticks for the whole run is in the estimate: a stager every 10 ms."""
    text = """
name: st
until: 10m
db: {latency: 1ms}
executor: {wakeup: notify, poll_interval: 1h, stager_interval: 10ms}
nodes: 1
handlers: {w: {}}
workload: {jobs: [{name: a, handler: w}]}
"""
    sc = scenario.loads(text)
    est = estimate(sc).events
    assert 1 / 3 <= run(sc).events / est <= 3


def test_handlers_that_hang_are_priced_by_the_threads_they_hold(tmp_path):
    """A hung run keeps its thread: 3,000 jobs whose runs hang on 2 nodes of 4 threads run
    8 times in all. The estimate once took every job to be taken again every lock time for
    30 days (26 million executions, refused at the default budget); it is now within the
    budget and bounded by the jobs."""
    from jobsim.format.scenario import loads
    from jobsim.sim.cost import DEFAULT_EVENTS, estimate
    from jobsim.sim.world import run

    sc = loads("name: hang\nnodes: 2\nhandlers:\n  w: {duration: 1s, outcome: hang}\n"
               "workload:\n  streams: [{name: s, handler: w, count: 3000, rate: 10/s}]\n")
    est = estimate(sc)
    assert est.events < DEFAULT_EVENTS
    events = run(sc).events
    assert events / 3 <= est.events <= events * 3, (est.events, events)
