"""A run's load over time, in ``BINS`` equal bins from 0 to its end: busy threads, due jobs
not yet started (waiting for a poll or a thread), the start delay of the jobs that started, and the database's statements per
second — the polls (a claim, empty or not; the polls an idle node counted rather than
simulated spread evenly over its sleep) and the writes (completions, retries, dead letters,
lock extensions and releases). What ``plots.load`` draws; a function of the trace and the
jobs, with no Python loop over events."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..base.trace import K
from .effects import executions

BINS = 300
_WRITES = ("completed", "retry_scheduled", "dead_lettered", "lock_extended", "unlocked")


@dataclass(frozen=True)
class Load:
    edges: np.ndarray  # BINS + 1 instants
    busy: np.ndarray  # mean busy threads in each bin
    threads: int  # the cluster's threads
    waiting: np.ndarray  # mean due jobs not yet started
    delay_mean: np.ndarray  # start delay of the jobs that started in the bin (NaN: none)
    delay_max: np.ndarray
    polls: np.ndarray  # polls per second
    writes: np.ndarray  # writes per second
    #: the mean threads of the nodes up in each bin (None: every thread up all the run)
    up: np.ndarray | None = None


def _mean_level(up: np.ndarray, down: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The mean over each bin of a count that rises at each ``up`` and falls at each
    ``down`` (inf: never): its area up to an edge x is Σ over ups before x of (x − up) less
    the same over downs, from the sorted instants and their running sums (no sort of the
    two together)."""
    def area(t: np.ndarray) -> np.ndarray:
        t = np.sort(t[np.isfinite(t)])
        before = np.searchsorted(t, edges)
        summed = np.concatenate([[0.0], np.cumsum(t)])[before]
        return before * edges - summed

    return np.diff(area(up) - area(down)) / np.diff(edges)


def _spread_counts(t0: np.ndarray, t1: np.ndarray, count: np.ndarray,
                   edges: np.ndarray) -> np.ndarray:
    """How many of ``count`` events, spread evenly over [t0, t1], fall in each bin."""
    width = np.maximum(t1 - t0, 1e-12)
    rate = count / width
    p = np.concatenate([t0, t1, edges])
    dslope = np.concatenate([rate, -rate, np.zeros(len(edges))])
    order = np.argsort(p, kind="stable")
    p, slope = p[order], np.cumsum(dslope[order])
    cum = np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(p))])
    return np.diff(np.interp(edges, p, cum))


def threads_up(cols: dict[str, np.ndarray], nodes: list[tuple[int, int, float]],
               edges: np.ndarray) -> np.ndarray | None:
    """The mean threads of the nodes up in each bin: ``nodes`` (code, threads, start) — a
    node is up from its start to its crash and from its restart on — or None where every
    node was up for the whole run (no crash, no late start)."""
    kind, node, time = cols["kind"], cols["node"], cols["time"]
    crash, back = kind == K["node_crashed"], kind == K["node_restarted"]
    if not crash.any() and not any(start > 0 for _, _, start in nodes):
        return None
    level = np.zeros(len(edges) - 1)
    for code, threads, start in nodes:  # a loop over nodes, not events
        ups = np.concatenate([[start], time[back & (node == code)]])
        downs = time[crash & (node == code)]
        level += threads * _mean_level(ups, downs, edges)
    return level


def load_series(cols: dict[str, np.ndarray], jobs: pd.DataFrame, threads: int,
                end: float, nodes: list[tuple[int, int, float]] | None = None) -> Load | None:
    """The run's load in ``BINS`` bins up to ``end``; ``nodes`` (code, threads, start of
    each node) gives the threads up in each bin, where a node was down or not yet started."""
    if end <= 0 or not len(jobs):
        return None
    edges = np.linspace(0.0, end, BINS + 1)
    width = end / BINS
    runs = executions(cols, end)
    busy = _mean_level(runs[0], runs[1], edges)
    due = jobs["due"].to_numpy(dtype=float)
    first = jobs["first_start"].to_numpy(dtype=float)
    waiting = _mean_level(due, np.where(np.isnan(first), np.inf, first), edges)
    started = ~np.isnan(first)
    b = np.clip(((first[started] / width).astype(np.int64)), 0, BINS - 1)
    delay = first[started] - due[started]
    n = np.bincount(b, minlength=BINS)
    total = np.bincount(b, weights=delay, minlength=BINS)
    dmax = np.full(BINS, -np.inf)
    np.maximum.at(dmax, b, delay)
    with np.errstate(invalid="ignore", divide="ignore"):
        dmean = np.where(n > 0, total / n, np.nan)
    dmax[n == 0] = np.nan
    kind, time = cols["kind"], cols["time"]
    acq = np.flatnonzero(kind == K["acquire"])
    polls = np.histogram(time[acq], edges)[0].astype(float)
    skipped = np.flatnonzero(kind == K["polls_skipped"])
    if len(skipped):  # counted polls: spread over the sleep since the node's previous poll
        node = cols["node"]
        prev = np.zeros(len(skipped))
        for code in np.unique(node[skipped]):  # a loop over nodes, not events
            mine = skipped[node[skipped] == code]
            theirs = acq[node[acq] == code]
            i = np.searchsorted(theirs, mine) - 1
            prev[node[skipped] == code] = np.where(i >= 0, time[theirs[np.maximum(i, 0)]], 0.0)
        polls += _spread_counts(prev, time[skipped], cols["a"][skipped].astype(float), edges)
    writes = np.histogram(time[np.isin(kind, [K[k] for k in _WRITES])], edges)[0]
    return Load(edges, busy, threads, waiting, dmean, dmax, polls / width,
                writes.astype(float) / width,
                threads_up(cols, nodes, edges) if nodes is not None else None)
