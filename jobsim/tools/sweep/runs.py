"""One run of a sweep: a grid point's scenario with a replication's seed, run and analysed
into one row of the results table (a run that fails is a row with its error); and the error
raised when the sweep's runs cannot be carried out.
"""

from __future__ import annotations

from typing import Any

from ...base.errors import JobsimError, ScenarioError
from ...output.report import analyse
from ...format.scenario import from_dict
from ...sim.cost import Guard, estimate
from ...sim.world import run
from .grid import _point_doc


class SweepError(JobsimError):
    """The sweep cannot run as asked (the Dask cluster cannot be reached or used)."""


def flatten(summary: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The summary's leaves as ``dotted.path → value`` (numbers, text, booleans)."""
    out: dict[str, Any] = {}
    for k, v in summary.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
    return out


def run_one(doc: dict[str, Any], source: str, overrides: tuple[tuple[str, Any], ...],
            seed: int) -> dict[str, Any]:
    """One run of the sweep (a top-level function: it travels to worker processes and Dask
    workers). A run that cannot be built or fails is a row with its error."""
    row: dict[str, Any] = {"seed": seed, "ok": False, "error": None}
    try:
        sc = from_dict(_point_doc(doc, source, overrides), source, seed)
        # a run far past its estimate stops (RunStopped, recorded as this row's error)
        a = analyse(run(sc, guard=Guard(estimate(sc))))
        row.update(flatten(a.summary))
        row["ok"] = True
        row["violations"] = len(a.unexpected_violations)
        row["expectations_missed"] = sum(not v.ok for v in a.verdicts)
    except ScenarioError as exc:
        row["error"] = exc.format().strip()
    except Exception as exc:  # recorded, not raised: one bad run must not stop a sweep
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def _run_packed(task: tuple[dict[str, Any], str, tuple[tuple[str, Any], ...], int]
                ) -> dict[str, Any]:
    return run_one(*task)
