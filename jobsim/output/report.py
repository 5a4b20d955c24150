"""A run folder: everything a run leaves, self-describing.

For a scenario without variants, the folder holds:

- ``report.md`` — a warning per idle node, the expectations, the summary and per-node tables,
  the retry schedules the jobs followed, the plots (PNG beside it): latency CDF by priority
  class, the per-node timeline, table depth over time, double runs by cause;
- ``summary.json`` — the run's figures (sorted keys, no wall-clock figures, ``trace_sha256``);
- ``jobs.csv`` — one row per job; ``trace.csv`` — one row per event, codes turned into names;
- ``scenario.yaml`` — the scenario as it was run (overrides and seed applied);
- ``violations.txt`` — only when an invariant failed: each violation with its events;
- ``view.html`` — the interactive page (``output.view``), one tab per variant, at the top.

With variants, each variant gets a sub-folder like the above, and the top folder holds the
``report.md`` that sets them side by side and a ``summary.json`` of all of them.

Everything is written to a temporary folder beside the target and moved into place at the
end, so an interrupted run never leaves a half-written report. The folder's manifest
(``.jobsim-manifest.json``, see ``outdir``) lists what jobsim wrote: a later run replaces those
files and nothing else, and refuses a folder jobsim did not write.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .service_report import python_note, service_section
from ..base import outdir
from ..base.printable import printable
from ..base.phases import phase
from ..base.progress import step
from ..analysis.checks import Violation, check
from ..analysis.expect import NO_FIGURE, Verdict, evaluate, figure
from ..analysis.history import CAUSES, Histories, histories
from ..analysis.metrics import summary
from ..analysis.schedules import digest
from ..analysis.window import window_line, windowed
from ..sim.world import RunResult
# the printed summary (``text``), also imported from here by the command line and the tests
from .text import (MAX_NODES_SHOWN, format_seconds, format_summary,  # noqa: F401
                   format_violation, node_cell, node_lines, warned)
from .run_files import write_run
from .words import explanation, sentences


class ReportError(Exception):
    """The report folder cannot be written where asked (without destroying something)."""


def check_target(out: str | Path) -> None:
    """Raise ReportError unless a report may be written to ``out`` (see ``outdir``): call it
    before a long run, so that a refusal comes first, not after the work."""
    try:
        outdir.check(Path(out), KIND)
    except outdir.OutputError as exc:
        raise ReportError(str(exc)) from None


KIND = "report"


@dataclass
class Analysis:
    """A run with its stories, violations, summary and expectation verdicts worked out."""

    result: RunResult
    histories: Histories
    violations: list[Violation]
    summary: dict
    verdicts: list[Verdict]

    @property
    def name(self) -> str:
        return self.result.scenario.variant or self.result.scenario.name

    @property
    def expected_invariants(self) -> set[str]:
        """Invariants the scenario's own expectations speak about (``invariants.<name>``):
        a teaching scenario may show an unsafe strategy breaking one, and judge it so."""
        return {e.path.split(".")[1] for e in self.result.scenario.expect
                if e.path.startswith("invariants.") and e.path.count(".") == 1}

    @property
    def unexpected_violations(self) -> list[Violation]:
        expected = self.expected_invariants
        return [v for v in self.violations if v.invariant not in expected]

    @property
    def ok(self) -> bool:
        return not self.unexpected_violations and all(v.ok for v in self.verdicts)


def analyse(result: RunResult) -> Analysis:
    hist = histories(result.trace)
    violations = check(result.trace, result.scenario, hist)
    s = summary(result.trace, hist, violations, scenario_name=result.scenario.name,
                seed=result.seed, end_time=result.end_time, drained=result.drained,
                statements=result.statements, polls=result.polls,
                polls_skipped=result.polls_skipped, nodes=result.scenario.nodes,
                boundary_jobs=result.scenario.boundary_timer_jobs,
                services=tuple(result.scenario.services), handlers=result.scenario.handlers)
    windowed(s, result.trace, hist, warmup=result.scenario.warmup,  # statistics only
             cooldown=result.scenario.cooldown, end_time=result.end_time,
             nodes=result.scenario.nodes)
    if result.scenario.overrides:  # a what-if: said in its summary (absent otherwise)
        s["overrides"] = list(result.scenario.overrides)
    return Analysis(result, hist, violations, s, evaluate(result.scenario.expect, s))


def combined_summary(analyses: list[Analysis]) -> dict[str, Any]:
    """The summary.json of a run: the run's own, or one per variant."""
    if len(analyses) == 1 and analyses[0].result.scenario.variant is None:
        return analyses[0].summary
    return {"scenario": analyses[0].result.scenario.name,
            "variants": {a.name: a.summary for a in analyses},
            "variant_order": [a.name for a in analyses]}  # the file's (the keys sort)


