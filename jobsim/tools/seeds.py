"""A run over seeds: the scenario's own seed and the ones after it, for every variant, on the
sweep's worker pool.

``jobsim run --seeds N`` (or a file's ``report.seeds``) reports each headline figure and
expectation over N seeds, because one seed can mislead. The seeds are the run's own seed
``s`` and ``s + 1`` … ``s + N - 1``: plain numbers that ``jobsim run --seed`` replays. Every
variant gets the same seeds (common random numbers, as a sweep's replications: the variants
are compared on the same draws). The run at ``s`` is the one the report folder holds; the
others are run as a sweep runs its replications (``sweep.runs.run_one``: a row of the
summary's figures, its unexpected violations, its error if it did not complete) by the
sweep's executor and pool (``sweep._execute``), without its cache: a run's report folder is
replaced whole, and a cache in it would be part of the report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..base.errors import Problem, ScenarioError
from ..format.fileformat import MAX_SEEDS
from .sweep.grid import SWEEP_BUDGET_RUNS

if TYPE_CHECKING:  # the runs and their rows are imported by what runs them: ``check``
    from ..output.report import Analysis  # alone (``jobsim validate``) needs no pandas

#: the largest seed a scenario may have (the file format's bound)
MAX_SEED = 2 ** 63 - 1

__all__ = ["MAX_SEED", "MAX_SEEDS", "check", "file_seeds", "own_row", "rows_over_seeds",
           "seeds_of"]


def file_seeds(sc: Any) -> int:
    """The seeds a scenario's file asks for (``report.seeds``; 1 if it does not)."""
    report = sc.document.get("report") or {}
    return int(report.get("seeds") or 1) if isinstance(report, dict) else 1


def seeds_of(base: int, n: int) -> list[int]:
    """The seeds of a run over ``n`` seeds from its own seed ``base``."""
    return list(range(base, base + n))


def check(base: int, n: int, events: Sequence[float], budget_events: float | None,
          where: str, path: str = "--seeds") -> None:
    """Refuse, before any run, a number of seeds out of bounds, seeds past the largest
    seed, or runs over seeds that would cost more than a sweep may (``SWEEP_BUDGET_RUNS`` ×
    the run budget, ``events`` the estimate of each variant's run)."""
    problems = []
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SEEDS:
        problems.append(Problem(path, f"a number of seeds from 1 to {MAX_SEEDS:,}",
                                repr(n)))
    elif base + n - 1 > MAX_SEED:
        problems.append(Problem(path, f"seeds up to {MAX_SEED:,} (the largest seed)",
                                f"seeds {base:,} to {base + n - 1:,}",
                                "run from a smaller --seed, or over fewer seeds"))
    elif budget_events is not None and n > 1 and \
            n * sum(events) > budget_events * SWEEP_BUDGET_RUNS:
        problems.append(Problem(path, f"runs of at most {budget_events * SWEEP_BUDGET_RUNS:.2g}"
                                f" events in all ({SWEEP_BUDGET_RUNS} × the run budget; raise "
                                "it with --budget)", f"about {n * sum(events):.2g} events: "
                                f"{n} seeds × {len(events)} run(s)"))
    if problems:
        raise ScenarioError(problems, where)


def own_row(a: Analysis) -> dict[str, Any]:
    """The row of the run the report holds, as ``run_one`` makes one for another seed."""
    from .sweep.runs import flatten

    row: dict[str, Any] = {"seed": a.result.seed, "ok": True, "error": None}
    row.update(flatten(a.summary))
    row["violations"] = len(a.unexpected_violations)
    row["expectations_missed"] = sum(not v.ok for v in a.verdicts)
    return row


def _standalone(sc: Any) -> dict[str, Any]:
    """A document whose base run is ``sc`` (a variant's ``set`` and ``expect`` are in its
    document already; ``--no-expect`` took its expectations away)."""
    doc = dict(sc.document)
    doc.pop("variants", None)
    if not sc.expect:
        doc.pop("expect", None)
    return doc


def rows_over_seeds(analyses: Sequence[Analysis], n: int, workers: int = 1,
                    progress: Callable[[int, int], None] | None = None
                    ) -> tuple[list[int], list[list[dict[str, Any]]]]:
    """The seeds, and for each run of ``analyses`` (a variant, or the scenario) its row at
    each seed: the first its own (``own_row``), the others run at ``seed + 1`` … on
    ``workers`` local processes. ``progress(done, total)`` follows the runs."""
    from .sweep.cache import _Cache, _doc_hash, task_key
    from .sweep.execute import _execute

    seeds = seeds_of(analyses[0].result.seed, n)
    tasks, keys = [], []
    for a in analyses:
        sc = a.result.scenario
        doc = _standalone(sc)
        h = _doc_hash(doc)
        mine = []
        for s in seeds[1:]:
            key = task_key(h, (), s)
            tasks.append((key, (doc, sc.source, (), s)))
            mine.append(key)
        keys.append(mine)
    rows, _ = _execute(tasks, _Cache(None), workers, None, progress) if tasks else ({}, 0)
    return seeds, [[own_row(a)] + [rows[k] for k in mine] for a, mine in zip(analyses, keys)]
