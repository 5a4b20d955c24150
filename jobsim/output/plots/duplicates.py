"""Duplicate executions and duplicate side effects, counted per cause."""

from __future__ import annotations

import textwrap
from collections import Counter
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .common import _figure, _no_data, headline


def duplicates_by_cause(duplicates: Any, causes: tuple[str, ...] | None = None) -> Figure:
    """Grouped bars: duplicate executions and duplicate side effects per cause.

    ``duplicates`` are ``history.Duplicate`` objects (anything with ``what`` and ``cause``),
    or a run's: a ``RunResult``, an ``Analysis``, a ``Trace`` or a ``Histories``. ``causes``
    defaults to every cause the analysis knows (``history.CAUSES``).
    Every cause of ``causes`` is shown, in that order, zeros included; a cause found in the
    duplicates but not in ``causes`` is added after them (sorted). Tick labels are the cause
    names with spaces for underscores, wrapped.
    """
    title = "double runs by cause"
    if hasattr(duplicates, "trace") or hasattr(duplicates, "histories") or \
            hasattr(duplicates, "arrays") or hasattr(duplicates, "duplicates"):
        from ...analysis.inputs import as_histories

        duplicates = as_histories(duplicates).duplicates
    if causes is None:
        from ...analysis.history import CAUSES as causes
    if hasattr(duplicates, "itertuples"):  # a table with what and cause columns
        duplicates = list(duplicates.itertuples()) if len(duplicates) else []
    dups = list(duplicates or [])
    ex = Counter(d.cause for d in dups if d.what == "execution")
    se = Counter(d.cause for d in dups if d.what == "side_effect")
    order = list(dict.fromkeys(causes or ()))
    order += sorted((set(ex) | set(se)) - set(order))
    fig, ax = _figure(max(7.0, 1.3 + 1.3 * len(order)), 4.8)
    if not order:
        return _no_data(fig, ax, headline(title, "count"), "no causes and no duplicates")
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
    ax.set_ylabel("duplicates (count)")
    ax.set_xlabel("cause")
    ax.grid(True, axis="y", alpha=0.3)
    n_ex, n_se = sum(e_vals), sum(s_vals)
    ax.set_title(headline(title, "count", f"{n_ex:,} duplicate execution{'s' * (n_ex != 1)}, "
                          f"{n_se:,} duplicate side effect{'s' * (n_se != 1)}",
                          fig.get_figwidth()))
    if top == 0:
        ax.text(0.5, 0.6, "no duplicates", transform=ax.transAxes, ha="center",
                va="center", fontsize=13, color="0.4")
    ax.legend(loc="upper right", fontsize=9)
    return fig
