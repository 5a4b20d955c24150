"""The load on each downstream service beside its health: calls a second, stacked by how
they were answered, over shaded outages (red; hatched where the load held it down past the
outage's end) and brown-outs (orange). The picture where a retry storm shows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch, StepPatch
from matplotlib.path import Path

from .common import PER_SECOND, _no_data, headline

#: outcome → colour (the ``load`` table's columns)
COLOURS = {"ok": "tab:blue", "error": "tab:red", "timeout": "tab:purple",
           "refused": "tab:brown", "rate_limited": "tab:olive", "worker_timeout": "tab:pink",
           "unanswered": "0.5"}
_SHADE = {"down": ("red", 0.15), "brownout": ("orange", 0.18)}


def _panel(ax: Any, load: pd.DataFrame, spans: dict[str, list[tuple[float, float]]],
           title: str, legend: bool, lines: Any = ()) -> None:
    t = load["t"].to_numpy(dtype=float)
    width = float(t[1] - t[0]) if len(t) > 1 else 1.0
    edges = np.append(t, t[-1] + width) if len(t) else np.zeros(1)
    bottom = np.zeros(len(t))
    for label, colour in COLOURS.items():
        values = load[label].to_numpy(dtype=float) if label in load else np.zeros(len(t))
        if values.any():  # each outcome one filled step outline over the ones below it:
            # one artist for up to 2,000 bins (a bar each took 2.7 s to draw at 200,000
            # jobs), and no seams between neighbouring bars
            _stairs(ax, bottom + values, edges, bottom.copy(), colour, label.replace("_", " "))
            bottom += values
    for state, (colour, alpha) in _SHADE.items():
        for a, b in spans.get(state, []):
            ax.axvspan(a, b, color=colour, alpha=alpha, linewidth=0)
    for a, b in spans.get("held", []):
        ax.axvspan(a, b, facecolor="none", edgecolor="red", hatch="//", alpha=0.5,
                   linewidth=0)
    for (value, words), style in zip(lines, ("--", ":", "-.")):
        ax.axhline(value, color="black", linestyle=style, linewidth=1.1, label=words)
    top = max([float(bottom.max()) if len(bottom) else 0.0] + [v for v, _ in lines] + [1.0])
    ax.set_ylim(0, top * 1.12)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(PER_SECOND if width == 1 else f"{PER_SECOND} ({width:g} s bins)")
    ax.grid(axis="y", alpha=0.3)
    if legend:
        handles, labels = ax.get_legend_handles_labels()
        handles += [Patch(color=_SHADE[k][0], alpha=_SHADE[k][1], label=label)
                    for k, label in (("down", "down"), ("brownout", "brown-out"))
                    if spans.get(k)]
        if spans.get("held"):
            handles.append(Patch(facecolor="none", edgecolor="red", hatch="//",
                                 label="held down by load"))
        if handles:
            ax.legend(handles=handles, fontsize=8, loc="upper right")


def _stairs(ax: Any, values: np.ndarray, edges: np.ndarray, baseline: np.ndarray,
            colour: str, label: str) -> StepPatch:
    """``ax.stairs(values, edges, baseline=baseline, fill=True, color=colour, label=label,
    linewidth=0)``, the same artist, with its data limits taken from its outline's corners
    at once: ``add_patch`` walks the outline a segment at a time as Bézier curves, 0.3 s for
    a service's few thousand bins."""
    patch = StepPatch(values, edges, baseline=baseline, fill=True, color=colour, label=label,
                      linewidth=0)
    ax.add_artist(patch)  # what add_patch does, but the limits
    path = patch.get_path()
    corners = path.vertices if path.codes is None else \
        path.vertices[path.codes != Path.CLOSEPOLY]
    ax.update_datalim(corners)
    low = float(np.min(baseline))  # then what stairs does after it
    patch.sticky_edges.y.append(low)
    ax.update_datalim([(edges[0], low)])
    ax.autoscale_view()
    return patch


def service_load(panels: dict[str, tuple[Any, ...]],
                 title: str = "load on the services") -> Figure:
    """One panel per entry (a service, or a variant): ``(load table, state spans)`` as
    ``analysis.services.load`` and ``intervals`` give them, and optionally a third item,
    ``[(calls/s, words), …]``: reference lines (its capacity, rate limit, recovery
    threshold); shared time axis."""
    n = max(1, len(panels))
    fig = Figure(figsize=(10.0, 1.2 + 2.2 * n), layout="constrained")
    axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
    if not panels:
        return _no_data(fig, axes[0], title, "no service was called")
    for i, (name, (table, spans, *lines)) in enumerate(panels.items()):
        _panel(axes[i], table, spans, name, legend=True, lines=lines[0] if lines else ())
    axes[-1].set_xlabel("simulated time (s)")
    fig.suptitle(headline(title, PER_SECOND, width=10.0))
    return fig
