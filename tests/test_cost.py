"""The cost estimate before a run, the budget that refuses a run, and the guard that stops one.

Random valid scenarios — written as a newcomer would, with defaults where a newcomer leaves
them — are scaled so that their estimate sits just under a budget; each must then run to its
end and make within 3× of the events its estimate said. Fresh seeds every run (the session's
``fresh_seed``, printed with the command that replays it) beside fixed ones (both ``-m slow``).
``-m long`` does the same at the command line's default budget (by hand: hours).
"""

from __future__ import annotations

import math
import random

import pytest

from jobsim import analyse
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


@pytest.mark.parametrize("count", [40_000, 100_000, 333_333, 2_000_000])
def test_the_budget_it_suggests_is_enough_and_typed_as_a_user_types_it(count):
    """The suggested ``--budget`` is rounded up, never below what the run needs (it was
    rounded to 2 digits either way: 5.3e+05 for 5.34e5), and reads 540000 or 2.4e9."""
    import re

    from jobsim.cli.values import _events, _size

    sc = scenario.loads(f"""
name: big
nodes: 8
handlers: {{w: {{outcome: always_fail, retry: {{attempts: 100, backoff: {{fixed: 1s}}}}}}}}
workload: {{streams: [{{name: s, handler: w, count: {count}}}]}}
""")
    with pytest.raises(BudgetError) as err:
        check(estimate(sc), Budget(), "big.yaml")
    m = re.search(r"--budget (\S+)(?: --memory-budget (\S+))?$", str(err.value))
    assert m and "+" not in m.group(1) and "," not in m.group(1), str(err.value)
    events = _events(m.group(1))
    memory = _size(m.group(2)) if m.group(2) else Budget().memory
    check(estimate(sc), Budget(events=events, memory=memory), "big.yaml")  # enough now


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


def test_a_run_that_a_stranded_job_keeps_to_its_horizon_is_priced_to_it():
    """A crashed node's lock never frees (``lock_expiry: never``): its jobs stay, so a run
    "until drained" lasts to its horizon, and on PostgreSQL every empty poll is simulated.
    The estimate assumed it drained: 239 events for a run of 43,000."""
    sc = scenario.loads("""
name: stranded
until: drained
horizon: 6h
db: {dialect: postgres, latency: 2ms}
executor: {lock_expiry: never, poll_interval: 1s, threads: 2}
nodes: 2
handlers: {h: {duration: 5s}}
workload: {streams: [{name: s, handler: h, count: 20, rate: 1/s}]}
faults: [{at: 3s, crash: node-1}]
""")
    result = run(sc)
    assert result.end_time == 6 * 3600
    assert 1 / 3 <= result.events / estimate(sc).events <= 3


def test_under_the_default_budget_the_guard_stops_at_10x_the_estimate():
    """The default budget is not consent to a run 100× its estimate; a raised one is."""
    from jobsim.sim.cost import GUARD_MIN_EVENTS, Estimate

    small = Estimate(events=12_000, memory_bytes=1e6)
    assert Guard(small).max_events == GUARD_MIN_EVENTS
    assert Guard(small, Budget(events=DEFAULT_EVENTS)).max_events == GUARD_MIN_EVENTS
    assert Guard(Estimate(events=5e6, memory_bytes=1e6)).max_events == 5e7
    assert Guard(small, Budget(events=3e8)).max_events == 3e8


