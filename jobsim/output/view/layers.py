"""The timeline's layers beside the execution bars, and the services' figure: each node's
acquisitions (a filled green dot for a claim, a hollow grey one for an empty acquisition,
just under its lanes), the executions that took no time (a diamond each, side by side when
several share a lane and an instant), the side effects (a gold diamond, a purple star for
one a service made after its caller gave up, a big red star for a duplicate, a crossed
white square for one a fencing token refused), the time cursor (a vertical line on every
figure, moved by a click), and a figure per downstream service (its calls a second, all and
answered ok, over its down, brown-out and held-down spans).
"""

from __future__ import annotations

import json
from typing import Any

from .data import RunData
from .events import EFFECT_KINDS, SERVICE_SPANS

#: the acquisitions' markers: (marker, fill, line, size, label), by ``kind``
ACQUISITIONS = (("circle", "#ffffff", "#7f7f7f", 7, "empty acquisition (locked nothing)"),
                ("circle", "#2ca02c", "#1a601a", 8, "claim (locked rows)"))
#: the side effects' markers, by ``kind`` (``events.EFFECT_KINDS``)
EFFECTS = (("diamond", "#f0b400", 9), ("star", "#9467bd", 13), ("star", "#ff1f1f", 17),
           ("square_x", "#ffffff", 11))
#: the zero-length executions' marker
INSTANT = ("diamond", 11, "execution that took no time (a diamond, coloured as a bar)")
#: the services' spans' colours (``events.SERVICE_SPANS``) and their load lines
SERVICE_COLORS = ("#d62728", "#ff7f0e", "#8c1a1a")
LOAD = (("calls", "calls a second", "#333333"), ("ok", "answered ok", "#1f77b4"))


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
