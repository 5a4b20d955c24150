"""The poll-phase trap (``poll-lock-step``): nodes that poll on one fixed interval with no
jitter, under a workload whose arrivals fill a claim in enough intervals (``FULL_CLAIMS``, counting
the Poisson streams' bunches, not only their mean) and whose runs end within the interval
(long runs keep the threads, and the nodes' re-polls, apart).

A node whose claim comes back full polls again as soon as a thread frees and starts its
interval anew there, just behind the node that emptied the table; with no jitter nothing
pulls the phases apart again, so the nodes drift into lock-step and a job waits about
``T/2`` for a poll instead of ``T/(N+1)`` (``analysis/effects.py`` measures it in the run).
Written out, ``poll_jitter: 0`` is a choice (lock-step may be what is studied), and the
check is quiet.

The intake trap (``queue-full-wait-caps-intake``): a polling node whose local queue is full
claims again only after ``queue_full_wait``, whatever its threads do meanwhile. It takes in
at most its queue and its threads' worth of jobs per wait; where its queue runs dry sooner
(5 s against 1.75 s for a queue of 10 beside 4 threads of 500 ms), that caps what it can
run below what its threads could, and a stream above the cap builds a backlog that grows
as long as it lasts, threads idle (three such nodes at 10 jobs/s: jobs waited a median
26-33 s, not 4-5 s; at 7-8 jobs/s, under the cap, 3-4 s, and no warning)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

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
    if sc.ticks:
        return
    doc = sc.document
    raws = {n.get("name"): n for n in (doc.get("nodes") or []) if isinstance(n, dict)} \
        if isinstance(doc.get("nodes"), list) else {}
    executor = doc.get("executor") if isinstance(doc.get("executor"), dict) else {}
    if "poll_jitter" in executor:
        return
    for group, handlers in poll_groups(sc.nodes, _used(sc)):  # (split handlers: each set)
        if not any("poll_jitter" in raws.get(n.name, {}) for n in group):
            yield from _lock_step(sc, group, handlers)


def _used(sc: Scenario) -> set[str]:
    """The handlers the workload gives jobs to."""
    return {j.handler for j in sc.jobs} | {s.handler for s in sc.streams} | \
        {r.handler for r in sc.recurring}


def _ours(sc: Scenario, handlers: tuple[str, ...] | None) -> set[str]:
    """The handlers whose jobs a set of nodes polls for: ``handlers`` where it runs some
    alone (no other node polls for them), else all those the workload gives jobs to."""
    return _used(sc) if handlers is None else set(handlers)


def _arrivals(sc: Scenario, ours: set[str]) -> tuple[list[Any], list[Any], float]:
    """The Poisson streams and recurring schedules of ``ours``' jobs, and their rate."""
    streams = [s for s in sc.streams if s.rate and s.handler in ours]
    recurring = [r for r in sc.recurring if r.every > 0 and r.handler in ours]
    return streams, recurring, sum(s.rate for s in streams) + sum(1 / r.every
                                                                  for r in recurring)


def _lock_step(sc: Scenario, group: list[Any], handlers: tuple[str, ...] | None
               ) -> Iterator[Found]:
    polling = [n for n in group if n.executor.wakeup == "poll"]
    if len(polling) < 2 or all(n.start_at is not None for n in polling):
        return  # pinned starts: the phases are the file's own choice
    T = polling[0].executor.poll_interval
    if T <= 0 or any(n.executor.poll_interval != T or n.executor.poll_jitter
                     for n in polling):
        return
    ours = _ours(sc, handlers)
    if any(run_p99(sc.handlers[h], sc.services) >= T for h in ours if h in sc.handlers):
        return  # runs as long as the interval: a full claim's threads free too late
    streams, recurring, rate = _arrivals(sc, ours)
    claim = min(min(n.executor.batch_size, n.executor.queue_size or n.executor.threads)
                for n in polling)
    span = max([s.count / s.rate for s in streams] + [r.count * r.every for r in recurring]
               + [0.0])
    if rate <= 0 or span / T * _at_least(claim, rate * T) < FULL_CLAIMS:
        return
    n = len(polling)
    who = group_words([p.name for p in polling], handlers).removeprefix("the ")
    yield ("poll-lock-step", "executor.poll_jitter",
           f"{who} poll every {format_duration(T)} with no jitter and about "
           f"{_about(rate * T)} job{'' if _about(rate * T) == '1' else 's'} "
           f"{'falls' if _about(rate * T) == '1' else 'fall'} due per interval, "
           + ("enough to fill" if rate * T >= claim else "whose Poisson bunches fill") +
           f" a claim ({claim} rows) in {100 * _at_least(claim, rate * T):.0f} % of "
           f"intervals ({span / T * _at_least(claim, rate * T):,.0f} over the stream): a node "
           f"whose claim comes back full polls again when a thread frees and starts its "
           f"interval anew, so the nodes' polls can drift into lock-step (the report says "
           f"so if they did; summary.json's effects.poll_phases gives their spread and the "
           f"waits either way), where a job waits about T/2 = {format_duration(T / 2)} for a "
           f"poll, not T/(N+1) = "
           f"{format_span(T / (n + 1))}; fix: executor.poll_jitter: 0.5 "
           f"(the phases stay apart), or poll_jitter: 0 written out if lock-step is what "
           f"you study")


