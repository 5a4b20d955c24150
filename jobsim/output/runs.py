"""``jobsim run``'s path from scenarios to a report folder and the lines it prints, for the
command line and for the tools that time it (``tools.bench_run``).

``run_variants`` runs each variant under its cost guard, with a progress bar, and analyses
it; ``write_report`` writes the folder (``report.write``, with the report's progress);
``told`` gives what the command prints after
it: each run's story (unless quiet), summary and unexpected invariant violations. A
``Phases`` given to them is told where the time goes (simulate, analysis, csv, plots, page).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..base import memory, outdir
from ..base.phases import Phases, phase
from ..base.progress import Bar, Steps, run_progress, simulating
from ..sim.world import run
from .report import (VIEW_LIMIT, Analysis, analyse, format_summary, format_violation,
                     view_left_out, write)


def run_variants(runs: Sequence[Any], guards: Sequence[Any], *, quiet: bool = False,
                 every_poll: bool = False, phases: Phases | None = None) -> list[Analysis]:
    """Each scenario of ``runs`` run under its guard (``sim.cost.Guard``) and analysed.
    Raises ``RunStopped`` from a guard."""
    analyses = []
    for sc, guard in zip(runs, guards):
        with Bar(100, sc.variant or sc.name, unit="%", show=not quiet) as bar:
            bar.stage(simulating(sc))
            try:
                with phase(phases, "simulate"):
                    result = run(sc, progress=run_progress(bar), guard=guard,
                                 idle_shortcut=not every_poll)
            except BaseException:
                bar.close()
                raise
            bar.stage("analysing the trace")
            with phase(phases, "analysis"):
                analyses.append(analyse(result))
                memory.release()
    return analyses


def told(analyses: list[Analysis], out: Path, quiet: bool) -> list[str]:
    """What ``jobsim run`` prints once the folder is written: each run's story (unless
    ``quiet``), summary and unexpected invariant violations, and where the report is."""
    from ..analysis.metrics import trace_frame
    from ..analysis.narrative import narrate

    lines: list[str] = []
    for a in analyses:
        if not quiet:
            if a.result.scenario.variant is not None:
                lines.append(f"=== {a.name} ===")
            lines += narrate(a.result.trace)
            lines.append("")
        lines += format_summary(a, None)
        if a.unexpected_violations:
            tdf = trace_frame(a.result.trace)
            shown = a.unexpected_violations[:10]
            lines.append(f"\n{len(a.unexpected_violations)} invariant violation(s); the first "
                         f"{len(shown)}:")
            lines += [format_violation(v, tdf, a.result.trace.nodes) for v in shown]
            where = out / a.name if a.result.scenario.variant is not None else out
            lines.append(f"(all of them: {where}/violations.txt)")
        lines.append("")
    big = view_left_out(analyses)
    if big:
        lines.append(f"view.html: not written for {big:,} executions (more than "
                     f"{VIEW_LIMIT:,}); jobsim view {out} builds it, drawing an evenly spaced "
                     "subset")
    overrides = analyses[0].result.scenario.overrides
    if overrides:
        lines.append("what-if: " + " ".join(overrides))
    lines.append(f"report: {out}/report.md")
    return lines


def write_report(analyses: Any, out: str | Path, with_plots: bool = True, phases: Any = None,
                 with_view: bool | None = None, over_seeds: Any = None, steps: Any = None, *,
                 progress: bool = False) -> Path:
    """``report.write`` (its arguments) with, if ``progress`` and no ``steps`` of the
    caller's, the report's progress (``base.progress.Steps``: each file as it begins) closed
    by how many files were written, where and how fast: as ``jobsim run`` and
    ``jobsim.write(…, progress=True)`` draw it."""
    if not progress or steps is not None:
        return write(analyses, out, with_plots, phases, with_view, over_seeds, steps)
    with Steps("report") as steps:  # on a failure the bar goes, nothing said of files
        began = time.monotonic()
        path = write(analyses, out, with_plots, phases, with_view, over_seeds, steps)
        took = time.monotonic() - began
        files = len((outdir.read_manifest(Path(out)) or {}).get("files", {}))
        steps.close(f"{files} files written to {out} in " +
                    (f"{took:.1f} s" if took >= 0.05 else "under 0.1 s"))
    return path
