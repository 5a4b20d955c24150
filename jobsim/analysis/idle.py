"""Whether a node sat idle while work it could run waited (``nodes.<name>``'s
``busy_share``, ``even_share``, ``longest_idle_wait`` and ``idle_while_work_waited``; the
terms are ``metrics``' docstring's).

A node's idle time is a step function of time (``_idle_measure``); a job's wait is the span
from its due time to its first start (``_waits``); the longest idle wait is the most idle
time within one wait. Idle time within a wait is at most the wait's length, so the longest
waits are measured first and then only the waits that could still beat them
(``_longest_idle``): a handful of the million waits of a big run, not all of them per node.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..base.trace import K
from ..executor.config import NodeConfig
from .effects import _r

#: below this fraction of its even share of the executions, a node did next to no work
IDLE_SHARE = 0.1


def _idle_measure(end: float, threads: int, runs: tuple[np.ndarray, np.ndarray],
                  blocked: tuple[np.ndarray, np.ndarray]):
    """``F(t)``: the seconds of ``[0, t]`` during which fewer than ``threads`` executions ran
    and the node was not ``blocked`` (down or paused), vectorized over ``t``."""
    times = np.concatenate([[0.0, end], runs[0], runs[1], blocked[0], blocked[1]])
    deltas = np.concatenate([[0, 0], np.ones(len(runs[0]), np.int64),
                             -np.ones(len(runs[1]), np.int64),
                             np.full(len(blocked[0]), threads, np.int64),
                             np.full(len(blocked[1]), -threads, np.int64)])
    order = np.argsort(times, kind="stable")
    times, count = times[order], np.cumsum(deltas[order])
    # segment k is [times[k], times[k+1]); at equal times the last row holds the count
    free = np.append(count[:-1] < threads, False)
    before = np.concatenate([[0.0], np.cumsum(np.diff(times) * free[:-1])])

    def measure(t: np.ndarray) -> np.ndarray:
        t = np.clip(t, 0.0, end)
        k = np.searchsorted(times, t, side="right") - 1
        return before[k] + (t - times[k]) * free[k]

    return measure


def _waits(cols: dict[str, np.ndarray], jobs: pd.DataFrame,
           end: float) -> tuple[np.ndarray, np.ndarray]:
    """Each job's wait for its first execution, ``(from, to)`` (NaN: it never waited; see the
    module's docstring)."""
    first = jobs["first_start"].to_numpy(dtype=float)
    outcome = jobs["outcome"].to_numpy(dtype=object)
    codes, reasons = pd.factorize(jobs["pending_reason"])  # a few distinct reasons
    runnable = np.array([r.split(":")[0] in ("job", "timer_job") for r in reasons], bool)
    waiting = (outcome == "lost") | ((outcome == "pending") & runnable[codes])
    w1 = np.where(~np.isnan(first), first, np.where(
        outcome == "withdrawn", jobs["end"].to_numpy(dtype=float),
        np.where(waiting, end, np.nan)))
    w0 = jobs["due"].to_numpy(dtype=float).copy()
    kind = cols["kind"]
    back = np.flatnonzero((kind == K["revived"]) | ((kind == K["suspended"]) & (cols["a"] == 0)))
    ids = jobs["id"].to_numpy(dtype=np.int64)
    if len(back) and len(ids):
        ix = np.minimum(np.searchsorted(ids, cols["job"][back]), len(ids) - 1)
        t = cols["time"][back]
        ok = (ids[ix] == cols["job"][back]) & (t <= w1[ix])  # NaN: never waited
        np.maximum.at(w0, ix[ok], t[ok])
    return w0, w1


#: the longest waits measured first (``_longest_idle``)
LONGEST_FIRST = 4096


def _by_length(w0: np.ndarray, w1: np.ndarray) -> tuple[np.ndarray, ...]:
    """The waits ``[w0, w1]`` as (the ``LONGEST_FIRST`` longest's starts and ends, the
    others' starts, ends and lengths)."""
    d = w1 - w0
    if len(d) <= LONGEST_FIRST:
        return w0, w1, w0[:0], w1[:0], d[:0]
    cut = np.argpartition(d, len(d) - LONGEST_FIRST)
    top, rest = cut[len(d) - LONGEST_FIRST:], cut[:len(d) - LONGEST_FIRST]
    return w0[top], w1[top], w0[rest], w1[rest], d[rest]


def _longest_idle(measure: Any, w0: np.ndarray, w1: np.ndarray, r0: np.ndarray,
                  r1: np.ndarray, length: np.ndarray) -> float:
    """The most idle seconds (``measure``'s) in any of the waits ``_by_length`` split: the
    idle time in a wait is at most its length, so of the others only those longer than the
    longest ones' best (less a microsecond, for the sums' rounding) can beat it."""
    best = float((measure(w1) - measure(w0)).max())
    may = np.flatnonzero(length > best - 1e-6)
    if len(may):
        best = max(best, float((measure(r1[may]) - measure(r0[may])).max()))
    return best


def _idle_figures(figures: dict[str, dict[str, Any]], configs: dict[str, NodeConfig],
                  jobs: pd.DataFrame, waits: tuple[np.ndarray, np.ndarray], end: float) -> None:
    """Add busy_share, threads, even_share, longest_idle_wait and idle_while_work_waited."""
    handler = jobs["handler"].to_numpy(dtype=object)
    done_by = jobs.groupby("handler", sort=True)["executions"].sum()
    capacity, handles = {}, {}
    for name, f in figures.items():
        cfg = configs.get(name)
        if cfg is not None:
            capacity[name] = cfg.executor.threads * (f["time_up"] or 0.0)
            hs = cfg.executor.handles
            handles[name] = set(done_by.index) if hs is None else set(hs)
    share = dict.fromkeys(capacity, 0.0)
    for h, count in done_by.items():
        able = [m for m in sorted(capacity) if h in handles[m]]
        total = sum(capacity[m] for m in able)
        for m in able:
            if total > 0:
                share[m] += float(count) * capacity[m] / total
    w0, w1 = waits
    waited = ~np.isnan(w1) & ~np.isnan(w0) & (w1 > w0)  # the same for every node
    #: the waits a node could have run (by its handles), the longest apart (``_by_length``)
    longest_first: dict[frozenset[str] | None, tuple[np.ndarray, ...]] = {}
    for name, f in figures.items():
        runs, blocked = f.pop("_spans")
        cfg = configs.get(name)
        if cfg is None:
            f.update(threads=None, busy_share=None, even_share=None, longest_idle_wait=None,
                     idle_while_work_waited=None)
            continue
        ex = cfg.executor
        f["threads"] = ex.threads
        f["busy_share"] = _r(f["busy_thread_seconds"] / capacity[name]) \
            if capacity[name] > 0 else None
        f["even_share"] = _r(share[name])
        key = None if ex.handles is None else frozenset(ex.handles)
        if key not in longest_first:
            mask = waited if key is None else waited & np.isin(handler, sorted(key))
            longest_first[key] = _by_length(w0[mask], w1[mask])
        longest = 0.0
        if len(longest_first[key][0]):
            measure = _idle_measure(end, ex.threads, runs, blocked)
            longest = _longest_idle(measure, *longest_first[key])
        f["longest_idle_wait"] = _r(longest)
        f["idle_while_work_waited"] = bool(longest > ex.poll_interval and
                                           f["executions"] < max(1.0, share[name] * IDLE_SHARE))
