"""The nodes' poll phases over a run (``phase_series``: each polling node's phase, sampled
once an interval) and the arithmetic of their arcs; and the wait of a job due with a thread
free, split at the first poll after it fell due (``first_polls``). ``analysis/effects.py``
names what they show (see its docstring).

A node's polls are its claims on the job table: a Flowable-like node's timer loop polls its
own table on its own grid, and is left out (``claims``).

Pure functions of the trace and the nodes' settings; no Python object per event.
"""

from __future__ import annotations

import numpy as np

from ..base.trace import K
from ..executor.config import NodeConfig

#: phases are sampled at most this many times (evenly) over a run
SAMPLES = 2000


def first_polls(cols: dict[str, np.ndarray], codes: list[int],
                 room: tuple[np.ndarray, np.ndarray] | None
                 ) -> tuple[float | None, float | None, float | None, float | None]:
    """The wait of the jobs due with a thread free, split at the first poll (of any polling
    node) at or after each fell due, or at its start where that came first (a job run
    without a poll): the mean time to that instant and the mean from it to the start (the
    two add up to the jobs' mean start delay); the share of the jobs a poll reached before
    they started; and of those polls, the share whose claim came back full (it took as
    many rows as it asked for, others before these). A poll skipped as idle found nothing
    due, so the first poll after a job fell due is in the trace."""
    if room is None or not len(room[0]):
        return None, None, None, None
    acq = np.flatnonzero((cols["kind"] == K["acquire"]) & np.isin(cols["node"], codes))
    t = cols["time"][acq]
    order = np.argsort(t, kind="stable")
    t, asked, got = t[order], cols["a"][acq][order], cols["b"][acq][order]
    due, start = room
    i = np.searchsorted(t, due, side="left")
    poll = np.full(len(due), np.inf)
    poll[i < len(t)] = t[i[i < len(t)]]
    reach = np.minimum(poll, start)
    polled = poll <= start
    k = i[polled]
    full = float(((got[k] >= asked[k]) & (asked[k] > 0)).mean()) if polled.any() else None
    return (float((reach - due).mean()), float((start - reach).mean()),
            float(polled.mean()), full)


def phase_series(cols: dict[str, np.ndarray], names: list[str], nodes: tuple[NodeConfig, ...],
                 end: float) -> tuple[np.ndarray, np.ndarray, list[str], float] | None:
    """The sampled instants (once an interval, at most ``SAMPLES``), each polling node's
    phase at them (instants × nodes: the phase of its latest poll), the nodes' names and the
    interval; None where phases mean nothing (see ``poll_phases``)."""
    polling = [n for n in nodes if n.executor.wakeup == "poll" and n.name in names]
    if len(polling) < 2 or (cols["kind"] == K["tick"]).any():
        return None
    T = polling[0].executor.poll_interval
    acq = np.flatnonzero(cols["kind"] == K["acquire"])
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
