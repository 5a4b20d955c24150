"""``jobsim sweep``: a scenario over a grid of settings × replications.

Three steps: the flags and the file's ``sweep:`` section become the sweep's settings, every
problem with them reported at once before any run (``_settings``); the sweep runs with a
progress bar and stops cleanly on SIGTERM or Ctrl-C (``_execute``); its table is printed
from sweep.md (``_print_sweep``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NamedTuple

from ..base.errors import ScenarioError
from .status import BAD_INPUT, FAILED, OK, stopped_with_cache


class _Settings(NamedTuple):
    """What to sweep: the base scenario, its document with the ``--set`` values applied, the
    grid's axes, the runs per point, the figures to plot and the precision to reach."""
    base: Any
    doc: dict
    axes: list
    replications: int
    figures: list[str]
    precision: tuple[str, float] | None


def _sweep(args: argparse.Namespace) -> int:
    settings = _settings(args)
    _warn(args, settings)
    from ..base.outdir import OutputError, ignored_dir, unmake

    out = Path(args.out) if args.out else Path("sweeps") / settings.base.name
    made: list[Path] = []  # sweeps/ with its .gitignore, taken away if nothing is written
    if not args.out:  # the default folder holds throwaway output: git-ignored
        try:
            made = ignored_dir(out.parent)
        except (OutputError, OSError) as exc:
            print(f"jobsim: cannot make the folder {out.parent}: {exc}", file=sys.stderr)
            return BAD_INPUT
    try:
        result = _execute(args, settings, out)
    finally:
        unmake(made)  # only as far as it stayed empty: a sweep's folder stays
    if result is None:
        return BAD_INPUT
    if isinstance(result, int):  # stopped by a signal: its exit status, the line printed
        return result
    return _print_sweep(result, settings.base.name, out, args)


#: grid points' own warnings printed at most (the rest counted)
WARNINGS = 10
#: grids of up to this many points have each point linted before the sweep (a point's lint
#: takes about a millisecond; a bigger grid is checked by the base run's warnings alone)
LINTED = 1_000


def _warn(args: argparse.Namespace, settings: _Settings) -> None:
    """The lint's warnings before the sweep, as ``jobsim run`` gives them before a run: the
    base run's, then those a grid value brings, each with the points it comes at."""
    from ..format.lint import lint
    from ..tools.sweep.grid import grid_size, point_warnings

    base = lint(settings.base)
    for w in base:
        print(w.format(args.scenario), file=sys.stderr)
    if grid_size(settings.axes) > LINTED:  # (an absurd grid is refused first, at once)
        return
    points = point_warnings(settings.doc, tuple(settings.axes), args.scenario, base)
    for where, w in points[:WARNINGS]:
        print(f"warning: {args.scenario}: at {where}: {w.path}: {w.message}", file=sys.stderr)
    if len(points) > WARNINGS:
        print(f"warning: {args.scenario}: and {len(points) - WARNINGS} more at some grid "
              f"points (jobsim validate FILE --set PATH=VALUE gives a point's)",
              file=sys.stderr)


