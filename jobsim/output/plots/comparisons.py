"""Comparisons: one figure across the variants of a scenario (bars), against a sweep's grid
axis (lines with confidence bands), or on a real database beside the simulator (paired
bars)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from .common import _figure, _no_data, _seconds, headline, small_print


def compare_bars(labels: Sequence[str], values: Sequence[float | None], title: str,
                 ylabel: str, reasons: Sequence[str] | None = None,
                 references: Sequence[tuple[float, str]] = (), note: str = "") -> Figure:
    """A labelled bar chart of one figure across variants, in the order given.

    A value of ``None`` (or NaN) is a run without a value (a service that never recovered, a
    job that never started): not an empty place but a hatched grey bar up to the axis's top,
    with its reason written in it (``reasons[i]``: "never recovered"; "no value: …" unless it
    starts with "never"). ``references``: ``(value, words)`` drawn as labelled dashed lines
    (an expectation's bound). ``note``: small print under the axes (the summary's path).
    """
    labels, values = list(labels or []), list(values or [])
    if len(labels) != len(values):
        raise ValueError(f"{len(labels)} labels but {len(values)} values")
    width = max(6.0, min(14.0, 1.2 + 0.9 * len(labels)))
    fig, ax = _figure(width, 4.8)
    title = headline(title, None, width=width)
    if not labels:
        return _no_data(fig, ax, title)
    reasons = list(reasons or [""] * len(labels))
    missing = [v is None or (isinstance(v, float) and math.isnan(v)) for v in values]
    heights = np.array([0.0 if m else float(v) for v, m in zip(values, missing)])
    x = np.arange(len(labels), dtype=float)
    known = np.r_[heights[~np.array(missing)], [r for r, _ in references]]
    lo, hi = (0.0, 1.0) if len(known) == 0 else (min(0.0, float(known.min())),
                                                 max(0.0, float(known.max())))
    if hi == lo:
        hi = lo + 1.0
    pad = (hi - lo) * 0.12
    top = hi + pad
    bars = ax.bar(x, heights, 0.6, color=["none" if m else "tab:blue" for m in missing])
    ax.bar_label(bars, labels=["" if m else f"{h:.4g}" for h, m in zip(heights, missing)],
                 padding=2, fontsize=9)
    gone = np.flatnonzero(missing)
    if len(gone):
        ax.bar(x[gone], top - max(lo, 0.0), 0.6, bottom=max(lo, 0.0), facecolor="0.93",
               edgecolor="0.45", hatch="//", linewidth=0.8, label="no value")
        for i in gone:
            why = reasons[i]
            words = why if why.startswith("never") else f"no value: {why}" if why \
                else "no value"
            ax.text(x[i], (max(lo, 0.0) + top) / 2, textwrap.fill(words, 22), ha="center",
                    va="center", rotation=90, fontsize=9, color="0.15",
                    bbox=dict(boxstyle="round,pad=0.25", facecolor="white", edgecolor="0.6"))
    for value, words in references:
        ax.axhline(value, color="tab:red", linestyle="--", linewidth=1.2, zorder=4)
        ax.annotate(words, (1.0, value), xycoords=("axes fraction", "data"),
                    xytext=(-4, 3), textcoords="offset points", ha="right", va="bottom",
                    fontsize=9, color="tab:red",
                    bbox=dict(boxstyle="round,pad=0.15", facecolor="white", alpha=0.8,
                              edgecolor="none"))
    long = max(len(s) for s in labels) * len(labels) > 70
    ax.set_xticks(x, labels, rotation=30 if long else 0, ha="right" if long else "center")
    ax.set_ylim(lo - (pad if lo < 0 else 0), top)
    ax.axhline(0, color="0.3", linewidth=0.8)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(title)
    small_print(fig, note)
    return fig


# --- sweeps ------------------------------------------------------------------------------------

def sweep_bands(series: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                xlabel: str, ylabel: str, categories: Sequence[str] | None = None,
                scenario: str = "") -> Figure:
    """A figure against a grid axis: one line per series ``(label, x, mean, lo, hi)`` with
    its 95% confidence band (left out where a point has fewer than two runs). With
    ``categories`` the x values are positions of those labels; ``scenario`` names the
    scenario swept in the title."""
    fig, ax = _figure(9.0, 5.0)
    title = (f"{scenario}: " if scenario else "") + f"{ylabel}\nagainst {xlabel} " + \
        ("(mean and 95% interval)" if categories is not None else
         "(mean and 95% confidence band)")
    if not series:
        return _no_data(fig, ax, title)
    for i, (label, x, mean, lo, hi) in enumerate(series):
        ok = ~(np.isnan(lo) | np.isnan(hi))
        if categories is not None:  # no line between categories: a point and its interval,
            # each series a little aside so that equal values do not hide each other
            shift = (i - (len(series) - 1) / 2) * min(0.12, 0.6 / len(series))
            err = np.where(ok, [mean - lo, hi - mean], 0.0)
            ax.errorbar(x + shift, mean, yerr=err, fmt="o", capsize=4, markersize=6,
                        label=label)
            continue
        line, = ax.plot(x, mean, marker="o", linewidth=1.6, label=label)
        if ok.any():
            ax.fill_between(x[ok], lo[ok], hi[ok], color=line.get_color(), alpha=0.2,
                            linewidth=0)
    if categories is not None:
        ax.set_xticks(range(len(categories)), categories)
    else:
        xs = np.concatenate([s[1] for s in series])
        if len(xs) and xs.min() > 0 and xs.max() / xs.min() > 50:
            ax.set_xscale("log")
        if xlabel.endswith("(s)") or "time" in xlabel or "interval" in xlabel or \
                "heartbeat" in xlabel:
            ax.xaxis.set_major_formatter(FuncFormatter(_seconds))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.35)
    ax.set_title(title)
    if len(series) > 1:  # one series: the axis label names it
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
