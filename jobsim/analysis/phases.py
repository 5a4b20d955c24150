"""The nodes' poll phases over a run (``phase_series``: each polling node's phase, sampled
once an interval) and the arithmetic of their arcs; and the wait of a job due with a thread
free, split at the first poll after it fell due (``first_polls``). ``analysis/effects.py``
names what they show (see its docstring).

A node's polls are its claims on the job table: a Flowable-like node's timer loop polls its
own table on its own grid, and is left out (``claims``).

Pure functions of the trace and the nodes' settings; no Python object per event.
"""

from __future__ import annotations

import math

import numpy as np

from ..base.trace import K
from ..executor.config import NodeConfig
from ..format.lint_polls import poll_groups, splits_handlers as split

#: phases are sampled at most this many times (evenly) over a run
SAMPLES = 2000


def claims(cols: dict[str, np.ndarray], texts: list[str] | None = None) -> np.ndarray:
    """The rows of the trace that are claims on the job table: its acquisitions, less a
    timer loop's (their strategy text ends in " timer_job"; ``texts``: the trace's)."""
    acq = cols["kind"] == K["acquire"]
    if texts and any(t.endswith(" timer_job") for t in texts):
        timer = np.array([t.endswith(" timer_job") for t in texts] + [False])
        acq &= ~timer[cols["text"]]
    return np.flatnonzero(acq)


def runs_it(nodes: tuple[NodeConfig, ...], names: list[str], handler: str) -> list[int]:
    """The codes of the nodes that run ``handler``'s jobs (``handles`` absent: all; a node
    on the hint path runs what it creates, whatever it handles)."""
    return [names.index(n.name) for n in nodes if n.name in names and (
        n.executor.handles is None or handler in n.executor.handles or n.executor.hint)]


def _groups(handler: np.ndarray, nodes: tuple[NodeConfig, ...], names: list[str]
            ) -> list[tuple[np.ndarray, list[int]]]:
    """The jobs (rows of ``handler``, a code or name each) by the nodes that run them: one
    group of all the jobs where no node is restricted to some handlers."""
    if not split(nodes):
        return [(np.arange(len(handler)), runs_it(nodes, names, ""))]
    kinds, code = np.unique(handler, return_inverse=True)
    by: dict[tuple[int, ...], list[int]] = {}
    for k, h in enumerate(kinds):
        by.setdefault(tuple(runs_it(nodes, names, str(h))), []).append(k)
    return [(np.flatnonzero(np.isin(code, ks)), list(codes)) for codes, ks in by.items()]


def node_sets(nodes: tuple[NodeConfig, ...], used: set[str], handler: np.ndarray
              ) -> list[tuple[tuple[NodeConfig, ...], tuple[str, ...] | None, np.ndarray | None]]:
    """The sets of nodes that compete for the same rows (``poll_groups`` over the handlers
    ``used``), each with its handlers and which of the rows of ``handler`` (a job's handler
    each) are its jobs: the whole cluster alone (handlers and rows None), or the sets that
    alone run some jobs of ``handler``, the one with the most first."""
    groups = poll_groups(nodes, used)
    if len(groups) == 1 and groups[0][1] is None:
        return [(tuple(nodes), None, None)]
    ours = [np.isin(handler, hs) for _, hs in groups]
    order = sorted(range(len(groups)), key=lambda k: -int(ours[k].sum()))
    return [(tuple(groups[k][0]), groups[k][1], ours[k]) for k in order if ours[k].any()]


def first_polls(cols: dict[str, np.ndarray], acq: np.ndarray, codes: list[int],
                nodes: tuple[NodeConfig, ...], names: list[str],
                room: tuple[np.ndarray, ...] | None, within: float = math.inf
                ) -> tuple[float | None, ...]:
    """The wait of the jobs due with a thread free, split at the first claim (``acq``'s
    rows) at or after each fell due by a polling node (``codes``) that runs its handler, or
    at its start where that came first (a job run without a poll): the mean time to that
    instant and the mean from it to the start (the two add up to the jobs' mean start
    delay); the share of the jobs a poll reached before they started; and of those polls,
    the share whose claim came back full (it took as many rows as it asked for). ``room``:
    those jobs' due instants, first starts and handlers. A poll skipped as idle found
    nothing due, so the first poll after a job fell due is in the trace. Last, the share of
    the jobs that started ``within`` that instant: those whose wait the polls decided, not
    a backlog."""
    if room is None or not len(room[0]):
        return None, None, None, None, None
    due, start, handler = room
    poll, full = np.full(len(due), np.inf), np.zeros(len(due), dtype=bool)
    node = cols["node"][acq]
    for sel, group in _groups(handler, nodes, names):
        mine = acq[np.isin(node, [c for c in group if c in codes])]
        t = cols["time"][mine]
        order = np.argsort(t, kind="stable")
        t, asked, got = t[order], cols["a"][mine][order], cols["b"][mine][order]
        i = np.searchsorted(t, due[sel], side="left")
        hit = i < len(t)
        poll[sel[hit]] = t[i[hit]]
        full[sel[hit]] = (got[i[hit]] >= asked[i[hit]]) & (asked[i[hit]] > 0)
    reach = np.minimum(poll, start)
    polled = poll <= start
    return (float((reach - due).mean()), float((start - reach).mean()), float(polled.mean()),
            float(full[polled].mean()) if polled.any() else None,
            float((start - reach <= within).mean()))


