"""The HTML page: BokehJS inlined (no network), a tab per run, each with its title, counts
line, legend, figures and story panel; the figures' JSON items and the name tables in
``<script type="application/json">`` blocks that the page's script embeds.

Nothing in it depends on the clock, the process or the machine: the same runs give the
same bytes (``figures.stable_ids`` renumbers Bokeh's model ids; the element ids are the
tabs' numbers).
"""

from __future__ import annotations

import html
import json
from typing import Any

from ...base.printable import printable
from .data import CATEGORIES, RunData
from .figures import COLORS, DEPTH, MARKS, SPAN_COLORS, SPAN_LABELS, item
from .script import HOOK, SCRIPT, STYLE

#: the marker the page carries: ``jobsim view`` overwrites only a file that has it (or that
#: a run folder's manifest lists with its hash)
GENERATOR = '<meta name="generator" content="jobsim view">'


def bokeh_js() -> list[str]:
    """BokehJS's core and WebGL bundles, as text to inline (no CDN, no server)."""
    from bokeh.resources import Resources

    return list(Resources(mode="inline", components=["bokeh", "bokeh-gl"],
                          log_level="warn").js_raw)


def _json(value: Any) -> str:
    """JSON to put inside a ``<script>`` element (``<`` escaped: no ``</script>`` in it; no
    control character raw in the file: ``base.printable``'s escapes are JSON's)."""
    return printable(json.dumps(value, separators=(",", ":"), ensure_ascii=False,
                                allow_nan=False).replace("<", "\\u003c"))


def _html(text: str) -> str:
    """A text (a name) as the page's HTML shows it: escaped, control characters too."""
    return printable(html.escape(text))


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def counts_line(run: RunData, summary: dict) -> str:
    """What the counts are: the executions by colour, the nodes' events, the jobs' ends."""
    c = run.counts
    shown = [f"{c[k]:,} {label.split(' (')[0]}" for k, label in CATEGORIES if c.get(k)]
    parts = [f"{_plural(c['executions'], 'execution')} of {_plural(c['jobs'], 'job')}"
             + (f" ({', '.join(shown)})" if shown else "")]
    if c["drawn"] < c["executions"]:
        parts.append(f"showing {c['drawn']:,} of them (evenly spaced in start order) and "
                     "their jobs' stories")
    dup = summary.get("duplicate_executions", {}).get("total")
    if dup is not None:
        parts.append(f"{_plural(int(dup), 'duplicate execution')} in the summary")
    parts.append(", ".join([_plural(c["crashes"], "crash", "crashes"),
                            _plural(c["pauses"], "pause"), _plural(c["partitions"], "partition"),
                            _plural(c["lock_expiries"], "lock expiry", "lock expiries")]))
    jobs = summary.get("jobs", {})
    if jobs:
        ends = [f"{jobs[k]:,} {label}" for k, label in (
            ("done", "done"), ("dead_lettered", "dead-lettered"), ("pending", "pending"),
            ("lost", "lost")) if jobs.get(k)]
        if ends:
            parts.append("jobs: " + ", ".join(ends))
    return " · ".join(parts)


def _legend() -> str:
    items = [f'<span class="item"><span class="swatch" style="background:{col}"></span>'
             f'{html.escape(label)}</span>' for (_, label), col in zip(CATEGORIES, COLORS)]
    items += [f'<span class="item"><span class="swatch" style="background:{col};opacity:.5">'
              f'</span>{html.escape(label)}</span>' for col, label in zip(SPAN_COLORS,
                                                                           SPAN_LABELS)]
    glyphs = {"x": "✕", "triangle": "▲", "inverted_triangle": "▼", "star": "★",
              "square": "□"}  # (a white square is drawn outlined: its glyph, in black)
    items += [f'<span class="item"><span class="glyph" style="color:'
              f'{"#000000" if col == "#ffffff" else col}">{glyphs[m]}</span>'
              f'{html.escape(label)}</span>' for m, col, _, label in MARKS]
    items += [f'<span class="item"><span class="swatch" style="background:{col};height:3px">'
              f'</span>table depth: {html.escape(label)}</span>' for label, col, _ in DEPTH]
    return '<div class="legend">' + "".join(items) + "</div>"


def page(runs: list[tuple[RunData, dict]], heading: str) -> str:
    """The page of the runs (each with its summary): one tab per run when there are more
    than one (a scenario's variants)."""
    tabs, sections, blobs = [], [], []
    for k, (run, summary) in enumerate(runs):
        key = str(k)
        tabs.append(f'<button type="button" data-key="{key}">{_html(run.name)}</button>')
        sections.append(
            f'<section class="run" id="tab-{key}" data-key="{key}" '
            f'data-variant="{_html(run.name)}" hidden>\n'
            f'<h2>{_html(run.title)}</h2>\n'
            f'<p class="counts">{_html(counts_line(run, summary))}</p>\n{_legend()}\n'
            f'<div class="body"><div class="plot" id="plot-{key}"></div>'
            f'<aside class="story" id="story-{key}"><h3>A job\'s story</h3><p>Click an '
            'execution to see its job\'s whole story: created, due, each claim, each run, '
            'its retries and its end. Hover for one run. Drag to pan, the wheel zooms in '
            'time, the box zooms in; reset brings everything back.</p></aside></div>\n'
            '</section>')
        meta = {"nodes": run.names["nodes"], "categories": run.names["categories"],
                "colors": list(COLORS), "handlers": run.names["handlers"],
                "outcomes": run.names["outcomes"], "job_names": run.names["job_names"]}
        blobs.append(f'<script type="application/json" id="jobsim-item-{key}">'
                     f'{_json(item(run, key))}</script>\n'
                     f'<script type="application/json" id="jobsim-meta-{key}">'
                     f'{_json(meta)}</script>')
    nav = f'<nav class="tabs">{"".join(tabs)}</nav>\n' if len(runs) > 1 else ""
    scripts = "".join(f"<script>{js}</script>\n" for js in bokeh_js())
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n{GENERATOR}\n'
            f'<title>{_html(heading)}</title>\n<script>{HOOK}</script>\n'
            f'<style>{STYLE}</style>\n{scripts}</head>\n<body data-errors="0">\n'
            f'<header><h1>{_html(heading)}</h1><p>Executions per node and thread, '
            'coloured by outcome, above the jobs in the table, on one time axis. Written by '
            'jobsim view.</p></header>\n'
            f'<div id="jobsim-errors" hidden></div>\n{nav}<main>\n'
            + "\n".join(sections) + "\n</main>\n" + "\n".join(blobs)
            + f"\n<script>{SCRIPT}</script>\n</body>\n</html>\n")
