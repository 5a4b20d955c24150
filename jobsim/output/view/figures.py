"""One run's Bokeh figures: the node × thread timeline above the table depth, on one
(linked) time axis, as a JSON item whose model ids are renumbered (``stable_ids``): the same
run gives the same bytes in any process, after any other page.

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

from . import layers
from .data import RunData

#: each outcome's colour (``data.CATEGORIES``' order)
COLORS = ("#1f77b4", "#ff7f0e", "#3b3b3b", "#9467bd", "#e377c2", "#8c564b", "#d62728")
#: the spans' colours (down after a crash, paused, cut off by a partition) and marks'
SPAN_COLORS = ("#8a8a8a", "#e8c200", "#17becf")
SPAN_LABELS = ("down (crash → restart)", "paused", "cut off by a partition")
MARKS = (("x", "#d62728", 16, "crash"), ("triangle", "#2ca02c", 11, "restart"),
         ("inverted_triangle", "#b8860b", 10, "lock expired"))
DEPTH = (("in the table", "#1f77b4", 2.6), ("locked (live lock)", "#ff7f0e", 1.6),
         ("running", "#2ca02c", 1.0))


def _darker(color: str, f: float = 0.55) -> str:
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"#{int(r * f):02x}{int(g * f):02x}{int(b * f):02x}"


def item(run: RunData, key: str) -> dict[str, Any]:
    """The JSON item (``bokeh.embed.json_item``) of one run's figures; its sources are named
    ``<table>-<key>`` for the page's script."""
    from bokeh.embed import json_item
    from bokeh.layouts import column

    timeline = _timeline(run, key)
    depth = _depth(run, timeline.x_range)
    layers._tap_cursor(depth, key)
    root = column(timeline, *layers.services(run, key, timeline.x_range), depth,
                  sizing_mode="stretch_width")
    return stable_ids(json_item(root))


def _source(table: dict[str, np.ndarray], name: str) -> Any:
    from bokeh.models import ColumnDataSource

    return ColumnDataSource(data={k: np.ascontiguousarray(v) for k, v in table.items()},
                            name=name)


