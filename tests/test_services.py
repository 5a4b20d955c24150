"""Downstream services: the token bucket, capacity, outages, brown-outs, recovery held by
load, handlers that call services, circuit breakers, Python handlers, and bad input."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import jobsim
from jobsim.base.errors import ScenarioError


def scenario(services, calls, count=1, threads=1, rate=None, nodes=1, retry=None, **extra):
    doc = {"name": "svc", "until": "drained",
           "executor": {"acquisition": "skip_locked", "wakeup": "notify", "threads": threads,
                        "batch_size": threads, "poll_interval": "1s", "lock_time": "1h",
                        "retry": retry or {"attempts": 1}},
           "nodes": nodes, "services": services,
           "handlers": {"h": {"calls": calls}},
           "workload": {"streams": [{"handler": "h", "count": count,
                                     **({"rate": rate} if rate else {})}]}}
    doc.update(extra)
    return jobsim.from_dict(doc)


def frames(sc, seed=None):
    res = jobsim.run(sc, seed)
    df = jobsim.trace_frame(res.trace)
    return res, df[df.kind == "service_call"], df[df.kind == "service_reply"], df


def test_token_bucket_wait_spaces_calls_by_hand():
    """Rate 10/s, burst 10, 100 jobs at once on 20 threads, calls that wait for a token:
    the bucket is full at the first call, so calls 0-9 pass at once and call k (k >= 10)
    gets its token (k - 9) × 0.1 s later."""
    sc = scenario({"pay": {"rate_limit": {"rate": "10/s", "burst": 10, "over": "wait"}}},
                  ["pay"], count=100, threads=20)
    _, calls, replies, _ = frames(sc)
    assert len(calls) == len(replies) == 100
    t0 = calls.time.min()
    admitted = np.sort((replies.time - replies.x + replies.c / 1e6).to_numpy())
    expected = t0 + np.maximum(0, np.arange(100) - 9) * 0.1
    np.testing.assert_allclose(admitted, expected, atol=1e-9)
    assert (replies.a == 0).all()


def _bucket_by_hand(times, rate, burst):
    """A token bucket replayed on the call instants: which calls find a token."""
    tokens, last, out = float(burst), 0.0, []
    for t in times:
        tokens = min(burst, tokens + (t - last) * rate)
        last = t
        if tokens >= 1:
            tokens -= 1
            out.append(True)
        else:
            out.append(False)
    return out


def test_token_bucket_refuse_matches_replay():
    sc = scenario({"pay": {"latency": "50ms",
                           "rate_limit": {"rate": "10/s", "burst": 10}}},
                  ["pay"], count=100, threads=20,
                  retry={"attempts": 50, "backoff": {"fixed": "300ms"}})
    _, calls, replies, _ = frames(sc)
    got = replies.sort_values("b").a.to_numpy()
    passed = _bucket_by_hand(calls.sort_values("b").time.to_numpy(), 10.0, 10)
    assert list(got != 4) == passed
    assert (got == 4).sum() > 0 and (got == 0).sum() == 100


def test_the_peak_load_leaves_out_the_calls_a_rate_limit_refused():
    """A rate limit's 429s never reach the service: its peak calls a second are those that
    did (at most the limit's rate plus its burst in any second), while the calls made,
    refused ones too, are many more."""
    sc = scenario({"pay": {"latency": "50ms",
                           "rate_limit": {"rate": "10/s", "burst": 10}}},
                  ["pay"], count=100, threads=20,
                  retry={"attempts": 50, "backoff": {"fixed": "300ms"}})
    res, calls, replies, _ = frames(sc)
    figures = jobsim.analyse(res).summary["services"]["pay"]
    assert figures["errors"]["rate_limited"] > 0
    reached = replies[replies.a != 4]
    # binned by the instant each was made, as the load is
    per_second = np.bincount(calls.set_index("b").loc[reached.b, "time"].to_numpy()
                             .astype(int))
    made = np.bincount(calls.time.to_numpy().astype(int))
    assert figures["peak_calls_per_s"] == per_second.max() <= 10 + 10 < made.max()


def test_the_service_table_adds_up_and_names_the_callers_that_left():
    """report.md's table per service: its answers add up to its calls (a fenced call whose
    caller had left counted among the never answered as well), and where keys, fencing or
    callers that left are in a run, their rows are there: double_charges is about the
    effects made after the caller gave up."""
    from pathlib import Path

    from jobsim.output.service_report import service_section

    here = Path(__file__).resolve().parent.parent / "scenarios"
    analyses = [jobsim.analyse(jobsim.run(sc))
                for sc in jobsim.load_variants(here / "double_charges.yaml")]
    for a in analyses:
        f = a.summary["services"]["payments"]
        answered = f["ok"] + sum(f["errors"].values()) + f["replayed"] + f["unanswered"]
        assert answered <= f["calls"] <= answered + f["fenced"], (a.name, f)
        if not f["fenced"]:
            assert answered == f["calls"], (a.name, f)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:]
            for line in service_section(analyses) if line.startswith("| ") and " | " in line}
    names = [a.name for a in analyses]
    for label, key in (("ended after its caller timed out", "completed_after_timeout"),
                       ("… of those, took effect (nobody heard)", "effects_after_caller_left"),
                       ("replayed: its key's remembered answer", "replayed"),
                       ("refused: a stale fencing token", "fenced")):
        want = [f"{a.summary['services']['payments'][key]:,}" for a in analyses]
        assert [c.strip(" |") for c in rows[label]] == want, (label, names)
    assert "ended after its caller crashed" not in rows  # no run had one: no row
    storm = [jobsim.analyse(jobsim.run(sc, seed=1)) for sc in
             jobsim.load_variants(here / "retry_storm.yaml")[:1]]
    assert not any("fencing" in line or "replayed" in line for line in service_section(storm))


def test_capacity_queues_or_refuses():
    svc = {"latency": "1s", "capacity": 2}
    _, calls, replies, _ = frames(scenario({"pay": svc}, ["pay"], count=4, threads=4))
    t0 = calls.time.min()
    assert sorted((replies.time - t0).round(9)) == [1, 1, 2, 2]
    assert sorted((replies.c / 1e6).round(6)) == [0, 0, 1, 1]
    _, _, replies, _ = frames(scenario({"pay": {**svc, "when_full": "refuse"}}, ["pay"],
                                       count=4, threads=4))
    assert sorted(replies.a) == [0, 0, 3, 3]


def test_outage_fails_fast_then_recovers():
    sc = scenario({"pay": {"latency": "10ms", "outages": [{"at": "0s", "for": "30s"}],
                           "error": "bureau 502"}},
                  ["pay"], count=1, retry={"attempts": 10, "backoff": {"fixed": "10s"}})
    res, calls, replies, df = frames(sc)
    assert list(replies.a) == [1, 1, 1, 0]  # at ~0, 10, 20: down; at 30: up
    ends = df[df.kind == "exec_end"]
    assert set(ends.text[ends.a == 0]) == {"bureau 502"}
    s = jobsim.analyse(res).summary["services"]["pay"]
    assert s["calls_in_outage"] == 3 and s["attempts_in_outage"] == 3
    assert s["time"]["down"] == 30.0 and s["recovered_at"] == 30.0


def test_outage_that_times_out_ends_at_the_callers_timeout():
    sc = scenario({"pay": {"outages": [{"at": "0s", "for": "1h", "fail": "timeout"}]}},
                  [{"service": "pay", "timeout": "2s"}], count=1)
    _, calls, replies, df = frames(sc)
    assert list(replies.a) == [2]
    assert replies.time.iloc[0] - calls.time.iloc[0] == pytest.approx(2.0)
    assert df[df.kind == "exec_end"].text.iloc[0] == "pay timed out after 2s"


def test_worker_timeout_cuts_a_call_without_its_own_timeout():
    doc_sc = scenario({"pay": {"outages": [{"at": "0s", "for": "1h", "fail": "timeout"}]}},
                      ["pay"], count=1)
    h = doc_sc.document["handlers"]["h"]
    h["worker_timeout"] = "3s"
    sc = jobsim.from_dict(doc_sc.document)
    _, calls, replies, df = frames(sc)
    end = df[df.kind == "exec_end"]
    assert end.text.iloc[0] == "processing took too long"
    assert end.time.iloc[0] - calls.time.iloc[0] == pytest.approx(3.0)


def test_brownout_slows_and_fails_a_share():
    sc = scenario({"pay": {"latency": "100ms",
                           "brownouts": [{"at": "0s", "for": "1h", "latency_factor": 3,
                                          "error_share": 0.25}]}},
                  ["pay"], count=2000, threads=50)
    _, _, replies, _ = frames(sc)
    share = (replies.a == 1).mean()
    assert abs(share - 0.25) < 0.04, share
    assert np.allclose(replies.x - replies.c / 1e6, 0.3)


def test_recovery_is_held_while_the_load_stays_high():
    """Down for 10 s; calls keep coming at 20/s (fixed 1 s retries of 20 jobs) until the jobs
    run out at 15 s; recovery needs under 5 calls/s over 5 s."""
    sc = scenario({"pay": {"outages": [{"at": "0s", "for": "10s"}],
                           "recovery": {"below": "5/s", "over": "5s"}}},
                  ["pay"], count=20, threads=20,
                  retry={"attempts": 16, "backoff": {"fixed": "1s"}}, until="60s")
    res, calls, replies, df = frames(sc)
    states = df[df.kind == "service_state"]
    assert list(states.a) == [1, 1, 0] and list(states.b) == [0, 1, 0]
    up = states.time.iloc[-1]
    assert up > 10.0
    # at the instant it comes back, at most 25 calls lie in the last 5 s …
    window = calls.time[(calls.time + 5 > up) & (calls.time <= up)]
    assert len(window) <= 25
    # … and just before it, more did
    before = calls.time[(calls.time + 5 > up - 1e-6) & (calls.time <= up - 1e-6)]
    assert len(before) > 25
    s = jobsim.analyse(res).summary["services"]["pay"]
    assert s["time"]["held"] == pytest.approx(up - 10.0)


def test_side_effect_is_the_marked_call_even_when_a_later_call_fails():
    sc = scenario({"pay": {}, "mail": {"outages": [{"at": "0s", "for": "15s"}]}},
                  [{"service": "pay", "effect": True}, "mail"], count=1,
                  retry={"attempts": 3, "backoff": {"fixed": "10s"}})
    res, *_ = frames(sc)
    a = jobsim.analyse(res)
    # paid three times: the mail failed at 0 s and 10 s, after each payment
    assert a.summary["duplicate_side_effects"]["total"] == 2
    assert a.summary["jobs"]["done"] == 1


def test_breaker_opens_after_failures_and_calls_fail_without_reaching_the_service():
    sc = scenario({"pay": {"outages": [{"at": "0s", "for": "1h"}]}},
                  [{"service": "pay", "breaker": {"after": 3, "open_for": "30s"}}],
                  count=1, retry={"attempts": 10, "backoff": {"fixed": "1s"}})
    _, calls, _, df = frames(sc)
    ends = df[df.kind == "exec_end"]
    assert list(ends.text[:4]) == ["pay 503 service unavailable"] * 3 + ["pay circuit open"]
    assert len(calls) == 3  # the open breaker kept the other 7 from the service


def test_a_handler_that_calls_no_service_adds_no_service_events():
    sc = jobsim.from_dict({"name": "plain", "nodes": 1, "handlers": {"h": {"duration": "1s"}},
                           "workload": {"jobs": [{"handler": "h"}]}})
    res = jobsim.run(sc)
    assert "services" not in jobsim.analyse(res).summary
    assert res.scenario.services == {}


@pytest.mark.slow  # 7 CPU s: three children; the default tier's test_determinism holds the property
def test_same_seed_same_trace_under_any_hash_seed():
    code = ("import jobsim;"
            "print(jobsim.run(jobsim.load('scenarios/retry_storm.yaml'), 3).trace_sha256)")
    out = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": h}, check=True).stdout
           for h in ("0", "123")}
    assert len(out) == 1


def breaker_handler(ctx):
    """A worker-side circuit breaker in Python: 3 failures open it for 20 s."""
    m = ctx.memory
    if m.get("open_until", -1) > ctx.now:
        raise jobsim.JobFailed("circuit open")
    reply = yield from ctx.call("pay", timeout=1.0)
    if not reply.ok:
        m["fails"] = m.get("fails", 0) + 1
        if m["fails"] >= 3:
            m["open_until"], m["fails"] = ctx.now + 20.0, 0
        raise jobsim.JobFailed(reply.error)
    m["fails"] = 0
    yield ctx.wait(0.01 + 0.01 * ctx.random.uniform())


def test_python_handler_runs_and_is_deterministic():
    base = scenario({"pay": {"outages": [{"at": "0s", "for": "60s"}]}}, ["pay"], count=5,
                    threads=5, retry={"attempts": 20, "backoff": {"fixed": "5s"}})
    sc = jobsim.with_handler(base, "h", breaker_handler)
    r1, calls, _, df = frames(sc)
    ends = df[df.kind == "exec_end"]
    assert "circuit open" in set(ends.text)
    assert jobsim.analyse(r1).summary["jobs"]["done"] == 5
    assert jobsim.run(sc).trace_sha256 == r1.trace_sha256
    assert len(calls) < len(ends)  # the open breaker kept calls from the service


def test_python_handler_errors_name_the_handler():
    base = scenario({"pay": {}}, ["pay"])

    def not_a_generator(ctx):
        return 1

    with pytest.raises(ScenarioError, match=r"handlers\.h: expected a generator function"):
        jobsim.with_handler(base, "h", not_a_generator)
    with pytest.raises(ScenarioError, match=r"handlers\.nope"):
        jobsim.with_handler(base, "nope", breaker_handler)

    def yields_a_number(ctx):
        yield 5

    with pytest.raises(ScenarioError, match=r"handlers\.h: expected a SimPy event .*got 5"):
        jobsim.run(jobsim.with_handler(base, "h", yields_a_number))

    def calls_unknown(ctx):
        yield from ctx.call("stripe")

    with pytest.raises(ScenarioError, match=r"handlers\.h: expected a call to a declared "
                                            r"service \(pay\).*'stripe'"):
        jobsim.run(jobsim.with_handler(base, "h", calls_unknown))


@pytest.mark.parametrize("services,calls,message", [
    ({"pay": {}}, ["stripe"], "handlers.h.calls[0]: expected the name of a service"),
    ({"pay": {"capacity": -1}}, ["pay"], "services.pay.capacity: expected an integer from 1"),
    ({"pay": {"rate_limit": {"rate": "0/s"}}}, ["pay"],
     "services.pay.rate_limit.rate: expected a rate above zero"),
    ({"pay": {"outages": [{"at": "0s", "for": "10s"}, {"at": "5s", "for": "10s"}]}}, ["pay"],
     "services.pay.outages[1]: expected a window that starts after outages[0] ends"),
])
def test_bad_input_exits_2_with_the_path(tmp_path, services, calls, message):
    import yaml
    doc = {"name": "bad", "nodes": 1, "services": services, "handlers": {"h": {"calls": calls}},
           "workload": {"jobs": [{"handler": "h"}]}}
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(doc))
    p = subprocess.run([sys.executable, "-m", "jobsim", "run", str(f), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()


def test_drawn_keys_beside_calls_are_refused():
    with pytest.raises(ScenarioError, match=r"handlers\.h\.duration: expected no duration "
                                            r"beside calls"):
        jobsim.from_dict({"name": "x", "nodes": 1, "services": {"pay": {}},
                          "handlers": {"h": {"calls": ["pay"], "duration": "1s"}},
                          "workload": {"jobs": [{"handler": "h"}]}})


@pytest.mark.parametrize("seed", [1, 2, "fresh"])
def test_fuzz_service_accounting(seed, request):
    """Every call is answered at most once, and the summary adds up, for random settings
    (two fixed seeds and the session's fresh one, printed for replay)."""
    if seed == "fresh":
        seed = request.getfixturevalue("fresh_seed") % 2**24
    rng = np.random.default_rng(seed)
    svc = {"latency": f"{int(rng.integers(1, 500))}ms",
           "capacity": int(rng.integers(1, 10)),
           "when_full": str(rng.choice(["queue", "refuse"])),
           "rate_limit": {"rate": f"{int(rng.integers(1, 50))}/s",
                          "burst": int(rng.integers(1, 10)),
                          "over": str(rng.choice(["refuse", "wait"]))},
           "outages": [{"at": f"{int(rng.integers(0, 20))}s", "for": "15s",
                        "fail": str(rng.choice(["fast", "timeout"]))}],
           "brownouts": [{"at": "40s", "for": "10s", "latency_factor": 2,
                          "error_share": 0.3}]}
    sc = scenario({"pay": svc}, [{"service": "pay", "timeout": "3s"}], count=60, threads=8,
                  nodes=2, rate="5/s", retry={"attempts": 5, "backoff": {"fixed": "2s"}})
    res, calls, replies, _ = frames(sc, seed)
    assert replies.b.is_unique, f"seed {seed}"
    assert set(replies.b) <= set(calls.b), f"seed {seed}"
    s = jobsim.analyse(res).summary
    p = s["services"]["pay"]
    assert p["ok"] + sum(p["errors"].values()) + p["unanswered"] == p["calls"], f"seed {seed}"
    assert s["jobs"]["lost"] == 0 and s["invariants"]["no_job_lost"] == 0, f"seed {seed}"
    assert math.isclose(sum(p["time"][k] for k in ("up", "down", "brownout")),
                        res.end_time, abs_tol=1e-6), f"seed {seed}"


def test_lint_names_a_call_that_can_hang_its_thread():
    from jobsim.format.lint import lint
    sc = scenario({"slow": {"outages": [{"at": "10s", "for": "1m", "fail": "timeout"}]}},
                  ["slow"])
    codes = {w.code: w for w in lint(sc)}
    assert codes["call-without-timeout"].path == "handlers.h.calls[0]"
    timed = scenario({"slow": {"outages": [{"at": "10s", "for": "1m", "fail": "timeout"}]}},
                     [{"service": "slow", "timeout": "2s"}])
    assert "call-without-timeout" not in {w.code for w in lint(timed)}


def test_lint_counts_a_slow_call_against_the_lock():
    from jobsim.format.lint import lint
    sc = scenario({"slow": {"latency": "2m"}}, ["slow"], count=1)
    doc = sc.document
    doc["executor"]["lock_time"] = "30s"
    warnings = lint(jobsim.from_dict(doc))
    assert any(w.code == "lock-shorter-than-run" and "p99 120s" in w.message for w in warnings)


def test_docs_python_handler_example_runs():
    """The Python example of docs/services.md, run as written."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    text = (root / "docs" / "services.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(code) == 1
    cwd = os.getcwd()
    os.chdir(root)
    try:
        space: dict = {}
        exec(compile(code[0], "docs/services.md", "exec"), space)
    finally:
        os.chdir(cwd)
    trace = jobsim.trace_frame(space["result"].trace)
    ends = trace[trace.kind == "exec_end"]
    assert "circuit open" in set(ends.text)


def test_waiting_limiter_refuses_a_token_that_comes_too_late():
    """over: wait with a 3 s timeout at 5/s: a call whose token would come after its
    caller gives up takes none and is refused at once, so ok calls keep coming at the
    bucket's rate (the newcomer's case: they used to stop after 19)."""
    sc = scenario({"api": {"latency": "50ms",
                           "rate_limit": {"rate": "5/s", "burst": 5, "over": "wait"}}},
                  [{"service": "api", "timeout": "3s"}], count=200, threads=50, nodes=2,
                  rate="50/s", retry={"attempts": 100, "backoff": {"fixed": "1s"}})
    res, calls, replies, _ = frames(sc)
    ok = replies[replies.a == 0]
    assert len(ok) == 200
    span = ok.time.max() - ok.time.min()
    assert len(ok) / span == pytest.approx(5.0, rel=0.05)
    # a call times out only when its token came in time but the 50 ms answer did not
    waited = replies[replies.a == 2].c / 1e6
    assert ((waited > 2.95 - 1e-6) & (waited <= 3.0)).all()
    limited = replies[replies.a == 4]
    assert (limited.x == 0).all() and (limited.c == 0).all()  # refused at once


def test_double_side_effect_after_a_failed_call_is_explained():
    sc = scenario({"pay": {}, "mail": {"outages": [{"at": "0s", "for": "15s"}]}},
                  [{"service": "pay", "effect": True}, "mail"], count=3,
                  retry={"attempts": 3, "backoff": {"fixed": "10s"}})
    a = jobsim.analyse(jobsim.run(sc))
    assert a.summary["duplicate_side_effects"]["by_cause"]["failed_after_effect"] == 6
    assert a.summary["invariants"]["duplicates_explained"] == 0
    assert not a.violations


def test_set_into_a_missing_service_or_handler_is_refused():
    doc = scenario({"pay": {}}, ["pay"]).document
    for path in ("services.payy.capacity=3", "handlers.hh.calls=[pay]"):
        with pytest.raises(ScenarioError, match="expected the name of one of the file's"):
            jobsim.from_dict(doc, sets=[path])
    jobsim.from_dict(doc, sets=["services.pay.capacity=3"])  # the real one is fine


def test_expectation_on_an_undeclared_service_is_refused_and_an_idle_one_has_zeros():
    doc = scenario({"pay": {}, "idle": {}}, ["pay"]).document
    doc["expect"] = {"services.paymnt.calls": "== 1"}
    with pytest.raises(ScenarioError, match=r"expect\.services\.paymnt\.calls"):
        jobsim.from_dict(doc)
    doc["expect"] = {"services.idle.calls": "== 0"}
    a = jobsim.analyse(jobsim.run(jobsim.from_dict(doc)))
    assert a.ok and a.summary["services"]["idle"]["calls"] == 0


def test_breaker_counts_what_it_failed_and_its_trial_is_its_own_call():
    sc = scenario({"pay": {"outages": [{"at": "0s", "for": "1h", "fail": "timeout"}]}},
                  [{"service": "pay", "timeout": "5s", "breaker": {"after": 1,
                                                                  "open_for": "1s"}}],
                  count=1, threads=4)
    doc = sc.document
    doc["workload"] = {"jobs": [{"id": 1, "handler": "h"},
                                {"id": 2, "handler": "h", "due_in": "4s"},
                                {"id": 3, "handler": "h", "due_in": "6.5s"},
                                {"id": 4, "handler": "h", "due_in": "10.5s"}]}
    doc["executor"]["poll_interval"] = "100ms"
    res, calls, _, df = frames(jobsim.from_dict(doc))
    # job 2's late timeout (a call made while closed) is not the trial's answer: job 3's
    # trial is still in flight when job 4 comes, which fails at once
    assert list(calls.job) == [1, 2, 3]
    ends = df[df.kind == "exec_end"].set_index("job").text
    assert ends[4] == "pay circuit open"
    assert jobsim.analyse(res).summary["services"]["pay"]["short_circuited"] == 1


def test_worker_timeout_is_its_own_outcome_and_outage_calls_did_not_wait():
    doc = scenario({"pay": {"latency": "10s"}}, ["pay"], count=1).document
    doc["handlers"]["h"]["worker_timeout"] = "2s"
    _, _, replies, _ = frames(jobsim.from_dict(doc))
    assert list(replies.a) == [5]  # worker_timeout, not the call's own
    sc = scenario({"pay": {"outages": [{"at": "0s", "for": "1h", "fail": "timeout"}]}},
                  [{"service": "pay", "timeout": "2s"}], count=3)
    res, _, replies, _ = frames(sc)
    assert (replies.c == 0).all()
    assert jobsim.analyse(res).summary["services"]["pay"]["waited"] == 0


def test_a_held_outage_gives_way_to_the_next_and_touching_outages_are_one():
    sc = scenario({"pay": {"outages": [{"at": "0s", "for": "10s"},
                                       {"at": "15s", "for": "10s", "fail": "timeout"}],
                           "recovery": {"below": "1/s", "over": "5s"}}},
                  [{"service": "pay", "timeout": "1s"}], count=20, threads=20,
                  retry={"attempts": 40, "backoff": {"fixed": "1s"}}, until="60s")
    _, _, replies, df = frames(sc)
    states = df[df.kind == "service_state"]
    assert list(zip(states.time.round(6), states.a, states.b, states.c))[:3] == [
        (0.0, 1, 0, 0), (10.0, 1, 1, 0), (15.0, 1, 0, 1)]
    assert (replies.a == 2).any()  # the second outage's calls time out
    sc = scenario({"pay": {"outages": [{"at": "1s", "for": "4s"}, {"at": "5s", "for": "5s"}]}},
                  ["pay"], count=1, until="20s")
    _, _, _, df = frames(sc)
    states = df[df.kind == "service_state"]
    assert list(zip(states.time, states.a)) == [(1.0, 1), (10.0, 0)]


def test_python_handler_bugs_are_named():
    base = scenario({"pay": {}}, ["pay"])

    def buggy(ctx):
        yield ctx.wait(1)
        raise KeyError("oops")

    with pytest.raises(jobsim.HandlerError, match=r"'h' raised KeyError: 'oops' \(job 1, "
                                                  r"attempt 1, on node-1 at t="):
        jobsim.run(jobsim.with_handler(base, "h", buggy))

    def bad_wait(ctx):
        yield ctx.wait(float("nan"))

    with pytest.raises(ScenarioError, match=r"ctx\.wait\(seconds\) with a finite number"):
        jobsim.run(jobsim.with_handler(base, "h", bad_wait))

    def forgot_yield_from(ctx):
        ctx.call("pay")
        yield ctx.wait(1)

    with pytest.raises(ScenarioError, match="without yield from"):
        jobsim.run(jobsim.with_handler(base, "h", forgot_yield_from))

    def zero_timeout(ctx):
        yield from ctx.call("pay", timeout=0)

    with pytest.raises(ScenarioError, match="timeout of a finite number of seconds above 0"):
        jobsim.run(jobsim.with_handler(base, "h", zero_timeout))


def test_report_of_a_python_run_says_so(tmp_path):
    base = scenario({"pay": {}}, ["pay"])
    a = jobsim.analyse(jobsim.run(jobsim.with_handler(base, "h", breaker_handler)))
    jobsim.write(a, tmp_path / "out", with_plots=False)
    assert (tmp_path / "out" / "scenario.yaml").read_text().startswith(
        "# Handlers run in Python (jobsim.with_handler): h by the Python function "
        "breaker_handler.")
    assert "Handlers run in Python" in (tmp_path / "out" / "report.md").read_text()


def test_lint_names_an_idle_service_and_a_queue_rule_without_capacity():
    from jobsim.format.lint import lint
    sc = scenario({"pay": {"when_full": "refuse"}, "idle": {}}, ["pay"])
    found = {(w.code, w.path) for w in lint(sc)}
    assert ("service-not-called", "services.idle") in found
    assert ("ignored-setting", "services.pay.when_full") in found
