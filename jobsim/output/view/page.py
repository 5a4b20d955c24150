"""The HTML page: BokehJS inlined (no network), a tab per run, each with its title, counts
line, legend, figures and story panel; the figures' JSON items and the name tables in
``<script type="application/json">`` blocks that the page's script embeds.

Nothing in it depends on the clock, the process or the machine: the same runs give the
same bytes (``bokeh_doc`` numbers the models in the order they appear; the element ids
are the tabs' numbers).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from ...base.printable import printable
from .data import CATEGORIES, RunData
from .events import EFFECT_KINDS, SERVICE_SPANS
from .figures import COLORS, DEPTH, MARKS, SPAN_COLORS, SPAN_LABELS, item
from .layers import ACQUISITIONS, EFFECTS, INSTANT, SERVICE_COLORS
from .script import HOOK, SCRIPT, STYLE
from .script_more import MORE, MORE_STYLE

#: the marker the page carries: ``jobsim view`` overwrites only a file that has it (or that
#: a run folder's manifest lists with its hash)
GENERATOR = '<meta name="generator" content="jobsim view">'


def bokeh_js() -> list[str]:
    """BokehJS's core and WebGL bundles (minified), as text to inline (no CDN, no server),
    read from the installed Bokeh's files as ``bokeh.resources.Resources`` inlines them,
    without importing Bokeh's Python side (``bokeh_doc`` writes the figures)."""
    from importlib.util import find_spec

    spec = find_spec("bokeh")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("Bokeh is not installed: view.html inlines its BokehJS")
    js = Path(list(spec.submodule_search_locations)[0]) / "server" / "static" / "js"
    out = []
    for name in ("bokeh.min.js", "bokeh-gl.min.js"):
        text = (js / name).read_bytes().decode("utf-8")
        out.append(f"/* BEGIN {name} */\n{text}\n/* END {name} */")
    return out + ['Bokeh.set_log_level("warn");']


def _json(value: Any) -> str:
    """JSON to put inside a ``<script>`` element (``<`` escaped: no ``</script>`` in it; no
    control character raw in the file: ``base.printable``'s escapes are JSON's)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).replace("<", "\\u003c")
    # JSON escapes the C0 controls itself: an ASCII text without DEL has nothing left to
    # escape (the common case, and a regex's pass over megabytes saved)
    return text if text.isascii() and "\x7f" not in text else printable(text)


def _html(text: str) -> str:
    """A text (a name) as the page's HTML shows it: escaped, control characters too."""
    return printable(html.escape(text))


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def counts_line(run: RunData, summary: dict) -> str:
    """What the counts are: the executions by colour, the nodes' events, the jobs' ends."""
    c = run.counts
    shown = [f"{c[k]:,} {label.split(' (')[0]}" for k, label in CATEGORIES if c.get(k)]
    # each execution in one colour: a duplicate that failed is a duplicate here, and the
    # summary's failures count it too
    over = any(c.get(k) for k in ("duplicate", "rejected", "crash"))
    parts = [f"{_plural(c['executions'], 'execution')} of {_plural(c['jobs'], 'job')}"
             + (f" (by colour: {', '.join(shown)}" + ("; a duplicate, a rejected completion "
                "or a run cut by a crash counted in that colour alone, not also as done or "
                "failed" if over else "") + ")" if shown else "")]
    if c["drawn"] < c["executions"]:
        parts.append(f"showing {c['drawn']:,} of them (evenly spaced in start order) and "
                     "their jobs' stories")
    dup = summary.get("duplicate_executions", {}).get("total")
    if dup is not None:
        parts.append(f"{_plural(int(dup), 'duplicate execution')} in the summary")
    acq = [_plural(c["claims"], "claim"), _plural(c["empty"], "empty acquisition")]
    if c["skipped_polls"]:
        acq.append(f"{_plural(c['skipped_polls'], 'empty poll')} counted, not simulated "
                   "(not drawn)")
    if c["acquisitions_drawn"] < c["claims"] + c["empty"]:
        acq.append(f"showing {c['acquisitions_drawn']:,} of the acquisitions")
    parts.append(", ".join(acq))
    effects = [f"{_plural(c['effects'], 'side effect')}"] + [
        f"{c[k]:,} {label}" for k, label in (("effects_duplicate", "duplicate"),
                                             ("effects_late", "made after its caller gave up"),
                                             ("effects_refused", "refused by fencing"))
        if c[k]]
    if c["effects"] or c["effects_refused"]:
        parts.append(", ".join(effects) + (f" (showing {c['effects_drawn']:,})" if
                                           c["effects_drawn"] < c["effects"]
                                           + c["effects_refused"] else ""))
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


