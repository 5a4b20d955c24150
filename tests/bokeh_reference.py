"""The page's figures as Bokeh's own Python classes build them: the reference
``jobsim/output/view/bokeh_doc.py`` is held to (``test_bokeh_doc.py`` compares the JSON
items). This is how the page was built before it wrote Bokeh's JSON itself: a change to a
figure is made in both, and a Bokeh release that writes a figure differently shows here."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from jobsim.output.view.data import RunData
from jobsim.output.view.events import EFFECT_KINDS, SERVICE_SPANS
from jobsim.output.view.figures import COLORS, DEPTH, MARKS, SPAN_COLORS, SPAN_LABELS, _darker
from jobsim.output.view.layers import ACQUISITIONS, EFFECTS, INSTANT, LOAD, SERVICE_COLORS


def _tap_cursor(p: Any, key: str) -> None:
    """A click anywhere on ``p`` moves the page's time cursor there."""
    from bokeh.events import Tap
    from bokeh.models import CustomJS, Span

    p.add_layout(Span(location=None, dimension="height", line_color="#000000",
                      line_dash="dotted", line_width=1.5, name=f"cursor-{key}"))
    p.js_on_event(Tap, CustomJS(code=f"if (window.jobsimCursor) window.jobsimCursor("
                                     f"{json.dumps(key)}, cb_obj.x);"))


def add(p: Any, run: RunData, key: str, source: Any, story: dict[str, Any], fill: Any,
        line: Any, node_name: Any, cat_name: Any) -> None:
    """The layers on the timeline ``p``; ``source``: makes a table's source; ``story``: the
    sources a job's story is told from (a click on a zero-length execution tells it)."""
    from bokeh.models import CDSView, CustomJS, CustomJSFilter, HoverTool, TapTool
    from bokeh.transform import dodge

    inst = source("instants")
    r = p.scatter(x="start", y="y", source=inst, marker=INSTANT[0], size=INSTANT[1],
                  fill_color={"field": "hue", "transform": fill},
                  line_color={"field": "hue", "transform": line}, line_width=1.2,
                  name=f"instants-renderer-{key}")
    p.add_tools(HoverTool(renderers=[r], formatters={"@node": node_name, "@cat": cat_name},
                          tooltips="<div><b>job @job</b> · run @attempt (took no time)</div>"
                          "<div>@node{node} · thread @thread · at @start{0,0.000} s</div>"
                          "<div>@cat{cat}</div>"))
    p.add_tools(TapTool(renderers=[r], callback=CustomJS(
        args={"inst": inst, **story},
        code="var i = inst.selected.indices[0]; if (i === undefined) return;"
             "executions.selected.indices = [inst.data.row[i]];"
             f"if (window.jobsimStory) window.jobsimStory({json.dumps(key)}, executions, jobs, "
             "claims, retries, marks);")))
    acq = run.tables["acquisitions"]
    for k, (marker, fill_c, line_c, size, label) in enumerate(ACQUISITIONS):
        m = acq["kind"] == k
        if not m.any():
            continue
        r = p.scatter(x="time", y="y", source=source("acquisitions", m, f"acquisitions-{k}"),
                      marker=marker, size=size, fill_color=fill_c, line_color=line_c,
                      line_width=1.2, name=f"acquisitions-{k}-renderer-{key}")
        p.add_tools(HoverTool(renderers=[r], formatters={"@node": node_name}, tooltips=(
            f"<div><b>{label}</b> · @node{{node}}</div><div>at @time{{0,0.000}} s</div>"
            "<div>asked for @asked rows, locked @got</div>"
            + ("<div>the due rows were locked by others, or none was due</div>" if k == 0
               else "") + "<div>lost races: @lost</div>")))
    ex = story["executions"]
    at_end = CustomJSFilter(code="var e = source.data.eff, out = [];"
                                 "for (var i = 0; i < e.length; i++) if (e[i] === 1) out.push(i);"
                                 "return out;")
    if run.tables["executions"]["eff"].any():
        marker, color, size = EFFECTS[0]
        r = p.scatter(x="end", y=dodge("y", -0.3), source=ex, view=CDSView(filter=at_end),
                      marker=marker, size=size, fill_color=color, line_color="#000000",
                      line_width=1.0, name=f"effects-end-renderer-{key}")
        p.add_tools(HoverTool(renderers=[r], formatters={"@node": node_name}, tooltips=(
            f"<div><b>{EFFECT_KINDS[0]}</b> (at the end of its run)</div><div>job @job · "
            "run @attempt · @node{node}</div><div>at @end{0,0.000} s</div>")))
    eff = run.tables["effects"]
    for k, (marker, color, size) in enumerate(EFFECTS):
        m = eff["kind"] == k
        if not m.any():
            continue
        r = p.scatter(x="time", y="y", source=source("effects", m, f"effects-{k}"),
                      marker=marker, size=size, fill_color=color, line_color="#000000",
                      line_width=1.0 if k < 2 else 1.6, name=f"effects-{k}-renderer-{key}")
        p.add_tools(HoverTool(renderers=[r], formatters={"@node": node_name}, tooltips=(
            f"<div><b>{EFFECT_KINDS[k]}</b></div><div>job @job · run @attempt · "
            "@node{node}</div><div>at @time{0,0.000} s</div>")))
    _tap_cursor(p, key)