def _settings(args: argparse.Namespace) -> _Settings:
    """The sweep's settings from the flags and the file's ``sweep:`` section (the flags
    win); raises ``ScenarioError`` with every problem found."""
    import copy

    from ..format import scenario as scenario_mod
    from ..base.errors import Problem
    from ..format.fileformat import figure_problem
    from ..format.spec import suggest
    from ..format.window_format import with_window
    from ..tools.sweep import MAX_REPLICATIONS, Axis, parse_grid

    if args.replications is not None and args.replications > MAX_REPLICATIONS:
        raise ScenarioError([Problem(
            "--replications", f"at most {MAX_REPLICATIONS:,} runs per grid point",
            f"{args.replications:,}", "lower --replications (with --precision it is the "
            "most runs per point)")], "the command line")
    doc = _variant(scenario_mod.read(args.scenario), args)
    base = scenario_mod.from_dict(doc, args.scenario, sets=args.sets)  # reports every problem
    with_window([base], args.warmup, args.cooldown, args.scenario)  # names the flags
    # --warmup/--cooldown over the file's, as --set values: in every run and its rerun line
    args.sets = list(args.sets) + [f"{k}={getattr(args, k)[1]}" for k in ("warmup", "cooldown")
                                   if getattr(args, k) is not None]
    doc = copy.deepcopy(doc)
    problems: list[Problem] = []
    scenario_mod.apply_sets(doc, args.sets, args.scenario, problems)  # valid: from_dict said
    spec = doc.get("sweep") or {}
    if args.grid:
        axes = parse_grid(args.grid)
    else:
        axes = [Axis(path, tuple(values)) for path, values in (spec.get("grid") or {}).items()]
    replications = args.replications or spec.get("replications") or 10
    figures = args.plot or list(spec.get("plot") or [])
    precision = _precision(args.precision, spec, problems)
    # each named where it was written: a flag, or the file's sweep section
    for where, fig in [("--plot" if args.plot else f"sweep.plot[{i}]", f)
                       for i, f in enumerate(figures)] + (
            [("--precision" if args.precision else "sweep.precision.figure",
              precision[0])] if precision else []):
        why = figure_problem(fig)
        if why is not None:
            expected, near = why  # (the key not found, to suggest the nearest known one)
            problems.append(Problem(where, f"a figure of the summary: {expected}", repr(fig),
                                    suggest(near, expected.removeprefix("one of ").split(", "))
                                    if near else ""))
    if not axes:
        problems.append(Problem("--grid", "at least one axis (--grid PATH=V1,V2 or the "
                                "file's sweep.grid)", "none"))
    if problems:
        raise ScenarioError(problems, args.scenario)
    return _Settings(base, doc, axes, replications, figures, precision)


def _variant(doc: dict, args: argparse.Namespace) -> dict:
    """The document to sweep: the file's base run, or with ``--variant`` that variant's
    (its settings and expectations; the sweep's folder named after it). Sweeping the base
    run of a file with variants is said on stderr: its variants' settings are not in it."""
    from ..format import scenario as scenario_mod

    if args.variant is None:
        if isinstance(doc.get("variants"), dict) and doc["variants"]:
            print(f"note: {args.scenario} has variants ({', '.join(map(str, doc['variants']))}"
                  f"); the sweep runs its base run, without their settings: --variant NAME "
                  f"sweeps one", file=sys.stderr)
        return doc
    vdoc = scenario_mod.chosen_variant(doc, args.variant, args.scenario)
    vdoc["name"] = f"{doc.get('name')}_{args.variant}"
    return vdoc


def _precision(given: str | None, spec: dict, problems: list) -> tuple[str, float] | None:
    """The (figure, fraction) of ``--precision FIGURE:PCT``, else of the file's
    ``sweep.precision``, else None; a malformed flag is added to ``problems``."""
    from ..base.errors import Problem

    precision = None
    if given:
        fig, sep, pct = given.rpartition(":")
        try:
            frac = float(pct.rstrip("%")) / (100.0 if pct.endswith("%") else 1.0)
        except ValueError:
            frac = -1.0
        if not sep or not fig or not 0 < frac < 1:
            problems.append(Problem("--precision", "FIGURE:PCT like "
                                    "duplicate_executions.total:5%", repr(given)))
        else:
            precision = (fig, frac)
    elif spec.get("precision"):
        precision = (spec["precision"]["figure"], spec["precision"]["within"])
    return precision


