"""Figures of a run: pure functions from tables to matplotlib ``Figure`` objects.

Every function takes data (the per-job table of ``metrics.jobs_frame``, the trace table of
``metrics.trace_frame``, the duplicates of ``history``, or plain lists) and returns a new
``Figure``. Nothing here uses ``matplotlib.pyplot``: there is no global figure registry to
leak into or to close, and no backend is chosen (``Figure.savefig`` draws with Agg). Nothing
is written to disk except by ``save``. The output depends only on the input: categories are
sorted, subsets are evenly spaced, there is no randomness. An empty input gives a figure
with a "no data" note, never an exception.

Kinds of trace events used (see ``trace.KINDS``): ``job_created``, ``locked``,
``lock_extended``, ``unlocked``, ``exec_start``, ``exec_end``, ``completed``,
``retry_scheduled``, ``dead_lettered`` and, when present, ``node_crashed``,
``node_restarted``, ``node_paused`` (``x`` = pause length) and ``node_resumed``.
"""

from __future__ import annotations

import math
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

#: Resolution of the PNGs written by ``save``.
DPI = 120

_OK, _FAILED, _OPEN = "tab:blue", "tab:orange", "tab:purple"
_CRASH, _RESTART, _PAUSE, _DOWN = "red", "tab:green", "gold", "0.6"


# --- helpers ---------------------------------------------------------------------------------

def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at ``DPI`` dots per inch to ``path`` and return the path."""
    path = Path(path)
    fig.savefig(path, dpi=DPI, format="png")
    return path


def _figure(width: float = 9.0, height: float = 5.0) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def _no_data(fig: Figure, ax: Axes, title: str, note: str = "no data") -> Figure:
    ax.set_title(title)
    ax.text(0.5, 0.5, note, transform=ax.transAxes, ha="center", va="center",
            fontsize=14, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])
    return fig


def _bars(ax: Axes, left: np.ndarray, width: np.ndarray, y: np.ndarray,
          height: np.ndarray | float, **style: Any) -> PolyCollection:
    """Horizontal bars as one ``PolyCollection`` (one path per bar: thousands of bars draw
    fast, and ``len(collection.get_paths())`` counts them)."""
    left, width, y = (np.asarray(v, dtype=float) for v in (left, width, y))
    h = np.broadcast_to(np.asarray(height, dtype=float), y.shape)
    y0, y1, x1 = y - h / 2, y + h / 2, left + width
    verts = np.stack([np.stack([left, y0], 1), np.stack([x1, y0], 1),
                      np.stack([x1, y1], 1), np.stack([left, y1], 1)], axis=1)
    coll = PolyCollection(verts, **style)
    ax.add_collection(coll, autolim=False)
    return coll


def _kind_is(df: pd.DataFrame, name: str) -> np.ndarray:
    """Rows of ``df`` of one event kind (works for categorical and plain-string kinds)."""
    return (df["kind"] == name).to_numpy(dtype=bool)


def _seconds(v: float, _pos: Any = None) -> str:
    """A tick label in seconds: ``0.001``, ``0.25``, ``30``, ``1e+04``."""
    return f"{v:g}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _last_per_time(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the last value of each run of equal times (``t`` sorted)."""
    if len(t) == 0:
        return t, v
    keep = np.r_[t[1:] != t[:-1], True]
    return t[keep], v[keep]


def _step_series(t: np.ndarray, delta: np.ndarray, t0: float,
                 t_end: float) -> tuple[np.ndarray, np.ndarray]:
    """A running total of ``delta`` (events in trace order, ``t`` non-decreasing after a
    stable sort), from 0 at ``t0`` to its last value at ``t_end``, one point per instant."""
    order = np.argsort(t, kind="stable")
    t, level = t[order], np.cumsum(delta[order])
    t, level = _last_per_time(t, level)
    last = level[-1] if len(level) else 0
    return np.r_[t0, t, t_end], np.r_[0, level, last]


# --- start delay -----------------------------------------------------------------------------