#: runs the fuzz over the whole format found more than 10x past their estimate, each shrunk
#: (the ratio each made before the estimate learned its cause)
MISSED = {
    # 11.9x: a serial queue runs its jobs one after another; priced as if side by side
    "serial_queue": """
name: serial_queue_span
executor: {poll_interval: 100ms}
nodes: 1
db: {connections: 1}
handlers: {w: {duration: 40s}}
workload: {streams: [{handler: w, count: 10, queue: q}]}
""",
    # 22.6x: a drained run goes on to its last operation
    "late_operation": """
name: late_operation_span
executor: {poll_interval: 1s}
db: {dialect: postgres}
nodes: 1
handlers: {w: {}}
workload: {jobs: [{handler: w, name: j}]}
operations: [{at: 10m, activate: j}]
""",
    # 11.1x: the CPU model's statements take several events each
    "cpu_model": """
name: cpu_model_polls
until: 10m
executor: {poll_interval: 1s}
nodes: 1
handlers: {w: {duration: {uniform: {low: 5s, high: 20s}}}}
workload: {streams: [{handler: w, count: 2}]}
db: {dialect: postgres, cpu: {cores: 1}}
""",
    # 15.6x: a crashed node's job waits a lock time for another node, every poll simulated
    "crash_recovery": """
name: crash_recovery_span
executor: {poll_interval: 1s}
db: {latency: 1ms}
nodes: [{name: a, start_at: 0s}, {name: b, start_at: 500ms}]
handlers: {w: {duration: 2s}}
workload: {jobs: [{handler: w}]}
faults: [{at: 1s, crash: a}]
""",
    # 26.5x: calls a rate limit refuses fail, and their retries come back together
    "refused_calls": """
name: refused_calls_retry
policy: skip_locked
nodes: 1
services:
  api: {rate_limit: {rate: 1}}
handlers:
  w: {calls: [api]}
workload: {streams: [{handler: w, count: 8}]}
db: {dialect: postgres}
""",
    # 22.9x: exhausted: failed priced as if a failure ended the job; it retries first
    "exhausted_failed": """
name: exhausted_failed_retries
executor: {exhausted: failed, heartbeat: 1s, retry: {attempts: 3, backoff: {fixed: 5m}}}
nodes: 3
handlers: {w: {outcome: {fail_rate: 0.1}}}
workload: {streams: [{handler: w, count: 15}]}
""",
    # 61x: a call with no timeout into an outage that never answers waits for ever: the run
    # goes on to its horizon, every poll simulated
    "silent_outage": """
name: silent
db: {dialect: postgres}
executor: {poll_interval: 1s}
horizon: 2h
nodes: 1
services: {api: {outages: [{at: 0s, for: 1m, fail: timeout}]}}
handlers: {w: {calls: [api]}}
workload: {jobs: [{handler: w}]}
""",
    # 46x: a call whose timeout its service's latency always passes fails every run, and the
    # retries' backoff (Oban's 15 s + 2^n s) carries the run far past its work
    "timeout_below_latency": """
name: timeout_below_latency
policy: skip_locked
db: {dialect: postgres, latency: 2ms}
horizon: 30m
nodes: 1
services: {api: {latency: 150ms}}
handlers: {w: {calls: [{service: api, timeout: 100ms}]}}
workload: {jobs: [{handler: w}, {handler: w}]}
""",
    # 288x: polls go on after the work drained, while a hung call keeps the run to its
    # horizon (the share of time the threads were busy was taken over the whole run)
    "polls_after_the_work": """
name: polls_after
horizon: 1h
db: {latency: 1ms}
executor: {poll_interval: 2s}
nodes: 3
services: {svc: {capacity: 1, when_full: refuse, outages: [{at: 0s, for: 10s, fail: timeout}]}}
handlers: {w: {calls: [svc]}}
workload: {jobs: [{handler: w}]}
""",
    # 11.5x: a node cut off loses its completion; the job waits for its lock to expire
    "partition_lost_write": """
name: partition_lost
executor: {poll_interval: 1s, lock_time: 2m}
db: {latency: 1ms}
nodes: 2
handlers: {w: {duration: 2s}}
workload: {jobs: [{handler: w}]}
faults: [{at: 1s, partition: node-1, for: 30s, timeout: 1s}]
""",
}


def test_the_unluckiest_job_sets_how_long_retries_go_on():
    """With a failure rate p, the last of n jobs keeps failing about log(n)/log(1/p) times:
    a drained run lasts until its chain of backoffs ends, not the average job's."""
    from types import SimpleNamespace

    from jobsim.sim.cost.work import _most_executions

    h = SimpleNamespace(outcome="fail_rate", fail_rate=0.5)
    assert _most_executions(h, 30, 1024) == 11
    assert _most_executions(h, 5, 1024) == 5  # no more than the attempts
    assert _most_executions(SimpleNamespace(outcome="succeed"), 30, 1024) == 1


