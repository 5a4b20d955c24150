"""The figures of a run folder: each run's own (its start delays, timeline, table depth,
double runs and, with services, their load) and, for a run with variants, the ones that set
the variants side by side. A figure with nothing to show is not drawn: report.md says so in
words instead (an entry with no file)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.expect import figure
from ..analysis.history import CAUSES
from ..analysis.phases import claims, phase_series
from ..analysis.metrics import jobs_frame
from ..analysis.series import load_series
from ..analysis.window import counted_jobs
from ..base import memory
from ..base.progress import step
from . import plots
from .children import begun, parallel
from .columns import plot_frame
from .effect_words import bunched
from .figure_words import bounds, describe, why_none
from .plots.common import axis_label, with_unit
from .text import format_seconds
from .service_report import compared_loads, load_panels


#: a run of this many trace events or more shares its plots with a child process, where
#: ``children.parallel()``: below, the fork costs more than the plots it takes over
SHARED_FROM = 50_000


def run_plots(a: Any, jobs: pd.DataFrame, folder: Path, steps: Any = None,
              prefix: str = "", phases: Any = None, share: bool = True
              ) -> list[tuple[str, str]]:
    """Each plot drawn, saved and let go before the next (a big run's figures hold millions
    of points); ``steps`` (``base.progress.Steps``) is told each file as it begins, named
    with ``prefix``. A run of ``SHARED_FROM`` events or more, where a child process may
    work beside this one, has every other plot drawn there (the same bytes) unless not to
    ``share`` them (another child writes the run's CSV files meanwhile); its CPU seconds are
    told to ``phases`` as the plots'.

    A variant's own plots (``a.result.scenario.variant`` set) are those of what happened
    in it: its timeline and, where they apply, its start delays by priority class, its
    double runs, its services' load and its nodes' poll phases. Its start delays, table
    depth and load are drawn with the other variants' on one figure each (``compared``):
    one figure a variant said the same thing less well, and cost a variant run a report
    per variant."""
    tdf = plot_frame(a.result.trace)
    alone = a.result.scenario.variant is None
    made = [("per-node timeline", "timeline.png", lambda: plots.node_timeline(
        tdf, colour=a.result.scenario.timeline_colour, jobs=jobs,
        duplicates=a.histories.duplicate_starts))]
    counted = counted_jobs(jobs, a.summary)
    listed = []  # a run of too few jobs for a distribution: each job's start delay in words
    if alone or jobs["priority"].nunique() > 1:  # a variant's: what the shared one merges
        if len(counted) >= CDF_JOBS:
            made.insert(0, ("latency CDF by priority", "latency_cdf.png",
                            lambda: plots.latency_cdf(counted)))
        else:
            listed = [(job_delays(counted), "")]
    if alone:
        made.append(("table depth over time", "table_depth.png",
                     lambda: plots.table_depth(tdf)))
    if a.histories.duplicates:
        made.append(("double runs by cause", "duplicates.png",
                     lambda: plots.duplicates_by_cause(a.histories.duplicates, CAUSES)))
    if "services" in a.summary:
        made.append(("load on the services", "service_load.png",
                     lambda: plots.service_load(load_panels(a))))
    made += _load_plots(a, jobs, alone)
    child = None
    shared = share and len(made) > 2 and len(a.result.trace) >= SHARED_FROM and parallel()
    try:
        for i, entry in enumerate(made):
            if i == 1 and shared:  # forked once a figure has been drawn here: the child
                # (starting with matplotlib's fonts and caches warm) draws every other one
                child = begun(lambda: _draw(made[1::2], folder),
                              f"{prefix}plots could not be drawn")
                if child is not None:  # (no fork: all drawn here) progress tells what
                    # each process draws as it begins it
                    step(steps, ", ".join(f"{prefix}{name}" for _, name, _ in made[1::2])
                         + " (in a second process)", len(made[1::2]))
            if child is None or i % 2 == 0:
                step(steps, f"{prefix}{entry[1]}")
                _draw([entry], folder)
        if child is not None:
            cpu = child.wait()
            if phases is not None:  # the wait for it is this phase's wall time already
                phases.add("plots", 0.0, cpu)
    finally:
        if child is not None:
            child.stop()
    said = [] if a.histories.duplicates else [  # (a retry after a failure is no double run)
        (("Apart from its retries, no job ran twice" if a.summary.get("failures") else
          "No job ran twice") + ", so there is no plot of double runs by cause.", "")]
    return listed + [(title, name) for title, name, _ in made] + said


#: the jobs a run needs for a figure of its start delays' distribution; under it, report.md
#: lists each job's (as the summary gives values, not percentiles, under 20)
CDF_JOBS = 20


def job_delays(jobs: pd.DataFrame) -> str:
    """Each job's start delay (first start − due) in words, for a run of too few jobs to
    draw as a distribution: by name where a job has one, by id and handler otherwise; its
    priority where the jobs have more than one."""
    prio = jobs["priority"].nunique() > 1
    said = []
    for row in jobs.itertuples(index=False):
        name = row.name if isinstance(row.name, str) and row.name else \
            f"job {row.id} ({row.handler})"
        delay = row.first_start - row.due
        said.append(f"{name}{f', priority {row.priority}' if prio else ''}: "
                    + ("never started" if delay != delay else format_seconds(delay)))
    n = len(jobs)
    return (f"Start delays (first start − due), job by job — {n} job{'s' if n != 1 else ''}, "
            f"too few to draw as a distribution: " + (" · ".join(said) if said else "none"))


def _draw(made: list[tuple[str, str, Any]], folder: Path) -> None:
    """Each figure drawn, saved and let go before the next."""
    for _, name, draw in made:
        fig = draw()
        plots.save(fig, folder / name)
        fig.clear()  # its artists and their arrays go now, not at the next garbage collection
        del fig
        memory.release()


def _ended(load: Any, end: float) -> Any:
    """``load`` (binned past the run's ``end``, to share its bins with a longer run's) with
    nothing after ``end``: the bins that begin after it are NaN (no line), where the series
    would go on with the run's last state (its open runs busy, its waiting jobs waiting)."""
    if load is None:
        return None
    past = load.edges[:-1] >= end
    if not past.any():
        return load

    def cut(x: Any) -> Any:
        return np.where(past, np.nan, np.asarray(x, dtype=float))

    return dataclasses.replace(load, busy=cut(load.busy), waiting=cut(load.waiting),
                               delay_mean=cut(load.delay_mean), delay_max=cut(load.delay_max),
                               polls=cut(load.polls), writes=cut(load.writes))


#: the title of a load-over-time figure in report.md
LOAD_TITLE = "load over time: busy threads, waiting jobs, start delay, statements/s"


#: the jobs a run needs for a figure of its load over time
LOAD_JOBS = 20


def _load(a: Any, jobs: pd.DataFrame, end: float | None = None) -> Any:
    """Run ``a``'s load over time (``analysis.series.Load``) in bins up to ``end`` (its own
    end by default), or None: a run of under ``LOAD_JOBS`` jobs has too few for one."""
    if len(jobs) < LOAD_JOBS:
        return None
    nodes = a.result.scenario.nodes
    threads = sum(n.executor.threads for n in nodes)
    names = list(a.result.trace.nodes)
    specs = [(names.index(n.name), n.executor.threads, n.start_at or 0.0) for n in nodes
             if n.name in names]
    return load_series(a.result.trace.arrays(), jobs, threads,
                       a.result.end_time if end is None else end, specs)


def _window(a: Any) -> tuple[float, float] | None:
    w = a.summary.get("window")
    return (w["start"], w["end"]) if w else None


def _faults(a: Any) -> tuple[list[tuple[float, float, str]], int]:
    """Run ``a``'s fault windows (``effects.faults``: the first 20 of them) as (from, to,
    what) to shade, and how many more there were."""
    faults = (a.summary.get("effects") or {}).get("faults") or {}
    windows = faults.get("windows") or {}
    names = {"slow_db": lambda w: f"database ×{w['factor']:g}",
             "partition": lambda w: f"{w['what']} cut off",
             "down": lambda w: f"{w['what']} down",
             "pause": lambda w: f"{w['what']} paused",
             "outage": lambda w: f"{w['what']} down",
             "brownout": lambda w: f"{w['what']} brown-out"}
    return [(w["from"], w["to"], names[w["kind"]](w)) for w in windows.values()], \
        faults.get("more", 0)


def _load_plots(a: Any, jobs: pd.DataFrame, alone: bool) -> list[tuple[str, str, Any]]:
    """Load over time (a run of 20 jobs or more, not a variant: ``compared`` draws the
    variants') and the nodes' poll phases (where the report names an effect of theirs)."""
    sc, end, cols = a.result.scenario, a.result.end_time, a.result.trace.arrays()
    out = []
    if alone and len(jobs) >= LOAD_JOBS:
        out.append((LOAD_TITLE, "load_over_time.png",
                    lambda: plots.load_over_time(_load(a, jobs), _window(a), *_faults(a))))
    # the phases' picture where the report names what they did (lock-step, polls bunched
    # enough to lengthen the wait, or the work they split unevenly)
    effects = a.summary.get("effects") or {}
    told = effects.get("poll_phases") or {}
    named = told.get("lock_step") or (told and bunched(told)) or \
        (effects.get("imbalance") or {}).get("why") == "poll_phases"
    group = told.get("group")  # (the set of nodes that alone run some handlers, if so)
    phases = phase_series(cols, a.result.trace.nodes,
                          tuple(n for n in sc.nodes if group is None or n.name in group), end,
                          claims(cols, a.result.trace.texts)) if named else None
    if phases is not None:
        out.append(("the nodes' poll phases over time", "poll_phases.png",
                    lambda: plots.poll_phases(*phases)))
    return out


def compared(analyses: list[Any], tmp: Path, plots_of: dict[str, list[tuple[str, str]]],
             steps: Any = None) -> None:
    """The plots that set the variants side by side (in ``tmp``, listed in ``plots_of``);
    ``steps`` is told each file as it begins."""
    step(steps, "start_delay.png")
    delays = {}
    for a in analyses:
        jf = counted_jobs(jobs_frame(a.histories), a.summary)  # its window's, if any
        delays[a.name] = (jf["first_start"] - jf["due"]).to_numpy(dtype=float)
    named = {a.name: {job: f["start_delay"] for job, f in (a.summary.get("named") or {}).items()
                      if isinstance(f.get("start_delay"), (int, float))} for a in analyses}
    refs: dict[tuple[float, str], list[str]] = {}  # a named job's expected start delay
    for a in analyses:
        for job in sorted(a.summary.get("named") or {}):
            for value, words in bounds(a.result.scenario.expect, f"named.{job}.start_delay"):
                refs.setdefault((value, f"{job} {words}"), []).append(a.name)
    at: dict[float, list[str]] = {}  # one line per bound, the words of all its runs
    for (v, w), r in sorted(refs.items()):
        at.setdefault(v, []).append(w if len(r) == len(analyses) else f"{w} ({', '.join(r)})")
    plots.save(plots.start_delay_by_variant(delays, named, [(v, "\n".join(w)) for v, w in
                                                            at.items()]),
               tmp / "start_delay.png")
    plots_of[""] = [("start delay by variant", "start_delay.png")]
    for i, path in enumerate(analyses[0].result.scenario.compare or ()):
        values, reasons, refs = [], [], {}
        for a in analyses:
            v = figure(a.summary, path)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
            values.append(v if ok else None)
            reasons.append("" if ok else why_none(a.summary, path))
            for value, words in bounds(a.result.scenario.expect, path):
                refs.setdefault((value, words), []).append(a.name)
        words, unit = describe(path)
        every = len(analyses)
        lines: dict[float, list[str]] = {}  # one line per bound, the words of all its runs
        for (value, said), runs in sorted(refs.items()):
            lines.setdefault(value, []).append(
                said if len(runs) == every else f"{said} ({', '.join(runs)})")
        fig = plots.compare_bars([a.name for a in analyses], values,
                                 with_unit(words, unit), axis_label(unit), reasons,
                                 [(v, "\n".join(w)) for v, w in lines.items()],
                                 path)
        name = f"compare_{i + 1}.png"
        step(steps, name)
        plots.save(fig, tmp / name)
        title = f"{with_unit(words, unit)} — {path}"
        plots_of[""].append((title, name))
        if None in values:  # a run without a value is said, not only drawn
            plots_of[""].append((f"{words[:1].upper() + words[1:]}: " + "; ".join(
                f"{a.name} has none" + (f" ({r})" if r else "")
                for a, v, r in zip(analyses, values, reasons)
                if v is None) + ".", ""))
    plots_of[""] += _compared_runs(analyses, tmp, steps)
    plots_of[""] += compared_loads(analyses, tmp, steps)


def _compared_runs(analyses: list[Any], tmp: Path, steps: Any) -> list[tuple[str, str]]:
    """The variants' table depth over time on one figure, and their load over time (those
    of ``LOAD_JOBS`` jobs or more, in bins of one width: up to the latest end) on
    another."""
    made = []
    jobs = {a.name: jobs_frame(a.histories) for a in analyses}
    if any(len(j) for j in jobs.values()):
        step(steps, "table_depth.png")
        fig = plots.table_depth_by_variant({a.name: plot_frame(a.result.trace)
                                            for a in analyses})
        plots.save(fig, tmp / "table_depth.png")
        made.append(("table depth over time by variant", "table_depth.png"))
        del fig
    else:
        made.append(("No variant created a job, so there is no plot of the table depth.", ""))
    end = max(a.result.end_time for a in analyses)
    loads = {a.name: _ended(_load(a, jobs[a.name], end), a.result.end_time)
             for a in analyses}
    if any(ld is not None for ld in loads.values()):
        step(steps, "load_over_time.png")
        windows = {_window(a) for a in analyses}
        fig = plots.load_by_variant(loads, windows.pop() if len(windows) == 1 else None,
                                    {name: len(j) for name, j in jobs.items()})
        plots.save(fig, tmp / "load_over_time.png")
        made.append((LOAD_TITLE.replace("load over time", "load over time by variant"),
                     "load_over_time.png"))
        del fig
    else:
        made.append((f"No variant has {LOAD_JOBS} jobs or more, so there is no plot of the "
                     "load over time.", ""))
    memory.release()
    return made
