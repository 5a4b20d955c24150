"""Durations, backoff, retry accounting, random streams and the trace: small pieces, exact
values."""

import math

import numpy as np
import pytest

from jobsim.base.durations import format_duration, parse_cycle, parse_duration
from jobsim.executor.retry import (CycleBackoff, ExponentialBackoff, FixedBackoff, ListBackoff,
                          RetryPolicy)
from jobsim.base.rng import Streams
from jobsim.base.trace import K, Trace


@pytest.mark.parametrize("text,seconds", [
    ("250ms", 0.25), ("10s", 10.0), ("1.5s", 1.5), ("5m", 300.0), ("2min", 120.0),
    ("1h", 3600.0), ("2d", 172800.0), ("PT10M", 600.0), ("P30D", 2592000.0),
    ("PT1H30M", 5400.0), ("PT0.5S", 0.5), (0, 0.0)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["10", 10, "-5s", "5 parsecs", "P", "PT", "", None, True,
                                 "1e3s"])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_cycle():
    assert parse_cycle("R5/PT10M") == (5, 600.0)
    for bad in ("R0/PT10M", "PT10M", "R5", "R5/10m"):
        with pytest.raises(ValueError):
            parse_cycle(bad)


def test_format_duration():
    assert [format_duration(x) for x in (0, 10, 60, 370, 0.25, 7200, 86400, 1.5)] == \
        ["0s", "10s", "60s", "370s", "250ms", "2h", "1d", "1.5s"]


def test_list_backoff_repeats_its_last_delay():
    b = ListBackoff((10.0, 60.0))
    assert [b.delay(k) for k in (1, 2, 3, 4)] == [10.0, 60.0, 60.0, 60.0]


def test_lesson_accounting():
    """Retries 3: the first failure leaves 2 and waits 10s, the second leaves 1 and waits
    60s, the third dead-letters."""
    p = RetryPolicy(3, ListBackoff((10.0, 60.0)))
    d1 = p.on_failure(3, 1)
    d2 = p.on_failure(d1.left, 2)
    d3 = p.on_failure(d2.left, 3)
    assert (d1.dead, d1.left, d1.delay) == (False, 2, 10.0)
    assert (d2.dead, d2.left, d2.delay) == (False, 1, 60.0)
    assert d3.dead and p.total_attempts() == 3


def test_flowable_cycle_replaces_the_retry_count_on_first_failure():
    """R5/PT10M: five executions in all, ten minutes apart, whatever RETRIES_ said."""
    p = RetryPolicy(3, CycleBackoff(5, 600.0))
    left, failures = 3, 0
    delays = []
    while True:
        failures += 1
        d = p.on_failure(left, failures)
        if d.dead:
            break
        delays.append(d.delay)
        left = d.left
    assert failures == 5 and delays == [600.0] * 4 and p.total_attempts() == 5


def test_exponential_backoff_caps_and_jitters_within_bounds():
    b = ExponentialBackoff(1.0, 2.0, 30.0, 0.1)
    s = Streams(1).stream("retry/jitter/n")
    for k in range(1, 12):
        lo, hi = b.bounds(k)
        for _ in range(50):
            assert lo <= b.delay(k, s) <= hi <= 30.0
    assert ExponentialBackoff(1.0, 2.0).delay(5) == 16.0
    assert FixedBackoff(7.0).delay(9) == 7.0


def test_streams_are_named_and_independent():
    a = Streams(5)
    x = [a.stream("a").uniform() for _ in range(3)]
    b = Streams(5)
    b.stream("zzz").uniform()  # another stream drawn first changes nothing
    assert [b.stream("a").uniform() for _ in range(3)] == x
    assert Streams(6).stream("a").uniform() != x[0]
    e = [Streams(1).stream("e").exponential() for _ in range(1)]
    assert e[0] > 0
    with pytest.raises(ValueError):
        Streams(-1)


def test_trace_columns_and_hash():
    t = Trace()
    n = t.node("node-A")
    t.add(0.5, K["locked"], n, 7, 0, -1, 0, 0, 300.5)
    t.add(1.0, K["exec_start"], n, 7, 1, 2)
    cols = t.arrays()
    assert cols["time"].tolist() == [0.5, 1.0]
    assert cols["job"].dtype == np.dtype("<i8") and cols["job"].tolist() == [7, 7]
    assert cols["text"].tolist() == [-1, -1]
    assert math.isnan(cols["x"][1]) and len(t) == 2
    h = t.sha256()
    t2 = Trace()
    t2.node("node-A")
    t2.add(0.5, K["locked"], 0, 7, 0, -1, 0, 0, 300.5)
    t2.add(1.0, K["exec_start"], 0, 7, 1, 2)
    assert t2.sha256() == h
    t2.add(2.0, K["exec_end"], 0, 7, 1, 1)
    assert t2.sha256() != h


def test_a_kind_added_at_the_end_moves_only_the_hashes_of_traces_that_have_it():
    """The hash names the kinds up to the last one its trace has, never fewer than the
    HASHED_KINDS it always named: a trace without a later kind hashes as it did."""
    import hashlib

    from jobsim.base.trace import COLUMNS, HASHED_KINDS, KIND_NAMES

    def by_hand(t, kinds):
        h = hashlib.sha256()
        h.update(("|".join(COLUMNS) + "\n" + "|".join(kinds) + "\n").encode())
        h.update(("\x1f".join(t.nodes) + "\n").encode())
        h.update(("\x1f".join(t.texts) + "\n").encode())
        for col in t.arrays().values():
            h.update(np.ascontiguousarray(col).tobytes())
        return h.hexdigest()

    t = Trace()
    t.add(0.0, K["job_created"], job=7, text=t.text("mail"))
    t.add(1.0, K["submit_ignored"], job=7, text=t.text("mail"))
    assert KIND_NAMES[HASHED_KINDS - 1] == "suspended" and len(KIND_NAMES) > HASHED_KINDS
    assert t.sha256() == by_hand(t, KIND_NAMES[:HASHED_KINDS])
    t.add(2.0, K["resubmitted"], job=8, a=7)
    assert t.sha256() == by_hand(t, KIND_NAMES[:K["resubmitted"] + 1])
    assert Trace().sha256() == by_hand(Trace(), KIND_NAMES[:HASHED_KINDS])


def test_trace_compaction_keeps_every_event():
    t = Trace()
    for i in range(1000):
        t.add(float(i), K["acquire"], 0, -1, 0, 10, i % 10)
        t.compact(threshold=64)
    cols = t.arrays()
    assert len(t) == 1000 and cols["time"].tolist() == [float(i) for i in range(1000)]
    assert cols["b"].tolist() == [i % 10 for i in range(1000)]


def test_the_share_of_draws_beyond_a_time_is_each_distributions_own():
    """``beyond(t)``, the share of draws longer than ``t`` (the cost estimate's timed-out
    calls), against closed forms and a large sample."""
    import math
    import random

    from jobsim.base.dists import Constant, Exponential, LogNormal, Uniform

    assert Constant(2.0).beyond(1.0) == 1.0 and Constant(2.0).beyond(2.0) == 0.0
    assert Uniform(1.0, 3.0).beyond(2.5) == 0.25 and Uniform(1.0, 3.0).beyond(0.0) == 1.0
    assert Exponential(1.0).beyond(2.0) == math.exp(-2.0)
    ln = LogNormal(0.1, 1.0)
    assert ln.beyond(0.1) == 0.5 and abs(ln.beyond(1.0) - 0.01) < 1e-12
    r = random.Random(7)
    draws = [0.1 * math.exp(ln.sigma * r.gauss(0.0, 1.0)) for _ in range(100_000)]
    assert abs(sum(d > 0.3 for d in draws) / len(draws) - ln.beyond(0.3)) < 0.005


def _reads(text: str) -> bool:
    try:
        parse_duration(text)
        return True
    except ValueError:
        return False


def test_the_schemas_duration_pattern_accepts_what_the_loader_reads_and_no_more():
    """`jobsim schema` refused "5 s" and ".5s", which the loader reads as 5 s and 0.5 s,
    and took "PX": an editor checking a file against the schema must agree with jobsim.
    Fixed cases, then random strings of the characters durations are made of (a fresh
    seed each run, printed on failure)."""
    import random
    import re

    from jobsim.base.durations import SCHEMA_PATTERN, SIGNED_SCHEMA_PATTERN

    pattern, signed = re.compile(SCHEMA_PATTERN), re.compile(SIGNED_SCHEMA_PATTERN)
    fixed = ["5 s", ".5s", " 10s ", "250ms", "2min", "1.5h", "P30D", "PT1H30M", " PT5S ",
             "P1DT", "P", "PT", "PX", "5", "s", "5sec", "5 ", "-5s", "1.s", "P1.5D", "PT.5S"]
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    alphabet = "0123456789. msinhdPTHMSD-"
    fuzzed = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7)))
              for _ in range(5000)]
    for text in fixed + fuzzed:
        assert bool(pattern.search(text)) == _reads(text), (seed, text)
        unsigned = text.strip()
        reads_signed = _reads(unsigned[1:]) if unsigned.startswith("-") else _reads(text)
        assert bool(signed.search(text)) == reads_signed, (seed, text)