def _delay_axis(ax: Axes, d_all: np.ndarray) -> None:
    """A delay axis: logarithmic (symmetric-log if some delays are ≤ 0) when the positive
    delays span more than two decades, else linear."""
    positive = d_all[d_all > 0]
    if len(positive) and positive.max() / positive.min() > 100:
        if (d_all <= 0).any():
            linthresh = 10.0 ** math.floor(math.log10(positive.min()))
            ax.set_xscale("symlog", linthresh=linthresh, linscale=0.5)
            xlabel = f"start delay (s, symmetric log; linear below {linthresh:g} s)"
        else:
            ax.set_xscale("log")
            xlabel = "start delay (s, log scale)"
        ax.xaxis.set_major_formatter(FuncFormatter(_seconds))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        xlabel = "start delay (s)"
    ax.set_xlabel(xlabel)


def start_delay_by_variant(delays: dict[str, np.ndarray]) -> Figure:
    """Empirical CDF of the start delay, one line per variant (NaN = never started: left
    out of the line and counted in its label), to compare runs of one workload."""
    title = "Start delay (first start − due) by variant: empirical CDF"
    fig, ax = _figure(9.0, 5.0)
    drawn = []
    for name, delay in delays.items():
        delay = np.asarray(delay, dtype=float)
        started = ~np.isnan(delay)
        d = np.sort(delay[started])
        never = int((~started).sum())
        label = f"{name} ({_plural(len(d), 'job')}" + (f", {never} never started)"
                                                       if never else ")")
        if len(d) == 0:
            ax.plot([], [], color="none", label=label)
            continue
        y = np.arange(1, len(d) + 1) / len(d)
        ax.step(np.r_[d[0], d], np.r_[0.0, y], where="post", label=label, linewidth=1.6)
        drawn.append(d)
    if not drawn:
        return _no_data(fig, ax, title, "no job started")
    _delay_axis(ax, np.concatenate(drawn))
    ax.set_ylabel("fraction of started jobs with delay ≤ x")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="major", alpha=0.35)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=9)
    return fig


def latency_cdf(jobs: pd.DataFrame) -> Figure:
    """Empirical CDF of the start delay (first start − due), one line per priority class.

    Jobs that never started are left out of the lines and counted in the legend and the
    title. The x axis is logarithmic (symmetric-log if some delays are ≤ 0) when the
    positive delays span more than two decades.
    """
    title = "Start delay (first start − due): empirical CDF"
    fig, ax = _figure(9.0, 5.0)
    if jobs is None or len(jobs) == 0:
        return _no_data(fig, ax, title, "no jobs")
    delay = (jobs["first_start"].to_numpy(dtype=float) - jobs["due"].to_numpy(dtype=float))
    started = ~np.isnan(delay)
    prio = jobs["priority"].to_numpy()
    never = int((~started).sum())
    head = f"{title}\n{_plural(len(jobs), 'job')}"
    if never:
        head += f", {never} never started (not drawn)"
    if not started.any():
        return _no_data(fig, ax, head, "no job started")

    empty_classes: list[Line2D] = []
    for p in sorted(set(prio.tolist())):
        in_class = prio == p
        d = np.sort(delay[in_class & started])
        missed = int((in_class & ~started).sum())
        label = f"priority {p} ({_plural(len(d), 'job')}"
        label += f", {missed} never started)" if missed else ")"
        if len(d) == 0:
            # Keep the class visible in the legend without drawing a line.
            empty_classes.append(Line2D([], [], color="none", label=label))
            continue
        y = np.arange(1, len(d) + 1) / len(d)
        ax.step(np.r_[d[0], d], np.r_[0.0, y], where="post", label=label, linewidth=1.6)

    _delay_axis(ax, delay[started])
    ax.set_ylabel("fraction of started jobs with delay ≤ x")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="major", alpha=0.35)
    ax.set_title(head)
    handles, labels = ax.get_legend_handles_labels()
    for h in empty_classes:
        handles.append(h)
        labels.append(h.get_label())
    ax.legend(handles, labels, loc="lower right", fontsize=9)
    return fig


