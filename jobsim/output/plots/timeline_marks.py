"""The timeline's marks beside its bars: each node's acquisitions (claims that locked rows,
and empty ones) as ticks along its row, executions of one lane that start at one instant set
side by side, and the colours of executions by priority or by handler instead of outcome."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ...executor.config import TIMELINE_COLOURS
from ..plotdata import kind_is

#: how a timeline may colour its executions (``report.timeline_colour`` in a scenario)
COLOURINGS = TIMELINE_COLOURS
#: the most acquisition ticks drawn per kind (an evenly spaced subset beyond)
MAX_TICKS = 3000
#: the colours of up to ten classes (tab10 without the outcome colours' orange and red, so
#: that a hatched failure reads as one)
_PALETTE = ("tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
            "tab:olive", "tab:cyan", "navy", "gold")


def draw_acquisitions(ax: Axes, df: pd.DataFrame, node: np.ndarray, row: dict[str, int],
                      band: float, max_ticks: int = MAX_TICKS) -> list[Any]:
    """Each node's acquisitions as ticks along the top edge of its row: one that locked
    rows (a claim) a dark triangle, an empty one (it found nothing it could lock) a hollow
    circle. Beyond ``max_ticks`` of a kind, an evenly spaced
    subset is drawn and its legend entry says how many of how many."""
    acq = kind_is(df, "acquire") & (node != "")
    got = df["b"].to_numpy()
    times = df["time"].to_numpy(dtype=float)
    handles = []
    for mask, y_off, marker, face, label in (
            (acq & (got > 0), -band / 2 - 0.05, "v", "black", "claim (rows locked)"),
            (acq & (got == 0), -band / 2 - 0.05, "o", "none", "empty acquisition")):
        idx = np.flatnonzero(mask)
        if len(idx) == 0:
            continue
        n = len(idx)
        if n > max_ticks:
            idx = idx[np.unique(np.linspace(0, n - 1, max_ticks).round().astype(np.int64))]
            label += f" ({len(idx)} of {n} shown)"
        y = np.array([row.get(k, -10) for k in node[idx].tolist()], dtype=float) + y_off
        size = 4.5 if len(idx) <= 300 else 3.0  # many: smaller, so the row stays readable
        (line,) = ax.plot(times[idx], y, linestyle="none", marker=marker, markersize=size,
                          markerfacecolor=face, markeredgecolor="black",
                          markeredgewidth=0.7, zorder=4, label=label, clip_on=False)
        handles.append(line)
    return handles


def side_by_side(frame: pd.DataFrame, min_width: float) -> np.ndarray:
    """The drawn start of each execution: executions of one lane (node, thread) that start
    at one instant — all but the last took no time — are set one ``min_width`` apart in
    run order, so a zero-length run is not hidden under the next one."""
    if frame.empty:
        return np.zeros(0)
    rank = frame.groupby(["node", "thread", "start"], sort=False, observed=True).cumcount()
    return frame["start"].to_numpy(dtype=float) + rank.to_numpy(dtype=float) * min_width


def classes(df: pd.DataFrame, jobs: pd.DataFrame | None, colour: str
            ) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """For ``colour`` priority or handler: (job ids sorted, each one's class index, the
    classes' labels in order); priorities from the trace's ``job_created`` (b), handlers
    from ``jobs`` (``jobs_frame``'s id and handler). None when there is nothing to class by."""
    if colour == "priority":
        made = df.loc[kind_is(df, "job_created"), ["job", "b"]]
        ids, values = made["job"].to_numpy(), made["b"].to_numpy()
        fmt = "priority {}".format
    elif colour == "handler" and jobs is not None and len(jobs):
        ids, values = jobs["id"].to_numpy(), jobs["handler"].astype(str).to_numpy()
        fmt = str
    else:
        return None
    if len(ids) == 0:
        return None
    order = np.argsort(ids, kind="stable")
    kinds, index = np.unique(values[order], return_inverse=True)
    return ids[order], index.reshape(-1), [fmt(k) for k in kinds.tolist()]


def class_colours(n: int) -> list[Any]:
    """``n`` colours: the palette for up to ten classes, else a gradient (viridis)."""
    if n <= len(_PALETTE):
        return list(_PALETTE[:n])
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(i / max(1, n - 1)) for i in range(n)]


def class_of(jobs_sorted: np.ndarray, index: np.ndarray, job: np.ndarray) -> np.ndarray:
    """Each execution's class (-1: its job was not created in the trace)."""
    if len(jobs_sorted) == 0:
        return np.full(len(job), -1)
    at = np.clip(np.searchsorted(jobs_sorted, job), 0, len(jobs_sorted) - 1)
    return np.where(jobs_sorted[at] == job, index[at], -1)


def legend_classes(labels: list[str], limit: int = 10) -> list[int]:
    """The classes the legend names: all of up to ``limit``, else evenly spaced ones."""
    if len(labels) <= limit:
        return list(range(len(labels)))
    return sorted(set(np.linspace(0, len(labels) - 1, limit).round().astype(int).tolist()))