# --- report.md -------------------------------------------------------------------------------

#: the columns of report.md's per-node table: figures of ``nodes.<name>``
_NODE_COLUMNS = ("threads executions claims acquire_attempts lost_races busy_share time_up "
                 "time_down time_paused longest_idle_wait even_share idle_while_work_waited"
                 ).split()
_HEADS = {"claims": "rows locked"}  # (the figure ``claims``: rows, not acquisitions)


_ROWS: list[tuple[str, str]] = [
    ("jobs created", "jobs.created"), ("done", "jobs.done"),
    ("dead-lettered", "jobs.dead_lettered"), ("incidents", "jobs.incident"),
    ("failed (until an operator acts)", "jobs.failed"), ("pending at the end", "jobs.pending"),
    ("lost", "jobs.lost"), ("executions", "executions"), ("failed executions", "failures"),
    ("duplicate executions", "duplicate_executions.total"),
    ("duplicate side effects", "duplicate_side_effects.total"),
    ("double acquisitions", "double_acquisitions"),
    ("stranded by a crash", "crash_recovery.stranded_jobs"),
    ("stranded, never taken again", "crash_recovery.unrecovered"),
    ("stranded time p50", "crash_recovery.delay.p50"),
    ("stranded time max", "crash_recovery.delay.max"),
    ("acquisition attempts", "acquisition.attempts"), ("lost races", "acquisition.lost_races"),
    ("acquisition errors", "acquisition.errors"),
    ("polls (skipped idle)", "polls.total"), ("statements", "statements"),
    ("start delay mean", "latency.start_delay.mean"),
    ("start delay p50", "latency.start_delay.p50"),
    ("start delay p90", "latency.start_delay.p90"),
    ("start delay p99", "latency.start_delay.p99"),
    ("start delay max", "latency.start_delay.max"),
    ("end to end p50", "latency.end_to_end.p50"), ("end to end p99", "latency.end_to_end.p99"),
    ("ended at", "end_time"),
]


#: report.md's rows on boundary timers that are timer jobs (only in runs that have them)
_BOUNDARY_ROWS: list[tuple[str, str]] = [
    ("timer jobs (among the jobs)", "boundary_timers.timer_jobs"),
    ("ran", "boundary_timers.done"), ("cancelled with their task", "boundary_timers.cancelled"),
    ("pending at the end", "boundary_timers.pending"), ("fired", "boundary_timers.fired"),
    ("withdrew their job", "boundary_timers.withdrew"),
    ("firing delay p50", "boundary_timers.delay.p50"),
    ("firing delay max", "boundary_timers.delay.max"),
]