# --- node timeline ---------------------------------------------------------------------------

def _executions(df: pd.DataFrame, t_end: float) -> pd.DataFrame:
    """Executions as rows (node, job, attempt, thread, start, end, status) in start order;
    status is ``ok``, ``failed`` or ``open`` (no exec_end: lost to a crash — it ends at the
    crash — or hung — it runs to ``t_end``)."""
    cols = ["node", "job", "attempt"]
    starts = df.loc[_kind_is(df, "exec_start"), cols + ["time", "a"]]
    starts = starts.rename(columns={"time": "start", "a": "thread"})
    ends = df.loc[_kind_is(df, "exec_end"), cols + ["time", "a"]]
    ends = ends.rename(columns={"time": "end", "a": "ok"}).drop_duplicates(cols, keep="first")
    ex = starts.merge(ends, on=cols, how="left", sort=False)
    opened = ex["end"].isna().to_numpy()
    ok = ex["ok"].to_numpy(dtype=float) == 1
    ex["status"] = np.where(opened, "open", np.where(ok, "ok", "failed"))
    # An execution without an end stops at its node's next crash (it died there), or runs
    # to the end of the trace (hung).
    crashes = df.loc[_kind_is(df, "node_crashed"), ["node", "time"]]
    ends_at = np.full(len(ex), t_end)
    if len(crashes) and opened.any():
        by_node: dict[str, np.ndarray] = {
            n: np.sort(g["time"].to_numpy(dtype=float)) for n, g in crashes.groupby("node")}
        for i in np.flatnonzero(opened):
            times = by_node.get(ex.at[i, "node"])
            if times is not None:
                k = np.searchsorted(times, ex.at[i, "start"], side="left")
                if k < len(times):
                    ends_at[i] = times[k]
    ex["end"] = ex["end"].fillna(pd.Series(ends_at, index=ex.index))
    return ex.reset_index(drop=True)


def _spans(df: pd.DataFrame, node: np.ndarray, begin: str, finish: str, t_end: float,
           length_from_x: bool) -> list[tuple[str, float, float]]:
    """(node, start, end) spans opened by ``begin`` events and closed by the node's next
    ``finish`` event (or by ``x`` when ``length_from_x`` and it is a number), else by
    ``t_end``."""
    out: list[tuple[str, float, float]] = []
    sel = np.flatnonzero(_kind_is(df, begin) | _kind_is(df, finish))
    times = df["time"].to_numpy(dtype=float)[sel]
    xs = df["x"].to_numpy(dtype=float)[sel]
    is_begin = _kind_is(df, begin)[sel]
    open_at: dict[str, int] = {}
    for i, n in enumerate(node[sel].tolist()):
        if is_begin[i]:
            if n in open_at:  # a second begin without a finish: close the first here
                j = open_at.pop(n)
                out.append((n, times[j], times[i]))
            if length_from_x and not math.isnan(xs[i]):
                out.append((n, times[i], min(times[i] + xs[i], t_end)))
            else:
                open_at[n] = i
        elif n in open_at:
            j = open_at.pop(n)
            out.append((n, times[j], times[i]))
    out.extend((n, times[j], t_end) for n, j in sorted(open_at.items()))
    return out


