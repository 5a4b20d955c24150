"""The percentiles of the summary (``p50``, ``p90``, ``p99`` of the start delays, the
end-to-end times, the recoveries, …) are numpy's default definition: linear interpolation
between the closest ranks (``method="linear"``, Hyndman & Fan's type 7: the p-th percentile
of n sorted values x₀ … xₙ₋₁ is at rank h = (n − 1)·p/100, x⌊h⌋ + (h − ⌊h⌋)·(x⌊h⌋₊₁ − x⌊h⌋)).

Held here against values worked out by hand on arrays where the other definitions disagree
(nearest rank, lower, higher, midpoint, Hazen, Weibull, …), so that another method fails a
test that names the definition, not only the comparison with the committed reports."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jobsim
from jobsim.analysis.metrics import PERCENTILES, _dist

#: 1, 2, 4, 8: rank h = 3·p/100
#: - p50: h = 1.5  → 2 + 0.5·(4 − 2)  = 3     (nearest: 4, lower: 2, higher: 4)
#: - p90: h = 2.7  → 4 + 0.7·(8 − 4)  = 6.8   (midpoint: 6, nearest/higher: 8, lower: 4)
#: - p99: h = 2.97 → 4 + 0.97·(8 − 4) = 7.88  (midpoint: 6, hazen: 8, weibull: 8)
FOUR = [1.0, 2.0, 4.0, 8.0]
FOUR_BY_HAND = {"p50": 3.0, "p90": 6.8, "p99": 7.88}

#: 0, 10 (and a NaN, which is no value): h = p/100 → p50 5, p90 9, p99 9.9
#: (nearest: 0 or 10; hazen's p90: 10; weibull's p50: 5 but p90: 10)
TWO = [10.0, float("nan"), 0.0]
TWO_BY_HAND = {"p50": 5.0, "p90": 9.0, "p99": 9.9}

OTHER_METHODS = ("lower", "higher", "nearest", "midpoint", "inverted_cdf",
                 "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
                 "hazen", "weibull", "median_unbiased", "normal_unbiased")


def test_the_summary_reports_p50_p90_p99():
    assert PERCENTILES == (50, 90, 99)


@pytest.mark.parametrize("values, by_hand", [(FOUR, FOUR_BY_HAND), (TWO, TWO_BY_HAND)],
                         ids=["1-2-4-8", "0-nan-10"])
def test_percentiles_interpolate_linearly_between_closest_ranks(values, by_hand):
    d = _dist(np.array(values))
    for key, want in by_hand.items():
        assert d[key] == pytest.approx(want, abs=1e-9), (key, d)


def test_every_other_method_differs_on_these_arrays():
    """The arrays above tell the definitions apart: every other method numpy offers misses
    at least one of the hand-worked values (else a switch to it would pass unseen)."""
    for method in OTHER_METHODS:
        got = [np.nanpercentile(np.array(v), [50, 90, 99], method=method).tolist()
               for v in (FOUR, TWO)]
        want = [[h[k] for k in ("p50", "p90", "p99")] for h in (FOUR_BY_HAND, TWO_BY_HAND)]
        assert not all(math.isclose(g, w, abs_tol=1e-9)
                       for gs, ws in zip(got, want) for g, w in zip(gs, ws)), method


def test_the_rest_of_a_distribution():
    d = _dist(np.array(FOUR))
    assert (d["n"], d["mean"], d["max"]) == (4, 3.75, 8.0)
    assert _dist(np.array([float("nan")])) == {"n": 0}
    one = _dist(np.array([2.5]))
    assert (one["p50"], one["p90"], one["p99"]) == (2.5, 2.5, 2.5)


def test_a_runs_start_delay_percentiles_are_the_linear_ones():
    """End to end, in a run's summary: four jobs created at 15, 14, 12 and 8 s wait for one
    node's poll at 16 s (every 16 s from 0, pinned), so their start delays are 1, 2, 4 and
    8 s: p50 3 s, p90 6.8 s, p99 7.88 s."""
    sc = jobsim.from_dict({
        "name": "four_delays", "seed": 0,
        "db": {"dialect": "atomic", "latency": "0s"},
        "executor": {"wakeup": "poll", "poll_interval": "16s", "threads": 4,
                     "batch_size": 4},
        "nodes": [{"name": "node-A", "start_at": "0s"}],
        "handlers": {"w": {"duration": "1s"}},
        "workload": {"jobs": [{"handler": "w", "at": f"{t}s"} for t in (15, 14, 12, 8)]},
    })
    delays = jobsim.analyse(jobsim.run(sc)).summary["latency"]["start_delay"]
    assert delays["n"] == 4 and delays["max"] == 8.0 and delays["mean"] == 3.75
    for key, want in FOUR_BY_HAND.items():
        assert delays[key] == pytest.approx(want, abs=1e-9), (key, delays)