def _execute(args: argparse.Namespace, settings: _Settings, out: Path) -> Any:
    """Run the sweep with a progress bar; its result, None (the reason printed) if it
    failed, or the exit status if a signal stopped it."""
    import os

    from ..base import outdir
    from ..sim.cost import Budget
    from ..base import progress as progress_mod
    from ..tools.sweep import MAX_WORKERS, SweepError, sweep

    base = settings.base
    workers = args.workers or min(os.cpu_count() or 1, MAX_WORKERS)
    bar: progress_mod.Bar | None = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None or bar.total != total:  # with --precision, each round has its own
            if bar is not None:
                bar.close()
            bar = progress_mod.Bar(total, f"sweep {base.name}", unit="runs")
            # what the count is, at once (a log has no line of the count before 10 s)
            bar.stage(f"{total:,} {'run' if total == 1 else 'runs'}" +
                      (f", {done:,} of them from the cache" if done else ""))
        bar.set(done)

    def stage(text: str) -> None:
        if bar is not None:
            bar.stage(text)

    try:  # SIGTERM and SIGHUP stop it as Ctrl-C does (``base.signals``, set by ``main``)
        return sweep(settings.doc, settings.axes, settings.replications, source=args.scenario,
                     seed=args.seed, workers=workers, dask=args.dask, out=out,
                     precision=settings.precision, plot=settings.figures, progress=progress,
                     stage=stage, budget=Budget(args.budget, args.memory_budget),
                     notes=[f"Overrides: {' '.join('--set ' + s for s in args.sets)}."]
                     if args.sets else [], cache_limit=args.cache_limit, sets=args.sets,
                     fresh=args.fresh)
    except KeyboardInterrupt as exc:
        if bar is not None:
            bar.close()
        return stopped_with_cache(exc, out, "sweep")
    except (outdir.OutputError, SweepError) as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return None
    except OSError as exc:
        print(f"jobsim: the sweep failed: {exc}", file=sys.stderr)
        return None
    finally:
        if bar is not None:
            bar.close()


def _print_sweep(result: Any, name: str, out: Path, args: argparse.Namespace) -> int:
    """The sweep's outcome: damaged cache entries, the counts of runs, the table of
    sweep.md, the runs that crashed and the first error; the exit status."""
    if result.recomputed:
        n = result.recomputed
        print(f"jobsim: {n} cache {'entry was' if n == 1 else 'entries were'} damaged or "
              f"stale and {'was' if n == 1 else 'were'} computed again", file=sys.stderr)
    rows = result.rows
    failed = int((~rows["ok"]).sum()) if len(rows) else 0
    from ..tools.sweep.report import crashed_runs, judged

    crashed = crashed_runs(rows)
    print(f"sweep {name}: {len(rows)} runs over {len(result.points)} grid points "
          f"({result.computed} computed, {result.cached} from the cache), {failed} failed"
          + (f", {len(crashed)} of them crashed" if len(crashed) else ""))
    for line in (out / "sweep.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("|"):
            print(line)
    for line in judged(rows):
        if line:
            print(line)
    if len(crashed):
        print(f"\nCRASHED: the model raised an error in {len(crashed)} run(s) (a bug in "
              "jobsim); each is reproduced by:")
        for _, r in crashed.head(10).iterrows():
            print(f"  {_rerun(args, result.axes, r)}   # {r['error']}")
        if len(crashed) > 10:
            print(f"  … and {len(crashed) - 10} more (the column crashed in runs.csv)")
        print("the first one's traceback, its last lines:")
        for line in str(crashed["traceback"].iloc[0]).splitlines():
            print(f"  {line}")
    elif failed:
        first = rows.loc[~rows["ok"], "error"].iloc[0]
        print(f"\nfirst error: {first}")
    print(f"\nsweep: {out}/sweep.md (runs.csv, runs.parquet, points.csv)")
    return FAILED if failed else OK


def _rerun(args: argparse.Namespace, axes: Any, row: Any) -> str:
    """The ``jobsim run`` command line of one run of the sweep."""
    import json
    import shlex

    sets = list(args.sets) + [f"{a.path}={v if isinstance(v, str) else json.dumps(v)}"
                              for a, v in zip(axes, _values(axes, row))]
    return " ".join(["jobsim run", shlex.quote(args.scenario)] +
                    [f"--set {shlex.quote(s)}" for s in sets] + [f"--seed {int(row['seed'])}"])


def _values(axes: Any, row: Any) -> list[Any]:
    """The axes' values of a row, as the grid gave them (the table holds a list or a
    mapping as its JSON)."""
    from ..tools.sweep.grid import grid_points

    return [v for _, v in grid_points(tuple(axes))[int(row["point"])]]
