"""The jitter forms of the exponential backoff: full, equal and decorrelated beside the
symmetric fraction. Each form's draws stay within its bounds and average what it should; a
decorrelated delay grows from the job's previous one; a burst of failures retried with a
fixed delay comes back as one spike, and full jitter spreads it."""

import math

import numpy as np
import pytest

import jobsim
from jobsim.base.errors import ScenarioError
from jobsim.base.rng import Streams
from jobsim.database.rows import Row
from jobsim.database.store import Store
from jobsim.executor.retry import ExponentialBackoff, RetryPolicy

N = 20_000


def _stream(seed: int = 1):
    return Streams(seed).stream("retry/jitter/n")


@pytest.mark.parametrize("form, share", [("full", 0.5), ("equal", 0.75)])
def test_full_and_equal_stay_within_bounds_and_average_their_share(form, share):
    b = ExponentialBackoff(10.0, 2.0, cap=300.0, jitter=form, offset=5.0)
    s = _stream()
    for k in (1, 2, 3, 6, 10):
        d = b._raw(k)  # min(cap, offset + base × factor^(k−1)): the offset is jittered too
        lo, hi = b.bounds(k)
        assert (lo, hi) == ((0.0 if form == "full" else d / 2), d)
        draws = np.array([b.delay(k, s) for _ in range(N)])
        assert draws.min() >= lo and draws.max() <= hi
        assert draws.mean() == pytest.approx(share * d, rel=0.02)
        assert b.mean(k) == pytest.approx(share * d)
        assert b.delay(k) == pytest.approx(share * d)  # no stream: the middle of the draw
    assert b.describe() == f"5s + exponential 10s ×2 cap 300s, {form} jitter"


def test_the_numeric_jitter_is_as_before():
    b = ExponentialBackoff(1.0, 2.0, 30.0, 0.1)
    s = _stream(3)
    draws = [b.delay(4, s) for _ in range(N)]
    assert min(draws) >= 7.2 and max(draws) <= 8.8 and b.bounds(4) == (7.2, 8.8)
    assert np.mean(draws) == pytest.approx(8.0, rel=0.01)
    assert b.describe() == "exponential 1s ×2 cap 30s ±10%"


def test_decorrelated_grows_from_the_previous_delay_within_its_bounds():
    base, cap = 1.0, 300.0
    b = ExponentialBackoff(base, 2.0, cap=cap, jitter="decorrelated")
    s = _stream(5)
    firsts = []
    for _ in range(2_000):
        previous = None
        for k in range(1, 12):
            d = b.delay(k, s, previous)
            top = 3.0 * (base if previous is None else previous)
            assert base <= d <= min(cap, top)
            lo, hi = b.bounds(k, previous)
            assert lo == base and hi == min(cap, top) and lo <= d <= hi
            slo, shi = b.bounds(k)  # over every history: base .. base × 3^k
            assert slo <= d <= shi and shi == min(cap, base * 3.0 ** k)
            if k == 1:
                firsts.append(d)
            previous = d
    assert np.mean(firsts) == pytest.approx(2.0 * base, rel=0.03)  # U(base, 3 base)
    # min(cap, U(...)): a delay drawn past the cap is the cap
    assert b.delay(1, None, previous=cap) == cap
    assert b.describe() == "decorrelated U(1s, 3 × the previous delay) cap 300s"


def test_decorrelated_starts_from_offset_plus_base():
    b = ExponentialBackoff(2.0, jitter="decorrelated", offset=15.0)
    assert b.bounds(1) == (17.0, 51.0) and b.delay(1) == 34.0


def test_the_named_forms_survive_endless_failures():
    """Uncapped, a delay past a float's range is infinite (never due again), never nan."""
    s = _stream(7)
    for form in ("full", "equal"):
        b = ExponentialBackoff(1.0, 2.0, jitter=form)
        assert b.delay(1025, s) == math.inf and b.bounds(1025) == (math.inf, math.inf)
    b = ExponentialBackoff(1.0, 2.0, jitter="decorrelated")
    previous = None
    for k in range(1, 3000):
        previous = b.delay(k, s, previous)
        assert not math.isnan(previous)
    assert b.bounds(5000)[1] == math.inf and not math.isnan(b.mean(5000))
    assert b.delay(1, s, previous=1e308) == math.inf