def node_timeline(trace_df: pd.DataFrame, max_bars: int = 2000) -> Figure:
    """Per-node Gantt chart of executions, with crashes, restarts and pauses.

    One row per node (sorted by name), split into one lane per worker thread. Each execution
    is a horizontal bar from ``exec_start`` to ``exec_end`` (paired by node, job and
    attempt): blue when it succeeded, orange when it failed, hatched purple when it has no
    end (hung or lost to a crash; it runs to the end of the trace). Bars shorter than 0.3 %
    of the time span are widened to that so they stay visible. Crashes are red X markers
    (the node is shaded grey until it restarts), restarts green triangles, pauses gold
    spans. With more than ``max_bars`` executions an evenly spaced subset (in start order)
    is drawn and the title says so.
    """
    title = "Executions per node"
    if trace_df is None or len(trace_df) == 0:
        fig, ax = _figure(10.0, 3.0)
        return _no_data(fig, ax, title, "empty trace")
    df = trace_df
    node = df["node"].fillna("").astype(str).to_numpy(dtype=object)
    times = df["time"].to_numpy(dtype=float)
    times_f = times[np.isfinite(times)]
    t0, t_end = float(times_f.min()), float(times_f.max())
    span = max(t_end - t0, 1e-9)
    names = sorted({n for n in node.tolist() if n})
    if not names:
        fig, ax = _figure(10.0, 3.0)
        return _no_data(fig, ax, title, "no node events")
    row = {n: i for i, n in enumerate(names)}

    ex = _executions(df.assign(node=node), t_end)
    n_exec = len(ex)
    lanes = ex.groupby("node")["thread"].max().to_dict() if n_exec else {}
    counts = Counter(ex["status"].tolist())
    max_bars = max(1, int(max_bars))
    if n_exec > max_bars:
        pick = np.unique(np.linspace(0, n_exec - 1, max_bars).round().astype(np.int64))
        shown = ex.iloc[pick]
    else:
        shown = ex

    height = min(12.0, 1.9 + 0.75 * len(names))
    fig, ax = _figure(11.0, height)
    band = 0.8
    handles: list[Any] = []

    def lane_geometry(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        n_lanes = frame["node"].map(lambda n: lanes.get(n, 0) + 1).to_numpy(dtype=float)
        lane_h = band / n_lanes
        y = (frame["node"].map(row).to_numpy(dtype=float) - band / 2
             + frame["thread"].to_numpy(dtype=float) * lane_h)
        return y + lane_h / 2, lane_h * 0.85

    styles = {
        "ok": dict(facecolor=_OK, edgecolor="none", label="succeeded"),
        "failed": dict(facecolor=_FAILED, edgecolor="none", label="failed"),
        "open": dict(facecolor="white", edgecolor=_OPEN, hatch="////", linewidth=0.6,
                     label="no end (hung or crashed)"),
    }
    for status in ("ok", "failed", "open"):
        part = shown[shown["status"] == status]
        if part.empty:
            continue
        y, h = lane_geometry(part)
        start = part["start"].to_numpy(dtype=float)
        width = np.maximum(part["end"].to_numpy(dtype=float) - start, span * 0.003)
        handles.append(_bars(ax, start, width, y, h, **styles[status]))

    # Crashes (and the time the node is down), restarts, pauses.
    crashed = _kind_is(df, "node_crashed")
    restarted = _kind_is(df, "node_restarted")
    down = _spans(df, node, "node_crashed", "node_restarted", t_end, length_from_x=False)
    pauses = _spans(df, node, "node_paused", "node_resumed", t_end, length_from_x=True)
    for spans, color, alpha, label in ((down, _DOWN, 0.25, "down (crash → restart)"),
                                       (pauses, _PAUSE, 0.45, "paused")):
        spans = [s for s in spans if s[0] in row]
        if not spans:
            continue
        y = np.array([row[n] for n, _, _ in spans], dtype=float)
        left = np.array([a for _, a, _ in spans], dtype=float)
        width = np.maximum(np.array([b for _, _, b in spans], dtype=float) - left,
                           span * 0.0015)
        handles.append(_bars(ax, left, width, y, 0.96, facecolor=color, alpha=alpha,
                             zorder=0.5, label=label, edgecolor="none"))
    for mask, marker, color, size, label in ((crashed, "X", _CRASH, 11, "crash"),
                                             (restarted, "^", _RESTART, 9, "restart")):
        idx = np.flatnonzero(mask & (node != ""))
        if len(idx) == 0:
            continue
        y = np.array([row[n] for n in node[idx].tolist()], dtype=float)
        (line,) = ax.plot(times[idx], y, linestyle="none", marker=marker, color=color,
                          markersize=size, markeredgecolor="black", markeredgewidth=0.6,
                          zorder=5, label=label)
        handles.append(line)

    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first node on top
    ax.set_xlim(t0 - span * 0.015, t_end + span * 0.015)
    ax.xaxis.set_major_formatter(FuncFormatter(_seconds))
    ax.set_xlabel("simulated time (s)")
    ax.grid(True, axis="x", alpha=0.3)
    parts = [_plural(n_exec, "execution")]
    if counts.get("failed"):
        parts.append(f"{counts['failed']} failed")
    if counts.get("open"):
        parts.append(f"{counts['open']} without end")
    head = f"{title} (one lane per worker thread) · " + ", ".join(parts)
    if len(shown) < n_exec:
        head += f"\nshowing {len(shown)} of {n_exec} executions (evenly spaced subset)"
    ax.set_title(head)
    if not handles:
        ax.text(0.5, 0.5, "no executions", transform=ax.transAxes, ha="center",
                va="center", fontsize=14, color="0.4")
    else:
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 6),
                   fontsize=9, frameon=False)
    return fig


