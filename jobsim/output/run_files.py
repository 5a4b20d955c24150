"""The files of one run's folder (or one variant's sub-folder): summary.json, jobs.csv and
trace.csv, scenario.yaml as run, violations.txt when an invariant failed, and the run's
plots. ``report.write`` calls it for each run, then writes what sets the runs side by side,
report.md and the page."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from ..analysis.metrics import trace_frame
from ..base import memory, outdir
from ..base.phases import phase
from ..base.printable import printable
from ..base.progress import step
from . import children
from .columns import trace_columns
from .csvtext import write_csv
from .service_report import jobs_with_services, python_note
from .text import format_violation


def write_run(a: Any, folder: Path, with_plots: bool, phases: Any = None,
              steps: Any = None, prefix: str = "") -> list[tuple[str, str]]:
    """Write run ``a``'s files into ``folder`` and return its plots as (title, file name);
    ``phases`` is told their time, ``steps`` (``base.progress.Steps``) each file as it
    begins, named with ``prefix`` (a variant's sub-folder)."""
    outdir.make_dir(folder)
    result = a.result
    (folder / "summary.json").write_text(json.dumps(a.summary, sort_keys=True, indent=2) + "\n",
                                         encoding="utf-8")
    child = None  # the CSV files' child process, if they are written in one
    try:
        with phase(phases, "csv"):
            jobs = jobs_with_services(a)
            files = partial(_csv_files, folder, jobs, result.trace)
            if with_plots and len(result.trace) >= APART_FROM and children.parallel():
                child = children.begun(files, f"{prefix}jobs.csv and trace.csv could not "
                                                  "be written")
            step(steps, f"{prefix}jobs.csv and trace.csv ({len(result.trace):,} events)"
                 + (" (in another process)" if child else ""), 2)
            if child is None:
                files()
                memory.release()
        # the plots all drawn here while the CSV files are written elsewhere: a second
        # child sharing them saved no time on two cores, and held 260 MB more at 1,000,000
        # jobs (the sum of the processes' memory: 1,582 MB against 1,319)
        made = _rest(a, jobs, folder, with_plots, phases, steps, prefix, share=child is None)
        if child is not None:
            if child.proc.is_alive():  # said, or a log's last line stands for the wait
                step(steps, f"{prefix}jobs.csv and trace.csv: waiting for the other "
                            "process", 0)
            # its CPU the phase's, its files' digests this process's: the manifest does
            # not read the files again
            outdir.learn(child.waited(phases, "csv"))
    finally:
        if child is not None:
            child.stop()  # a stop or a failure meanwhile ends it (nothing once waited for)
    return made


#: a run of this many trace events or more, with plots to draw meanwhile, has its CSV files
#: written by a child process where ``children.parallel()``: below, the fork costs about
#: what it saves
APART_FROM = 200_000


def _csv_files(folder: Path, jobs: Any, trace: Any) -> dict[Any, str]:
    """Write jobs.csv and trace.csv into ``folder``; their digests (``write_csv``)."""
    # a broker's deadline: an integer of epoch ms, as the server gives it (none: empty)
    digests = write_csv(folder / "jobs.csv",
                        {c: jobs[c].astype("Int64") if c == "deadline" else jobs[c]
                         for c in jobs.columns}, len(jobs))
    digests.update(write_csv(folder / "trace.csv", trace_columns(trace), len(trace)))
    return digests


def _rest(a: Any, jobs: Any, folder: Path, with_plots: bool, phases: Any, steps: Any,
          prefix: str, share: bool) -> list[tuple[str, str]]:
    """The run's files after its CSV files: scenario.yaml, violations.txt, the plots
    (``share``: with a child process, for a big run, where cores allow)."""
    result = a.result
    doc = dict(result.scenario.document)
    doc["seed"] = result.seed
    overrides = result.scenario.overrides
    if "--no-expect" in overrides:
        doc.pop("expect", None)
    said = f"# a what-if run: {' '.join(overrides)} (applied below)\n" if overrides else ""
    said = printable(said + python_note(result.scenario, "# "), lines=True)
    (folder / "scenario.yaml").write_text(said +
                                          yaml.safe_dump(doc, sort_keys=False,
                                                         allow_unicode=True), encoding="utf-8")
    if a.violations:
        tdf = trace_frame(result.trace)
        told = [format_violation(v, tdf, result.trace.nodes) for v in a.violations]
        (folder / "violations.txt").write_text(printable("\n".join(told) + "\n", lines=True),
                                               encoding="utf-8")
        del tdf
    if not with_plots:
        return []
    with phase(phases, "plots"):  # matplotlib's import among them: not for ``--no-plots``
        from .figures import run_plots

        return run_plots(a, jobs, folder, steps, prefix, phases, share)