def test_a_retry_policy_hands_the_previous_delay_on():
    policy = RetryPolicy(5, ExponentialBackoff(1.0, jitter="decorrelated"))
    assert policy.on_failure(5, 2, None, previous=10.0).delay == 15.5  # U = 1/2 of 1..30


def test_the_store_keeps_the_last_delay_until_a_revival():
    store = Store()
    store.insert(Row(1, "async", "w", 0, 0.0, 0.0, 3))
    assert store.get(1).last_delay is None
    store.reschedule(1, 12.5, 2, "boom", delay=2.5)
    assert store.get(1).last_delay == 2.5
    store.move(1, "deadletter_job", error="boom")
    assert store.get(1).last_delay == 2.5
    store.revive(1, 100.0, 3)
    assert store.get(1).last_delay is None and store.get(1).failures == 0


# --- the scenario file ----------------------------------------------------------------------

def _doc(backoff, seed=1, count=200, attempts=2, outcome=None, **extra):
    return {"name": "jitter", "seed": seed, "until": "drained",
            "executor": {"wakeup": "notify", "threads": 256, "batch_size": 500,
                         "queue_size": 0, "poll_interval": "100ms",
                         "retry": {"attempts": attempts, "backoff": backoff}},
            "nodes": 1,
            "handlers": {"w": {"duration": "10ms",
                               "outcome": outcome or {"fail_first": 1}}},
            "workload": {"streams": [{"name": "burst", "handler": "w", "count": count}]},
            **extra}


def _problems(backoff, where="retry"):
    doc = _doc({"fixed": "1s"})
    if where == "retry":
        doc["executor"]["retry"]["backoff"] = backoff
    else:
        doc["handlers"]["w"]["fail_wait"] = backoff
    with pytest.raises(ScenarioError) as e:
        jobsim.from_dict(doc)
    return [(p.path, p.expected, p.got) for p in e.value.problems]


@pytest.mark.parametrize("form", ["full", "equal", "decorrelated", 0.25, 0, 1])
def test_the_jitter_key_takes_a_fraction_or_a_form(form):
    sc = jobsim.from_dict(_doc({"exponential": {"base": "1s", "cap": "5m", "jitter": form}}))
    assert sc.executor.retry.backoff.jitter == form


@pytest.mark.parametrize("bad", ["ful", 1.5, -0.1, True, "Full", None])
def test_a_wrong_jitter_is_refused_naming_what_is_expected(bad):
    [(path, expected, got)] = _problems({"exponential": {"base": "1s", "jitter": bad}})
    assert path == "executor.retry.backoff.exponential.jitter"
    assert expected == "a number from 0 to 1 or one of full, equal, decorrelated"
    assert got == repr(bad)


def test_a_workers_fail_wait_takes_full_and_equal_but_not_decorrelated():
    for form in ("full", "equal", 0.2):
        doc = _doc({"fixed": "1s"})
        doc["handlers"]["w"]["fail_wait"] = {"exponential": {"base": "1s", "jitter": form}}
        assert jobsim.from_dict(doc).handlers["w"].fail_wait.jitter == form
    [(path, expected, got)] = _problems({"exponential": {"base": "1s",
                                                         "jitter": "decorrelated"}}, "wait")
    assert path == "handlers.w.fail_wait.exponential.jitter"
    assert "full or equal" in expected and "not decorrelated" in expected
    assert got == "'decorrelated'"


# --- runs -----------------------------------------------------------------------------------

def _busiest_second(times: np.ndarray) -> int:
    """The most executions that start within any one second."""
    t = np.sort(times)
    return int((np.searchsorted(t, t + 1.0, side="left") - np.arange(len(t))).max())


def _retries(result):
    df = jobsim.trace_frame(result.trace)
    return df[(df["kind"] == "exec_start") & (df["attempt"] == 2)]["time"].to_numpy()


