"""``jobsim run --seeds N`` and a file's ``report.seeds``: the run's report with a part over
N seeds (``output.seeds``), the other seeds run on the sweep's worker pool
(``tools.seeds``).

One seed (``--seeds 1``, or no ``--seeds`` and no ``report.seeds``) is the run alone: the
report is byte for byte the one without the flag, so ``--seeds 1`` also turns a file's
``report.seeds`` off. A number of seeds other than the file's own is a what-if: its
default folder is under ``reports/_scratch/``, so it never replaces the file's report.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

from ..base.errors import Problem, ScenarioError


def wanted(args: argparse.Namespace, runs: list[Any]) -> int:
    """The seeds asked for: ``--seeds``, else the file's ``report.seeds``, else 1."""
    from ..tools.seeds import file_seeds

    return args.seeds if args.seeds is not None else file_seeds(runs[0])


def named(args: argparse.Namespace, sc: Any) -> Any:
    """``sc`` with ``--seeds N`` among its overrides when N is not the file's own (for its
    default folder only: the run and its report are the same)."""
    from ..tools.seeds import file_seeds

    if args.seeds is None or args.seeds == file_seeds(sc):
        return sc
    return dataclasses.replace(sc, overrides=sc.overrides + (f"--seeds {args.seeds}",))


def check(args: argparse.Namespace, runs: list[Any], n: int, estimates: list[Any],
          budget: Any) -> None:
    """Refuse, before any run, seeds that cannot be run (``ScenarioError``, exit 2)."""
    from ..tools.seeds import check as check_seeds

    if n > 1 and args.every_poll:
        raise ScenarioError([Problem("--every-poll", "one seed with --every-poll (the other "
                                     "seeds' runs count idle polls, as a sweep's do)",
                                     f"{n} seeds", "leave out --every-poll, or use --seeds 1"
                                     )], "the command line")
    from ..tools.sweep import MAX_WORKERS

    if args.workers is not None and args.workers > MAX_WORKERS:
        raise ScenarioError([Problem("--workers", f"at most {MAX_WORKERS} worker processes",
                                     f"{args.workers:,}")], "the command line")
    given = args.seeds is not None
    check_seeds(runs[0].seed, n, [est.events for est, _ in estimates], budget.events,
                "the command line" if given else args.scenario,
                "--seeds" if given else "report.seeds")


def over_seeds(analyses: list[Any], n: int, workers: int | None, quiet: bool) -> Any:
    """The report's part over ``n`` seeds (None for one seed), its runs with a progress
    bar."""
    if n <= 1:
        return None
    from ..base.progress import Bar
    from ..output.seeds import OverSeeds
    from ..tools.seeds import rows_over_seeds
    from ..tools.sweep import MAX_WORKERS

    from ..output.report import ReportError
    from ..tools.sweep import SweepError

    name = analyses[0].result.scenario.name
    workers = workers or min(os.cpu_count() or 1, MAX_WORKERS)
    runs, first = (n - 1) * len(analyses), analyses[0].result.seed
    with Bar(runs, f"{name}: seeds", unit="runs", show=not quiet) as bar:
        # what the count is, at once (a log has no line of the count before 10 s)
        at = f"seed {first + 1:,}" if n == 2 else f"seeds {first + 1:,} to {first + n - 1:,}"
        bar.stage(f"{runs:,} more {'run' if runs == 1 else 'runs'} at {at}")
        try:
            seeds, rows = rows_over_seeds(analyses, n, workers,
                                          lambda done, total: bar.set(done))
        except SweepError:  # a worker process died (the pool's only error): nothing is
            raise ReportError(f"the runs over {n} seeds stopped: a worker process ended "
                              "abruptly; nothing was written (run again with --workers 1 "
                              "to see the failing run)") from None  # written
    return OverSeeds(seeds, analyses, rows)
