"""Jobs in the table over time: rows present, rows holding a live lock, and executions
running, as step series built from the trace."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..plotdata import (binned_mean, kind_is, lock_series, step_series, table_steps, thin,
                        time_mean, toggles)
from .common import (_CRASH, _figure, _no_data, _seconds, _trace_rows, headline,
                     legend_columns, near_twins, twin_style, twin_words, twins,
                     variant_colours, variant_legend, variant_widths)


def _spikes(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tops of a step series' spikes: a point followed, at its instant, by a lower."""
    top = np.r_[(t[1:] == t[:-1]) & (v[1:] < v[:-1]), False]
    return t[top], v[top]


#: what "in the table" counts, without and with an operator's revived jobs
_TERMS = {False: "created − done − dead-lettered − withdrawn − cancelled",
          True: "created + revived − done − dead-lettered − withdrawn − cancelled"}


def _in_table(df: pd.DataFrame, t0: float, t_end: float
              ) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The rows in the table over time (``plotdata.table_steps``), thinned to what shows,
    and their mean over the run (weighted by time, from every step: None for a run of one
    instant)."""
    t, v = step_series(*table_steps(df), t0, t_end)
    return (*thin(t, v, t0, t_end), time_mean(t, v))


def _mean_words(m: float | None) -> str:
    """``mean …`` for a label, to the digits that tell runs apart (none over no time)."""
    if m is None:
        return ""
    return f", mean {m:.0f}" if m >= 100 else f", mean {m:.1f}" if m >= 1 else \
        f", mean {m:.2g}"


#: a depth figure adds a panel of the run's busy start where a long quiet tail (rows stranded
#: until a lock expires, a timer due an hour later) would leave that start a sliver at the
#: left of the whole run's axis: where 99% of its changes came within this share of its
#: span, or where its longest quiet stretch is half its span or more, after 80% of them
ZOOM_SHARE = 0.25
#: ... and where there are at least this many changes to see in it
ZOOM_CHANGES = 20


class Zoom(NamedTuple):
    """The zoomed panel's end, and the steps the lines take after it."""
    end: float
    after: int


def _busy_end(times: list[np.ndarray], t0: float, t_end: float) -> Zoom | None:
    """The zoomed panel over the step series' instants ``times`` (each from its run's start
    to its end, as ``step_series`` gives them): 10% past the last change before the run's
    longest quiet stretch (half its span or more, after 80% of the changes), or else past
    the instant by which 99% of them came, rounded up; None where that is not under
    ``ZOOM_SHARE`` of the span (or there are too few changes)."""
    changes = np.sort(np.concatenate([t[1:-1] for t in times])) if times else np.zeros(0)
    span = t_end - t0
    if len(changes) < ZOOM_CHANGES or not span > 0:
        return None
    q = float(np.quantile(changes, 0.99))
    gaps = np.diff(changes)
    i = int(np.argmax(gaps))
    if gaps[i] >= 0.5 * span and i + 1 >= 0.8 * len(changes):
        q = min(q, float(changes[i]))
    if not q > t0:  # all at the first instant: no span to zoom into
        return None
    d = 1.1 * (q - t0)  # 10% past it, up to a round length (a multiple of a quarter power
    step = 10.0 ** math.floor(math.log10(d)) / 4  # of ten: 125 s, 1,000 s)
    end = t0 + math.ceil(d / step) * step
    if end - t0 >= ZOOM_SHARE * span:
        return None
    return Zoom(end, int(np.count_nonzero(changes > end)))


def _axes(height: float, zoom: Zoom | None) -> tuple[Figure, Axes, Axes | None]:
    """The figure, its axes of the whole run and, where there is a ``zoom``, the axes of
    the run's busy start under them (as tall)."""
    if zoom is None:
        fig, ax = _figure(10.0, height)
        return fig, ax, None
    fig = Figure(figsize=(10.0, height + 3.6), layout="constrained")
    ax, zoomed = fig.subplots(2, 1)
    return fig, ax, zoomed


