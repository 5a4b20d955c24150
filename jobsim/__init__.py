"""jobsim — a deterministic discrete-event simulator of database-backed job executors.

The public API, for notebooks and scripts (the command line is ``jobsim``):

- scenarios: ``load(path)``, ``load_variants(path)``, ``loads(yaml_text)``,
  ``from_dict(document, sets=["executor.lock_time=30s"])``;
- a run: ``run(scenario, seed=None)`` → a ``RunResult`` (its ``trace``, final ``store``…);
- what it means: ``analyse(result)`` → an ``Analysis`` (``.summary`` figures,
  ``.violations`` of the invariants, ``.histories``), ``jobs_frame(analysis.histories)`` and
  ``trace_frame(result.trace)`` as pandas tables, ``narrate(result.trace)`` as the lesson's
  transcript, ``write(analyses, folder)`` as a report;
- handlers in Python: ``with_handler(scenario, name, generator_function)``; the function
  gets a ``Context`` (the job, its attempt, ``call`` a service, ``wait``, ``random``,
  ``memory``) and fails the execution with ``raise JobFailed(error)``;
- figures: ``plots`` (pure matplotlib ``Figure`` objects);
- statistics: ``erlang_c_wait``, ``mean_ci``, ``mmc_scenario``;
- ``fast()``: whether to run notebooks small (the test suite sets ``JOBSIM_FAST=1``).
"""

from __future__ import annotations

import os

from .output import plots
from .tools.bench import erlang_c_wait, mean_ci, mmc_scenario
from .analysis.history import histories
from .analysis.metrics import jobs_frame, trace_frame
from .analysis.narrative import narrate
from .output.report import Analysis, analyse, write
from .format.scenario import from_dict, load, load_variants, loads, with_handler
from .executor.context import Context, HandlerError, JobFailed
from .executor.services import Reply
from .sim.world import RunResult, run

__all__ = ["Analysis", "Context", "HandlerError", "JobFailed", "Reply", "RunResult", "analyse",
           "erlang_c_wait", "fast", "from_dict", "histories", "jobs_frame", "load", "load_variants", "loads", "mean_ci",
           "mmc_scenario", "narrate", "plots", "run", "trace_frame", "with_handler", "write"]


def fast() -> bool:
    """True when ``JOBSIM_FAST`` is set to something other than ``0``: notebooks then use
    fewer replications and smaller workloads (the test suite runs them so)."""
    return os.environ.get("JOBSIM_FAST", "0") not in ("", "0")
