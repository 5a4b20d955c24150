"""Sweeps: one scenario run over a grid of settings × replications, in parallel.

A sweep takes the scenario's base run (not its variants), a grid of dotted paths and values
(``executor.lock_time = 10s, 30s, 2m``), and a number of replications. Its runs are the grid's
cross product × the replications. Replication ``r`` has the same seed at every grid point
(``replication_seed(base, r)``), so the points differ by their settings, not by their luck:
common random numbers.

Each run gives one row of the **results table** (``runs.csv`` and ``runs.parquet``): the
point, the replication, its seed, each axis' value, whether it ran, its error if not (a run
that fails is recorded, the sweep goes on), and every figure of its summary as a column
(``duplicate_executions.total``, ``latency.start_delay.p50`` …). The **per-point table**
(``points.csv``) has each figure's mean and 95% confidence interval over the replications;
``sweep.md`` and the plots show chosen figures against an axis with confidence bands.

Runs are cached by (scenario, overrides, seed) under ``<out>/cache/``, one file per run
written as it completes, so an interrupted sweep run again computes only what is missing.
An entry is used only if it checks: it records the scenario document's hash, the overrides,
the seed and the model version (``model_version()``: a SHA-256 of the code that makes a row),
its row has a summary row's shape and types, and the SHA-256 of the row's canonical JSON
matches the one stored beside it. Anything else (a torn file, a file edited by hand, a row
from older code) is computed again and counted (``SweepResult.recomputed``).

The sweep folder is ``outdir.Folder(out, "sweep")``: jobsim refuses a folder it did not write
(or the working folder), before any run; it replaces only the files its manifest lists.

Bounds: at most ``MAX_SWEEP_RUNS`` runs (grid points × replications, counted by multiplying
the axes' lengths, before any point is built), ``MAX_AXES`` axes of at most
``MAX_AXIS_VALUES`` values, ``MAX_WORKERS`` local worker processes. Local workers end with
the sweep's process: on Linux by ``PR_SET_PDEATHSIG``, elsewhere by a thread that watches
the parent's pid.

Execution: in this process (``workers=1``), in local worker processes (``workers=K``), or
on an existing Dask cluster (``dask=ADDRESS``); the rows are the same either way, sorted by
point and replication. ``precision=(figure, fraction)`` replicates each point until the
95% CI half-width of ``figure`` is within ``fraction`` of its mean (``replications`` is then
the cap).

The package's modules: ``grid`` (axes, points, sizes, seeds, the checks before any run),
``cache`` (entries, their checks, the model version), ``runs`` (one run → one row),
``pool`` (local worker processes), ``cluster`` (Dask), ``tables`` (the results and
per-point tables), ``report`` (the sweep folder's files) and ``execute`` (the sweep itself).

This package's names are its modules', each module imported when one of its names is first
asked for: a command that only checks a grid (``jobsim validate``) loads ``grid``, not the
runs, the tables and the report, which import pandas and the whole simulator.
"""

from __future__ import annotations

import importlib
from typing import Any

#: each module's names that the package gives
_NAMES = {
    "cache": ("ENTRY_KEYS", "MAX_ENTRY_BYTES", "NOT_IN_MODEL", "RESERVED_IN_ROW", "_Cache",
              "_doc_hash", "cache_entry", "check_entry", "code_hash", "model_version",
              "row_sha256", "task_key"),
    "cluster": ("DASK_TIMEOUT", "_on_dask", "check_dask_address", "connect_dask"),
    "grid": ("MAX_AXES", "MAX_AXIS_VALUES", "MAX_REPLICATIONS", "MAX_SWEEP_RUNS", "RESERVED",
             "SWEEP_BUDGET_RUNS", "Axis", "check_axes", "check_points", "check_size",
             "grid_points", "grid_size", "parse_grid", "replication_seed"),
    "pool": ("MAX_WORKERS", "_in_pool", "die_with_parent", "watch_parent"),
    "report": ("KIND", "_write"),
    "disk": ("DEFAULT_CACHE_LIMIT", "check_room", "entry_bytes", "runs_that_fit"),
    "runs": ("CacheFull", "SweepError", "_run_packed", "flatten", "run_one"),
    "tables": ("SweepResult", "_half_width_ok", "_table", "point_table"),
    "execute": ("_execute", "sweep"),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}

__all__ = ["DASK_TIMEOUT", "DEFAULT_CACHE_LIMIT", "ENTRY_KEYS", "CacheFull", "check_room",
           "entry_bytes", "runs_that_fit", "KIND", "MAX_AXES", "MAX_AXIS_VALUES",
           "MAX_ENTRY_BYTES", "MAX_REPLICATIONS", "MAX_SWEEP_RUNS", "MAX_WORKERS",
           "NOT_IN_MODEL", "RESERVED", "RESERVED_IN_ROW", "SWEEP_BUDGET_RUNS", "Axis",
           "SweepError", "SweepResult", "cache_entry", "check_axes", "check_dask_address",
           "check_entry", "check_size", "code_hash", "connect_dask", "die_with_parent",
           "flatten", "grid_size", "model_version", "parse_grid", "point_table",
           "replication_seed", "row_sha256", "run_one", "sweep", "task_key", "watch_parent"]


def __getattr__(name: str) -> Any:
    """A name of one of the package's modules (``_NAMES``), that module imported now."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))
