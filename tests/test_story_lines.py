"""Lines of the story a run tells: a drawn span (a jittered retry's delay) to three
significant figures while the trace keeps every digit; a reset thread's freeing of locks."""

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


FLOWABLE_CRASH = """
name: fl
seed: 5
until: drained
policy: flowable
nodes: 3
handlers:
  step: {duration: {uniform: {low: 1s, high: 5s}}}
workload:
  streams: [{name: steps, handler: step, count: 400, rate: 5/s}]
faults:
  - {at: 61s, crash: node-2, restart_after: 1m}
"""


def test_a_reset_thread_freeing_a_crashed_nodes_locks_is_told():
    """Flowable's crashed node left 16 locks that only the reset thread frees, an hour
    later; the story went from the restart to "16 jobs done" at t=3662 s with nothing
    between. It tells the reset, once per statement, and counts it in its first line."""
    r = jobsim.run(loads(FLOWABLE_CRASH))
    c = r.trace.arrays()
    resets = (c["kind"] == K["unlocked"]) & (c["text"] == r.trace.texts.index(
        "lock expired (reset)"))
    assert resets.sum() == 16
    lines = narrate(r.trace)
    told = [ln for ln in lines if "reset thread FREED" in ln]
    at = c["time"][resets][0]
    assert told == [f"  [node-1] its reset thread FREED 16 expired locks at t={at:g}s "
                    f"(job {c['job'][resets][0]} and 15 more): free to be claimed again"]
    assert lines[0].startswith("in short: 1 crash, 1 reset of expired locks")
    assert lines.index(told[0]) < next(i for i, ln in enumerate(lines) if "t=3662" in ln)
