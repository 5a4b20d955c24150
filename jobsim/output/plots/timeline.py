"""The per-node timeline: a Gantt chart of executions (one lane per worker thread), with the
nodes' crashes, restarts, down time and pauses.

The steps: pair the trace's ``exec_start`` and ``exec_end`` events into executions
(``pair_executions``), keep an evenly spaced subset when there are too many, draw the bars
(``_draw_executions``), the down time and pauses (``_draw_spans``, from ``node_spans``) and the
crash and restart markers (``_draw_markers``), then the axes, title and legend.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ..plotdata import (evenly_spaced, kind_is, node_names, node_spans, node_strings,
                        pair_executions)
from .common import (_CRASH, _DOWN, _FAILED, _OK, _OPEN, _PAUSE, _RESTART, SECONDS, _bars,
                     _figure, _job_rows, _no_data, _plural, _seconds, _trace_rows, headline)
from .timeline_marks import (COLOURINGS, class_colours, class_of, classes,
                             draw_acquisitions, legend_classes, side_by_side)

#: the height of a node's row shared by its lanes (rows are 1 apart)
_BAND = 0.8

# a white edge keeps back-to-back executions of a lane apart: one bar per execution
_STYLES = {
    "ok": dict(facecolor=_OK, edgecolor="white", linewidth=0.4, label="succeeded"),
    "failed": dict(facecolor=_FAILED, edgecolor="white", linewidth=0.4, label="failed"),
    "open": dict(facecolor="white", edgecolor=_OPEN, hatch="////", linewidth=0.6,
                 label="no end (hung or crashed)"),
}


def node_timeline(trace_df: pd.DataFrame, max_bars: int = 2000, colour: str = "outcome",
                  jobs: pd.DataFrame | None = None, duplicates: Any = None) -> Figure:
    """Per-node Gantt chart of executions, with crashes, restarts and pauses.

    One row per node (sorted by name), split into one lane per worker thread. Each execution
    is a horizontal bar from ``exec_start`` to ``exec_end`` (paired by node, job and
    attempt): blue when it succeeded, orange when it failed, hatched purple when it has no
    end (hung or lost to a crash; it runs to the end of the trace). Bars shorter than 0.3 %
    of the time span are widened to that so they stay visible. Crashes are red X markers
    (the node is shaded grey until it restarts), restarts green triangles, pauses gold
    spans; a side effect a service made after its caller had left (a timeout that still
    charged) a purple star, a stale effect a fencing token refused a white square, a
    completion the owner guard rejected (a zombie's) a black diamond. With more than
    ``max_bars`` executions an evenly spaced subset (in start order) is drawn and the title
    says so. Executions of one lane that start at one instant (all but the last took no
    time) are set side by side, so none hides another.

    Each node's acquisitions are ticks along its row (``timeline_marks``): a claim that
    locked rows a dark triangle on the row's top edge, an empty one a hollow circle on its
    bottom edge (the lesson's node-B at t=0). ``colour``: ``outcome`` (the colours above),
    ``priority`` (a colour per job priority, from the trace) or ``handler`` (per handler,
    from ``jobs``: ``jobs_frame``'s; taken from the run when the input is one); under
    either, a failed execution is hatched.

    An execution the run's analysis counts as a duplicate (``Histories.duplicates``, the
    summary's "duplicate executions") is ringed, and the title counts them: ``duplicates``
    gives the ``seq`` of each one's ``exec_start`` (``Histories.duplicate_starts``), else
    they come from the run when the input is one. A bare trace frame without them is read
    as: a run of a job after an earlier run of it that did not fail — which also counts a
    crashed run's second re-run and misses a run after a dead letter.
    """
    if colour not in COLOURINGS:
        raise ValueError(f"colour must be one of {', '.join(COLOURINGS)}, not {colour!r}")
    if colour == "handler" and jobs is None and trace_df is not None and \
            not isinstance(trace_df, pd.DataFrame):
        jobs = _job_rows(trace_df)
    title = "executions per node over simulated time"
    if duplicates is None and trace_df is not None and not isinstance(trace_df, pd.DataFrame):
        from ...analysis.inputs import as_histories

        duplicates = as_histories(trace_df).duplicate_starts
    trace_df = None if trace_df is None else _trace_rows(trace_df)
    if trace_df is None or len(trace_df) == 0:
        fig, ax = _figure(10.0, 3.0)
        return _no_data(fig, ax, title, "empty trace")
    times = trace_df["time"].to_numpy(dtype=float)
    times_f = times[np.isfinite(times)]
    t0, t_end = float(times_f.min()), float(times_f.max())
    span = max(t_end - t0, 1e-9)
    names = node_names(trace_df["node"])
    # only the events drawn, with their node names (a big trace has millions of others)
    columns = [c for c in _COLUMNS if c in trace_df.columns]
    drawn = trace_df["kind"].isin(_DRAWN).to_numpy(dtype=bool)
    df = trace_df.loc[drawn, columns]
    node = node_strings(df["node"])
    times = df["time"].to_numpy(dtype=float)
    if not names:
        fig, ax = _figure(10.0, 3.0)
        return _no_data(fig, ax, title, "no node events")
    row = {n: i for i, n in enumerate(names)}
    # the acquisitions (and, to colour by priority, the creations) apart: a big run has
    # millions of them, and the executions' frame work need not carry them
    marked = ["acquire"] + (["job_created"] if colour == "priority" else [])
    df_marks = trace_df.loc[trace_df["kind"].isin(marked).to_numpy(dtype=bool),
                            [c for c in ("time", "kind", "node", "job", "b") if c in columns]]
    node_marks = node_strings(df_marks["node"])
    by = classes(df_marks, jobs, colour)
    # the frame's own categorical node names where it has them (no string per event)
    ex = pair_executions(df if isinstance(df["node"].dtype, pd.CategoricalDtype) else
                     df.assign(node=node), t_end)
    if duplicates is not None:  # the analysis's own, by the seq of each one's start
        seq = trace_df["seq"].to_numpy() if "seq" in trace_df.columns else \
            trace_df.index.to_numpy()  # (the trace's own frames: the row number)
        starts = seq[drawn][kind_is(df, "exec_start")]
        ex["duplicate"] = np.isin(starts, np.asarray(duplicates, dtype=np.int64))
    shown = evenly_spaced(ex, max_bars)
    height = min(12.0, 2.2 + 0.75 * len(names))
    fig, ax = _figure(11.0, height)
    handles = _draw_executions(ax, ex, shown, row, span, by)
    handles += draw_acquisitions(ax, df_marks, node_marks, row, _BAND)
    handles += _draw_spans(ax, df, node, row, t_end, span)
    handles += _draw_markers(ax, df, node, times, row)

    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first node on top
    ax.set_xlim(t0 - span * 0.015, t_end + span * 0.015)
    ax.xaxis.set_major_formatter(FuncFormatter(_seconds))
    ax.set_xlabel("simulated time (s)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(_title(title, ex, shown, "" if by is None else f"coloured by {colour} · "),
                 fontsize=11)
    if not handles:
        ax.text(0.5, 0.5, "no executions", transform=ax.transAxes, ha="center",
                va="center", fontsize=14, color="0.4")
    else:
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 5),
                   fontsize=8.5, frameon=False)
    return fig


#: the kinds of event the timeline draws
_DRAWN = ["exec_start", "exec_end", "node_crashed", "node_restarted", "node_paused",
          "node_resumed", "completed", "side_effect", "effect_refused"]


#: the columns of the trace the timeline reads
_COLUMNS = ("time", "kind", "node", "job", "attempt", "a", "b", "x")


def _draw_executions(ax: Axes, ex: pd.DataFrame, shown: pd.DataFrame, row: dict[str, int],
                     span: float, by: Any = None) -> list[Any]:
    """One bar per execution of ``shown``, in its node's row and its thread's lane (a node
    has as many lanes as ``ex`` shows threads), one collection per status — or, with ``by``
    (``timeline_marks.classes``), per class, failures hatched."""
    lanes = ex.groupby("node")["thread"].max().to_dict() if len(ex) else {}
    handles: list[Any] = []
    min_width = span * 0.003

    def lane_geometry(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        n_lanes = frame["node"].map(lambda n: lanes.get(n, 0) + 1).to_numpy(dtype=float)
        lane_h = _BAND / n_lanes
        y = (frame["node"].map(row).to_numpy(dtype=float) - _BAND / 2
             + frame["thread"].to_numpy(dtype=float) * lane_h)
        return y + lane_h / 2, lane_h * 0.85

    def bars(part: pd.DataFrame, **style: Any) -> Any:
        y, h = lane_geometry(part)
        start = part["drawn_start"].to_numpy(dtype=float)
        width = np.maximum(part["end"].to_numpy(dtype=float) - part["start"].to_numpy(
            dtype=float), min_width)
        return _bars(ax, start, width, y, h, **style)

    shown = shown.assign(drawn_start=side_by_side(shown, min_width))
    if by is None:
        for status in ("ok", "failed", "open"):
            part = shown[shown["status"] == status]
            if not part.empty:
                handles.append(bars(part, **_STYLES[status]))
    else:
        ids, index, labels = by
        cls = class_of(ids, index, shown["job"].to_numpy())
        colours = class_colours(len(labels))
        named = set(legend_classes(labels))
        for k, label in enumerate(labels):
            part = shown[(cls == k) & (shown["status"] != "open").to_numpy()]
            if not part.empty:
                coll = bars(part, facecolor=colours[k], edgecolor="white", linewidth=0.4,
                            label=label if k in named else "_nolegend_")
                handles += [coll] if k in named else []
        rest = shown[(cls < 0) & (shown["status"] != "open").to_numpy()]
        if not rest.empty:
            handles.append(bars(rest, facecolor="0.75", edgecolor="white", linewidth=0.4,
                                label="job not created in the trace"))
        failed = shown[shown["status"] == "failed"]
        if not failed.empty:
            handles.append(bars(failed, facecolor="none", edgecolor="black", hatch="////",
                                linewidth=0.0, zorder=2.5, label="failed (hatched)"))
        part = shown[shown["status"] == "open"]
        if not part.empty:
            handles.append(bars(part, **_STYLES["open"]))
    again = shown[shown["duplicate"]]
    if not again.empty:
        handles.append(bars(again, facecolor="none", edgecolor="#e377c2", linewidth=1.6,
                            zorder=3, label="ran again (a duplicate)"))
    return handles


def _draw_spans(ax: Axes, df: pd.DataFrame, node: np.ndarray, row: dict[str, int],
                t_end: float, span: float) -> list[Any]:
    """The time each node was down (crash → restart) and paused, as shaded bars behind its
    row."""
    handles: list[Any] = []
    # Crashes (and the time the node is down), restarts, pauses.
    down = node_spans(df, node, "node_crashed", "node_restarted", t_end, length_from_x=False)
    pauses = node_spans(df, node, "node_paused", "node_resumed", t_end, length_from_x=True)
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
    return handles


def _draw_markers(ax: Axes, df: pd.DataFrame, node: np.ndarray, times: np.ndarray,
                  row: dict[str, int]) -> list[Any]:
    """Crashes as red X markers and restarts as green triangles, rejected completions as
    black diamonds, effects a service made after its caller left (timed out or crashed) as
    purple stars, and stale effects a fencing token refused as white squares, on their node's
    row."""
    handles: list[Any] = []
    crashed = kind_is(df, "node_crashed")
    restarted = kind_is(df, "node_restarted")
    rejected = kind_is(df, "completed") & (df["a"].to_numpy() == 0) & \
        (df["b"].to_numpy() > 0)
    late = kind_is(df, "side_effect") & (df["a"].to_numpy() > 0)
    fenced = kind_is(df, "effect_refused")
    for mask, marker, color, size, label in ((crashed, "X", _CRASH, 11, "crash"),
                                             (restarted, "^", _RESTART, 9, "restart"),
                                             (rejected, "D", "black", 6,
                                              "completion rejected (a zombie's)"),
                                             (late, "*", "tab:purple", 10,
                                              "effect after its caller gave up"),
                                             (fenced, "s", "white", 7,
                                              "stale effect refused (fencing token)")):
        idx = np.flatnonzero(mask & (node != ""))
        if len(idx) == 0:
            continue
        y = np.array([row[n] for n in node[idx].tolist()], dtype=float)
        (line,) = ax.plot(times[idx], y, linestyle="none", marker=marker, color=color,
                          markersize=size, markeredgecolor="black", markeredgewidth=0.6,
                          zorder=5, label=label)
        handles.append(line)
    return handles


def _title(title: str, ex: pd.DataFrame, shown: pd.DataFrame, colour: str = "") -> str:
    """The chart's title: the executions, how many failed or have no end, and whether only
    a subset is drawn."""
    n_exec = len(ex)
    counts = Counter(ex["status"].tolist())
    parts = [_plural(n_exec, "execution")]
    if len(ex) and ex["duplicate"].any():
        parts.append(f"{int(ex['duplicate'].sum())} ran a job again")
    if counts.get("failed"):
        parts.append(f"{counts['failed']} failed")
    if counts.get("open"):
        parts.append(f"{counts['open']} without end")
    detail = colour + "one lane per worker thread · " + ", ".join(parts)
    if len(shown) < n_exec:
        detail += f"; showing {len(shown)} of {n_exec} executions (evenly spaced subset)"
    return headline(title, SECONDS, detail, 11.0, 11.0)