def _run_mean(sc: Scenario, ours: set[str]) -> float | None:
    """The mean drawn run of ``ours``' jobs (weighted by their jobs), or None where a run is
    steps, Python or hangs (no mean to speak of)."""
    counts: dict[str, int] = {}
    for h, n in [(j.handler, 1) for j in sc.jobs] + [(st.handler, st.count) for st in
                                                     sc.streams] + \
            [(r.handler, r.count) for r in sc.recurring]:
        if h in ours:
            counts[h] = counts.get(h, 0) + n
    hs = [sc.handlers.get(h) for h in counts]
    if not counts or any(h is None or h.steps is not None or h.python is not None or
                         h.outcome == "hang" for h in hs):
        return None
    return sum(sc.handlers[h].duration.mean * n for h, n in counts.items()) / \
        sum(counts.values())


def queue_capped(nodes: Any) -> list[Any]:
    """The nodes that wait ``queue_full_wait`` when their local queue is full: polling,
    with a queue, claiming while it has room, and no global acquire lock (whose own waits
    come between claims)."""
    return [n for n in nodes if n.executor.wakeup == "poll" and n.executor.queue_size > 0
            and n.executor.claim_when == "room" and not n.executor.global_lock]


def splits_handlers(nodes: Any) -> bool:
    """Whether the nodes split the handlers between them (``handles`` not the same on all):
    then they do not all compete for the same rows, and no one figure of the cluster's
    polls or intake stands for every job's."""
    return len({_handles(n) for n in nodes}) > 1


def _handles(node: Any) -> frozenset[str] | None:
    h = node.executor.handles
    return None if h is None else frozenset(h)


def poll_groups(nodes: Any, used: set[str] | None = None
                ) -> list[tuple[list[Any], tuple[str, ...] | None]]:
    """The nodes that compete for the same rows, each set with the handlers that it alone
    runs: all of them (handlers None) where none is restricted to some of the handlers
    ``used`` (those with jobs; all, where not given); else each set of nodes that run the
    same of them and share none with any other node (one that handles everything, or is on
    the hint path, where a node runs what it creates, shares them all: then none). A node
    that runs none of them competes for nothing. A job of theirs waits for their polls
    only, so their phases and the wait they make are the set's own."""
    nodes = list(nodes)
    runs = {n.name: None if n.executor.handles is None else
            frozenset(n.executor.handles) & (used if used is not None else
                                             frozenset(n.executor.handles))
            for n in nodes}
    active = [n for n in nodes if runs[n.name] is None or runs[n.name]]
    if len(active) == len(nodes) and len({runs[n.name] for n in nodes}) <= 1:
        return [(nodes, None)]
    if any(runs[n.name] is None or n.executor.hint for n in nodes):
        return []
    by: dict[frozenset[str], list[Any]] = {}
    for n in active:
        by.setdefault(runs[n.name], []).append(n)  # type: ignore[arg-type]
    return [(group, tuple(sorted(hs))) for hs, group in by.items()
            if not any(hs & other for other in by if other != hs)]


def group_words(names: list[str], handlers: tuple[str, ...] | list[str] | None) -> str:
    """"the 3 nodes", or, for a set that alone runs some handlers, "the 2 nodes that alone
    run work and flaky (node-1, node-3)"."""
    if handlers is None:
        return f"the {len(names)} nodes"
    hs = list(handlers)
    what = hs[0] if len(hs) == 1 else ", ".join(hs[:-1]) + " and " + hs[-1]
    return f"the {len(names)} nodes that alone run {what} ({', '.join(names)})"


