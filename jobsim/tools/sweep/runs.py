"""One run of a sweep: a grid point's scenario with a replication's seed, run and analysed
into one row of the results table (a run that fails is a row with its error); and the error
raised when the sweep's runs cannot be carried out.
"""

from __future__ import annotations

from typing import Any

from ...base.errors import JobsimError, ScenarioError
from ...output.report import analyse
from ...format.scenario import from_dict
from ...sim.cost import Guard, RunStopped, estimate
from ...sim.world import run
from .grid import _point_doc


class SweepError(JobsimError):
    """The sweep cannot run as asked (the Dask cluster cannot be reached or used)."""


class CacheFull(SweepError):
    """The cache reached its limit: the sweep stops, what it cached is kept."""


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
    workers). A run that cannot be built or fails is a row with its error; a run in which
    the model itself raised is also ``crashed``, with its ``traceback``'s last lines."""
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
    except RunStopped as exc:  # far past its estimate: did not complete, no bug shown
        row["error"] = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # recorded, not raised: one bad run must not stop a sweep
        # the model raised: a bug in jobsim, which this run reproduces — a finding
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["crashed"] = True
        row["traceback"] = traceback_tail(exc)
    return row


#: the lines of a crash's traceback a row keeps (its innermost frames and the error)
TRACEBACK_LINES = 12


def traceback_tail(exc: BaseException, lines: int = TRACEBACK_LINES) -> str:
    """The last ``lines`` lines of the traceback of ``exc``'s first cause (SimPy raises a
    process's error anew, from the event loop, with the original as its cause): where in
    jobsim it was raised."""
    import traceback

    for _ in range(20):
        if exc.__cause__ is None or exc.__cause__ is exc:
            break
        exc = exc.__cause__
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, chain=False))
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def _run_packed(task: tuple[dict[str, Any], str, tuple[tuple[str, Any], ...], int]
                ) -> dict[str, Any]:
    return run_one(*task)
