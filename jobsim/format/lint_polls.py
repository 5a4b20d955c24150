"""The poll-phase trap (``poll-lock-step``): nodes that poll on one fixed interval with no
jitter, under a workload whose arrivals in one interval fill a claim and whose runs end within
the interval (long runs keep the threads, and the nodes' re-polls, apart).

A node whose claim comes back full polls again as soon as a thread frees and starts its
interval anew there, just behind the node that emptied the table; with no jitter nothing
pulls the phases apart again, so the nodes drift into lock-step and a job waits about
``T/2`` for a poll instead of ``T/(N+1)`` (``analysis/effects.py`` measures it in the run).
Written out, ``poll_jitter: 0`` is a choice (lock-step may be what is studied), and the
check is quiet."""

from __future__ import annotations

from collections.abc import Iterator

from ..base.durations import format_duration
from ..executor.config import Scenario
from .lint_work import run_p99

Found = tuple[str, str, str]
#: the arrivals must last this many intervals for the phases to have time to converge (4
#: nodes at 10 s, 2.5 claims of arrivals an interval: in lock-step after 24-45 intervals)
INTERVALS = 50


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
    streams = [s for s in sc.streams if s.rate and s.count / s.rate >= INTERVALS * T]
    rate = sum(s.rate for s in streams) + sum(
        1 / r.every for r in sc.recurring if r.every > 0 and r.count * r.every >= INTERVALS * T)
    claim = min(min(n.executor.batch_size, n.executor.queue_size or n.executor.threads)
                for n in polling)
    if rate * T < claim:
        return
    n = len(polling)
    yield ("poll-lock-step", "executor.poll_jitter",
           f"{n} nodes poll every {format_duration(T)} with no jitter and about "
           f"{rate * T:.3g} jobs fall due per interval, more than one claim takes ({claim} "
           f"rows): a node whose claim comes back full polls again when a thread frees and "
           f"starts its interval anew, so the nodes' polls drift into lock-step and a job "
           f"waits about T/2 = {format_duration(T / 2)} for a poll, not T/(N+1) = "
           f"{format_duration(float(f'{T / (n + 1):.3g}'))}; fix: executor.poll_jitter: 0.2 "
           f"(the phases stay apart), or poll_jitter: 0 written out if lock-step is what "
           f"you study")
