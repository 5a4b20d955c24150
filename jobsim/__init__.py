"""jobsim — a deterministic discrete-event simulator of database-backed job executors.

The public API, for notebooks and scripts (the command line is ``jobsim``):

- scenarios: ``load(path)``, ``load_variants(path)``, ``loads(yaml_text)``,
  ``from_dict(document, sets=["executor.lock_time=30s"])``;
- a run: ``run(scenario, seed=None)`` → a ``RunResult`` (its ``trace``, final ``store``…);
  the scenario may be a ``Scenario``, a file's path or a parsed document (a dict);
- what it means: ``analyse(result)`` → an ``Analysis`` (``.summary`` figures,
  ``.violations`` of the invariants, ``.histories``), ``jobs_frame(result)`` and
  ``trace_frame(result)`` as pandas tables, ``narrate(result)`` as the lesson's
  transcript, ``write(analyses, folder)`` as a report — each of these, and the figures of
  one run in ``plots`` (``node_timeline``, ``table_depth``, ``latency_cdf``,
  ``duplicates_by_cause``), takes a ``RunResult`` or an ``Analysis`` (or the part it needs:
  a ``Trace``, a ``Histories``, a frame); the figures that compare runs take their values;
- handlers in Python: ``with_handler(scenario, name, generator_function)``; the function
  gets a ``Context`` (the job, its attempt, ``call`` a service, ``wait``, ``random``,
  ``memory``) and fails the execution with ``raise JobFailed(error)``;
- figures: ``plots`` (pure matplotlib ``Figure`` objects);
- statistics: ``erlang_c_wait``, ``mean_ci``, ``mmc_scenario``;
- ``fast()``: whether to run notebooks small (the test suite sets ``JOBSIM_FAST=1``);
- ``seed(s)``: a seed a notebook uses, moved by ``JOBSIM_SEED`` (``s + N`` when it is ``N``;
  ``s`` when it is unset: the committed run), so that a notebook runs at other seeds
  unedited (``python tools/run_notebooks.py --seed N``).
"""

from __future__ import annotations

import os
import importlib
from typing import Any

from .base.outdir import version

#: the public names and the modules they come from, imported at first use: ``import
#: jobsim`` (and every ``jobsim`` command) pays only for what it touches — pandas,
#: matplotlib and Bokeh cost 1.3 CPU s to import, and a bad flag needs none of them
_FROM = {
    "analyse": ".api", "histories": ".api", "jobs_frame": ".api", "narrate": ".api",
    "run": ".api", "trace_frame": ".api",
    "erlang_c_wait": ".tools.bench", "mean_ci": ".tools.bench", "mmc_scenario": ".tools.bench",
    "write": ".api", "Analysis": ".output.report",
    "from_dict": ".format.scenario", "load": ".format.scenario",
    "load_variants": ".format.scenario", "loads": ".format.scenario",
    "with_handler": ".format.scenario",
    "Context": ".executor.context", "HandlerError": ".executor.context",
    "JobFailed": ".executor.context", "Reply": ".executor.service_spec",
    "RunResult": ".sim.world",
}

__all__ = ["Analysis", "Context", "HandlerError", "JobFailed", "Reply", "RunResult",
           "__version__", "analyse", "erlang_c_wait", "fast", "from_dict", "histories",
           "jobs_frame", "load", "load_variants", "loads", "mean_ci", "mmc_scenario", "narrate",
           "plots", "run", "seed", "trace_frame", "with_handler", "write"]


__version__ = version()


def __getattr__(name: str) -> Any:
    """A public name, imported at its first use (``_FROM``); ``plots`` is the figures'
    module (``output.plots``; ``import jobsim.plots`` gives it too)."""
    if name == "plots":
        value: Any = importlib.import_module(".output.plots", __name__)
    elif name in _FROM:
        value = getattr(importlib.import_module(_FROM[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API only (``dir(jobsim)``), not the modules it is made of."""
    return sorted(__all__)


def fast() -> bool:
    """True when ``JOBSIM_FAST`` is set to something other than ``0``: notebooks then use
    fewer replications and smaller workloads (the test suite runs them so)."""
    return os.environ.get("JOBSIM_FAST", "0") not in ("", "0")


def seed(s: int) -> int:
    """The seed to use where a notebook means seed ``s``: ``s`` itself, or ``s + N`` when
    ``JOBSIM_SEED`` is set to ``N`` (a whole number, 0 or more; unset, empty or ``0``: the
    committed run). Every seed of a notebook goes through it — its seed lists, and a
    scenario file's own seed (``seed(sc.seed)``) — so that one variable moves them all and
    keeps them apart as they were."""
    raw = os.environ.get("JOBSIM_SEED", "").strip()
    try:
        shift = int(raw) if raw else 0
    except ValueError:
        raise ValueError(f"JOBSIM_SEED must be a whole number, 0 or more: {raw!r}") from None
    if shift < 0:
        raise ValueError(f"JOBSIM_SEED must be a whole number, 0 or more: {raw!r}")
    return int(s) + shift
