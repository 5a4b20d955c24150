"""The public functions as a notebook calls them: each takes the natural thing.

A run is asked for by a scenario file's path, a ``Scenario`` or a parsed document (a dict);
what is shown of it — its trace, its jobs, its story, its figures — by a ``RunResult`` (what
``run`` returns) or an ``Analysis`` (what ``analyse`` returns), or by the part the internal
functions take (a ``Trace``, a ``Histories``, a frame): ``analysis.inputs`` says which part
a value stands for. The internal code calls the internal functions directly: nothing here is
on a simulation's path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .analysis import metrics as _metrics
from .analysis import narrative as _narrative
from .analysis.inputs import as_histories, as_scenario, as_trace
from .executor.config import Scenario
from .format import scenario as _scenario
from .sim import world as _world

__all__ = ["analyse", "as_histories", "as_scenario", "as_trace", "histories", "jobs_frame",
           "narrate", "run", "trace_frame", "write"]


def run(scenario: Any, seed: int | None = None, *, variant: str | None = None,
        sets: list[str] | tuple[str, ...] = (), **options: Any) -> Any:
    """Run a scenario — a ``Scenario``, a scenario file's path or a parsed document (a
    dict) — with its own seed unless ``seed`` is given; a ``RunResult`` (its ``trace``,
    final ``store``, ``end_time``…). From a path or a document: ``variant`` picks one of its
    variants (else its base run; ``load_variants`` gives them all), ``sets`` overrides
    values by dotted path (``["executor.lock_time=30s"]``). ``options`` are
    ``sim.world.run``'s (``progress``, ``guard``, ``idle_shortcut``); ``progress=True``
    draws the run's progress as ``jobsim run`` does (a widget in a notebook with
    ipywidgets, a bar on a terminal, lines in a log; none under ``JOBSIM_PROGRESS=0``)."""
    if variant is not None or sets:
        if isinstance(scenario, Scenario):
            raise TypeError("variant= and sets= pick from a scenario file or document; "
                            "a Scenario is already one run")
        runs = (_scenario.load_variants(scenario, sets=sets) if isinstance(scenario, (str, Path))
                else _scenario.variants_of(scenario, sets=sets))
        if variant is not None:
            named = [sc for sc in runs if sc.variant == variant]
            if not named:
                raise ValueError(f"no variant {variant!r}: the variants are "
                                 f"{', '.join(str(sc.variant) for sc in runs)}")
            runs = named
        scenario = runs[0] if variant is not None else \
            (_scenario.from_dict(scenario, sets=sets) if isinstance(scenario, dict)
             else _scenario.load(scenario, sets=sets))
    scenario = as_scenario(scenario)
    if options.get("progress") is True:
        from .base.progress import Bar, run_progress, simulating

        with Bar(100, scenario.variant or scenario.name, unit="%") as bar:
            bar.stage(simulating(scenario))  # in a log, its line at once
            options["progress"] = run_progress(bar)
            return _world.run(scenario, seed, **options)
    return _world.run(scenario, seed, **options)


def analyse(result: Any, *, progress: bool = False) -> Any:
    """What a run means: an ``Analysis`` (``.summary`` figures, ``.violations`` of the
    invariants, ``.verdicts`` of the file's expectations, ``.histories`` of every job). Takes
    a ``RunResult``, or anything ``run`` takes (which it runs first, with ``progress``).
    ``progress=True`` says what it analyses as it begins (1,000,000 jobs: about 5 s), where
    ``run``'s progress is drawn."""
    from .output.report import analyse as _analyse

    if not isinstance(result, _world.RunResult):
        result = run(result, progress=True) if progress else run(result)
    if not progress:
        return _analyse(result)
    from .base.progress import Steps

    with Steps(result.scenario.variant or result.scenario.name, "steps") as steps:
        steps.step(f"analysing the trace ({len(result.trace):,} events)")
        return _analyse(result)


def write(analyses: Any, out: str | Path, with_plots: bool = True, phases: Any = None,
          with_view: bool | None = None, over_seeds: Any = None, steps: Any = None, *,
          progress: bool = False) -> Path:
    """Write the report folder ``out`` (replacing one jobsim wrote, never a user's folder) of
    an ``Analysis``, or of a list of them (a file's variants), and return its path: as
    ``jobsim run`` writes it, report.md, summary.json, the CSV files, the plots (unless not
    ``with_plots``) and view.html (``with_view``: by default with the plots). ``progress=True``
    draws each file as it begins and then how many were written, as ``jobsim run`` does.
    ``phases``, ``over_seeds`` and ``steps``: see ``output.report.write``."""
    from .output.runs import write_report

    return write_report(analyses, out, with_plots, phases, with_view, over_seeds, steps,
                        progress=progress)


def histories(what: Any) -> Any:
    """Every job's history (its claims, runs and end) from a run: see ``as_histories``."""
    return as_histories(what)


def jobs_frame(what: Any) -> Any:
    """One row per job, in id order (a pandas DataFrame): its priority, ``due``,
    ``first_start`` (its start delay is ``first_start - due``), outcome, executions, double
    runs, retry delays… Takes an ``Analysis``, a ``RunResult``, a ``Trace`` or a
    ``Histories``."""
    return _metrics.jobs_frame(as_histories(what))


def trace_frame(what: Any) -> Any:
    """The trace as a pandas DataFrame, one row per event, names instead of codes. Takes a
    ``RunResult``, an ``Analysis`` or a ``Trace``."""
    return _metrics.trace_frame(as_trace(what))


def narrate(what: Any, limit: int | None = 60) -> list[str]:
    """The run's story as lines of text (past ``limit`` lines, one line says how many more
    there are). Takes a ``RunResult``, an ``Analysis`` or a ``Trace``."""
    return _narrative.narrate(as_trace(what), limit)
