"""The files of one run's folder (or one variant's sub-folder): summary.json, jobs.csv and
trace.csv, scenario.yaml as run, violations.txt when an invariant failed, and the run's
plots. ``report.write`` calls it for each run, then writes what sets the runs side by side,
report.md and the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ..analysis.metrics import trace_frame
from ..base import memory, outdir
from ..base.phases import phase
from ..base.printable import printable
from ..base.progress import step
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
    csv = None
    try:
        with phase(phases, "csv"):
            jobs = jobs_with_services(a)
            csv = _CsvFiles(folder, jobs, result.trace, prefix)
            apart = with_plots and len(result.trace) >= APART_FROM and csv.begin()
            step(steps, f"{prefix}jobs.csv and trace.csv ({len(result.trace):,} events)"
                 + (" (in another process)" if apart else ""), 2)
            if not apart:
                csv.write()
                memory.release()
        # the plots all drawn here while the CSV files are written elsewhere: a second
        # child sharing them saved no time on two cores, and held 260 MB more at 1,000,000
        # jobs (the sum of the processes' memory: 1,582 MB against 1,319)
        made = _rest(a, jobs, folder, with_plots, phases, steps, prefix, share=not apart)
        csv.finish(phases, steps)
    finally:
        if csv is not None:
            csv.stop()
    return made


#: a run of this many trace events or more, with plots to draw meanwhile, has its CSV files
#: written by a child process where ``children.parallel()``: below, the fork costs about
#: what it saves
APART_FROM = 200_000


class _CsvFiles:
    """jobs.csv and trace.csv of a run: written here (``write``), or ``begin`` in a child
    process beside the plots and ``finish`` (the child's CPU seconds the phase's, its
    files' digests this process's: the manifest does not read them again)."""

    def __init__(self, folder: Path, jobs: Any, trace: Any, prefix: str = ""):
        self.folder, self.jobs, self.trace, self.prefix = folder, jobs, trace, prefix
        self.child: Any = None

    def write(self) -> dict[Any, str]:
        jobs = self.jobs
        # a broker's deadline: an integer of epoch ms, as the server gives it (none: empty)
        digests = write_csv(self.folder / "jobs.csv",
                            {c: jobs[c].astype("Int64") if c == "deadline" else jobs[c]
                             for c in jobs.columns}, len(jobs))
        digests.update(write_csv(self.folder / "trace.csv", trace_columns(self.trace),
                                 len(self.trace)))
        return digests

    def begin(self) -> bool:
        """The files begun in a child process; False where there is none to be had."""
        from .children import Child, parallel

        if not parallel():
            return False
        child = Child(self.write, f"{self.prefix}jobs.csv and trace.csv could not be "
                                  "written")
        if not child.begin():
            return False
        self.child = child
        return True

    def finish(self, phases: Any, steps: Any = None) -> None:
        if self.child is None:
            return
        child, self.child = self.child, None
        if child.proc.is_alive():  # said, or a log's last line stands for the wait
            step(steps, f"{self.prefix}jobs.csv and trace.csv: waiting for the other "
                        "process", 0)
        outdir.learn(child.waited(phases, "csv"))  # a stop meanwhile ends the child

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop()
            self.child = None


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
