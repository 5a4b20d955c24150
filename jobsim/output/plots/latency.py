"""Start-delay figures: the empirical CDF of first start − due, one line per priority class
of a run, or one line per variant of a scenario."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullFormatter

from .common import (SECONDS, _figure, _job_rows, _no_data, _plural, _seconds, headline,
                     legend_columns, twin_style, twin_words, twins, variant_colours,
                     variant_legend)


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
        lo, hi = float(d_all.min()), float(d_all.max())
        if lo >= 0 and hi > 0:  # a delay axis from 0, also for one job (not ticks around it)
            ax.set_xlim(0.0, hi * 1.05)
        elif lo >= 0:  # every delay 0: the step at 0 drawn clear of the axis
            ax.set_xlim(-0.05, 1.0)
    ax.set_xlabel(xlabel)


def _twins(delays: dict[str, np.ndarray]) -> dict[str, list[str]]:
    """Each variant's group of variants with the very same delays (in the given order)."""
    keys = {}
    for name, delay in delays.items():
        d = np.asarray(delay, dtype=float)
        keys[name] = np.sort(d[~np.isnan(d)]).tobytes() + b"|" + \
            str(int(np.isnan(d).sum())).encode()
    return twins(keys)


def start_delay_by_variant(delays: dict[str, np.ndarray],
                           marks: dict[str, dict[str, float]] | None = None,
                           references: Sequence[tuple[float, str]] = ()) -> Figure:
    """Empirical CDF of the start delay, one line per variant (NaN = never started: left
    out of the line and counted in its label), to compare runs of one workload. ``marks``:
    per variant, named jobs' start delays, each marked and labelled on its variant's line
    (the job a scenario is about, which a CDF of the others hides)."""
    title = headline("start delay (first start − due) by variant, empirical CDF", SECONDS)
    # many variants' legend goes under the axes, where it covers no line
    below = len(delays) > 6
    fig, ax = _figure(9.0, 5.0)
    drawn = []
    marks = marks or {}
    said: dict[str, list[str]] = {}
    twins = _twins(delays)
    colours = dict(zip(delays, variant_colours(len(delays))))
    drawn_lines = []
    for name, delay in delays.items():
        delay = np.asarray(delay, dtype=float)
        started = ~np.isnan(delay)
        d = np.sort(delay[started])
        never = int((~started).sum())
        label = f"{name} ({_plural(len(d), 'job')}" + (f", {never} never started" if never
                                                       else "")
        group = twins[name]
        label += twin_words(name, group) + ")"
        if len(d) == 0:
            drawn_lines += ax.plot([], [], color="none", label=label)
            continue
        y = np.arange(1, len(d) + 1) / len(d)
        (line,) = ax.step(np.r_[d[0], d], np.r_[0.0, y], where="post", label=label,
                          linewidth=1.6, linestyle=twin_style(name, group),
                          color=colours[name])
        drawn_lines.append(line)
        drawn.append(d)
        for job, at in sorted(marks.get(name, {}).items()):
            frac = np.searchsorted(d, at, side="right") / len(d)
            ax.plot([at], [frac], marker="o", markersize=8, color=line.get_color(),
                    markeredgecolor="black", zorder=5)
            said.setdefault(job, []).append(f"{name} {at:.3g} s")
    if said:  # one line per named job, its delay in each variant (marked on the lines)
        ax.text(0.02, 0.97, "\n".join(f"● {job}: " + ", ".join(v) for job, v in said.items()),
                transform=ax.transAxes, ha="left", va="top", fontsize=9,
                bbox=dict(boxstyle="round", facecolor="white", alpha=0.85, edgecolor="0.7"))
    if not drawn:
        return _no_data(fig, ax, title, "no job started")
    top = 0.86  # each bound's words below the ones before: a long one runs past the next
    for at, words in sorted(references, key=lambda r: r[0]):  # line, not into its words
        ax.axvline(at, color="tab:red", linestyle="--", linewidth=1.2, zorder=4)
        ax.annotate(words, (at, top), xycoords=("data", "axes fraction"), xytext=(4, 0),
                    textcoords="offset points", ha="left", va="top", fontsize=8.5,
                    color="tab:red", bbox=dict(boxstyle="round,pad=0.2", facecolor="white",
                                               alpha=0.85, edgecolor="none"))
        top -= 0.045 * (words.count("\n") + 1) + 0.03
        if top < 0.5:  # many bounds: round again from the top, clear of the legend
            top = 0.86
    _delay_axis(ax, np.concatenate(drawn + [np.array([at for at, _ in references])]))
    ax.set_ylabel("fraction of started jobs with delay ≤ x")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="major", alpha=0.35)
    ax.set_title(title)
    if below:  # the figure grows by the legend's rows
        ncol = legend_columns([ln.get_label() for ln in drawn_lines], 9.0)
        fig.set_size_inches(9.0, 5.0 + 0.2 * -(-len(drawn_lines) // ncol))
        variant_legend(fig, drawn_lines, loc="outside lower center", fontsize=9, frameon=False,
                       ncol=ncol)
    else:
        variant_legend(ax, drawn_lines, loc="lower right", fontsize=9)
    return fig


def latency_cdf(jobs: pd.DataFrame) -> Figure:
    """Empirical CDF of the start delay (first start − due), one line per priority class.

    Jobs that never started are left out of the lines and counted in the legend and the
    title. The x axis is logarithmic (symmetric-log if some delays are ≤ 0) when the
    positive delays span more than two decades.
    """
    title = "start delay (first start − due), empirical CDF"
    fig, ax = _figure(9.0, 5.0)
    jobs = None if jobs is None else _job_rows(jobs)
    if jobs is None or len(jobs) == 0:
        return _no_data(fig, ax, headline(title, SECONDS), "no jobs")
    delay = (jobs["first_start"].to_numpy(dtype=float) - jobs["due"].to_numpy(dtype=float))
    started = ~np.isnan(delay)
    prio = jobs["priority"].to_numpy()
    never = int((~started).sum())
    detail = _plural(len(jobs), "job")
    if never:
        detail += f", {never} never started (not drawn)"
    head = headline(title, SECONDS, detail)
    if not started.any():
        return _no_data(fig, ax, head, "no job started")

    empty_classes: list[Line2D] = []
    for p in sorted(set(prio.tolist())):
        in_class = prio == p
        d = np.sort(delay[in_class & started])
        missed = int((in_class & ~started).sum())
        label = f"priority {p} ({_plural(len(d), 'job')}"
        label += f", {missed} never started" if missed else ""
        label += "; under 20: each step is a job, not a percentile)" if 0 < len(d) < 20 \
            else ")"
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
