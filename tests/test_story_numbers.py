"""The story tells a drawn span (a jittered retry's delay) to three significant figures, as
a user reads it, while the trace keeps every digit."""

from __future__ import annotations

import re

import jobsim
from jobsim.analysis.narrative import narrate
from jobsim.base.durations import parse_duration
from jobsim.base.trace import K
from jobsim.format.scenario import loads

JITTERED = """
name: jittered
seed: SEED
until: drained
executor:
  retry: {attempts: 4, backoff: {exponential: {base: 3s, factor: 2, cap: 1m, jitter: full}}}
nodes: 2
handlers:
  flaky: {duration: 200ms, outcome: {fail_rate: 0.5}}
workload:
  streams: [{name: s, handler: flaky, count: 40, rate: 5/s}]
"""

RETRY = re.compile(r"job (\d+) failed .*; retry in (\S+) \(")


def test_a_jittered_retry_is_told_to_three_significant_figures():
    for seed in (1, 2, 3):
        r = jobsim.run(loads(JITTERED.replace("SEED", str(seed))))
        told = [m for line in narrate(r.trace, limit=10_000) if (m := RETRY.search(line))]
        assert len(told) >= 10, seed
        c = r.trace.arrays()
        sel = c["kind"] == K["retry_scheduled"]
        assert len(told) == sel.sum(), seed
        for m, job, t, due in zip(told, c["job"][sel], c["time"][sel], c["x"][sel]):
            assert int(m.group(1)) == job
            said, drawn = m.group(2), due - t
            digits = re.sub(r"[^0-9]", "", said.removesuffix("ms").removesuffix("s"))
            assert len(digits.lstrip("0")) <= 3, (seed, said)
            assert abs(parse_duration(said) - drawn) <= 0.005 * drawn, (seed, said, drawn)