def _timeline(run: RunData, key: str) -> Any:
    from bokeh.models import (
        CustomJS,
        CustomJSHover,
        FixedTicker,
        HoverTool,
        LinearColorMapper,
        Range1d,
        TapTool,
    )
    from bokeh.plotting import figure

    span = max(run.t_end - run.t0, 1e-9)
    pad = span * 0.015
    bottom = max((y0 + k - 1 for y0, k in run.lanes.values()), default=0.0)
    x_range = Range1d(run.t0 - pad, run.t_end + pad,
                      bounds=(run.t0 - span * 0.1, run.t_end + span * 0.1))
    height = int(min(520, max(180, 60 + 16 * (bottom + 1))))  # 16 px a lane, at most 520
    p = figure(height=height, sizing_mode="stretch_width", x_range=x_range,
               y_range=Range1d(bottom + 0.8, -0.8), output_backend="webgl",
               tools="xpan,xwheel_zoom,box_zoom,reset,save", active_scroll="xwheel_zoom",
               toolbar_location="above", name=f"timeline-{key}")
    p.toolbar.logo = None
    p.ygrid.visible = False
    centres = {n: y0 + (k - 1) / 2 for n, (y0, k) in run.lanes.items()}
    p.yaxis.ticker = FixedTicker(ticks=list(centres.values()))
    p.yaxis.major_label_overrides = {float(c): n for n, c in centres.items()}
    tables = {t: _source(run.tables[t], f"{t}-{key}")
              for t in ("executions", "spans", "marks", "jobs", "claims", "retries",
                        "acquisitions")}

    def source(table: str, mask: Any = None, name: str | None = None) -> Any:
        if mask is None:
            return _source(run.tables[table], f"{name or table}-{key}")
        return _source({c: v[mask] for c, v in run.tables[table].items()}, f"{name}-{key}")
    spans = p.quad(left="left", right="right", bottom="bottom", top="top",
                   source=tables["spans"], fill_color={"field": "kind", "transform":
                   LinearColorMapper(palette=list(SPAN_COLORS), low=-0.5,
                                     high=len(SPAN_COLORS) - 0.5)},
                   fill_alpha=0.4, line_color=None)
    n = len(COLORS)
    fill = LinearColorMapper(palette=list(COLORS), low=-0.5, high=n - 0.5,
                             name=f"hue-fill-{key}")
    line = LinearColorMapper(palette=[_darker(c) for c in COLORS], low=-0.5, high=n - 0.5,
                             name=f"hue-line-{key}")
    ex = p.hbar(y="y", left="start", right="end", height=0.8, source=tables["executions"],
                fill_color={"field": "hue", "transform": fill},
                line_color={"field": "hue", "transform": line},
                line_width=1, nonselection_fill_alpha=0.25, nonselection_line_alpha=0.25,
                name=f"executions-renderer-{key}")
    marks = run.tables["marks"]
    nodes = json.dumps(run.names["nodes"])
    labels = json.dumps(run.names["categories"])
    node_name = CustomJSHover(code=f"return {nodes}[value] ?? '?'")
    cat_name = CustomJSHover(code=f"return {labels}[value] ?? '?'")
    shown = []
    for k, (marker, color, size, label) in enumerate(MARKS):
        m = marks["kind"] == k
        if m.any():
            shown.append(p.scatter(
                x="time", y="y", source=_source({c: v[m] for c, v in marks.items()},
                                                f"marks-{k}-{key}"),
                marker=marker, size=size, fill_color=color, line_color="black" if k else color,
                line_width=3 if k == 0 else 0.8))
            p.add_tools(HoverTool(renderers=shown[-1:], formatters={"@node": node_name},
                                  tooltips=f"<div><b>{label}</b> · @node{{node}}</div>"
                                  "<div>at @time{0,0.000} s</div>"
                                  + ("<div>job @job</div>" if k == 2 else "")))
    p.add_tools(HoverTool(renderers=[spans], formatters={"@node": node_name, "@kind": (
        CustomJSHover(code=f"return {json.dumps(list(SPAN_LABELS))}[value] ?? '?'"))},
        tooltips="<div><b>@kind{kind}</b> · @node{node}</div>"
                 "<div>@left{0,0.000} → @right{0,0.000} s</div>"))
    p.add_tools(HoverTool(renderers=[ex], tooltips=(
        "<div><b>job @job</b> · run @attempt</div><div>@node{node} · thread @thread</div>"
        "<div>@start{0,0.000} → @end{0,0.000} s</div><div>@cat{cat}</div>"),
        formatters={"@node": node_name, "@cat": cat_name}))
    story = CustomJS(args={k: v for k, v in tables.items() if k != "spans"},
                     code=f"if (window.jobsimStory) window.jobsimStory({json.dumps(key)}, "
                          "executions, jobs, claims, retries, marks);")
    p.add_tools(TapTool(renderers=[ex], callback=story))
    layers.add(p, run, key, source, {k: v for k, v in tables.items() if k != "spans"}, fill,
               line, node_name, cat_name)
    return p


def _depth(run: RunData, x_range: Any) -> Any:
    from bokeh.plotting import figure

    d = run.tables["depth"]
    p = figure(height=210, sizing_mode="stretch_width", x_range=x_range,
               output_backend="webgl", tools="xpan,xwheel_zoom,box_zoom,reset",
               active_scroll="xwheel_zoom", x_axis_label="simulated time (s)",
               y_axis_label="jobs", toolbar_location="above")
    p.toolbar.logo = None
    for k, (label, color, width) in enumerate(DEPTH):
        m = d["series"] == k
        p.step(x=d["time"][m], y=d["value"][m], mode="after", color=color, line_width=width,
               legend_label=label)
    crashes = run.tables["marks"]["time"][run.tables["marks"]["kind"] == 0]
    if len(crashes):
        p.vspan(x=crashes, line_color=MARKS[0][1], line_dash="dashed", line_width=1,
                legend_label="node crash")
    legend = p.legend[0]
    legend.orientation = "horizontal"
    legend.click_policy = "hide"
    legend.location = "top_left"
    legend.border_line_color = None
    p.add_layout(legend, "above")  # outside the frame: over no line, and the axes stay aligned
    return p


def stable_ids(doc: Any) -> Any:
    """``doc`` (a JSON item) with every model id renumbered in the order the ids first
    appear (``v1``, ``v2``, …): Bokeh numbers models by a counter of the whole process."""
    ids: dict[str, str] = {}

    def collect(x: Any) -> None:
        if isinstance(x, dict):
            if x.get("type") == "object" and isinstance(x.get("id"), str):
                ids.setdefault(x["id"], f"v{len(ids) + 1}")
            for v in x.values():
                collect(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                collect(v)

    def rename(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: (ids.get(v, v) if k in ("id", "root_id") and isinstance(v, str)
                        else rename(v)) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [rename(v) for v in x]
        return x

    collect(doc)
    return rename(doc)
