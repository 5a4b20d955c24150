"""One run's Bokeh figures: the node × thread timeline above the table depth, on one
(linked) time axis, as a JSON item written by ``bokeh_doc`` (no Bokeh Python objects; model
ids numbered in the order they appear): the same run gives the same bytes in any process,
after any other page.

The executions are one ``hbar`` glyph (WebGL) coloured by outcome, each outlined in a
darker shade of its colour, so back-to-back executions stay separate bars; the nodes' down
time, pauses and partitions are shaded spans behind their rows; crashes, restarts and lock
expiries are markers. A click on an execution calls the page's ``jobsimStory`` (in
``page``) with the tables a job's story is told from.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import bokeh_doc as bk, layers
from .data import RunData

#: each outcome's colour (``data.CATEGORIES``' order)
COLORS = ("#1f77b4", "#ff7f0e", "#3b3b3b", "#9467bd", "#e377c2", "#8c564b", "#d62728")
#: the spans' colours (down after a crash, paused, cut off by a partition) and marks'
SPAN_COLORS = ("#8a8a8a", "#e8c200", "#17becf")
SPAN_LABELS = ("down (crash → restart)", "paused", "cut off by a partition")
MARKS = (("x", "#d62728", 16, "crash"), ("triangle", "#2ca02c", 11, "restart"),
         ("inverted_triangle", "#b8860b", 10, "lock expired"))
DEPTH = (("in the table", "#1f77b4", 2.6), ("locked (its lock not yet expired)", "#ff7f0e", 1.6),
         ("running", "#2ca02c", 1.0))


def _darker(color: str, f: float = 0.55) -> str:
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"#{int(r * f):02x}{int(g * f):02x}{int(b * f):02x}"


def item(run: RunData, key: str) -> dict[str, Any]:
    """The JSON item (``bokeh.embed.json_item``'s) of one run's figures; its sources are
    named ``<table>-<key>`` for the page's script."""
    timeline = _timeline(run, key)
    depth = _depth(run, timeline.x_range)
    layers.tap_cursor(depth, key)
    root = bk.column([timeline.model(), *(f.model() for f in layers.services(
        run, key, timeline.x_range)), depth.model()])
    return bk.item(root, bokeh_version())


def bokeh_version() -> str:
    """The installed Bokeh's version (its BokehJS is the one the page inlines)."""
    from importlib.metadata import version

    return version("bokeh")


def _source(table: dict[str, np.ndarray], name: str) -> bk.Model:
    return bk.source({k: np.ascontiguousarray(v) for k, v in table.items()}, name)


def _timeline(run: RunData, key: str) -> bk.Figure:
    span = max(run.t_end - run.t0, 1e-9)
    pad = span * 0.015
    bottom = max((y0 + k - 1 for y0, k in run.lanes.values()), default=0.0)
    x_range = bk.Model("Range1d", start=run.t0 - pad, end=run.t_end + pad,
                       bounds=[run.t0 - span * 0.1, run.t_end + span * 0.1])
    height = int(min(520, max(180, 60 + 16 * (bottom + 1))))  # 16 px a lane, at most 520
    centres = {n: y0 + (k - 1) / 2 for n, (y0, k) in run.lanes.items()}
    p = bk.Figure(height, x_range, bk.Model("Range1d", start=bottom + 0.8, end=-0.8),
                  name=f"timeline-{key}", y_labels={float(c): n for n, c in centres.items()},
                  save=True)
    tables = {t: _source(run.tables[t], f"{t}-{key}")
              for t in ("executions", "spans", "marks", "jobs", "claims", "retries",
                        "acquisitions")}

    def source(table: str, mask: Any = None, name: str | None = None) -> bk.Model:
        if mask is None:
            return _source(run.tables[table], f"{name or table}-{key}")
        return _source({c: v[mask] for c, v in run.tables[table].items()}, f"{name}-{key}")
    spans = p.add(bk.glyph(
        "Quad", tables["spans"], left=bk.field("left"), right=bk.field("right"),
        bottom=bk.field("bottom"), top=bk.field("top"), line_color=bk.value(None),
        fill_color=bk.field("kind", bk.Model("LinearColorMapper", palette=list(SPAN_COLORS),
                                             low=-0.5, high=len(SPAN_COLORS) - 0.5)),
        fill_alpha=bk.value(0.4)))
    n = len(COLORS)
    fill = bk.Model("LinearColorMapper", name=f"hue-fill-{key}", palette=list(COLORS),
                    low=-0.5, high=n - 0.5)
    line = bk.Model("LinearColorMapper", name=f"hue-line-{key}",
                    palette=[_darker(c) for c in COLORS], low=-0.5, high=n - 0.5)
    ex = p.add(bk.glyph(
        "HBar", tables["executions"], name=f"executions-renderer-{key}",
        nonselection={"fill_alpha": 0.25, "line_alpha": 0.25}, y=bk.field("y"),
        height=bk.value(0.8), left=bk.field("start"), right=bk.field("end"),
        line_color=bk.field("hue", line), line_width=bk.value(1),
        fill_color=bk.field("hue", fill)))
    marks = run.tables["marks"]
    nodes = json.dumps(run.names["nodes"])
    labels = json.dumps(run.names["categories"])
    node_name = bk.Model("CustomJSHover", code=f"return {nodes}[value] ?? '?'")
    cat_name = bk.Model("CustomJSHover", code=f"return {labels}[value] ?? '?'")
    for k, (marker, color, size, label) in enumerate(MARKS):
        m = marks["kind"] == k
        if m.any():
            r = p.add(bk.glyph(
                "Scatter", _source({c: v[m] for c, v in marks.items()}, f"marks-{k}-{key}"),
                x=bk.field("time"), y=bk.field("y"), size=bk.value(size),
                line_color=bk.value("black" if k else color),
                line_width=bk.value(3 if k == 0 else 0.8), fill_color=bk.value(color),
                marker=bk.value(marker)))
            p.tools.append(bk.hover([r], f"<div><b>{label}</b> · @node{{node}}</div>"
                                         "<div>at @time{0,0.000} s</div>"
                                    + ("<div>job @job</div>" if k == 2 else ""),
                                    {"@node": node_name}))
    p.tools.append(bk.hover([spans], "<div><b>@kind{kind}</b> · @node{node}</div>"
                                     "<div>@left{0,0.000} → @right{0,0.000} s</div>",
                            {"@node": node_name, "@kind": bk.Model(
                                "CustomJSHover",
                                code=f"return {json.dumps(list(SPAN_LABELS))}[value] ?? '?'")}))
    p.tools.append(bk.hover([ex], (
        "<div><b>job @job</b> · run @attempt</div><div>@node{node} · thread @thread</div>"
        "<div>@start{0,0.000} → @end{0,0.000} s</div><div>@cat{cat}</div>"),
        {"@node": node_name, "@cat": cat_name}))
    story = bk.custom_js(f"if (window.jobsimStory) window.jobsimStory({json.dumps(key)}, "
                         "executions, jobs, claims, retries, marks);",
                         {k: v for k, v in tables.items() if k != "spans"})
    p.tools.append(bk.tap([ex], story))
    layers.add(p, run, key, source, {k: v for k, v in tables.items() if k != "spans"}, fill,
               line, node_name, cat_name)
    return p


def _depth(run: RunData, x_range: bk.Model) -> bk.Figure:
    d = run.tables["depth"]
    p = bk.Figure(210, x_range, x_axis_label="simulated time (s)", y_axis_label="jobs")
    for k, (label, color, width) in enumerate(DEPTH):
        m = d["series"] == k
        p.add(bk.glyph("Step", bk.source({"x": d["time"][m], "y": d["value"][m]}),
                       x=bk.field("x"), y=bk.field("y"), line_color=color, line_width=width,
                       mode="after"), legend_label=label)
    crashes = run.tables["marks"]["time"][run.tables["marks"]["kind"] == 0]
    if len(crashes):
        p.add(bk.glyph("VSpan", bk.source({"x": crashes}), x=bk.field("x"),
                       line_color=bk.value(MARKS[0][1]), line_width=bk.value(1),
                       line_dash=bk.value("dashed")), legend_label="node crash")
    p.legend(click_hide=True)
    return p