def intake_of(nodes: Any, run_mean: float) -> float:
    """The most ``nodes`` take in a second, runs of ``run_mean`` seconds: a node that waits
    when its queue is full (``queue_capped``) its queue and threads a wait, or its threads'
    runs if fewer; another its threads' runs."""
    held = queue_capped(nodes)
    return sum(min(n.executor.threads / run_mean,
                   (n.executor.queue_size + n.executor.threads) / n.executor.queue_full_wait)
               if n in held else n.executor.threads / run_mean for n in nodes)


def queue_full_caps(sc: Scenario) -> Iterator[Found]:
    """``queue-full-wait-caps-intake`` (see the module's docstring): the Poisson streams'
    rate against the cluster's intake, where a queue-full wait caps it below its threads'
    and an interval's arrivals fill a node's queue and threads; of each set of nodes that
    alone runs some handlers (``poll_groups``), against its own streams, where the nodes
    split the handlers."""
    if sc.ticks:
        return
    for group, handlers in poll_groups(sc.nodes, _used(sc)):
        yield from _queue_full_caps(sc, group, handlers)


def _queue_full_caps(sc: Scenario, nodes: list[Any], handlers: tuple[str, ...] | None
                     ) -> Iterator[Found]:
    capped = queue_capped(nodes)
    ours = _ours(sc, handlers)
    rate = _arrivals(sc, ours)[2]
    mean = _run_mean(sc, ours)
    if not capped or rate <= 0 or not mean or mean <= 0:
        return
    whose = "the cluster" if handlers is None else group_words([n.name for n in nodes],
                                                                 handlers)
    threads = sum(n.executor.threads for n in nodes) / mean
    intake = intake_of(nodes, mean)
    ex = capped[0].executor
    held, wait = ex.queue_size + ex.threads, ex.queue_full_wait
    # a poll that empties the table leaves the node asleep for its poll interval, not the
    # queue-full wait: the wait comes round where a node that sees an interval's arrivals
    # (alone, in lock-step, or while the others wait) fills its queue; one waiting leaves
    # more for the others, and over the cap they never catch up (four nodes of 4 threads
    # and a queue of 4 at 10 jobs/s and 1 s polls: 2.5 jobs a node a poll, yet all waited
    # 5 s after each claim and jobs a mean 77-85 s; the race's two of 4 and 20, 10 a poll,
    # never fill one)
    fills = any(rate * n.executor.poll_interval >= n.executor.queue_size + n.executor.threads
                for n in capped)
    if intake >= 0.9 * threads or rate < intake or not fills or \
            rate >= threads:  # (over the threads' runs, no queue keeps up: overloaded)
        return
    if len({(n.executor.queue_size, n.executor.threads, n.executor.queue_full_wait)
            for n in capped}) > 1:  # no one node's settings stand for the others'
        yield ("queue-full-wait-caps-intake", "executor.queue_full_wait",
               f"a polling node whose local queue is full claims again only after its "
               f"queue_full_wait, though its queue and threads run dry sooner: the "
               f"{len(capped)} nodes so capped take in at most {_about(intake)} jobs/s"
               + (" with the others" if len(capped) < len(nodes) else "") +
               f", against {_about(rate)}/s arriving: the backlog and the waits "
               f"grow as long as the stream lasts, while the threads could run "
               f"{_about(threads)}/s; fix: a shorter queue_full_wait, a larger queue_size, "
               f"or wakeup: notify")
        return
    dry = held * mean / ex.threads
    # the queue a capped node needs for the cluster to take in the stream: the arrivals
    # the uncapped nodes leave, shared over a wait, less its threads
    left = rate - sum(n.executor.threads / mean for n in nodes if n not in capped)
    bigger = max(ex.queue_size, math.floor(left * wait / len(capped)) - ex.threads)
    nodes_said = f"{len(capped)} node{'s' if len(capped) != 1 else ''}"
    yield ("queue-full-wait-caps-intake", "executor.queue_full_wait",
           f"a polling node whose local queue is full claims again only after "
           f"queue_full_wait ({format_duration(wait)}), though its queue of {ex.queue_size} "
           f"and its {ex.threads} thread{'s' if ex.threads != 1 else ''} run dry in about "
           f"{format_span(dry)}: it takes in at most {held} jobs per "
           f"{format_duration(wait)}, {_about(intake)} jobs/s for {whose} "
           f"({nodes_said} so capped), against {_about(rate)}/s arriving: the backlog and "
           f"the waits grow as long as the stream lasts, while the threads could run "
           f"{_about(threads)}/s; fix: a queue_full_wait under {format_span(dry)}, a "
           f"queue_size above {bigger} (the stream over the capped nodes' wait, less their "
           f"threads), or wakeup: notify")
