"""Every thread busy while due jobs wait (the **saturation** effect of ``effects``), and
what it does to the waits: a job that falls due while a thread is free waits for the polls
alone; one that falls due while every thread is busy waits for a thread as well. Pure
functions of the executions and the jobs; no Python object per event.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


def rounded(x: float | None) -> float | None:
    """A figure as ``summary.json`` gives it: 9 decimals, None for none (or NaN)."""
    return None if x is None or math.isnan(x) else float(round(float(x), 9))


def busy_levels(jobs: pd.DataFrame, runs: tuple[np.ndarray, ...], threads: int,
                end: float) -> tuple[np.ndarray, ...] | None:
    """The instants where the busy threads or the waiting jobs changed, with each count
    after the instant: ``(at, busy, waiting)``; None where every thread was never busy at
    once (nothing waited for a thread: the cheap answer)."""
    if threads <= 0 or end <= 0 or not len(runs[0]):
        return None
    began, ended = np.sort(runs[0]), np.sort(runs[1])
    peak = (np.arange(1, len(began) + 1) - np.searchsorted(ended, began, side="right")).max()
    if peak < threads:
        return None
    due = jobs["due"].to_numpy(dtype=float)
    start = jobs["first_start"].to_numpy(dtype=float)
    start = start[~np.isnan(start)]
    # busy threads and waiting jobs as two counts over one sorted list of their changes
    t = np.concatenate([runs[0], runs[1], due, start])
    n0, n1, n2 = len(runs[0]), len(runs[0]) + len(runs[1]), len(runs[0]) + len(runs[1]) + len(due)
    db, dw = np.zeros(len(t), np.int64), np.zeros(len(t), np.int64)
    db[:n0], db[n0:n1], dw[n1:n2], dw[n2:] = 1, -1, 1, -1
    order = np.argsort(t, kind="stable")
    t, b, w = t[order], np.cumsum(db[order]), np.cumsum(dw[order])
    last = np.append(t[1:] != t[:-1], True) & (t <= end)  # each instant's level after it
    return t[last], b[last], w[last]


def saturation(levels: tuple[np.ndarray, ...] | None, threads: int,
               end: float) -> dict[str, Any] | None:
    """How long every thread was busy while due jobs waited (``threads``: the cluster's;
    ``levels``: ``busy_levels``)."""
    if threads <= 0 or end <= 0:
        return None
    if levels is None:
        return {"threads": threads, "time": 0.0, "share": 0.0, "longest": None,
                "longest_from": None, "most_waiting": None}
    at, b, w = levels
    full = (b >= threads) & (w > 0)
    length = np.diff(np.append(at, end))
    total = float(length[full].sum())
    out: dict[str, Any] = {"threads": threads, "time": rounded(total),
                           "share": rounded(total / end), "longest": None,
                           "longest_from": None, "most_waiting": None}
    if total > 0:
        edges = np.diff(np.concatenate([[0], full.astype(np.int8), [0]]))
        begin, stop = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        run_length = np.concatenate([[0.0], np.cumsum(length)])
        spans = run_length[stop] - run_length[begin]
        k = int(spans.argmax())
        out.update(longest=rounded(float(spans[k])), longest_from=rounded(float(at[begin[k]])),
                   most_waiting=int(w[begin[k]:stop[k]].max()))
    return out


def room_at_due(jobs: pd.DataFrame, levels: tuple[np.ndarray, ...] | None,
                threads: int) -> tuple[np.ndarray, ...]:
    """The jobs that started: their due instants, their first starts, which of them fell
    due while every thread was busy (none, where ``levels`` is None), and their handlers."""
    due = jobs["due"].to_numpy(dtype=float)
    start = jobs["first_start"].to_numpy(dtype=float)
    ran = ~np.isnan(start)
    due, start = due[ran], start[ran]
    handler = jobs["handler"].to_numpy(dtype=object)[ran].astype(str)
    if levels is None:
        return due, start, np.zeros(len(due), dtype=bool), handler
    at, b, _ = levels
    i = np.searchsorted(at, due, side="right") - 1
    return due, start, (i >= 0) & (b[np.maximum(i, 0)] >= threads), handler


def room_by_handler(jobs: pd.DataFrame, runs: tuple[np.ndarray, ...], end: float,
                    threads_of: dict[int, int], runs_it: Any,
                    levels: tuple[np.ndarray, ...] | None) -> tuple[np.ndarray, ...]:
    """``room_at_due`` where a job's threads are those of the nodes that run its handler
    (``runs_it(handler)``: their codes; ``threads_of``: each node's threads by code), so
    that a job due while its nodes were all busy is not counted as due with room because
    another node, which never runs it, had a thread free. ``levels``: the cluster's
    ``busy_levels``, which every job's are where every node runs every job."""
    kinds, code = np.unique(jobs["handler"].astype(str).to_numpy(), return_inverse=True)
    by: dict[tuple[int, ...], list[int]] = {}  # the handlers by the nodes that run them
    for k, h in enumerate(kinds):
        by.setdefault(tuple(runs_it(str(h))), []).append(k)
    if all(set(g) == set(threads_of) for g in by):
        return room_at_due(jobs, levels, sum(threads_of.values()))
    parts = []
    for codes, ks in by.items():
        mine = jobs[np.isin(code, ks)]
        own = np.isin(runs[2], codes)
        threads = sum(threads_of[c] for c in codes)
        parts.append(room_at_due(mine, busy_levels(mine, tuple(r[own] for r in runs), threads,
                                                   end), threads))
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


def waits_of(room: tuple[np.ndarray, ...]) -> tuple[float | None, float | None, int]:
    """The mean start delay of the jobs that fell due while a thread was free (the polls
    decide their wait), that of those that fell due while every thread was busy (they
    waited for a thread too), and how many of those there were (``room``: ``room_at_due``'s
    or ``room_by_handler``'s)."""
    due, start, busy, _ = room
    delay = start - due
    free = delay[~busy]
    return (float(free.mean()) if len(free) else None,
            float(delay[busy].mean()) if busy.any() else None, int(busy.sum()))
