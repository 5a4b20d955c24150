"""Jobs in the table over time: rows present, rows holding a live lock, and executions
running, as step series built from the trace."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from .common import _CRASH, _figure, _kind_is, _no_data, _seconds, _trace_rows, headline


def _per_time(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One point per instant (``t`` sorted), its last value — and before it, where the
    value rose higher within the instant (a row locked and released, a run begun and ended
    at one instant), that highest value: the step goes up and back at that instant, a
    spike, instead of leaving no trace."""
    if len(t) == 0:
        return t, v
    last = np.r_[t[1:] != t[:-1], True]
    first = np.r_[True, t[1:] != t[:-1]]
    peak = np.maximum.reduceat(v, np.flatnonzero(first))
    ends = np.flatnonzero(last)
    spike = peak > v[ends]
    times = np.r_[t[ends], t[ends][spike]]
    values = np.r_[v[ends], peak[spike]]
    # each instant's spike (if any) before its last value
    order = np.lexsort((np.r_[np.ones(len(ends)), np.zeros(int(spike.sum()))], times))
    return times[order], values[order]


def _step_series(t: np.ndarray, delta: np.ndarray, t0: float, t_end: float,
                 seq: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A running total of ``delta`` (events in trace order, or in ``seq`` order within an
    instant), from 0 at ``t0`` to its last value at ``t_end``, one point per instant and a
    spike where it rose higher within one (``_per_time``)."""
    # at one event, a release (-1) before a lock (+1): a lock extended is one lock, not two
    order = np.argsort(t, kind="stable") if seq is None else np.lexsort((delta, seq, t))
    t, level = t[order], np.cumsum(delta[order])
    t, level = _per_time(t, level)
    last = level[-1] if len(level) else 0
    return np.r_[t0, t, t_end], np.r_[0, level, last]


def _spikes(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tops of a step series' spikes: a point followed, at its instant, by a lower."""
    top = np.r_[(t[1:] == t[:-1]) & (v[1:] < v[:-1]), False]
    return t[top], v[top]


#: a step series longer than this is thinned before it is drawn (``_thin``)
THIN_ABOVE = 200_000
#: the time bins of a thinned series: several per pixel of the plot's width
THIN_BINS = 8192


def _thin(t: np.ndarray, v: np.ndarray, t0: float, t_end: float, above: int = THIN_ABOVE,
          bins: int = THIN_BINS) -> tuple[np.ndarray, np.ndarray]:
    """A long step series as it draws: in each of ``bins`` time bins, its first, lowest,
    highest and last points (the rest lie between them, under a pixel). A series of at
    most ``above`` points is drawn whole (every shipped scenario's, at the defaults)."""
    if len(t) <= above or not t_end > t0:
        return t, v
    b = np.clip(((t - t0) / (t_end - t0) * bins).astype(np.int64), 0, bins - 1)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])  # t is sorted: bins are runs
    ends = np.r_[starts[1:], len(t)] - 1
    counts = ends - starts + 1
    # each bin's first lowest point and last highest one (no sort of the millions)
    low = np.flatnonzero(v == np.repeat(np.minimum.reduceat(v, starts), counts))
    lows = low[np.r_[True, b[low][1:] != b[low][:-1]]]
    high = np.flatnonzero(v == np.repeat(np.maximum.reduceat(v, starts), counts))
    highs = high[np.r_[b[high][1:] != b[high][:-1], True]]
    keep = np.unique(np.concatenate([starts, ends, lows, highs]))
    return t[keep], v[keep]


def _gone(df: pd.DataFrame) -> np.ndarray:
    """Events that take a row out of the acquirable tables for good: done (``completed``
    with a=1), ``dead_lettered``, and deleted otherwise — ``withdrawn`` by a boundary timer,
    ``cancelled`` (by an operator, or a boundary timer's timer job with its task)."""
    return (_kind_is(df, "completed") & (df["a"] == 1).to_numpy()) | _kind_is(
        df, "dead_lettered") | _kind_is(df, "withdrawn") | _kind_is(df, "cancelled")