def test_a_job_handed_back_for_ever_at_one_instant_is_refused_as_a_run_that_never_ends(
        tmp_path, capsys):
    """No run time, no wait, no backoff, and a worker that hands every failure back
    unchanged: the run loops at t=0 for ever (the guard stopped it after a million events
    and half a minute); it is refused before it starts, naming why."""
    path = tmp_path / "livelock.yaml"
    path.write_text("""
name: livelock
policy: zeebe_like
horizon: 10m
nodes: 1
handlers: {w: {outcome: always_fail, fail_retries: unchanged}}
workload: {jobs: [{handler: w}]}
""")
    with pytest.raises(BudgetError, match="would never end: jobs of 'w' \\(no run time"):
        check(estimate(scenario.load(path)), Budget(), "livelock")
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "would never end" in err and "fix:" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", sorted(MISSED))
def test_runs_the_estimate_once_missed_by_over_10x_are_within_3x(name):
    sc = scenario.loads(MISSED[name])
    ratio = run(sc).events / estimate(sc).events
    assert 1 / 3 <= ratio <= 3, f"{name}: {ratio:.2f}x its estimate"


def test_a_breaker_that_fails_runs_at_once_with_retries_handed_back_is_a_livelock(tmp_path):
    """The final 20,000-run fuzz (seed 213989196797, the guard stopped it after a million
    events at t=5.2 s): the Zeebe-like server, a zero-latency database, no backoff, a worker
    that hands failures back unchanged, and a run whose first call has a circuit breaker.
    Once the service's outage opens the breaker, each run fails at once and is activated
    again at the same instant: refused as a run that never ends, naming the breaker."""
    path = tmp_path / "breaker.yaml"
    path.write_text("""
name: breaker-livelock
policy: zeebe
until: 10m
nodes: 1
services: {svc: {latency: 300ms, outages: [{at: 5s, for: 10s}]}}
handlers:
  h:
    calls: [{service: svc, timeout: 2s, breaker: {after: 3, open_for: 5s}}]
    fail_retries: unchanged
workload: {streams: [{handler: h, count: 30, rate: 1/s}]}
""")
    with pytest.raises(BudgetError, match="would never end: jobs of 'h' \\(while its first "
                                          "call's circuit breaker is open"):
        check(estimate(scenario.load(path)), Budget(), "breaker")
    # without the outage nothing fails: the breaker never opens, and the run is estimated
    calm = scenario.loads(path.read_text().replace(", outages: [{at: 5s, for: 10s}]", ""))
    assert math.isfinite(estimate(calm).events)


def test_an_operators_fail_of_every_activated_job_ends_what_a_crash_held(lesson_path, capsys):
    """A crashed worker's activated job waits for ever on the Zeebe-like server, unless
    something hands it back: a server restart, or an operator's ``fail: all`` after the crash.
    The estimate counted only the restart, and priced zeebe_like.yaml's operator-fail variant
    (drained at about 4 minutes) to its 30-day horizon."""
    sc = scenario.loads("""
name: held
until: drained
horizon: 30d
policy: zeebe_like
nodes: 2
handlers: {h: {duration: 5s}}
workload: {streams: [{name: s, handler: h, count: 20, rate: 1/s}]}
faults: [{at: 4s, crash: node-2}]     # it holds the first jobs then (node-1 none)
operations: [{at: 1m, fail: all, retries: 3}]
""")
    result = run(sc)
    assert analyse(result).summary["crash_recovery"]["stranded_jobs"] >= 1
    assert 60 <= result.end_time <= 120
    assert result.end_time / 3 <= estimate(sc).span <= result.end_time * 3
    assert main(["validate", str(lesson_path.parent / "zeebe_like.yaml")]) == 0
    out = capsys.readouterr().out
    assert "days of simulated time" not in out, out
