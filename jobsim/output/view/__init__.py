"""``view.html``: a run's interactive page, one self-contained HTML file that works offline.

The node × thread timeline (one lane per node and thread, each execution its own bar,
coloured by outcome: done, failed and retried, dead-lettered, duplicate, completion
rejected, cut short by a crash, no end), the nodes' crashes, pauses and partitions as spans
and markers, the lock expiries as markers; each node's acquisitions (claims and empty
acquisitions, ``events.acquisitions``), the executions that took no time as markers side by
side, the side effects on their runs (plain, late at a service, duplicate, refused by a
fencing token: ``events.effects``); a figure per downstream service (its load over its
health spans, ``events.service_tables``); under it the jobs in the table over time on the
same (linked) time axis; box zoom, wheel zoom, pan and reset; a click on an execution tells
its job's whole story, a click anywhere sets the time cursor and lists the table at that
instant (``script_more``); a colour switch (outcome, priority, handler), a job search, a
legend of what occurs only, and a note tying the lock expiries to the duplicates
(``note``); one tab per variant. ``jobsim run`` writes it into every run folder
(from the run in memory); ``jobsim view RUN_DIR`` rebuilds it from the folder's files. Both
go one way: a ``Trace`` (the run's own, or trace.csv read back by ``folder.load_trace``),
its stories (``history.histories``) and its summary, into ``data.run_data``, then
``figures`` and ``page``. The page for the same run is the same bytes, whichever way it was
built and in whatever process.

The plotting library is Bokeh (3.x: ``json_item``, WebGL glyphs), chosen by measurement
against Plotly (7.1, ``include_plotlyjs=True``, ``scattergl``) on the same 105,211
executions of a 100,000-job run, each bar one glyph with a hover field (the bare bars, before
this page's stories and depth were added):

======================  =====================  ================
                        Bokeh 3.9              Plotly 7.1
======================  =====================  ================
empty page              1.5 MB                 4.8 MB
105,211 executions      3.5 MB                 14.5 MB
build (after import)    0.1 s                  0.1 s
headless Chromium load  0.7 s                  11.7 s
one zoom, redrawn       0.5 s canvas,          5.6 s
                        2.4 s WebGL
======================  =====================  ================

Bokeh compresses its binary columns (gzip, then base64); Plotly writes plain base64 and
needs three points a bar (line segments: its bars are SVG, not WebGL), so its page is over
the 10 MB bound before any story is added. Both work offline with their library inlined.
This page for that run, stories and depth included, is 5.6 MB, built in about 1 s. The
redraw times are software WebGL's (SwiftShader: headless, no GPU, two busy cores), where
Bokeh's canvas, which skips what is off screen, is the faster; so the figures ask for WebGL
and the page's script falls back to the canvas where WebGL is missing or drawn in software
(``?backend=webgl`` or ``canvas`` overrides it). Only BokehJS's core and WebGL bundles are
inlined (no widgets, tables or MathJax).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...analysis.history import histories
from .data import run_data
from .folder import ViewError, read_run
from .page import GENERATOR, page

__all__ = ["FILE", "GENERATOR", "ViewError", "analyses_page", "folder_page", "runs_page"]

#: the file name ``jobsim run`` gives the page in a run folder
FILE = "view.html"


def runs_page(runs: list[tuple[Any, Any, dict, str | None]]) -> str:
    """The page of runs given as (trace, stories or None, summary, variant or None): the
    stories are worked out from the trace when not given."""
    built = []
    for trace, hist, summary, variant in runs:
        hist = hist if hist is not None else histories(trace)
        built.append((run_data(trace, hist, summary, variant), summary))
    first = runs[0][2]
    heading = f"jobsim view · {first.get('scenario', 'run')} · seed {first.get('seed', '?')}"
    return page(built, heading)


def analyses_page(analyses: list[Any]) -> str:
    """The page of a run in memory (``report.Analysis`` of each variant), variants in the
    scenario file's order (as ``jobsim view`` reads them back: summary.json's
    ``variant_order``)."""
    return runs_page([(a.result.trace, a.histories, a.summary, a.result.scenario.variant)
                      for a in analyses])


def folder_page(folder: str | Path) -> str:
    """The page of the run folder ``folder`` (ViewError if it is not one)."""
    return runs_page([(trace, None, summary, variant)
                      for trace, summary, variant in read_run(folder)])