def first_pollers(cols: dict[str, np.ndarray], acq: np.ndarray, names: list[str],
                  due: np.ndarray) -> dict[str, float] | None:
    """Each node's share of the jobs due at ``due`` whose first claim (of ``acq``'s rows,
    any node's) at or after they fell due was that node's: where whoever polls first after
    a job falls due takes it, its share of the work. None for no job a claim followed."""
    t, node = cols["time"][acq], cols["node"][acq]
    order = np.argsort(t, kind="stable")
    t, node = t[order], node[order]
    i = np.searchsorted(t, due, side="left")
    i = i[i < len(t)]
    if not len(i):
        return None
    counts = np.bincount(node[i], minlength=len(names))
    return {name: float(counts[c]) / len(i) for c, name in enumerate(names)}


def phase_series(cols: dict[str, np.ndarray], names: list[str], nodes: tuple[NodeConfig, ...],
                 end: float, acq: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, list[str], float] | None:
    """The sampled instants (once an interval, at most ``SAMPLES``), each polling node's
    phase at them (instants × nodes: the phase of its latest claim on the job table, of
    ``acq``'s rows: ``claims``), the nodes' names and the interval; None where phases mean
    nothing (see ``poll_phases``)."""
    polling = [n for n in nodes if n.executor.wakeup == "poll" and n.name in names]
    if len(polling) < 2 or (cols["kind"] == K["tick"]).any():
        return None  # (``nodes``: those that compete for the same rows, ``poll_groups``)
    T = polling[0].executor.poll_interval
    acq = claims(cols) if acq is None else acq
    acq_node, acq_time = cols["node"][acq], cols["time"][acq]
    times = [acq_time[acq_node == names.index(n.name)] for n in polling]
    if T <= 0 or any(n.executor.poll_interval != T for n in polling) or \
            any(len(t) < 2 for t in times):
        return None
    t0 = max(float(t[0]) for t in times)
    count = int((end - t0) // T)
    if count < 10:
        return None
    at = np.linspace(t0, t0 + (count - 1) * T, min(count, SAMPLES))
    phase = np.stack([t[np.searchsorted(t, at, side="right") - 1] % T for t in times], axis=1)
    kind, node, time = cols["kind"], cols["node"], cols["time"]
    for i, n in enumerate(polling):  # down from a crash to its restart: no phase
        code = names.index(n.name)
        down = time[(kind == K["node_crashed"]) & (node == code)]
        up = time[(kind == K["node_restarted"]) & (node == code)]
        for a in down:
            later = up[up > a]
            phase[(at >= a) & (at < (later[0] if len(later) else np.inf)), i] = np.nan
    return at, phase, [n.name for n in polling], T


def _live(phase: np.ndarray) -> np.ndarray:
    """The phases with a down node's (NaN) replaced by a live node's of the same instant: a
    copy changes no gap, so the spread is the live nodes'."""
    fill = np.nanmin(np.where(np.isnan(phase), np.inf, phase), axis=1, keepdims=True)
    return np.where(np.isnan(phase), np.where(np.isfinite(fill), fill, 0.0), phase)


def _largest_gap(phase: np.ndarray, T: float) -> np.ndarray:
    s = np.sort(phase, axis=1)
    gaps = np.diff(np.concatenate([s, s[:, :1] + T], axis=1), axis=1)
    return gaps.max(axis=1)


def _gaps_before(phase: np.ndarray, T: float) -> np.ndarray:
    """Per row and node (in the columns' order), the arc from the previous node's phase to
    its own: the share of the cycle whose due jobs it is first to see."""
    order = np.argsort(phase, axis=1, kind="stable")
    s = np.take_along_axis(phase, order, axis=1)
    before = np.diff(np.concatenate([s[:, -1:] - T, s], axis=1), axis=1)
    out = np.empty_like(before)
    np.put_along_axis(out, order, before, axis=1)
    return out


#: two nodes within this share of the interval of each other are at one phase (their polls
#: come together: a job waits for the pair as for one node, and their claims can meet)
TOGETHER = 0.01


def together(phase: np.ndarray, names: list[str], T: float) -> list[list[str]]:
    """The nodes that polled at one phase though the cluster as a whole was not in
    lock-step: each pair within ``TOGETHER`` × T of each other at half the samples or more
    where both were up, joined into groups (of two nodes or more, names in order)."""
    n = phase.shape[1]
    root = list(range(n))

    def top(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            both = ~np.isnan(phase[:, i]) & ~np.isnan(phase[:, j])
            if both.sum() < 2:
                continue
            d = np.abs(phase[both, i] - phase[both, j])
            if (np.minimum(d, T - d) <= TOGETHER * T).mean() >= 0.5:
                root[top(j)] = top(i)
    groups: dict[int, list[str]] = {}
    for i in range(n):
        groups.setdefault(top(i), []).append(names[i])
    return [sorted(g) for g in groups.values() if len(g) > 1]

