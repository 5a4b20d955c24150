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

from . import bokeh_doc as bk
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


def tap_cursor(p: bk.Figure, key: str) -> None:
    """A click anywhere on ``p`` moves the page's time cursor there."""
    p.center.append(bk.Model("Span", name=f"cursor-{key}", dimension="height",
                             line_color="#000000", line_width=1.5, line_dash=[2, 4]))
    p.taps.append(bk.custom_js(f"if (window.jobsimCursor) window.jobsimCursor("
                               f"{json.dumps(key)}, cb_obj.x);"))


def add(p: bk.Figure, run: RunData, key: str, source: Any, story: dict[str, bk.Model],
        fill: bk.Model, line: bk.Model, node_name: bk.Model, cat_name: bk.Model) -> None:
    """The layers on the timeline ``p``; ``source``: makes a table's source; ``story``: the
    sources a job's story is told from (a click on a zero-length execution tells it)."""
    inst = source("instants")
    r = p.add(bk.glyph("Scatter", inst, name=f"instants-renderer-{key}", x=bk.field("start"),
                       y=bk.field("y"), size=bk.value(INSTANT[1]),
                       line_color=bk.field("hue", line), line_width=bk.value(1.2),
                       fill_color=bk.field("hue", fill), marker=bk.value(INSTANT[0])))
    p.tools.append(bk.hover([r], "<div><b>job @job</b> · run @attempt (took no time)</div>"
                                 "<div>@node{node} · thread @thread · at @start{0,0.000} s</div>"
                                 "<div>@cat{cat}</div>",
                            {"@node": node_name, "@cat": cat_name}))
    p.tools.append(bk.tap([r], bk.custom_js(
        "var i = inst.selected.indices[0]; if (i === undefined) return;"
        "executions.selected.indices = [inst.data.row[i]];"
        f"if (window.jobsimStory) window.jobsimStory({json.dumps(key)}, executions, jobs, "
        "claims, retries, marks);", {"inst": inst, **story})))
    acq = run.tables["acquisitions"]
    for k, (marker, fill_c, line_c, size, label) in enumerate(ACQUISITIONS):
        m = acq["kind"] == k
        if not m.any():
            continue
        r = p.add(bk.glyph("Scatter", source("acquisitions", m, f"acquisitions-{k}"),
                           name=f"acquisitions-{k}-renderer-{key}", x=bk.field("time"),
                           y=bk.field("y"), size=bk.value(size), line_color=bk.value(line_c),
                           line_width=bk.value(1.2), fill_color=bk.value(fill_c),
                           marker=bk.value(marker)))
        p.tools.append(bk.hover([r], (
            f"<div><b>{label}</b> · @node{{node}}</div><div>at @time{{0,0.000}} s</div>"
            "<div>asked for @asked rows, locked @got</div>"
            + ("<div>the due rows were locked by others, or none was due</div>" if k == 0
               else "") + "<div>lost races: @lost</div>"), {"@node": node_name}))
    ex = story["executions"]
    if run.tables["executions"]["eff"].any():
        at_end = bk.Model("CustomJSFilter", code=(
            "var e = source.data.eff, out = [];"
            "for (var i = 0; i < e.length; i++) if (e[i] === 1) out.push(i);return out;"))
        marker, color, size = EFFECTS[0]
        r = p.add(bk.glyph("Scatter", ex, name=f"effects-end-renderer-{key}",
                           view=bk.Model("CDSView", filter=at_end), x=bk.field("end"),
                           y=bk.field("y", bk.Model("Dodge", value=-0.3)),
                           size=bk.value(size), line_color=bk.value("#000000"),
                           line_width=bk.value(1.0), fill_color=bk.value(color),
                           marker=bk.value(marker)))
        p.tools.append(bk.hover([r], (
            f"<div><b>{EFFECT_KINDS[0]}</b> (at the end of its run)</div><div>job @job · "
            "run @attempt · @node{node}</div><div>at @end{0,0.000} s</div>"),
            {"@node": node_name}))
    eff = run.tables["effects"]
    for k, (marker, color, size) in enumerate(EFFECTS):
        m = eff["kind"] == k
        if not m.any():
            continue
        r = p.add(bk.glyph("Scatter", source("effects", m, f"effects-{k}"),
                           name=f"effects-{k}-renderer-{key}", x=bk.field("time"),
                           y=bk.field("y"), size=bk.value(size), line_color=bk.value("#000000"),
                           line_width=bk.value(1.0 if k < 2 else 1.6),
                           fill_color=bk.value(color), marker=bk.value(marker)))
        p.tools.append(bk.hover([r], (
            f"<div><b>{EFFECT_KINDS[k]}</b></div><div>job @job · run @attempt · "
            "@node{node}</div><div>at @time{0,0.000} s</div>"), {"@node": node_name}))
    tap_cursor(p, key)


def services(run: RunData, key: str, x_range: bk.Model) -> list[bk.Figure]:
    """A figure per downstream service the run called, on the timeline's time axis."""
    out = []
    for i, (name, tables) in enumerate(zip(run.names["services"], run.services)):
        load = tables["load"]
        top = float(max(load["calls"].max(initial=0.0), 1.0)) * 1.08
        p = bk.Figure(150, x_range, name=f"service-{i}-{key}", y_axis_label="calls/s",
                      title=f"service {name}: calls a second ({load['bin'][0]:g} s bins) and "
                            "its health")
        spans = tables["spans"]
        for k, label in enumerate(SERVICE_SPANS):
            m = spans["kind"] == k
            if m.any():
                src = bk.source({"left": spans["left"][m], "right": spans["right"][m]},
                                f"service-{i}-spans-{k}-{key}")
                r = p.add(bk.glyph(
                    "Quad", src, name=f"service-{i}-{label}-{key}", left=bk.field("left"),
                    right=bk.field("right"), bottom=bk.value(0), top=bk.value(top),
                    line_color=bk.value(SERVICE_COLORS[k] if k == 2 else None),
                    fill_color=bk.value(SERVICE_COLORS[k]),
                    fill_alpha=bk.value(0.22 if k < 2 else 0.0),
                    hatch_color=bk.value(SERVICE_COLORS[k]), hatch_alpha=bk.value(0.5),
                    hatch_pattern=bk.value("/" if k == 2 else None)), legend_label=label)
                p.tools.append(bk.hover([r], (f"<div><b>{name}: {label}</b></div>"
                                              "<div>@left{0,0.000} → @right{0,0.000} s</div>")))
        src = bk.source(dict(load), f"service-{i}-load-{key}")
        for col, label, color in LOAD:
            r = p.add(bk.glyph("Step", src, name=f"service-{i}-load-{col}-{key}",
                               x=bk.field("t"), y=bk.field(col), line_color=color,
                               line_width=1.6 if col == "calls" else 1.0, mode="after"),
                      legend_label=label)
        p.tools.append(bk.hover([r], "<div>from @t{0,0.0} s: @calls{0,0.0} calls/s, "
                                     "@ok{0,0.0} ok</div>", mode="vline"))
        p.legend()
        tap_cursor(p, key)
        out.append(p)
    return out
