"""Where ``jobsim run``'s time goes on the full model: the simulation against everything
after it (the analysis, the CSV files, the plots, the report's text).

``report_run(jobs)`` runs ``jobsim run``'s path — the run under its cost guard, the
analysis, the report folder with its plots, the printed story and summary — on
``bench.full_model_scenario(jobs, seed)`` in a fresh child process (forked where the
platform can, and free to fork its own as the command does), into a temporary folder, and
returns each phase's wall and CPU seconds, the total wall seconds and the child's peak
resident memory (MB).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from pathlib import Path
from typing import Any

from ..base.phases import Phases
from ..output.report import write
from ..output.runs import run_variants, told
from ..sim.cost import Budget, Guard, estimate
from .bench import full_model_scenario
from .bench_measure import Side, in_child


def _report_run(jobs: int, seed: int) -> dict[str, Any]:
    """In the child: ``jobsim run`` of the full model with its report, timed."""
    t0 = time.perf_counter()
    phases = Phases()
    sc = full_model_scenario(jobs, seed)
    budget = Budget(float("inf"), float("inf"))  # the bench asks for the size it runs
    guard = Guard(estimate(sc), budget, "the full model")
    with tempfile.TemporaryDirectory(prefix="jobsim-bench-run-") as tmp:
        out = Path(tmp) / "report"
        printed = io.StringIO()  # what the command prints: the story, the summary
        with contextlib.redirect_stderr(io.StringIO()):  # the progress bars
            analyses = run_variants([sc], [guard], quiet=False, phases=phases)
            write(analyses, out, with_plots=True, phases=phases)
            printed.write("\n".join(told(analyses, out, quiet=False)) + "\n")  # "other"
        del analyses
    figures = phases.figures()
    figures["total_wall_s"] = round(time.perf_counter() - t0, 6)
    figures["jobs"], figures["seed"] = jobs, seed
    return figures


def report_run(jobs: int, seed: int = 1) -> dict[str, Any]:
    """``jobsim run`` of ``full_model_scenario(jobs, seed)`` with its full report (plots
    included) in a fresh child process: ``phases`` (simulate, analysis, csv, plots, page, other:
    each ``wall_s`` and ``cpu_s``), ``wall_s`` and ``total_wall_s`` (with building the
    scenario), ``simulate_share`` (of ``wall_s``) and ``peak_rss_mb``. The child may have
    children of its own, as the command does (the CSV files, the plots and the page built
    side by side where cores allow: ``output.children``); a pool's worker could not."""
    return in_child(Side("jobsim run", jobs, _report_run, (jobs,)), seed).result