def services(run: RunData, key: str, x_range: Any) -> list[Any]:
    """A figure per downstream service the run called, on the timeline's time axis."""
    from bokeh.models import ColumnDataSource, HoverTool
    from bokeh.plotting import figure

    out = []
    for i, (name, tables) in enumerate(zip(run.names["services"], run.services)):
        load = tables["load"]
        top = float(max(load["calls"].max(initial=0.0), 1.0)) * 1.08
        p = figure(height=150, sizing_mode="stretch_width", x_range=x_range,
                   output_backend="webgl", tools="xpan,xwheel_zoom,box_zoom,reset",
                   active_scroll="xwheel_zoom", y_axis_label="calls/s",
                   title=f"service {name}: calls a second ({load['bin'][0]:g} s bins) and "
                         "its health", toolbar_location="above", name=f"service-{i}-{key}")
        p.toolbar.logo = None
        spans = tables["spans"]
        for k, label in enumerate(SERVICE_SPANS):
            m = spans["kind"] == k
            if m.any():
                src = ColumnDataSource(data={"left": spans["left"][m], "right": spans["right"][m]},
                                       name=f"service-{i}-spans-{k}-{key}")
                r = p.quad(left="left", right="right", bottom=0, top=top, source=src,
                           fill_color=SERVICE_COLORS[k], fill_alpha=0.22 if k < 2 else 0.0,
                           line_color=SERVICE_COLORS[k] if k == 2 else None,
                           hatch_pattern="/" if k == 2 else None,
                           hatch_color=SERVICE_COLORS[k], hatch_alpha=0.5,
                           legend_label=label, name=f"service-{i}-{label}-{key}")
                p.add_tools(HoverTool(renderers=[r], tooltips=(
                    f"<div><b>{name}: {label}</b></div>"
                    "<div>@left{0,0.000} → @right{0,0.000} s</div>")))
        src = ColumnDataSource(data=dict(load), name=f"service-{i}-load-{key}")
        for col, label, color in LOAD:
            p.step(x="t", y=col, source=src, mode="after", color=color,
                   line_width=1.6 if col == "calls" else 1.0, legend_label=label,
                   name=f"service-{i}-load-{col}-{key}")
        p.add_tools(HoverTool(mode="vline", renderers=p.renderers[-1:], tooltips=(
            "<div>from @t{0,0.0} s: @calls{0,0.0} calls/s, @ok{0,0.0} ok</div>")))
        legend = p.legend[0]
        legend.orientation = "horizontal"
        legend.location = "top_left"
        legend.border_line_color = None
        p.add_layout(legend, "above")
        _tap_cursor(p, key)
        out.append(p)
    return out


def item(run: RunData, key: str) -> dict[str, Any]:
    """The JSON item (``bokeh.embed.json_item``) of one run's figures; its sources are named
    ``<table>-<key>`` for the page's script."""
    from bokeh.embed import json_item
    from bokeh.layouts import column

    timeline = _timeline(run, key)
    depth = _depth(run, timeline.x_range)
    _tap_cursor(depth, key)
    root = column(timeline, *services(run, key, timeline.x_range), depth,
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
    add(p, run, key, source, {k: v for k, v in tables.items() if k != "spans"}, fill,
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
