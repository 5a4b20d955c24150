"""What every figure shares: the PNG resolution and ``save``, the colours, a new figure and
its "no data" note, horizontal bars drawn as one collection, tick labels in seconds, and
picking the trace rows of one event kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

#: Resolution of the PNGs written by ``save``.
DPI = 120

_OK, _FAILED, _OPEN = "tab:blue", "tab:orange", "tab:purple"
_CRASH, _RESTART, _PAUSE, _DOWN = "red", "tab:green", "gold", "0.6"


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at ``DPI`` dots per inch to ``path`` and return the path."""
    path = Path(path)
    fig.savefig(path, dpi=DPI, format="png")
    return path


def _trace_rows(data: Any) -> pd.DataFrame:
    """The trace table a figure reads: a frame as given (``trace_frame``'s columns), or the
    trace of a ``RunResult``, an ``Analysis`` or a ``Trace``."""
    if isinstance(data, pd.DataFrame):
        return data
    from ...analysis.inputs import as_trace
    from ..columns import plot_frame

    return plot_frame(as_trace(data))


def _job_rows(data: Any) -> pd.DataFrame:
    """The per-job table a figure reads: a frame as given (``jobs_frame``), or that of a
    ``RunResult``, an ``Analysis``, a ``Trace`` or a ``Histories``."""
    if isinstance(data, pd.DataFrame):
        return data
    from ...analysis.inputs import as_histories
    from ...analysis.metrics import jobs_frame

    return jobs_frame(as_histories(data))


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
