"""A sweep's grid: its axes (dotted paths and their values), its points, its size, the seed
of each replication, and the checks made before any run (each point's scenario is valid and
within the run budget, the sweep within its bounds).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...base.errors import Problem, ScenarioError
from ...format.scenario import from_dict, parse_value, set_path
from ...sim.cost import Budget, estimate
from .disk import entry_bytes

#: the most runs (grid points × replications) a sweep may have
MAX_SWEEP_RUNS = 100_000
#: a sweep may cost this many times the run budget in all
SWEEP_BUDGET_RUNS = 50
#: the most replications per grid point (the file format's bound too)
MAX_REPLICATIONS = 100_000
#: the most axes, and values per axis (the file format's ``sweep.grid`` bounds)
MAX_AXES = 10
MAX_AXIS_VALUES = 1000


@dataclass(frozen=True)
class Axis:
    path: str
    values: tuple[Any, ...]


def parse_grid(items: Iterable[str], where: str = "the command line") -> list[Axis]:
    """``["executor.lock_time=10s,30s,2m", "nodes=2,4"]`` → axes; each value is read as YAML
    (``30s`` stays text, ``4`` is a number)."""
    axes, problems = [], []
    items = list(items)
    if len(items) > MAX_AXES:
        raise ScenarioError([Problem("--grid", f"at most {MAX_AXES} axes",
                                     f"{len(items)} axes")], where)
    for item in items:
        path, sep, text = item.partition("=")
        if sep and text.count(",") >= MAX_AXIS_VALUES:  # counted before anything is parsed
            problems.append(Problem(f"--grid {path.strip()}",
                                    f"at most {MAX_AXIS_VALUES:,} values per axis",
                                    f"{text.count(',') + 1:,} values"))
            continue
        values = [v.strip() for v in text.split(",")] if sep else []
        if not sep or not path.strip() or not all(values):
            problems.append(Problem(f"--grid {item}", "PATH=VALUE,VALUE,… like "
                                    "executor.lock_time=10s,30s,2m", repr(item)))
            continue
        parsed = []
        for v in values:  # each within a file's limits, as a --set value is
            try:
                parsed.append(parse_value(v, f"--grid {path.strip()}", where))
            except ScenarioError as exc:
                problems.extend(exc.problems)
        axes.append(Axis(path.strip(), tuple(parsed)))
    if problems:
        raise ScenarioError(problems, where)
    return axes  # ``sweep`` checks them (the file's grid too)


#: columns of the results table an axis may not be named after
RESERVED = ("point", "replication", "seed", "ok", "error", "violations")


def check_axes(axes: Iterable[Axis], where: str = "the command line") -> None:
    """Each path once, not a reserved column (a sweep's seeds come from its replications),
    each value once."""
    axes = list(axes)
    problems = []
    if len(axes) > MAX_AXES:
        problems.append(Problem("--grid", f"at most {MAX_AXES} axes", f"{len(axes)} axes"))
    names = [a.path for a in axes]
    if len(set(names)) != len(names):
        problems.append(Problem("--grid", "each path once", ", ".join(names)))
    for a in axes:
        if a.path in RESERVED:
            problems.append(Problem(f"--grid {a.path}", "a path of the scenario other than "
                                    + ", ".join(RESERVED) + " (replications vary the seed)",
                                    a.path))
        if len(a.values) > MAX_AXIS_VALUES:
            problems.append(Problem(f"--grid {a.path}",
                                    f"at most {MAX_AXIS_VALUES:,} values per axis",
                                    f"{len(a.values):,} values"))
            continue
        texts = [json.dumps(v, sort_keys=True, default=str) for v in a.values]
        if len(set(texts)) != len(texts):
            problems.append(Problem(f"--grid {a.path}", "each value once",
                                    ", ".join(map(str, a.values))))
        if not a.values:
            problems.append(Problem(f"--grid {a.path}", "at least one value", "none"))
    if problems:
        raise ScenarioError(problems, where)


def grid_size(axes: Iterable[Axis]) -> int:
    """The number of grid points: the product of the axes' lengths (nothing is built)."""
    return math.prod(len(a.values) for a in axes)


def check_size(axes: Iterable[Axis], replications: int, where: str = "the command line",
               precision: bool = False) -> int:
    """Refuse a sweep of more than ``MAX_SWEEP_RUNS`` runs (grid points × replications);
    return its number of runs. Counted from the axes' lengths: no point is made."""
    axes = list(axes)
    points = grid_size(axes)
    runs = points * replications
    if replications > MAX_REPLICATIONS or runs > MAX_SWEEP_RUNS:
        sizes = " × ".join(f"{a.path}: {len(a.values):,} values" for a in axes) or "no axis"
        reps = "replications (with --precision: the most per point)" if precision else \
            "replications"
        raise ScenarioError([Problem(
            "--grid × --replications",
            f"at most {MAX_SWEEP_RUNS:,} runs (grid points × replications) and at most "
            f"{MAX_REPLICATIONS:,} replications",
            f"{runs:,} runs = {points:,} grid points ({sizes}) × {replications:,} {reps}",
            "use fewer values per axis or fewer axes (--grid, or the file's sweep.grid), "
            "or fewer replications (--replications N, or the file's sweep.replications)")],
            where)
    return runs


def replication_seed(base: int, replication: int) -> int:
    """The seed of replication ``replication``: the same at every grid point."""
    digest = hashlib.sha256(f"jobsim-sweep/{base}/{replication}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def grid_points(axes: Iterable[Axis]) -> list[tuple[tuple[str, Any], ...]]:
    """Every grid point as its ``(path, value)`` pairs, in the axes' order (one point, with
    no pair, when there is no axis)."""
    return list(itertools.product(*[[(a.path, v) for v in a.values] for a in axes])) or [()]


def _point_doc(doc: dict[str, Any], source: str,
               combo: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The base scenario's document (no variants, no sweep) with a grid point's values."""
    d = copy.deepcopy(doc)
    d.pop("variants", None)  # a sweep runs the base scenario
    d.pop("sweep", None)
    problems: list[Problem] = []
    for path, value in combo:
        set_path(d, path, value, f"--grid {path}", problems)
    if problems:
        raise ScenarioError(problems, source)
    return d


def _at_points(points: list[str], of: int) -> str:
    """Where in the grid a problem came: every point, or the first few of those it did."""
    if len(points) == of and of > 1:
        return f"at every one of the {of:,} grid points"
    if len(points) == 1:
        return f"grid point {points[0]}"
    more = f", and {len(points) - 3:,} more" if len(points) > 3 else ""
    return f"at {len(points):,} of the {of:,} grid points: " + "; ".join(points[:3]) + more


def check_points(doc: dict[str, Any], combos: list[tuple[tuple[str, Any], ...]],
                 axes: tuple[Axis, ...], replications: int, source: str,
                 budget: Budget | None) -> float:
    """Refuse, all at once, the grid points whose scenario cannot be built, and (with a
    budget) the points beyond it or a sweep beyond ``SWEEP_BUDGET_RUNS`` × the budget; the
    disk the sweep's runs will take (``disk.entry_bytes``)."""
    # Build every point's scenario now (no run), so that a bad path or value anywhere in
    # the grid is reported, all at once, before any work; and estimate each point's cost:
    # a point beyond the run budget, or a sweep beyond SWEEP_BUDGET_RUNS × the budget in
    # all, is refused here, before any run.
    problems: list[Problem] = []
    #: each build problem once, with the grid points it came at (a typo in a path comes at
    #: every point: one line, not one per point)
    bad: dict[Problem, list[str]] = {}
    total_events = disk = 0.0
    for combo in combos:
        where = ", ".join(f"{p}={v}" for p, v in combo)
        try:
            sc = from_dict(_point_doc(doc, source, combo), source)
        except ScenarioError as err:
            for p in err.problems:
                bad.setdefault(p, []).append(where)
            continue
        disk += entry_bytes(sc) * replications
        if budget is not None:
            est = estimate(sc)
            total_events += est.events * replications
            why = est.over(budget)
            if why is not None:
                problems.append(Problem(f"grid point {where or '(base)'}",
                                        "a run within the budget (raise it with --budget)",
                                        f"{why}: {est.describe()}"))
    problems[:0] = [Problem(f"--grid {p.path} ({_at_points(points, len(combos))})", p.expected,
                            p.got, p.hint) for p, points in bad.items()]
    if budget is not None and total_events > budget.events * SWEEP_BUDGET_RUNS:
        problems.append(Problem("--grid/--replications", f"a sweep of at most "
                                f"{budget.events * SWEEP_BUDGET_RUNS:.2g} events in all "
                                f"({SWEEP_BUDGET_RUNS} × the run budget; raise it with "
                                "--budget)", f"about {total_events:.2g} events: "
                                f"{grid_size(axes):,} points × {replications} replications"))
    if len(problems) > 50:  # a grid of bad points: the first ones say what is wrong
        problems = problems[:50] + [Problem("--grid", "every grid point valid",
                                            f"{len(problems) - 50:,} more problems")]
    if problems:
        raise ScenarioError(problems, source)
    return disk


def point_warnings(doc: dict[str, Any], axes: tuple[Axis, ...], source: str,
                   base: list[Any]) -> list[tuple[str, Any]]:
    """The lint's warnings of the grid points that the base run (``base``, its warnings)
    does not have, each with the points it comes at ("executor.lock_time=30s"): a trap a
    grid value sets (a lock shorter than the runs) is said before the sweep, as ``jobsim
    run`` says it before a run. A point whose scenario cannot be built is left to
    ``check_points``."""
    from ...format.lint import lint

    known = {(w.code, w.path) for w in base}
    found: dict[tuple[str, str], tuple[Any, list[str]]] = {}
    for combo in grid_points(axes):
        try:
            sc = from_dict(_point_doc(doc, source, combo), source)
        except ScenarioError:
            continue
        for w in lint(sc):
            if (w.code, w.path) not in known:
                found.setdefault((w.code, w.path), (w, []))[1].append(
                    ", ".join(f"{p}={v}" for p, v in combo))
    return [("; ".join(points), w) for w, points in found.values()]  # (a point has commas)