def test_a_fixed_delay_brings_a_burst_back_as_a_spike_and_full_jitter_spreads_it():
    fixed = jobsim.run(jobsim.from_dict(_doc({"fixed": "10s"})))
    spread = jobsim.run(jobsim.from_dict(_doc(
        {"exponential": {"base": "10s", "factor": 1, "jitter": "full"}})))
    for r in (fixed, spread):
        assert len(_retries(r)) == 200 and jobsim.analyse(r).violations == []
    assert _busiest_second(_retries(fixed)) == 200  # all in one instant
    assert np.ptp(_retries(fixed)) == 0.0
    assert _busiest_second(_retries(spread)) <= 40
    assert np.ptp(_retries(spread)) > 9.0  # over the whole 10 s window


def _delays(result):
    """Each job's retry delays, in order (``x`` is the new due time)."""
    df = jobsim.trace_frame(result.trace)
    rs = df[df["kind"] == "retry_scheduled"]
    return {j: (g["x"] - g["time"]).tolist() for j, g in rs.groupby("job")}


def test_decorrelated_delays_in_a_run_grow_from_each_jobs_previous_one():
    r = jobsim.run(jobsim.from_dict(_doc(
        {"exponential": {"base": "1s", "cap": "10m", "jitter": "decorrelated"}},
        count=100, attempts=8, outcome="always_fail")))
    delays = _delays(r)
    assert len(delays) == 100 and all(len(d) == 7 for d in delays.values())
    for d in delays.values():
        assert 1.0 - 1e-9 <= d[0] <= 3.0 + 1e-9
        for prev, cur in zip(d, d[1:]):
            assert 1.0 - 1e-9 <= cur <= 3.0 * prev + 1e-6
    assert len({tuple(d) for d in delays.values()}) == 100  # every job its own schedule
    assert jobsim.analyse(r).violations == []


def test_a_revived_job_starts_its_decorrelated_delays_again():
    r = jobsim.run(jobsim.from_dict(_doc(
        {"exponential": {"base": "1s", "jitter": "decorrelated"}}, count=50, attempts=3,
        outcome="always_fail", operations=[{"at": "10m", "move": "all", "retries": 3}])))
    df = jobsim.trace_frame(r.trace)
    rs = df[(df["kind"] == "retry_scheduled") & (df["time"] > 600.0)]
    first = rs.groupby("job").head(1)
    assert len(first) == 50
    assert ((first["x"] - first["time"]) <= 3.0 + 1e-9).all()
    assert jobsim.analyse(r).violations == []


def test_the_check_holds_a_decorrelated_delay_to_three_times_the_previous(monkeypatch):
    """A backoff that waits 3.5 × the previous delay breaks ``retries_follow_policy``,
    though it stays within the bounds over every history most of the time."""
    def too_long(self, failure, u, previous):
        return self._low() if previous is None else 3.5 * previous

    monkeypatch.setattr(ExponentialBackoff, "_named", too_long)
    r = jobsim.run(jobsim.from_dict(_doc(
        {"exponential": {"base": "1s", "jitter": "decorrelated"}}, count=3, attempts=4,
        outcome="always_fail")))
    broken = [v for v in jobsim.analyse(r).violations if v.invariant == "retries_follow_policy"]
    assert len(broken) == 6  # failures 2 and 3 of each job


@pytest.mark.parametrize("form", ["full", "equal", "decorrelated"])
def test_the_same_seed_gives_the_same_trace_and_fresh_seeds_hold_the_bounds(form, fresh_seed):
    backoff = {"exponential": {"base": "2s", "cap": "1m", "jitter": form}}
    sc = jobsim.from_dict(_doc(backoff, count=40, attempts=5, outcome={"fail_rate": 0.6}))
    assert jobsim.run(sc).trace_sha256 == jobsim.run(sc).trace_sha256
    b = sc.executor.retry.backoff
    for seed in [1 + (fresh_seed + i) % (2**31 - 1) for i in range(3)]:  # 1 … 2**31 - 1
        one, two = jobsim.run(sc, seed=seed), jobsim.run(sc, seed=seed)
        assert one.trace_sha256 == two.trace_sha256, f"seed {seed}"
        assert jobsim.analyse(one).violations == [], f"seed {seed}"
        for d in _delays(one).values():
            for k, x in enumerate(d, 1):
                lo, hi = b.bounds(k)
                assert lo - 1e-9 <= x <= hi + 1e-9, f"seed {seed}: delay {k} {x}"