def _secs(x: float) -> str:
    """Seconds in a label: ``3,961``, ``125``, ``12.5``."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _zoom_words(t0: float, zoom: Zoom, t_end: float) -> str:
    rest = f"{_secs(t_end - zoom.end)} s"
    then = f"the lines step {zoom.after} time{'s' if zoom.after != 1 else ''} in all in the " \
        f"{rest} after it" if zoom.after else \
        f"the lines hold their levels through the {rest} after it"
    return (f"zoomed: the first {_secs(zoom.end - t0)} s of {_secs(t_end - t0)} s (shaded "
            f"above); {then}")


def _frame(ax: Axes, lo: float, hi: float, top: int, ylabel: str) -> None:
    """An axis of a depth figure: time from ``lo`` to ``hi`` with a margin (a spike at the
    first instant clear of the axis), integer rows up to ``top`` (lines at 0 clear of it)."""
    margin = (hi - lo) * 0.01 + 1e-9
    ax.set_xlim(lo - margin, hi + margin)
    ax.set_ylim(-0.02 * top, top * 1.08)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(_seconds))
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)


def table_depth(trace_df: pd.DataFrame) -> Figure:
    """Jobs in the table over time, with the rows locked and the executions running (a
    series of millions of points thinned to what shows: ``thin``).

    In the table: ``job_created`` (and an operator's ``revived``) minus the terminal events
    (``completed`` with a=1, a row deleted, ``dead_lettered``, ``withdrawn`` and
    ``cancelled``), each job's at most once (``plotdata.table_steps``). Locked: rows whose lock
    is live (see ``plotdata.lock_series``; a crashed node's locks stay until they expire).
    Running: ``exec_start`` minus ``exec_end`` minus the runs a ``node_crashed`` event says
    were lost (its ``a``); a hung execution keeps counting. Step plots, one value per
    instant, and where a series rose higher within one instant (a lock taken and released,
    a run begun and ended at once: the lesson's fake clock does all its work so), a spike up
    to that value with its top marked; integer ticks. Node crashes, if any, are dashed red
    vertical lines. A busy start before a long quiet tail gets a second panel zoomed on it
    (``_busy_end``).
    """
    title = "jobs in the table, locked and running, over simulated time"
    trace_df = None if trace_df is None else _trace_rows(trace_df)
    if trace_df is None or len(trace_df) == 0:
        return _no_data(*_figure(10.0, 5.0), title, "empty trace")
    df = trace_df
    times = df["time"].to_numpy(dtype=float)
    times_f = times[np.isfinite(times)]
    t0, t_end = float(times_f.min()), float(times_f.max())
    created = kind_is(df, "job_created")
    if not created.any():
        return _no_data(*_figure(10.0, 5.0), title, "no jobs created")
    a = df["a"].to_numpy()
    # each series thinned as soon as it is made (its maximum and last value stay)
    t_tab, v_tab, mean_tab = _in_table(df, t0, t_end)
    starts, ends = kind_is(df, "exec_start"), kind_is(df, "exec_end")
    crashes = kind_is(df, "node_crashed")
    sel = starts | ends | crashes
    # a crash loses ``a`` runs
    step = np.where(starts[sel], 1, np.where(ends[sel], -1, -a[sel]))
    t_run, v_run = thin(*step_series(times[sel], step, t0, t_end), t0, t_end)
    del sel, step
    t_lock, v_lock = thin(*lock_series(df, t0, t_end), t0, t_end)

    series = ((t_tab, v_tab, "tab:blue", 2.6,
               f"in the table ({_TERMS[kind_is(df, 'revived').any()]})"),
              (t_lock, v_lock, "tab:orange", 1.6, "locked (its lock not yet expired)"),
              (t_run, v_run, "tab:green", 1.1, "running (executions in progress)"))
    binned = t_end > t0 and any(toggles(t, v) for t, v, *_ in series)
    if binned:  # each series its mean per bin (``plotdata.toggles``)
        edges = np.linspace(t0, t_end, _toggle_bins(max(len(t) for t, *_ in series)) + 1)
        series = tuple((edges, np.r_[m, m[-1]], *rest) for t, v, *rest in series
                       for m in [binned_mean(t, v, edges)])
    zoom = None if binned else _busy_end([t_tab, t_lock, t_run], t0, t_end)
    fig, ax, zoomed = _axes(5.0, zoom)
    crash_t = times[crashes]
    top = max(1, int(v_tab.max()), int(v_lock.max()), int(v_run.max()))
    for where in (ax, zoomed) if zoomed is not None else (ax,):
        named = where is ax  # the legend's entries: the whole run's artists
        spiked = False
        for t, v, colour, width, label in series:
            where.step(t, v, where="post", color=colour, linewidth=width,
                       label=label if named else None)
            st, sv = _spikes(t, v)
            if len(st):  # held only within an instant: the spike's top marked, to be seen
                spiked = True
                where.plot(st, sv, linestyle="none", marker="^", markersize=6, color=colour,
                           markeredgecolor="black", markeredgewidth=0.5, zorder=4)
        if spiked and named:
            where.plot([], [], linestyle="none", marker="^", color="0.6",
                       markeredgecolor="black", markeredgewidth=0.5,
                       label="held only within one instant (a spike's top)")
        if len(crash_t):
            where.vlines(crash_t, 0, 1, transform=where.get_xaxis_transform(), colors=_CRASH,
                         linestyles="dashed", linewidth=1,
                         label="node crash" if named else None)
    _frame(ax, t0, t_end, top, "rows (jobs)")
    mean = _mean_words(mean_tab).removeprefix(", ")
    detail = (f"at most {int(v_tab.max())} in the table{f' ({mean})' if mean else ''}, "
              f"{int(v_lock.max())} locked and {int(v_run.max())} running; "
              f"{int(v_tab[-1])} left at the end")
    if binned:
        detail += _as_means(ax, [v for _, v, *_ in series], edges, "rows (jobs)")
    ax.set_title(headline(title, "jobs", detail, 10.0))
    if zoomed is not None:
        _zoom(ax, zoomed, t0, zoom, t_end, top, "rows (jobs)")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2,
               fontsize=9, frameon=False)
    return fig


def _zoom(ax: Axes, zoomed: Axes, t0: float, zoom: Zoom, t_end: float, top: int,
          ylabel: str) -> None:
    """The zoomed axes of the busy start (from ``t0`` to ``zoom.end``), and its span shaded
    on the whole run's ``ax``."""
    ax.axvspan(t0, zoom.end, color="0.9", zorder=0, linewidth=0)
    _frame(zoomed, t0, zoom.end, top, ylabel)
    zoomed.set_title(_zoom_words(t0, zoom, t_end), fontsize=10)


#: a depth line that ``plotdata.toggles`` is drawn as its means in bins instead: one per 20
#: of its steps (a mean of a few jobs is noise), from 20 to this many
TOGGLE_BINS = 200


def _toggle_bins(steps: int) -> int:
    return int(min(TOGGLE_BINS, max(20, steps // 20)))


#: two variants' depth lines are nearly the same (``near_twins``) where their spans and
#: their means in each of this many bins are within 2%: the challenge's two one-thread
#: lessons, two jobs apart
NEAR_BINS = 400


def _near(series: dict[str, Any], groups: dict[str, list[str]]
          ) -> tuple[dict[str, list[str]], set[str]]:
    """``near_twins`` of the variants' depth lines: their spans, and their means per bin
    over the longest span."""
    drawn = {n: s for n, s in series.items() if s is not None}
    lo = min((float(s[0][0]) for s in drawn.values()), default=0.0)
    hi = max((float(s[0][-1]) for s in drawn.values()), default=0.0)
    if len(drawn) < 2 or not hi > lo:
        return groups, set()
    edges = np.linspace(lo, hi, NEAR_BINS + 1)
    return near_twins(groups, {n: [np.array([float(s[0][-1] - s[0][0])]),
                                   binned_mean(s[0], s[1], edges)] for n, s in drawn.items()})


def _as_means(ax: Axes, means: list[np.ndarray], edges: np.ndarray, ylabel: str) -> str:
    """The axis of lines drawn as their means in the bins between ``edges``: its own scale
    and label; the words that say so in the title."""
    ax.set_ylim(0, max(max(float(np.nanmax(m)) for m in means), 1e-9) * 1.15)
    ax.yaxis.set_major_locator(MaxNLocator())
    ax.set_ylabel(f"{ylabel}, mean per bin")
    bins = len(edges) - 1
    return (f" · each line its mean in {bins} bins of {_secs(float(edges[1] - edges[0]))} s: "
            f"its rows come and go too often to draw one by one")


def table_depth_by_variant(traces: dict[str, pd.DataFrame]) -> Figure:
    """Jobs in the table over time, one step line per variant (in the order given, each in
    its colour of every figure that sets the variants side by side: ``variant_colours``;
    the first drawn widest; identical lines dashed in turn, their labels saying so), and
    each variant's node crashes as dashed vertical lines in its colour: which variant
    drains its table first, and where one holds a backlog that another does not. A
    variant's own rows locked and executions running are in its tab of the interactive
    page."""
    title = "jobs in the table over simulated time, by variant"
    series: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, float | None] | None] = {}
    revived = False  # whether the words name an operator's revived jobs
    for name, df in traces.items():
        df = None if df is None else _trace_rows(df)
        created = None if df is None or len(df) == 0 else kind_is(df, "job_created")
        if created is None or not created.any():
            series[name] = None
            continue
        revived = revived or bool(kind_is(df, "revived").any())
        times = df["time"].to_numpy(dtype=float)
        finite = times[np.isfinite(times)]
        t, v, mean = _in_table(df, float(finite.min()), float(finite.max()))
        series[name] = (t, v, times[kind_is(df, "node_crashed")], mean)
    labels = {}
    groups, nearly = _near(series, twins({
        name: b"" if s is None else s[0].tobytes() + b"|" + s[1].tobytes()
        for name, s in series.items()}))
    # a mean over a run's own span: said with it where the runs' spans differ (a mean over
    # 1,801 s is not one over 4,021 s)
    spans = [float(s[0][-1] - s[0][0]) for s in series.values() if s is not None]
    alike = not spans or max(spans) - min(spans) <= 0.01 * max(spans)
    for name, s in series.items():
        over = "" if s is None or alike or s[3] is None else \
            f" over its {_secs(float(s[0][-1] - s[0][0]))} s"
        labels[name] = f"{name} (no jobs)" if s is None else \
            f"{name} (peak {int(s[1].max())}{_mean_words(s[3])}{over}, {int(s[1][-1])} " \
            f"left at the end{twin_words(name, groups[name], nearly)})"
    ncol = legend_columns(list(labels.values()), 10.0)
    rows = -(-len(labels) // ncol)
    height = 5.0 + 0.18 * max(0, rows - 3)
    drawn = [s for s in series.values() if s is not None]
    if not drawn:
        return _no_data(*_figure(10.0, height), title, "no jobs created")
    lo, hi = min(float(s[0][0]) for s in drawn), max(float(s[0][-1]) for s in drawn)
    top = max(1, *(int(s[1].max()) for s in drawn))
    edges = None
    if hi > lo and any(toggles(s[0], s[1]) for s in drawn):  # each its mean per bin
        edges = np.linspace(lo, hi, _toggle_bins(max(len(s[0]) for s in drawn)) + 1)
        series = {name: None if s is None else (edges, np.r_[m, m[-1]], *s[2:])
                  for name, s in series.items()
                  for m in [None if s is None else binned_mean(s[0], s[1], edges)]}
    zoom = None if edges is not None else _busy_end([s[0] for s in drawn], lo, hi)
    fig, ax, zoomed = _axes(height, zoom)
    colours = variant_colours(len(series))
    widths = variant_widths(len(series))
    lines, crashed = [], False
    for where in (ax, zoomed) if zoomed is not None else (ax,):
        for i, (name, s) in enumerate(series.items()):
            if s is None:
                if where is ax:
                    lines += ax.plot([], [], color=colours[i], label=labels[name])
                continue
            t, v, crashes, _ = s
            drew = where.step(t, v, where="post", color=colours[i], linewidth=widths[i],
                              linestyle=twin_style(name, groups[name]), label=labels[name])
            lines += drew if where is ax else []
            if len(crashes):
                crashed = True
                where.vlines(crashes, 0, 1, transform=where.get_xaxis_transform(),
                             colors=colours[i], linestyles="dashed", linewidth=1, alpha=0.8)
    _frame(ax, lo, hi, top, "rows in the table (jobs)")
    detail = _TERMS[revived] + (
        " · vertical dashes: node crashes" if crashed else "") + (
        " · lines dashed in turn: variants whose lines are the same, or nearly"
        if any(len(g) > 1 for n, g in groups.items() if series[n] is not None) else "")
    if edges is not None:
        detail += _as_means(ax, [s[1] for s in series.values() if s is not None], edges,
                            "rows in the table (jobs)")
    ax.set_title(headline(title, "jobs", detail, 10.0))
    if zoomed is not None:
        _zoom(ax, zoomed, lo, zoom, hi, top, "rows in the table (jobs)")
    variant_legend(fig, lines, loc="outside lower center", ncol=ncol, fontsize=9,
                   frameon=False)
    return fig