# --- table depth -----------------------------------------------------------------------------

def _lock_series(df: pd.DataFrame, t0: float, t_end: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding a live lock over time. A ``locked`` or ``lock_extended`` event holds the
    job's lock until its ``lock_until`` (``x``) or the job's next lock event, whichever comes
    first; ``completed`` (a row deleted), ``retry_scheduled``, ``dead_lettered`` and
    ``unlocked`` release it."""
    holds = _kind_is(df, "locked") | _kind_is(df, "lock_extended")
    sel = holds | _kind_is(df, "retry_scheduled") | _kind_is(df, "dead_lettered") \
        | _kind_is(df, "unlocked") | (_kind_is(df, "completed") & (df["a"] == 1).to_numpy())
    idx = np.flatnonzero(sel)
    if len(idx) == 0:
        return np.array([t0, t_end]), np.array([0, 0])
    job = df["job"].to_numpy()[idx]
    t = df["time"].to_numpy(dtype=float)[idx]
    x = df["x"].to_numpy(dtype=float)[idx]
    hold = holds[idx]
    order = np.lexsort((idx, job))  # by job, then trace order
    job, t, x, hold = job[order], t[order], x[order], hold[order]
    same_next = np.r_[job[1:] == job[:-1], False]
    next_t = np.where(same_next, np.r_[t[1:], np.inf], np.inf)
    until = np.where(np.isnan(x), np.inf, x)
    end = np.minimum(until, next_t)[hold]
    start = t[hold]
    end = np.maximum(end, start)
    released = end <= t_end
    times = np.r_[start, end[released]]
    delta = np.r_[np.ones(len(start)), -np.ones(int(released.sum()))]
    return _step_series(times, delta, t0, t_end)


def table_depth(trace_df: pd.DataFrame) -> Figure:
    """Jobs in the table over time, with the rows locked and the executions running.

    In the table: ``job_created`` minus the terminal events (``completed`` with a=1, a row
    deleted, and ``dead_lettered``). Locked: rows whose lock is live (see ``_lock_series``;
    a crashed node's locks stay until they expire). Running: ``exec_start`` minus
    ``exec_end`` minus the runs a ``node_crashed`` event says were lost (its ``a``); a hung
    execution keeps counting. Step plots, one value per instant (a lock taken and released
    at the same instant does not show); node crashes, if any, are dashed red vertical
    lines.
    """
    title = "Jobs in the table over time"
    fig, ax = _figure(10.0, 5.0)
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
    gone = (_kind_is(df, "completed") & (a == 1)) | _kind_is(df, "dead_lettered")
    sel = created | gone
    t_tab, v_tab = _step_series(times[sel], np.where(created[sel], 1, -1), t0, t_end)
    starts, ends = _kind_is(df, "exec_start"), _kind_is(df, "exec_end")
    crashes = _kind_is(df, "node_crashed")
    sel = starts | ends | crashes
    step = np.where(starts, 1, np.where(ends, -1, -a))[sel]  # a crash loses ``a`` runs
    t_run, v_run = _step_series(times[sel], step, t0, t_end)
    t_lock, v_lock = _lock_series(df, t0, t_end)

    ax.step(t_tab, v_tab, where="post", color="tab:blue", linewidth=2.6,
            label="in the table (created − completed − dead-lettered)")
    ax.step(t_lock, v_lock, where="post", color="tab:orange", linewidth=1.6,
            label="locked (live lock)")
    ax.step(t_run, v_run, where="post", color="tab:green", linewidth=0.9,
            label="running (executions in progress)")
    crash_t = times[crashes]
    if len(crash_t):
        ax.vlines(crash_t, 0, 1, transform=ax.get_xaxis_transform(), colors=_CRASH,
                  linestyles="dashed", linewidth=1, label="node crash")
    ax.set_xlim(t0, t_end + (t_end - t0) * 0.01 + 1e-9)
    top = max(1, int(v_tab.max()), int(v_lock.max()), int(v_run.max()))
    ax.set_ylim(-0.02 * top, top * 1.05)  # lines at 0 stay clear of the axis
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(_seconds))
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("jobs")
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{title} · peak {int(v_tab.max())} in the table, {int(v_lock.max())} "
                 f"locked, {int(v_run.max())} running; {int(v_tab[-1])} left at the end")
    fig.legend(loc="outside lower center", ncol=4, fontsize=9, frameon=False)
    return fig


# --- duplicates ------------------------------------------------------------------------------

def duplicates_by_cause(duplicates: Iterable[Any], causes: tuple[str, ...]) -> Figure:
    """Grouped bars: duplicate executions and duplicate side effects per cause.

    ``duplicates`` are ``history.Duplicate`` objects (anything with ``what`` and ``cause``).
    Every cause of ``causes`` is shown, in that order, zeros included; a cause found in the
    duplicates but not in ``causes`` is added after them (sorted). Tick labels are the cause
    names with spaces for underscores, wrapped.
    """
    title = "Duplicates by cause"
    dups = list(duplicates or [])
    ex = Counter(d.cause for d in dups if d.what == "execution")
    se = Counter(d.cause for d in dups if d.what == "side_effect")
    order = list(dict.fromkeys(causes or ()))
    order += sorted((set(ex) | set(se)) - set(order))
    fig, ax = _figure(max(7.0, 1.3 + 1.3 * len(order)), 4.8)
    if not order:
        return _no_data(fig, ax, title, "no causes and no duplicates")
    x = np.arange(len(order), dtype=float)
    w = 0.38
    e_vals = [ex.get(c, 0) for c in order]
    s_vals = [se.get(c, 0) for c in order]
    b1 = ax.bar(x - w / 2, e_vals, w, color="tab:red", label="duplicate executions")
    b2 = ax.bar(x + w / 2, s_vals, w, color="tab:purple", label="duplicate side effects")
    ax.bar_label(b1, padding=2, fontsize=9)
    ax.bar_label(b2, padding=2, fontsize=9)
    ax.set_xticks(x, [textwrap.fill(c.replace("_", " "), 12) for c in order])
    top = max(e_vals + s_vals)
    ax.set_ylim(0, max(1, top) * 1.15)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("count")
    ax.set_xlabel("cause")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(f"{title} · {sum(e_vals)} duplicate executions, "
                 f"{sum(s_vals)} duplicate side effects")
    if top == 0:
        ax.text(0.5, 0.6, "no duplicates", transform=ax.transAxes, ha="center",
                va="center", fontsize=13, color="0.4")
    ax.legend(loc="upper right", fontsize=9)
    return fig


# --- comparisons -----------------------------------------------------------------------------

def compare_bars(labels: Sequence[str], values: Sequence[float | None], title: str,
                 ylabel: str) -> Figure:
    """A labelled bar chart of one figure across variants, in the order given.

    A value of ``None`` (or NaN) is drawn as a hatched stub labelled "n/a".
    """
    labels, values = list(labels or []), list(values or [])
    if len(labels) != len(values):
        raise ValueError(f"{len(labels)} labels but {len(values)} values")
    fig, ax = _figure(max(6.0, min(14.0, 1.2 + 0.9 * len(labels))), 4.8)
    if not labels:
        return _no_data(fig, ax, title)
    missing = [v is None or (isinstance(v, float) and math.isnan(v)) for v in values]
    heights = np.array([0.0 if m else float(v) for v, m in zip(values, missing)])
    x = np.arange(len(labels), dtype=float)
    known = heights[~np.array(missing)]
    if len(known) == 0:
        lo, hi = 0.0, 1.0
    else:
        lo, hi = min(0.0, float(known.min())), max(0.0, float(known.max()))
        if hi == lo:
            hi = lo + 1.0
    stub = (hi - lo) * 0.03
    colors = ["0.85" if m else "tab:blue" for m in missing]
    bars = ax.bar(x, np.where(missing, stub, heights), 0.6, color=colors,
                  hatch=None, edgecolor=["0.5" if m else "none" for m in missing])
    for rect, m in zip(bars.patches, missing):
        if m:
            rect.set_hatch("//")
    texts = ["n/a" if m else f"{h:.4g}" for h, m in zip(heights, missing)]
    ax.bar_label(bars, labels=texts, padding=2, fontsize=9)
    long = max(len(s) for s in labels) * len(labels) > 70
    ax.set_xticks(x, labels, rotation=30 if long else 0, ha="right" if long else "center")
    pad = (hi - lo) * 0.12
    ax.set_ylim(lo - (pad if lo < 0 else 0), hi + pad)
    ax.axhline(0, color="0.3", linewidth=0.8)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(title)
    return fig


# --- sweeps ------------------------------------------------------------------------------------

def sweep_bands(series: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                xlabel: str, ylabel: str, categories: Sequence[str] | None = None) -> Figure:
    """A figure against a grid axis: one line per series ``(label, x, mean, lo, hi)`` with
    its 95% confidence band (left out where a point has fewer than two runs). With
    ``categories`` the x values are positions of those labels."""
    fig, ax = _figure(9.0, 5.0)
    title = f"{ylabel}\nagainst {xlabel} (mean and 95% confidence band)"
    if not series:
        return _no_data(fig, ax, title)
    for label, x, mean, lo, hi in series:
        line, = ax.plot(x, mean, marker="o", linewidth=1.6, label=label)
        ok = ~(np.isnan(lo) | np.isnan(hi))
        if ok.any():
            ax.fill_between(x[ok], lo[ok], hi[ok], color=line.get_color(), alpha=0.2,
                            linewidth=0)
    if categories is not None:
        ax.set_xticks(range(len(categories)), categories)
    else:
        xs = np.concatenate([s[1] for s in series])
        if len(xs) and xs.min() > 0 and xs.max() / xs.min() > 50:
            ax.set_xscale("log")
        if "time" in xlabel or "interval" in xlabel or "heartbeat" in xlabel:
            ax.xaxis.set_major_formatter(FuncFormatter(_seconds))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.35)
    ax.set_title(title)
    if len(series) > 1 or series[0][0] != ylabel:
        ax.legend(fontsize=9)
    return fig


def race_bars(rows: Sequence[tuple[str, float, float]]) -> Figure:
    """The share of jobs claimed twice or more, real beside simulated, one pair per race."""
    fig, ax = _figure(max(7.0, min(16.0, 1.5 + 0.9 * len(rows))), 4.8)
    title = "Jobs claimed twice or more: a real database beside the simulator"
    if not rows:
        return _no_data(fig, ax, title)
    x = np.arange(len(rows), dtype=float)
    real = ax.bar(x - 0.2, [r[1] for r in rows], 0.4, label="real")
    sim = ax.bar(x + 0.2, [r[2] for r in rows], 0.4, label="simulated")
    ax.bar_label(real, fmt="%.2f", fontsize=8, padding=2)
    ax.bar_label(sim, fmt="%.2f", fontsize=8, padding=2)
    ax.set_xticks(x, [r[0] for r in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("share of the jobs")
    ax.set_ylim(0, 1.1)
    ax.grid(True, axis="y", alpha=0.35)
    ax.legend()
    ax.set_title(title)
    return fig