def _cell(value: Any, path: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if path.startswith(("latency", "crash_recovery.delay", "boundary_timers.delay")) or \
            path.endswith(("start_delay", "end_to_end")) or path == "end_time":
        return format_seconds(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _table(analyses: list[Analysis], rows: list[tuple[str, str]]) -> list[str]:
    head = "| | " + " | ".join(a.name for a in analyses) + " |"
    lines = [head, "|---|" + "---:|" * len(analyses)]
    for label, path in rows:
        cells = []
        for a in analyses:
            v = figure(a.summary, path)
            cell = _cell(None if v is NO_FIGURE else v, path)
            head, _, stat = path.rpartition(".")
            n = figure(a.summary, f"{head}.n") if stat in ("p90", "p99") else NO_FIGURE
            if isinstance(n, int) and n < 20 and v is not NO_FIGURE and v is not None:
                cell += f" (of {n}: too few)"  # a percentile of a handful of jobs
            cells.append(cell)
        if path == "polls.total":
            cells = [f"{a.summary['polls']['total']} ({a.summary['polls']['skipped']})"
                     for a in analyses]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def markdown(analyses: list[Analysis], plots_of: dict[str, list[tuple[str, str]]],
             over_seeds: Any = None, with_page: bool = True) -> str:
    """report.md: what was run, whether its expectations hold, the figures (and, given
    ``over_seeds`` (``output.seeds``), the same over seeds), the plots; its list of files
    names view.html where ``with_page``, and how to build it where not."""
    sc = analyses[0].result.scenario
    out = [f"# {sc.name}", ""]
    if sc.description:
        out += [sc.description, ""]
    seeds = sorted({a.result.seed for a in analyses})
    out += [f"Scenario `{Path(sc.source).name}` · seed {', '.join(map(str, seeds))}"
            + (f" · variants: {', '.join(a.name for a in analyses)}"
               if sc.variant is not None else ""), ""]
    if sc.overrides:
        out += ["> **A what-if run**, not the file as written: "
                + " · ".join(f"`{o}`" for o in sc.overrides) + ". The scenario's own words "
                "below describe the file as written; the figures are the what-if's.", ""]
    note = python_note(sc, "> ")
    out += [note] if note else []
    about = explanation(sc)
    out += [about, ""] if about else []
    out += ["## What the run shows", ""]
    for a in analyses:
        said = " ".join(sentences(a.summary))
        out += [f"- **{a.name}:** {said}" if sc.variant is not None else said]
    out += [""]
    out += warned(analyses, sc.variant is not None)
    verdicts = [(a, v) for a in analyses for v in a.verdicts]
    if verdicts:
        out += ["## Expectations", "", "| | run | expectation | actual |", "|---|---|---|---:|"]
        for a, v in verdicts:
            actual = v.format().split("(actual: ", 1)[1].rstrip(")")
            out.append(f"| {'✓' if v.ok else '✗ FAILED'} | {a.name} | `{v.expectation.text}` "
                       f"| {actual} |")
        out.append("")
    out += [f"> **Window{f' ({a.name})' if sc.variant is not None else ''}:** "
            f"{window_line(a.summary)}\n" for a in analyses if "window" in a.summary]
    out += ["## Summary", ""] + _table(analyses, _ROWS) + [""]
    out += over_seeds.markdown() if over_seeds is not None else []
    out += ["## Nodes", ""]
    for a in analyses:
        out += [f"### {a.name}", ""] if sc.variant is not None else []
        out += ["| node | " + " | ".join(_HEADS.get(c, c.replace("_", " ").removeprefix("time "))
                                         for c in _NODE_COLUMNS) + " |",
                "|---|" + "---:|" * len(_NODE_COLUMNS)]
        out += [f"| {n} | " + " | ".join(node_cell(f, k) for k in _NODE_COLUMNS) + " |"
                for n, f in a.summary["nodes"].items()] + [""]
    out += ["Busy share: thread-seconds executing / (threads × time up). Idle while work "
            "waited: a job it could run waited over a poll interval while it had a free thread "
            "(up, not paused), and it ran under a tenth of its even share (none, if under 10). "
            "Rows locked: by its claims (a claim is an acquisition that locked rows).", ""]
    named = sorted({n for a in analyses for n in a.summary.get("named", {})})
    if named:
        rows = []
        for n in named:
            rows += [(f"{n}: start delay", f"named.{n}.start_delay"),
                     (f"{n}: executions", f"named.{n}.executions"),
                     (f"{n}: outcome", f"named.{n}.outcome")]
        out += ["## Named jobs", ""] + _table(analyses, rows) + [""]
    if any("boundary_timers" in a.summary for a in analyses):
        out += ["## Boundary timers", ""] + _table(analyses, _BOUNDARY_ROWS) + [""]
        out += ["A boundary timer here is a timer job: a row of the timer table, counted among "
                "the jobs, that fires its task's boundary event when an executor thread has "
                "run it — after the timer loop's poll and the pool's queue (the delay, from its "
                "due time). One whose task ended first was deleted with it.", ""]
    dup_rows = [(f"duplicate executions: {c}", f"duplicate_executions.by_cause.{c}")
                for c in CAUSES] + [(f"duplicate side effects: {c}",
                                     f"duplicate_side_effects.by_cause.{c}") for c in CAUSES]
    if any(a.summary["duplicate_executions"]["total"] or
           a.summary["duplicate_side_effects"]["total"] for a in analyses):
        out += ["## Double runs by cause", ""] + _table(analyses, dup_rows) + [""]
    out += _schedules(analyses, sc.variant is not None)
    out += service_section(analyses)
    inv = [(k, f"invariants.{k}") for k in analyses[0].summary["invariants"]]
    out += ["## Invariants (violations; 0 = holds)", ""] + _table(analyses, inv) + [""]
    if plots_of.get(""):
        out += ["## Compared", "", _COMPARED, ""]
        out += [_shown(title, path) for title, path in plots_of[""]] + [""]
    for a in analyses:
        entries = plots_of.get(a.name, [])
        if entries:
            out += [f"## Plots: {a.name}" if sc.variant is not None else "## Plots", ""]
            out += [_shown(title, path) for title, path in entries] + [""]
    files = ("`summary.json` (the figures), `jobs.csv` (one row per job), `trace.csv` (one "
             "row per event), `scenario.yaml` (what was run)")
    page = "`view.html` (the run to explore in a browser: `jobsim view` rebuilds it)" \
        if with_page else "no `view.html` (`jobsim view` on this folder builds it)"
    out += ["## Files", "", f"{files}, {page}." if sc.variant is None else
            f"`summary.json` (every variant's figures), {page}; in each variant's folder, its "
            f"own {files}.", ""]
    return "\n".join(out)


#: what report.md says of the figures that set the variants side by side
_COMPARED = ("The start delays, the table depth and the load over time draw every variant, "
             "each in the same colour in the three; lines that are the very same are dashed "
             "in turn and labelled so. Each variant's own timeline follows under its name, "
             "with its start delays by priority, double runs, services' load or poll phases "
             "where it has them.")


def _shown(title: str, path: str) -> str:
    """A plot in report.md, or (no file: a figure not worth drawing) the words instead."""
    return f"![{title}]({path})" if path else f"*{title}*"


def _schedules(analyses: list[Analysis], variants: bool) -> list[str]:
    """The retry schedules the jobs followed, per run that retried any (none otherwise)."""
    digests = [(a.name, lines) for a in analyses if (lines := digest(a.histories))]
    if not digests:
        return []
    out = ["## Retry schedules", "", "The delays each job waited between a failure and its "
           "next due time, and how many jobs followed each schedule (`retry_delays` in "
           "`jobs.csv`).", ""]
    for name, lines in digests:
        out += ([f"### {name}", ""] if variants else []) + lines + [""]
    return out


# --- files ------------------------------------------------------------------------------------

#: above this many executions in all, ``jobsim run`` leaves view.html out (its memory and
#: time would rival the run's own); ``jobsim view FOLDER`` still builds it on demand
VIEW_LIMIT = 300_000


def view_left_out(analyses: list[Analysis]) -> int:
    """The executions of a run too big for ``write`` to add its page (0: not too big)."""
    n = sum(int(a.summary["executions"]) for a in analyses)
    return n if n > VIEW_LIMIT else 0


def write(analyses: list[Analysis] | Analysis, out: str | Path, with_plots: bool = True,
          phases: Any = None, with_view: bool | None = None, over_seeds: Any = None,
          steps: Any = None) -> Path:
    """Write the run folder ``out`` (replacing it) and return its path. ``phases``
    (``base.phases.Phases``), if given, is told the time of the CSV files and the plots
    (the interactive page among them). ``with_view``: write ``view.html`` (``output.view``);
    by default, when there are plots; never for a run of more than ``VIEW_LIMIT``
    executions. ``over_seeds`` (``output.seeds.OverSeeds``): report.md's and summary.json's
    part over seeds (``jobsim run --seeds``). ``steps`` (``base.progress.Steps``), if given,
    is told each file as it begins."""
    if isinstance(analyses, Analysis):
        analyses = [analyses]
    out = Path(out)
    check_target(out)

    wanted = with_plots if with_view is None else with_view
    big = view_left_out(analyses)  # a run's executions where too many for its page, else 0

    def fill(tmp: Path) -> None:
        page = None
        if wanted:
            from .children import Page
            from .view import FILE

            if big:  # said where the page's line would have been (a log's reader asks)
                step(steps, f"{FILE} left out: {big:,} executions, over {VIEW_LIMIT:,} "
                            "(jobsim view builds it)", 0)
            else:
                n = sum(int(a.summary['executions']) for a in analyses)
                page = Page(analyses, tmp / FILE, steps, f"{FILE} ({n:,} executions)")
        try:
            if page is not None:  # in a child, beside the files below, where cores allow
                page.begin()
            _fill(tmp)
            if page is not None:
                page.finish(phases)
        finally:
            if page is not None:
                page.stop()

    def _fill(tmp: Path) -> None:
        variants = analyses[0].result.scenario.variant is not None
        plots_of: dict[str, list[tuple[str, str]]] = {}
        for a in analyses:
            folder = tmp / a.name if variants else tmp
            made = write_run(a, folder, with_plots, phases, steps,
                             f"{a.name}/" if variants else "")
            plots_of[a.name] = [(t, f"{a.name}/{p}" if variants and p else p) for t, p in made]
        if variants and with_plots:
            with phase(phases, "plots"):  # matplotlib: not for ``--no-plots``
                from .figures import compared

                compared(analyses, tmp, plots_of, steps)
        if variants or over_seeds is not None:
            top = combined_summary(analyses)
            if over_seeds is not None:
                top = {**top, "over_seeds": over_seeds.summary()}
            (tmp / "summary.json").write_text(json.dumps(top, sort_keys=True, indent=2) + "\n",
                                              encoding="utf-8")
        step(steps, "report.md")
        (tmp / "report.md").write_text(printable(markdown(analyses, plots_of, over_seeds,
                                                          wanted and not big),
                                                 lines=True),
                                       encoding="utf-8")  # no name's control character raw

    try:
        outdir.replace(out, KIND, fill)
    except outdir.OutputError as exc:
        raise ReportError(str(exc)) from None
    return out
