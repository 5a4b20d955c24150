"""A hunt's budget made good before anything is written.

``--budget`` asks for runs, a time, or both. What a hunt may do is bounded besides: its
configuration's run within the run budget (as ``jobsim run`` holds it), every run of the
hunt within ``HUNT_EVENTS`` simulator events in all (the sweep's rule: 50 × the run budget),
and its cache within ``--cache-limit`` and the free space of its disk (``sweep.disk``), with
room kept for the baseline and for shrinking. The search's runs are capped at what these
allow, and a line says so with the figures; a time budget always comes with the most runs
it may make, said the same way. A hunt that could not even shrink within them is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...base.errors import Problem, ScenarioError
from ...sim.cost import DEFAULT_EVENTS, Budget, estimate
from ...sim.cost import check as check_cost
from ...sim.cost.budget import _bytes, _count
from ..sweep.disk import entry_bytes, runs_that_fit
from ..sweep.grid import SWEEP_BUDGET_RUNS

#: the most simulator events a hunt makes in all (the sweep's rule)
HUNT_EVENTS = SWEEP_BUDGET_RUNS * DEFAULT_EVENTS


def _time(seconds: float) -> str:
    for unit, size in (("h", 3600.0), ("min", 60.0), ("s", 1.0)):
        if seconds >= size or unit == "s":
            x = seconds / size
            return f"{x:,.0f} {unit}" if x >= 1000 or x == int(x) else f"{x:.3g} {unit}"
    return ""


def plan_runs(base: Any, runs: int | None, seconds: float | None, most: int,
              shrinking: int, cache_limit: float, out: str | Path | None,
              source: str) -> tuple[int, list[str]]:
    """The most runs the search may make, and the lines that say why (``most``: the hunt's
    own bound; ``shrinking``: the runs shrinking may add). Raises ``BudgetError`` for a
    configuration beyond the run budget, ``ScenarioError`` for a cache that has no room."""
    est = estimate(base)
    check_cost(est, Budget(), f"{source} (the hunt's configuration)")
    asked = runs if runs is not None else most
    limits = [(most, f"the most runs a hunt makes ({most:,})")]
    by_events = max(1, int(HUNT_EVENTS // max(est.events, 1.0)))
    limits.append((by_events, f"the cost estimate: about {_count(est.events)} events a run, "
                              f"and a hunt makes at most {_count(HUNT_EVENTS)} events in all"))
    if out is not None:
        per_run = entry_bytes(base)
        fit, why = runs_that_fit(cache_limit, out, per_run)
        room = fit - 1 - shrinking  # the baseline and shrinking are cached too
        if room < 1:
            raise ScenarioError([Problem(
                "--cache-limit", f"room for the hunt's cache: at least "
                f"{_bytes((2 + shrinking) * per_run)} (about {_bytes(per_run)} a run, for the "
                f"baseline, one run of the search and {shrinking:,} of shrinking)",
                f"{why}: room for {max(fit, 0):,} runs",
                "raise --cache-limit, free some space or choose another --out")], source)
        limits.append((room, f"{why}, at about {_bytes(per_run)} a run (room kept for the "
                             f"baseline and {shrinking:,} runs of shrinking)"))
    cap, why = min(limits)
    if runs is not None and cap < runs:
        time = f" (and {_time(seconds)})" if seconds is not None else ""
        return cap, [f"--budget {runs:,} runs{time} is beyond what this hunt may make: the "
                     f"search is capped at {cap:,} runs by {why}"]
    if runs is None and seconds is not None:
        return cap, [f"--budget {_time(seconds)}: the search ends when that time is spent or "
                     f"after {cap:,} runs, whichever comes first ({cap:,} runs: {why})"]
    return min(cap, asked), []