def _lock_series(df: pd.DataFrame, t0: float, t_end: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding a live lock over time. A ``locked`` or ``lock_extended`` event holds the
    job's lock until its ``lock_until`` (``x``) or the job's next lock event, whichever comes
    first; ``completed`` (a row deleted), ``retry_scheduled``, ``dead_lettered``,
    ``unlocked`` and a row deleted otherwise (``withdrawn``, ``cancelled``) release it."""
    holds = _kind_is(df, "locked") | _kind_is(df, "lock_extended")
    sel = holds | _kind_is(df, "retry_scheduled") | _kind_is(df, "unlocked") | _gone(df)
    idx = np.flatnonzero(sel)
    if len(idx) == 0:
        return np.array([t0, t_end]), np.array([0, 0])
    job = df["job"].to_numpy()[idx]
    t = df["time"].to_numpy(dtype=float)[idx]
    x = df["x"].to_numpy(dtype=float)[idx]
    hold = holds[idx]
    del holds, sel
    order = np.lexsort((idx, job))  # by job, then trace order
    idx_sorted = idx[order]
    del idx
    job, t, x, hold = job[order], t[order], x[order], hold[order]
    del order
    same_next = np.r_[job[1:] == job[:-1], False]
    del job
    next_t = np.where(same_next, np.r_[t[1:], np.inf], np.inf)[hold]
    # the order within an instant: a lock at its event, a release at the event that
    # released it, an expiry before the events of its instant
    seq = idx_sorted[hold]
    next_seq = np.r_[idx_sorted[1:], 0][hold]
    expires = np.where(np.isnan(x[hold]), np.inf, x[hold])
    end = np.minimum(expires, next_t)
    end_seq = np.where(expires < next_t, -1, next_seq)
    del next_t, x
    start = t[hold]
    end = np.maximum(end, start)
    released = end <= t_end
    times = np.r_[start, end[released]]
    delta = np.r_[np.ones(len(start)), -np.ones(int(released.sum()))]
    return _step_series(times, delta, t0, t_end, np.r_[seq, end_seq[released]])


def table_depth(trace_df: pd.DataFrame) -> Figure:
    """Jobs in the table over time, with the rows locked and the executions running (a
    series of millions of points thinned to what shows: ``_thin``).

    In the table: ``job_created`` minus the terminal events (``completed`` with a=1, a row
    deleted, ``dead_lettered``, ``withdrawn`` and ``cancelled``). Locked: rows whose lock
    is live (see ``_lock_series``; a crashed node's locks stay until they expire). Running: ``exec_start`` minus
    ``exec_end`` minus the runs a ``node_crashed`` event says were lost (its ``a``); a hung
    execution keeps counting. Step plots, one value per instant, and where a series rose
    higher within one instant (a lock taken and released, a run begun and ended at once:
    the lesson's fake clock does all its work so), a spike up to that value with its top
    marked; integer ticks. Node crashes, if any, are dashed red vertical lines.
    """
    title = "jobs in the table, locked and running, over simulated time"
    fig, ax = _figure(10.0, 5.0)
    trace_df = None if trace_df is None else _trace_rows(trace_df)
    if trace_df is None or len(trace_df) == 0:
        return _no_data(fig, ax, title, "empty trace")
    df = trace_df
    times = df["time"].to_numpy(dtype=float)
    times_f = times[np.isfinite(times)]
    t0, t_end = float(times_f.min()), float(times_f.max())
    created = _kind_is(df, "job_created")
    if not created.any():
        return _no_data(fig, ax, title, "no jobs created")
    a = df["a"].to_numpy()
    gone = _gone(df)
    sel = created | gone
    # each series thinned as soon as it is made (its maximum and last value stay)
    t_tab, v_tab = _thin(*_step_series(times[sel], np.where(created[sel], 1, -1), t0, t_end),
                         t0, t_end)
    starts, ends = _kind_is(df, "exec_start"), _kind_is(df, "exec_end")
    crashes = _kind_is(df, "node_crashed")
    sel = starts | ends | crashes
    # a crash loses ``a`` runs
    step = np.where(starts[sel], 1, np.where(ends[sel], -1, -a[sel]))
    t_run, v_run = _thin(*_step_series(times[sel], step, t0, t_end), t0, t_end)
    del sel, step
    t_lock, v_lock = _thin(*_lock_series(df, t0, t_end), t0, t_end)

    series = ((t_tab, v_tab, "tab:blue", 2.6,
               "in the table (created − done − dead-lettered − withdrawn − cancelled)"),
              (t_lock, v_lock, "tab:orange", 1.6, "locked (live lock)"),
              (t_run, v_run, "tab:green", 1.1, "running (executions in progress)"))
    spiked = False
    for t, v, colour, width, label in series:
        ax.step(t, v, where="post", color=colour, linewidth=width, label=label)
        st, sv = _spikes(t, v)
        if len(st):  # held only within an instant: the spike's top marked, to be seen
            spiked = True
            ax.plot(st, sv, linestyle="none", marker="^", markersize=6, color=colour,
                    markeredgecolor="black", markeredgewidth=0.5, zorder=4)
    if spiked:
        ax.plot([], [], linestyle="none", marker="^", color="0.6", markeredgecolor="black",
                markeredgewidth=0.5, label="held only within one instant (a spike's top)")
    crash_t = times[crashes]
    if len(crash_t):
        ax.vlines(crash_t, 0, 1, transform=ax.get_xaxis_transform(), colors=_CRASH,
                  linestyles="dashed", linewidth=1, label="node crash")
    margin = (t_end - t0) * 0.01 + 1e-9
    ax.set_xlim(t0 - margin, t_end + margin)  # a spike at the first instant clear of the axis
    top = max(1, int(v_tab.max()), int(v_lock.max()), int(v_run.max()))
    ax.set_ylim(-0.02 * top, top * 1.08)  # lines at 0 stay clear of the axis
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(_seconds))
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("rows (jobs)")
    ax.grid(True, alpha=0.3)
    ax.set_title(headline(title, "jobs", f"peak {int(v_tab.max())} in the table, "
                          f"{int(v_lock.max())} locked, {int(v_run.max())} running; "
                          f"{int(v_tab[-1])} left at the end", 10.0))
    fig.legend(loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    return fig
