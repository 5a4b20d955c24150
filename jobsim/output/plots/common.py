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
    """Write ``fig`` as a PNG at ``DPI`` dots per inch to ``path`` and return the path.

    The figure is drawn once, laid out (constrained) within that draw: ``savefig`` would
    draw it twice, once with painting off to lay it out and once to paint, and drawing is
    most of a report's plotting time. The bytes are those ``savefig`` writes (a test
    compares); ``fig`` is left as it was given (its resolution and canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = Path(path)
    canvas, dpi = fig.canvas, fig.dpi
    try:
        fig.dpi = DPI
        FigureCanvasAgg(fig).print_png(path)
    finally:
        fig.set_canvas(canvas)
        fig.dpi = dpi
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
    ax.set_title(title[:1].upper() + title[1:])
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


def twins(keys: dict[str, bytes]) -> dict[str, list[str]]:
    """Each variant's group of variants whose lines are the very same (the same ``key``:
    the bytes of what is drawn), in the given order."""
    groups: dict[bytes, list[str]] = {}
    for name, key in keys.items():
        groups.setdefault(key, []).append(name)
    return {name: group for group in groups.values() for name in group}


def near_twins(groups: dict[str, list[str]], values: dict[str, list[np.ndarray]],
               tol: float = 0.02) -> tuple[dict[str, list[str]], set[str]]:
    """``groups`` (``twins``: identical lines) with each group whose lines are nearly the
    same as an earlier group's joined to it: ``values`` gives each drawn variant's arrays
    on shared bins (NaN where it has none), and two variants are near where each pair of
    arrays differs by at most ``tol`` of the larger of the two's largest values, over the
    bins both have (of their own scale, not the figure's: two small lines under a tall one
    are told apart), their means over those bins by at most ``tol`` of the larger (a row
    apart for half the run is not the same), and at most ``tol`` of the bins have one but
    not the other (one that goes on after the other ended is not the same). Else a later
    line, drawn over a nearly equal one, hides it. Also the names that joined so (their
    labels say "nearly")."""
    def top(x: np.ndarray) -> float:
        return float(np.nanmax(np.abs(x))) if np.isfinite(x).any() else 0.0

    def near(a: str, b: str) -> bool:
        for x, y in zip(values[a], values[b]):
            both = np.isfinite(x) & np.isfinite(y)
            if not both.any() or int(np.count_nonzero(np.isfinite(x) ^ np.isfinite(y))) > \
                    tol * len(x):  # one goes on where the other has ended
                return False
            if float(np.max(np.abs(x[both] - y[both]))) > tol * max(top(x), top(y), 1e-12):
                return False
            mx, my = float(np.mean(x[both])), float(np.mean(y[both]))  # and on the whole: a
            if abs(mx - my) > tol * max(abs(mx), abs(my), 1e-12):  # row apart for long is not
                return False
        return True
    joined: dict[str, list[str]] = {}  # each group's first → the group
    nearly: set[str] = set()
    for name, group in groups.items():
        if group[0] != name:  # an identical line: with its first
            continue
        first = next((f for f in joined if name in values and f in values and near(f, name)),
                     None)
        if first is None:
            joined[name] = list(group)
        else:
            joined[first] += group
            nearly.update(group)
    return {n: g for g in joined.values() for n in g}, nearly


def twin_style(name: str, group: list[str]) -> Any:
    """The line style of ``name`` among its ``group`` of identical lines: solid alone;
    dashed in turn otherwise, so that each colour shows on the one line."""
    k, g = group.index(name), len(group)
    return "-" if g == 1 else (4.0 * k, (4.0, 4.0 * (g - 1)))


def twin_words(name: str, group: list[str], nearly: set[str] | frozenset[str] = frozenset()
               ) -> str:
    """What a label adds for a line drawn by others too: "; the same as fifo", or for one
    only close to its group's first (``near_twins``), "; nearly the same as fifo"."""
    if group[0] == name:
        return ""
    return f"; {'nearly ' if name in nearly else ''}the same as {group[0]}"


def variant_colours(n: int) -> list[str]:
    """The colours of ``n`` variants, the same in every figure that sets them side by side:
    matplotlib's ten (C0–C9) for up to ten, tab20's twenty for more."""
    if n <= 10:
        return [f"C{i}" for i in range(n)]
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    tab20 = colormaps["tab20"]
    return [to_hex(tab20(i % 20)) for i in range(n)]


def variant_widths(n: int) -> list[float]:
    """Line widths of ``n`` variants drawn one over the other: the first drawn widest, so
    that a line a later one nearly covers still shows at its edges."""
    return [round(1.3 + 1.7 * (n - 1 - i) / max(n - 1, 1), 2) for i in range(n)]