def _legend(run: RunData) -> str:
    """The legend of what occurs in the run only; the executions' colours by outcome (the
    script writes those by priority and by handler)."""
    c = run.counts
    items = [f'<span class="item"><span class="swatch" style="background:{col}"></span>'
             f'{html.escape(label)}</span>' for (key, label), col in zip(CATEGORIES, COLORS)
             if c.get(key)]
    hue = f'<span class="hue" data-mode="outcome">{"".join(items)}</span>'
    items = []
    if c["instants"]:
        items.append(f'<span class="item"><span class="glyph">◆</span>'
                     f'{html.escape(INSTANT[2])}</span>')
    spans = run.tables["spans"]["kind"]
    items += [f'<span class="item"><span class="swatch" style="background:{col};opacity:.5">'
              f'</span>{html.escape(label)}</span>' for k, (col, label) in
              enumerate(zip(SPAN_COLORS, SPAN_LABELS)) if (spans == k).any()]
    glyphs = {"x": "✕", "triangle": "▲", "inverted_triangle": "▼", "star": "★",
              "diamond": "◆", "square_x": "⊠", "circle": "●"}
    marks = run.tables["marks"]["kind"]
    shown = [(m, col, label) for k, (m, col, _, label) in enumerate(MARKS)
             if (marks == k).any()]
    acq = run.tables["acquisitions"]["kind"]
    shown += [(m, fill if fill != "#ffffff" else line, label) for k, (m, fill, line, _, label)
              in enumerate(ACQUISITIONS) if (acq == k).any()]
    eff = run.tables["effects"]["kind"]
    shown += [(m, col if col != "#ffffff" else "#000000", EFFECT_KINDS[k])
              for k, (m, col, _) in enumerate(EFFECTS) if (eff == k).any()]
    items += [f'<span class="item"><span class="glyph" style="color:{col}">'
              f'{"○" if m == "circle" and col == "#7f7f7f" else glyphs[m]}</span>'
              f'{html.escape(label)}</span>' for m, col, label in shown]
    for k, label in enumerate(SERVICE_SPANS):
        if any((sv["spans"]["kind"] == k).any() for sv in run.services):
            items.append(f'<span class="item"><span class="swatch" style="background:'
                         f'{SERVICE_COLORS[k]};opacity:.4"></span>service '
                         f'{html.escape(label)}</span>')
    items += [f'<span class="item"><span class="swatch" style="background:{col};height:3px">'
              f'</span>table depth: {html.escape(label)}</span>' for label, col, _ in DEPTH]
    return '<div class="legend">' + hue + "".join(items) + "</div>"


def _controls(key: str) -> str:
    return (f'<div class="controls" id="controls-{key}"><label>colour the executions by '
            f'<select class="hue-mode" data-key="{key}"><option value="outcome">outcome'
            '</option><option value="priority">priority</option><option value="handler">'
            'handler</option></select></label> <label>find a job <input type="search" '
            f'class="find" data-key="{key}" placeholder="name or id"></label> '
            f'<span class="found" id="found-{key}"></span> <label>the table at '
            f'<input type="number" class="at" data-key="{key}" step="any"> s</label></div>')


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
            f'<p class="counts">{_html(counts_line(run, summary))}</p>\n'
            + (f'<p class="note">{_html(run.note)}</p>\n' if run.note else "")
            + f'{_controls(key)}\n{_legend(run)}\n'
            f'<div class="body"><div class="plot" id="plot-{key}"></div>'
            f'<aside class="story" id="story-{key}"><h3>A job\'s story</h3><p>Click an '
            'execution to see its job\'s whole story: created, due, each claim, each run, '
            'its retries and its end. Hover for one run. Drag to pan, the wheel zooms in '
            'time, the box zooms in; reset brings everything back. A click anywhere sets '
            'the time cursor: the table at that instant is shown below.</p></aside></div>\n'
            f'<div class="instant" id="instant-{key}"></div>\n</section>')
        meta = {"nodes": run.names["nodes"], "categories": run.names["categories"],
                "colors": list(COLORS), "handlers": run.names["handlers"],
                "outcomes": run.names["outcomes"], "job_names": run.names["job_names"],
                "services": run.names["services"], "effects": list(EFFECT_KINDS)}
        blobs.append(f'<script type="application/json" id="jobsim-item-{key}">'
                     f'{_json(item(run, key))}</script>\n'
                     f'<script type="application/json" id="jobsim-meta-{key}">'
                     f'{_json(meta)}</script>')
    nav = f'<nav class="tabs">{"".join(tabs)}</nav>\n' if len(runs) > 1 else ""
    scripts = "".join(f"<script>{js}</script>\n" for js in bokeh_js())
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n{GENERATOR}\n'
            f'<title>{_html(heading)}</title>\n<script>{HOOK}</script>\n'
            f'<style>{STYLE}{MORE_STYLE}</style>\n{scripts}</head>\n<body data-errors="0">\n'
            f'<header><h1>{_html(heading)}</h1><p>Executions per node and thread, '
            'coloured by outcome, with each node\'s acquisitions and the side effects, '
            'above the services and the jobs in the table, on one time axis. Written by '
            'jobsim view.</p></header>\n'
            f'<div id="jobsim-errors" hidden></div>\n{nav}<main>\n'
            + "\n".join(sections) + "\n</main>\n" + "\n".join(blobs)
            + f"\n<script>{MORE}</script>\n<script>{SCRIPT}</script>\n</body>\n</html>\n")
