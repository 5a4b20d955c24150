"""The public functions as a notebook calls them: each takes the natural thing.

A run is asked for by a scenario file's path, a ``Scenario`` or a parsed document (a dict);
what is shown of it — its trace, its jobs, its story, its figures — by a ``RunResult`` (what
``run`` returns) or an ``Analysis`` (what ``analyse`` returns), or by the part the internal
functions take (a ``Trace``, a ``Histories``, a frame): ``analysis.inputs`` says which part
a value stands for. The internal code calls the internal functions directly: nothing here is
on a simulation's path.
"""

from __future__ import annotations

from typing import Any

from .analysis import metrics as _metrics
from .analysis import narrative as _narrative
from .analysis.inputs import as_histories, as_scenario, as_trace
from .sim import world as _world

__all__ = ["analyse", "as_histories", "as_scenario", "as_trace", "histories", "jobs_frame",
           "narrate", "run", "trace_frame"]


def run(scenario: Any, seed: int | None = None, **options: Any) -> Any:
    """Run a scenario — a ``Scenario``, a scenario file's path (its base run) or a parsed
    document (a dict) — with its own seed unless ``seed`` is given; a ``RunResult`` (its
    ``trace``, final ``store``, ``end_time``…). ``options`` are ``sim.world.run``'s
    (``progress``, ``guard``, ``idle_shortcut``)."""
    return _world.run(as_scenario(scenario), seed, **options)


def analyse(result: Any) -> Any:
    """What a run means: an ``Analysis`` (``.summary`` figures, ``.violations`` of the
    invariants, ``.verdicts`` of the file's expectations, ``.histories`` of every job). Takes
    a ``RunResult``, or anything ``run`` takes (which it runs first)."""
    from .output.report import analyse as _analyse

    if not isinstance(result, _world.RunResult):
        result = run(result)
    return _analyse(result)


def histories(what: Any) -> Any:
    """Every job's history (its claims, runs and end) from a run: see ``as_histories``."""
    return as_histories(what)


def jobs_frame(what: Any) -> Any:
    """One row per job, in id order (a pandas DataFrame): its priority, due, start delay,
    outcome, executions, double runs… Takes an ``Analysis``, a ``RunResult``, a ``Trace``
    or a ``Histories``."""
    return _metrics.jobs_frame(as_histories(what))


def trace_frame(what: Any) -> Any:
    """The trace as a pandas DataFrame, one row per event, names instead of codes. Takes a
    ``RunResult``, an ``Analysis`` or a ``Trace``."""
    return _metrics.trace_frame(as_trace(what))


def narrate(what: Any, limit: int | None = 60) -> list[str]:
    """The run's story as lines of text (past ``limit`` lines, one line says how many more
    there are). Takes a ``RunResult``, an ``Analysis`` or a ``Trace``."""
    return _narrative.narrate(as_trace(what), limit)