def variant_legend(target: Any, lines: list[Any], **style: Any) -> Any:
    """A legend of ``lines`` (on ``target``, an Axes or a Figure) whose samples are solid:
    a line dashed in turn with its twins (``twin_style``) may show no dash within a
    sample's length; its label says whose line it shares."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=ln.get_color(), linewidth=min(ln.get_linewidth(), 2.0))
               for ln in lines]
    return target.legend(handles, [ln.get_label() for ln in lines], **style)


def legend_columns(labels: list[str], width: float, fontsize: float = 9.0) -> int:
    """Two legend columns where two of the longest label fit a figure ``width`` inches
    wide, else one."""
    # DejaVu Sans: about half the font size a character, and half an inch for the sample
    longest = max((len(t) for t in labels), default=0) * fontsize * 0.52 / 72 + 0.5
    return 2 if len(labels) > 3 and 2 * longest < width - 0.4 else 1


def _seconds(v: float, _pos: Any = None) -> str:
    """A tick label in seconds: ``0.001``, ``0.25``, ``30``, ``1e+04``."""
    return f"{v:g}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --- the words of a figure: its title and axis labels, each with its unit ------------------------
#
# The convention every figure follows: a title in words that names what is drawn and its unit
# in brackets ("Start delay of the job named urgent (s)"), optionally a second line of detail
# (counts, a subset shown); axis labels are a quantity and its unit ("start delay (s)",
# "calls/s", "jobs"). A summary's dotted path (``named.urgent.start_delay``) is never the
# title: it may stand in small print under the axes (``small_print``) and in report.md.

#: the units figures use: seconds, a rate, and counts named by what they count
SECONDS, PER_SECOND = "s", "calls/s"


def with_unit(words: str, unit: str | None) -> str:
    """``words (unit)``: an axis label or a title's first line; no unit, no brackets."""
    return f"{words} ({unit})" if unit else words


def axis_label(unit: str) -> str:
    """The value axis of a figure whose title names the quantity: its unit as words
    ("time (s)", "calls/s", "jobs")."""
    return {SECONDS: "time (s)", "": "value"}.get(unit, unit)


def headline(words: str, unit: str | None = None, detail: str = "",
             width: float = 9.0, fontsize: float = 12.0) -> str:
    """A figure's title: ``words (unit)`` with its first letter capitalised, then ``detail``
    on a line of its own; each line wrapped to fit a figure ``width`` inches wide."""
    first = with_unit(words[:1].upper() + words[1:], unit)
    return "\n".join(_wrap(line, width, fontsize) for line in (first, detail) if line)


def _wrap(line: str, width: float, fontsize: float) -> str:
    """``line`` wrapped at spaces into lines that fit ``width`` inches at ``fontsize``
    points (a character is about 0.6 of the font size wide: DejaVu Sans, kept on the safe
    side)."""
    import textwrap

    chars = max(20, int((width - 0.6) * 72 / (fontsize * 0.62)))
    return "\n".join(textwrap.wrap(line, chars, break_long_words=False,
                                   break_on_hyphens=False)) or line


def small_print(fig: Figure, text: str) -> None:
    """``text`` (a summary's dotted path, a note) in small grey print at the figure's bottom
    left, where constrained layout keeps room for it."""
    if text:
        fig.supxlabel(text, x=0.01, ha="left", fontsize=7, color="0.45")


def text_outside(fig: Figure, tolerance: float = 1.0) -> list[str]:
    """The texts of ``fig`` (titles, axis labels, tick labels, legends, notes) that reach
    past the figure's edges once drawn, each as ``"what: its text"``; [] when all fit. The
    check the tests hold every figure to (a cut title is a figure that lies)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()  # lays out (constrained) and sizes every text as ``save`` draws it
    renderer = canvas.get_renderer()
    box = fig.bbox

    def cut(e: Any) -> bool:
        return e is not None and (e.x0 < box.x0 - tolerance or e.x1 > box.x1 + tolerance or
                                  e.y0 < box.y0 - tolerance or e.y1 > box.y1 + tolerance)

    out, ticks = [], set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update((id(tick.label1), id(tick.label2)))
            # the tick labels drawn (those outside the view are not) and the axis's label
            if cut(axis.get_tightbbox(renderer)):
                out.append(f"{axis.axis_name} axis: {axis.get_label_text()!r} or its ticks")
    for t in fig.findobj(Text):
        if id(t) in ticks or not t.get_visible() or not t.get_text().strip():
            continue
        if cut(t.get_window_extent(renderer)):
            out.append(f"{type(t).__name__}: {t.get_text()!r}")
    return out
