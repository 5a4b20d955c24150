"""The poll-phase trap (``poll-lock-step``): nodes that poll on one fixed interval with no
jitter, under a workload whose arrivals fill a claim in enough intervals (``FULL_CLAIMS``, counting
the Poisson streams' bunches, not only their mean) and whose runs end within the interval
(long runs keep the threads, and the nodes' re-polls, apart).

A node whose claim comes back full polls again as soon as a thread frees and starts its
interval anew there, just behind the node that emptied the table; with no jitter nothing
pulls the phases apart again, so the nodes drift into lock-step and a job waits about
``T/2`` for a poll instead of ``T/(N+1)`` (``analysis/effects.py`` measures it in the run).
Written out, ``poll_jitter: 0`` is a choice (lock-step may be what is studied), and the
check is quiet."""

from __future__ import annotations

import math
from collections.abc import Iterator

from ..base.durations import format_duration, format_span
from ..executor.config import Scenario
from .lint_work import run_p99

Found = tuple[str, str, str]
#: full claims (intervals whose Poisson arrivals fill one) it takes to pull the phases together
#: (measured: 50 to 180 did, 10 over 6,000 intervals did not). However short the arrivals:
#: 4 nodes at 10 s with claims of 8 were in lock-step at 4 of 6 seeds after 30 such intervals
#: at 20 jobs an interval, at all 6 after 20 at 48 or 500, and 3 nodes at 5 s with claims of
#: 4 at 5 of 6 after 15 at 10 (a floor of 50 intervals kept a 40-interval burst unwarned)
FULL_CLAIMS = 30


def _at_least(k: int, mean: float) -> float:
    """P(N ≥ k) for N Poisson of ``mean``: the share of intervals whose arrivals fill a
    claim of ``k`` rows."""
    term, below = math.exp(-mean), 0.0
    for i in range(k):
        below += term
        term *= mean / (i + 1)
    return max(0.0, 1.0 - below)


def _about(x: float) -> str:
    """``x`` to 3 significant digits, as a reader writes it: 2.5, 0.04, 10,000 (not 1e+04)."""
    r = float(f"{x:.3g}")
    return f"{r:g}" if r < 1000 else f"{r:,.0f}"


def lock_step(sc: Scenario) -> Iterator[Found]:
    polling = [n for n in sc.nodes if n.executor.wakeup == "poll"]
    if len(polling) < 2 or sc.ticks or all(n.start_at is not None for n in polling):
        return  # pinned starts: the phases are the file's own choice
    T = polling[0].executor.poll_interval
    if T <= 0 or any(n.executor.poll_interval != T or n.executor.poll_jitter
                     for n in polling):
        return
    doc = sc.document
    raws = [n for n in (doc.get("nodes") or []) if isinstance(n, dict)] \
        if isinstance(doc.get("nodes"), list) else []
    executor = doc.get("executor") if isinstance(doc.get("executor"), dict) else {}
    if "poll_jitter" in executor or any("poll_jitter" in n for n in raws):
        return
    used = {j.handler for j in sc.jobs} | {s.handler for s in sc.streams} | \
        {r.handler for r in sc.recurring}
    if any(run_p99(sc.handlers[h], sc.services) >= T for h in used if h in sc.handlers):
        return  # runs as long as the interval: a full claim's threads free too late
    streams = [s for s in sc.streams if s.rate]
    rate = sum(s.rate for s in streams) + sum(1 / r.every for r in sc.recurring if r.every > 0)
    claim = min(min(n.executor.batch_size, n.executor.queue_size or n.executor.threads)
                for n in polling)
    span = max([s.count / s.rate for s in streams] + [r.count * r.every for r in sc.recurring
                                                      if r.every > 0] + [0.0])
    if rate <= 0 or span / T * _at_least(claim, rate * T) < FULL_CLAIMS:
        return
    n = len(polling)
    yield ("poll-lock-step", "executor.poll_jitter",
           f"{n} nodes poll every {format_duration(T)} with no jitter and about "
           f"{_about(rate * T)} jobs fall due per interval, enough to fill a claim "
           f"({claim} rows) in {100 * _at_least(claim, rate * T):.0f} % of intervals: a node "
           f"whose claim comes back full polls again when a thread frees and starts its "
           f"interval anew, so the nodes' polls can drift into lock-step (the report says "
           f"so if they did; summary.json's effects.poll_phases gives their spread and the "
           f"waits either way), where a job waits about T/2 = {format_duration(T / 2)} for a "
           f"poll, not T/(N+1) = "
           f"{format_span(T / (n + 1))}; fix: executor.poll_jitter: 0.5 "
           f"(the phases stay apart), or poll_jitter: 0 written out if lock-step is what "
           f"you study")
