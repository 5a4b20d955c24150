"""``jobsim hunt``: search the fault space for runs that break a property; shrink the first.

The flags are checked before any run (``_budget``, ``--break``, the scenario and its
``hunt:`` section); the hunt runs with a progress line per phase and stops cleanly on SIGTERM
or Ctrl-C (its runs are cached: the same command again computes only the rest). Exit status:
1 if a run broke the property (the minimal file is written), 0 if none did within the
budget, 2 for bad input.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from ..base.errors import Problem, ScenarioError
from .status import BAD_INPUT, FAILED, OK, stopped_with_cache

_TIME = re.compile(r"^\d+(\.\d+)?\s*(ms|s|m|h)$")


def _budget(text: str) -> tuple[int | None, float | None]:
    """``--budget``: RUNS, TIME or RUNS,TIME."""
    from ..base.durations import parse_duration

    runs = seconds = None
    parts = [p.strip() for p in text.split(",")]
    ok = 1 <= len(parts) <= 2
    for p in parts:
        if p.isdigit() and runs is None and int(p) >= 1:
            runs = int(p)
        elif _TIME.match(p) and seconds is None:
            seconds = parse_duration(p)
        else:
            ok = False
    if not ok or (runs is None and seconds is None):
        raise ScenarioError([Problem("--budget", "runs (500), a time (10m) or both (500,10m)",
                                     repr(text))], "the command line")
    return runs, seconds


def _hunt(args: argparse.Namespace) -> int:
    from ..base import outdir
    from ..format import scenario as scenario_mod
    from ..tools.hunt import configuration, parse

    runs, seconds = _budget(args.budget)
    prop = parse(args.prop)
    kinds = tuple(k.strip() for k in args.faults.split(",")) if args.faults else None
    raw = scenario_mod.read(args.scenario)
    scenario_mod.from_dict(raw, args.scenario, sets=args.sets)  # every problem of the file
    doc = configuration(raw, args.variant, args.sets, args.scenario)
    out = Path(args.out) if args.out else Path("hunts") / doc["name"]
    made: list[Path] = []  # hunts/ with its .gitignore, taken away if the hunt makes nothing
    if not args.out:
        try:
            made = outdir.ignored_dir(out.parent)
        except (outdir.OutputError, OSError) as exc:
            print(f"jobsim: cannot make the folder {out.parent}: {exc}", file=sys.stderr)
            return BAD_INPUT
    try:
        return _hunt_in(args, doc, raw, prop, runs, seconds, kinds, out)
    finally:
        outdir.unmake(made)  # only as far as it stayed empty: a hunt's folder stays


def _hunt_in(args: argparse.Namespace, doc: dict, raw: dict, prop: object, runs: int | None,
             seconds: float | None, kinds: tuple[str, ...] | None, out: Path) -> int:
    import os

    from ..base import outdir
    from ..base import progress as progress_mod
    from ..sim.cost import BudgetError
    from ..tools.hunt import MAX_WORKERS, hunt
    from ..tools.sweep import SweepError

    workers = args.workers or min(os.cpu_count() or 1, MAX_WORKERS)
    bars: dict[str, progress_mod.Bar] = {}

    def progress(phase: str, done: int, total: int) -> None:
        bar = bars.get(phase)
        if bar is None or bar.total < total:
            if bar is not None:
                bar.close()
            bar = bars[phase] = progress_mod.Bar(total, f"hunt {phase}", unit="runs")
        bar.set(min(done, bar.total))

    command = "jobsim hunt " + " ".join(shlex.quote(a) for a in sys.argv[2:]) \
        if len(sys.argv) > 2 and sys.argv[1] == "hunt" else \
        f"jobsim hunt {args.scenario} --break {shlex.quote(args.prop)}"
    try:
        result = hunt(doc, prop, source=args.scenario, runs=runs, seconds=seconds,
                      seed=args.seed, kinds=kinds, workers=workers, dask=args.dask, out=out,
                      hunt_spec=raw.get("hunt"), progress=progress, command=command,
                      cache_limit=args.cache_limit,
                      say=lambda line: print(f"jobsim: {line}", file=sys.stderr))
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (``base.signals``)
        for bar in bars.values():
            bar.close()
        return stopped_with_cache(exc, out, "hunt")
    except (outdir.OutputError, SweepError, BudgetError, OSError) as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    finally:
        for bar in bars.values():
            bar.close()
    return _print(result, out)


def _print(result, out: Path) -> int:
    from ..tools.hunt.report import coverage

    lines, by = coverage(result)
    print(f"hunt {result.name}: {result.prop.text}")
    for line in lines:
        print(line)
    for kind, (drawn, with_it, broke, crashed) in by.items():
        print(f"  {kind:<20} {drawn:>6,} faults in {with_it:>6,} runs, {broke:,} broke it"
              + (f", {crashed:,} crashed" if crashed else ""))
    if result.crash:
        print("CRASHED: the model raised an error in a run (a bug in jobsim, a finding of its "
              "own); the traceback's last lines:")
        for line in result.traceback.splitlines():
            print(f"  {line}")
        print(f"\nreproduce: jobsim run {out}/minimal.yaml   (raises it)\nhunt: {out}/hunt.md")
        return FAILED
    if result.minimal is None:
        print(f"nothing broke it in these runs (which proves nothing safe: see {out}/hunt.md)")
        return OK
    from ..tools.hunt.report import _schedule, _size

    size = _size(result.minimal, result.minimal_doc)
    print(f"BROKEN. minimal: {size['jobs']} job(s), {size['nodes']} node(s), seed "
          f"{size['seed']}; faults:")
    for line in _schedule(result.minimal):
        print(f"  {line}")
    print(f"\nreproduce: jobsim run {out}/minimal.yaml   (exits 1)\nhunt: {out}/hunt.md")
    return FAILED
