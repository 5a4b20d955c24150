"""The run's load over time (``series.Load``): four panels on one time axis — busy threads
against the cluster's, due jobs not yet started, the start delay of the jobs that
started (mean and worst in each bin), and the database's statements per second (polls and
writes) — and the nodes' poll phases over time (``phases.phase_series``): lines that run
together are nodes polling in lock-step."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ...analysis.series import Load
from .common import (SECONDS, _plural, headline, legend_columns, near_twins, twin_style,
                     twin_words, twins, variant_colours, variant_legend, variant_widths,
                     with_unit)


def load_over_time(load: Load, window: tuple[float, float] | None = None,
                   faults: list[tuple[float, float, str]] | None = None,
                   more: int = 0) -> Figure:
    """Busy threads, waiting jobs, start delay and statements per second over the run, on
    one time axis (``analysis.series.load_series`` gives ``load``); ``window``, the
    statistics' (start, end) when a warm-up or cool-down leaves some of the run out, shades
    what it leaves out; ``faults``, the run's fault windows (from, to, what), shades them
    in red, each named over the top panel (``more``: windows beyond them, not drawn)."""
    fig = Figure(figsize=(9.0, 8.0), layout="constrained")
    axes = fig.subplots(4, 1, sharex=True)
    mid = (load.edges[:-1] + load.edges[1:]) / 2
    ax = axes[0]
    ax.fill_between(mid, load.busy, step="mid", color="tab:blue", alpha=0.6, lw=0)
    if load.up is None:
        ax.axhline(load.threads, color="0.3", ls="--", lw=1)
        dashed = "dashed: all of them"
    else:  # a node down or not yet started: the threads there were, bin by bin
        ax.plot(mid, load.up, drawstyle="steps-mid", color="0.3", ls="--", lw=1)
        dashed = "dashed: the threads of the nodes up (a node down or not started has none)"
    ax.annotate(f"all {load.threads:,} threads", (mid[0], load.threads), xytext=(2, -10),
                textcoords="offset points", fontsize=8, color="0.3")
    ax.set_ylim(0, load.threads * 1.15 or 1)
    ax.set_ylabel(with_unit("busy", "threads"))
    ax.set_title(headline("threads busy, the mean in each bin", "threads", dashed,
                          fontsize=10), fontsize=10)
    ax = axes[1]
    ax.fill_between(mid, load.waiting, step="mid", color="tab:orange", alpha=0.6, lw=0)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(with_unit("waiting", "jobs"))
    ax.set_title(headline("due jobs not yet started (waiting for a poll or a thread), the mean "
                          "in each bin", "jobs",
                          fontsize=10), fontsize=10)
    ax = axes[2]
    ok = ~np.isnan(load.delay_mean)
    ax.plot(mid[ok], load.delay_max[ok], ".", ms=3, color="tab:red", label="worst")
    ax.plot(mid[ok], load.delay_mean[ok], "-", lw=1.2, color="tab:red", alpha=0.7,
            label="mean")
    ax.set_ylim(bottom=0)
    ax.set_ylabel(with_unit("start delay", SECONDS))
    ax.set_title(headline("start delay of the jobs that started, by start time", SECONDS,
                          fontsize=10), fontsize=10)
    if ok.any():
        ax.legend(loc="upper right", fontsize=8)
    ax = axes[3]
    ax.plot(mid, load.polls, "-", lw=1, color="tab:purple", label="polls")
    ax.plot(mid, load.writes, "--", lw=1, color="tab:green", label="writes")
    ax.set_ylim(bottom=0)
    ax.set_ylabel(with_unit("statements", "per s"))
    ax.set_title(headline("database statements per second", "per s",
                          "polls; and writes: completions, retries, lock extensions and "
                          "releases", fontsize=10), fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_xlabel(with_unit("simulated time", SECONDS))
    ax.set_xlim(load.edges[0], load.edges[-1])
    if window is not None:
        for ax in axes:
            for a, b in ((load.edges[0], window[0]), (window[1], load.edges[-1])):
                if b > a:
                    ax.axvspan(a, b, color="0.85", zorder=0, lw=0)
    rows = _label_rows([(a, what) for a, _, what in faults or []],
                       (load.edges[0], load.edges[-1]), fig.get_figwidth())
    for (a, b, what), row in zip(faults or [], rows):
        for ax in axes:
            ax.axvspan(a, b, color="tab:red", alpha=0.12, zorder=0, lw=0)
        axes[0].annotate(what, (a, 1.0), xycoords=("data", "axes fraction"),
                         xytext=(2, -2 - 9 * row), textcoords="offset points", va="top",
                         fontsize=7, color="tab:red")
    first = f" (the first {len(faults or [])})" if more else ""
    said = (["grey: the warm-up and cool-down, left out of the statistics"] if window
            is not None else []) + ([f"red: fault windows{first}"] if faults else [])
    fig.suptitle(headline("load over time", None, "; ".join(said)))
    return fig


def _label_rows(labels: list[tuple[float, str]], span: tuple[float, float],
                width_in: float) -> list[int]:
    """The row (0 the top) of each fault window's label, so that a label does not print
    over one begun just before it: each takes the first row where the label before it ends
    before it begins (a label's width reckoned at 7-point type, 4.2 points a character, on
    an axis of about 0.85 of the figure's width)."""
    x0, x1 = span
    points = max(x1 - x0, 1e-12) / (width_in * 72 * 0.85)  # seconds a point
    ends: list[float] = []  # where each row's last label ends, in seconds
    out = []
    for a, what in labels:
        row = next((r for r, e in enumerate(ends) if e <= a), len(ends))
        end = a + (len(what) * 4.2 + 4) * points
        if row == len(ends):
            ends.append(end)
        else:
            ends[row] = end
        out.append(row)
    return out


def load_by_variant(loads: dict[str, Load | None], window: tuple[float, float] | None = None,
                    few: dict[str, int] | None = None) -> Figure:
    """The four panels of ``load_over_time`` with one line per variant: busy threads (and,
    dashed, all of the variant's threads), waiting jobs, the mean start delay and all
    statements per second, each the mean in its bin. Give the loads binned alike
    (``load_series`` over one end) to compare bins. Variants in the order given, each in
    its colour of every figure that sets them side by side (``variant_colours``; the
    first drawn widest; identical lines dashed in turn, their labels saying so); a variant
    whose load is None (``few``: its jobs, too few for one) is named in the legend.
    ``window``: the statistics' (start, end), shaded, when every variant has the same."""
    few = few or {}
    drawn = {name: ld for name, ld in loads.items() if ld is not None}
    panels = {name: [np.asarray(x, dtype=float) for x in (
        ld.busy, ld.waiting, ld.delay_mean, ld.polls + ld.writes, [ld.threads])]
        for name, ld in drawn.items()}
    groups = twins({name: b"|".join(x.tobytes() for x in [ld.edges, *panels[name]])
                    for name, ld in drawn.items()})
    groups.update({name: [name] for name in loads if name not in drawn})
    # lines within 2% of an earlier variant's in every panel, on the same bins: dashed in
    # turn too, else the later hides the other (the challenge's two one-thread lessons)
    same_bins = len({ld.edges.tobytes() for ld in drawn.values()}) == 1
    groups, nearly = near_twins(groups, panels) if same_bins else (groups, set())
    labels = {name: f"{name} ({_plural(ld.threads, 'thread')}"
              f"{twin_words(name, groups[name], nearly)})"
              if ld is not None else f"{name} ({_plural(few.get(name, 0), 'job')}: too few "
              f"for a load figure)" for name, ld in loads.items()}
    ncol = legend_columns(list(labels.values()), 9.0)
    rows = -(-len(labels) // ncol)
    fig = Figure(figsize=(9.0, 8.0 + 0.18 * max(0, rows - 3)), layout="constrained")
    axes = fig.subplots(4, 1, sharex=True)
    colours, widths = variant_colours(len(loads)), variant_widths(len(loads))
    lines = []
    for i, (name, ld) in enumerate(loads.items()):
        if ld is None:
            lines += axes[0].plot([], [], color=colours[i], label=labels[name])
            continue
        mid = (ld.edges[:-1] + ld.edges[1:]) / 2
        style = dict(color=colours[i], linestyle=twin_style(name, groups[name]),
                     lw=widths[i] * 0.8)
        lines += axes[0].plot(mid, ld.busy, drawstyle="steps-mid", **style,
                              label=labels[name])
        if ld.up is None:
            axes[0].axhline(ld.threads, color=colours[i], ls="--", lw=0.9, alpha=0.7)
        else:
            axes[0].plot(mid, ld.up, drawstyle="steps-mid", color=colours[i], ls="--", lw=0.9,
                         alpha=0.7)
        axes[1].plot(mid, ld.waiting, drawstyle="steps-mid", **style)
        ok = ~np.isnan(ld.delay_mean)
        axes[2].plot(mid[ok], ld.delay_mean[ok], **style)
        axes[3].plot(mid, ld.polls + ld.writes, **style)
    lo = min((ld.edges[0] for ld in drawn.values()), default=0.0)
    hi = max((ld.edges[-1] for ld in drawn.values()), default=1.0)
    most = max((ld.threads for ld in drawn.values()), default=1)
    axes[0].set_ylim(0, most * 1.15 or 1)
    axes[0].set_ylabel(with_unit("busy", "threads"))
    axes[0].set_title(headline("threads busy, the mean in each bin", "threads",
                               "dashed: all of a variant's threads, in its colour" if all(
                                   ld.up is None for ld in drawn.values()) else
                               "dashed: a variant's threads of the nodes up, in its colour",
                               fontsize=10), fontsize=10)
    axes[1].set_ylabel(with_unit("waiting", "jobs"))
    axes[1].set_title(headline("due jobs not yet started, the mean in each bin", "jobs",
                               fontsize=10), fontsize=10)
    axes[2].set_ylabel(with_unit("start delay", SECONDS))
    axes[2].set_title(headline("mean start delay of the jobs that started, by start time",
                               SECONDS, fontsize=10), fontsize=10)
    axes[3].set_ylabel(with_unit("statements", "per s"))
    axes[3].set_title(headline("database statements per second", "per s",
                               "polls and writes together", fontsize=10), fontsize=10)
    for ax in axes[1:]:
        ax.set_ylim(bottom=0)
    axes[3].set_xlabel(with_unit("simulated time", SECONDS))
    axes[3].set_xlim(lo, hi)
    if window is not None:
        for ax in axes:
            for a, b in ((lo, window[0]), (window[1], hi)):
                if b > a:
                    ax.axvspan(a, b, color="0.85", zorder=0, lw=0)
    variant_legend(fig, lines, loc="outside lower center", ncol=ncol, fontsize=9,
                   frameon=False)
    said = (["grey: the warm-up and cool-down, left out of the statistics"]
            if window is not None else []) + (
        ["lines dashed in turn: variants whose lines are the same, or nearly"]
        if any(len(groups[n]) > 1 for n in drawn) else [])
    fig.suptitle(headline("load over time, by variant", None, " · ".join(said)))
    return fig


def poll_phases(at: np.ndarray, phase: np.ndarray, names: list[str], T: float) -> Figure:
    """Each polling node's phase within the interval ``T`` at the instants ``at``
    (``analysis.phases.phase_series`` gives the arguments)."""
    fig = Figure(figsize=(9.0, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for i, name in enumerate(names):
        ax.plot(at, phase[:, i], ".", ms=2.5, label=name)
    ax.set_ylim(0, T)
    ax.set_xlim(at[0], at[-1])
    ax.set_xlabel(with_unit("simulated time", SECONDS))
    ax.set_ylabel(with_unit(f"phase within the {T:g} s interval", SECONDS))
    ax.set_title(headline("each node's poll phase over time", SECONDS,
                          "points that merge: nodes polling in lock-step"))
    ax.legend(loc="upper right", fontsize=8, markerscale=3,
              ncol=max(1, min(len(names), 6)))
    return fig
