"""``jobsim run`` and ``jobsim reports``: running scenarios and writing their report folders.

``run`` checks its target folder and every variant's cost before any run, runs the variants
with a progress bar, writes the folder, then prints each run's story, summary and unexpected
invariant violations. ``reports`` regenerates the report folder of every shipped scenario, and
the sweep of every file with a ``sweep:`` section (``sweeps/<name>`` beside the reports).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from ..base import STARTED
from . import seeds as seeds_mod
from .scenarios import _scenario_folder
from .status import BAD_INPUT, FAILED, OK, stopped


def _run(args: argparse.Namespace) -> int:
    from ..base.outdir import OutputError, ignored_dir, unmake
    from ..base.phases import (Phases, TimingsError, check_file, children_cpu, phase,
                              write_file)
    from ..format import scenario as scenario_mod
    from ..format.lint import lint_runs
    from ..format.window_format import with_window
    from ..sim.cost import Budget, Guard, RunStopped
    from ..output.report import ReportError, check_target
    from ..output.runs import run_variants, told, write_report

    # a command that is its process counts from jobsim's import: its ``start`` phase
    phases = Phases(STARTED if args.as_process else None) if args.timings else None
    runs = scenario_mod.load_variants(args.scenario, seed=args.seed, sets=args.sets,
                                      no_expect=args.no_expect)
    runs = with_window(runs, args.warmup, args.cooldown, args.scenario)  # over the file's
    if args.no_expect:
        runs = [dataclasses.replace(sc, expect=(), overrides=sc.overrides + ("--no-expect",))
                for sc in runs]
    warnings = lint_runs(runs)  # known traps: warned of before the run, refused by --strict
    for w in warnings:
        print(w.format(args.scenario, "error" if args.strict else "warning"), file=sys.stderr)
    if warnings and args.strict:
        print(f"jobsim: {args.scenario}: {len(warnings)} warning"
              f"{'s' if len(warnings) != 1 else ''} about known traps, refused by --strict; "
              f"nothing was run", file=sys.stderr)
        return BAD_INPUT
    n_seeds = seeds_mod.wanted(args, runs)  # 1: the run alone, as without --seeds
    out = Path(args.out) if args.out else default_folder(seeds_mod.named(args, runs[0]))
    try:
        check_target(out)  # before the work, not after it
        if args.timings:
            _check_timings(Path(args.timings), out, check_file)
    except (ReportError, TimingsError) as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    budget = Budget(args.budget, args.memory_budget)
    estimates = _estimates(args.scenario, runs, budget)
    if estimates is None:
        return BAD_INPUT
    seeds_mod.check(args, runs, n_seeds, estimates, budget)
    made: list[Path] = []  # folders made for the report, taken away if it is not written
    written = False
    try:
        analyses = run_variants(runs, [Guard(est, budget, what) for est, what in estimates],
                                quiet=args.quiet, every_poll=args.every_poll, phases=phases)
        seeds = None
        if n_seeds > 1:
            workers_cpu = children_cpu()
            with phase(phases, "seeds"):  # and its workers' CPU, once they have ended
                seeds = seeds_mod.over_seeds(analyses, n_seeds, args.workers, args.quiet)
            if phases is not None:
                phases.add("seeds", 0.0, children_cpu() - workers_cpu)
        if not args.out and seeds_mod.named(args, runs[0]).overrides:
            made = ignored_dir(SCRATCH)
        write_report(analyses, out, with_plots=not args.no_plots, phases=phases,
                     with_view=not args.no_view, over_seeds=seeds, progress=not args.quiet)
        written = True
        lines = told(analyses, out, args.quiet)
        for line in lines[:-1] + (seeds.lines() if seeds else []) + lines[-1:]:
            print(line)
        if phases is not None:  # with what it measured: the file's scenario, its report
            write_file(Path(args.timings), {
                **phases.figures(), "scenario": runs[0].name, "file": str(args.scenario),
                "seed": runs[0].seed, "variants": len(runs), "report": str(out)})
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (``base.signals``)
        if written:
            return stopped(exc, f"the report {out} was written whole" +
                           ("" if phases is None else f"; --timings {args.timings} may not "
                            "have been"))
        unmake(made)
        return stopped(exc, "nothing was written" + (f" ({out} is as it was)"
                                                    if out.exists() else ""))
    except RunStopped as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    except (ReportError, OutputError) as exc:
        unmake(made)
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    except BrokenPipeError:
        raise  # the reader of what it prints went away (``| head``): ``entry``'s, not ours
    except OSError as exc:
        if written:
            print(f"jobsim: cannot write --timings {args.timings}: {exc.strerror or exc}",
                  file=sys.stderr)
        else:
            unmake(made)
            print(f"jobsim: cannot write the report folder {out}: {exc.strerror or exc}",
                  file=sys.stderr)
        return BAD_INPUT
    return OK if all(a.ok for a in analyses) and not (seeds and seeds.failed) else FAILED


#: where what-if runs go unless ``--out`` says otherwise: git-ignored (``outdir.ignored_dir``)
SCRATCH = Path("reports") / "_scratch"


def default_folder(sc: Any) -> Path:
    """``reports/<name>`` for a scenario as its file says; a what-if run (``overrides``) goes
    to ``reports/_scratch/<name>/<the overrides>``, so that it never replaces the file's own
    report (a committed one, say) and two different what-ifs do not replace each other."""
    if not sc.overrides:
        return Path("reports") / sc.name
    import hashlib
    import re

    words = [re.sub(r"[^A-Za-z0-9._=,-]+", "_", o.removeprefix("--").replace(" ", "=", 1))
             for o in sc.overrides]
    slug = "+".join(words)
    if len(slug) > 80:
        slug = slug[:60] + "-" + hashlib.sha256("\n".join(sc.overrides).encode()).hexdigest()[:10]
    return SCRATCH / sc.name / slug


def _check_timings(path: Path, out: Path, check_file: Any) -> None:
    """The timings file may be written: not inside the report folder (whose files are the
    report's), and new or jobsim's own (``base.phases.check_file``)."""
    from ..base.phases import TimingsError

    if path.resolve().is_relative_to(out.resolve()):
        raise TimingsError(f"--timings {path}: inside the report folder {out}; put it "
                           "elsewhere")
    check_file(path)


def _estimates(scenario: str, runs: list, budget: Any) -> list[tuple[Any, str]] | None:
    """Each variant's (cost estimate, name for messages), once every variant is within the
    budget; None (the refusal printed) if one is not."""
    from ..sim.cost import BudgetError, estimate
    from ..sim.cost import check as check_cost

    estimates = []
    for sc in runs:  # every variant within the budget, before any runs
        est = estimate(sc)
        what = scenario + (f" (variant {sc.variant})" if sc.variant else "")
        try:
            check_cost(est, budget, what)
        except BudgetError as exc:
            print(f"jobsim: {exc}", file=sys.stderr)
            return None
        estimates.append((est, what))
    return estimates


def _reports(args: argparse.Namespace) -> int:
    from ..base import outdir
    from ..format import scenario as scenario_mod
    from ..output.report import ReportError, analyse, check_target, write
    from ..sim.world import run
    from ..tools.seeds import check as check_seeds, file_seeds
    from ..tools.sweep.report import KIND as SWEEP
    from .parser import _parser
    from .sweep import _sweep

    folder = _scenario_folder(args.folder)
    if folder is None:
        return BAD_INPUT
    files = sorted(folder.glob("*.yaml"))
    targets = []
    sweeps = []  # (file, its sweep folder): each file's own sweep: section, as jobsim sweep
    for f in files:  # every file valid and every target writable, before any run
        runs = scenario_mod.load_variants(f)
        target = Path(args.out) / runs[0].name
        check_seeds(runs[0].seed, file_seeds(runs[0]), [], None, str(f), "report.seeds")
        try:
            check_target(target)
        except ReportError as exc:
            print(f"jobsim: cannot write the report of {f.name}: {exc}", file=sys.stderr)
            return BAD_INPUT
        targets.append((f, runs, target))
        if args.sweeps and (scenario_mod.read(f).get("sweep") or None) is not None:
            swept = Path(args.out) / "sweeps" / runs[0].name
            try:
                outdir.check(swept, SWEEP)
            except outdir.OutputError as exc:
                print(f"jobsim: cannot write the sweep of {f.name}: {exc}", file=sys.stderr)
                return BAD_INPUT
            sweeps.append((f, swept))
    status = OK
    done: list[str] = []
    for f, runs, target in targets:
        try:
            analyses = [analyse(run(sc)) for sc in runs]
            seeds = seeds_mod.over_seeds(analyses, file_seeds(runs[0]), None, quiet=False)
            out = write(analyses, target, over_seeds=seeds)
        except (OSError, ReportError) as exc:
            print(f"jobsim: cannot write the report of {f.name}: {exc}", file=sys.stderr)
            return BAD_INPUT
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (``base.signals``)
            kept = (f"the reports of {', '.join(done)} were written whole; " if done else "")
            return stopped(exc, f"{kept}{f.name}'s was not written" +
                           (f" ({target} is as it was)" if target.exists() else "") +
                           (f", nor the {len(targets) - len(done) - 1} after it"
                            if len(targets) - len(done) > 1 else ""))
        done.append(f.name)
        ok = all(a.ok for a in analyses) and not (seeds and seeds.failed)
        print(f"{'ok    ' if ok else 'FAILED'} {f.name} → {out}/report.md", flush=True)
        if not ok:
            status = FAILED
    for f, swept in sweeps:  # as ``jobsim sweep FILE --out OUT/sweeps/NAME`` would
        # --fresh: its sweep.md the same whatever its cache held (no count from the cache)
        got = _sweep(_parser().parse_args(["sweep", str(f), "--out", str(swept), "--fresh"]))
        if got == BAD_INPUT or got not in (OK, FAILED):  # refused, or stopped by a signal
            return got
        if got == FAILED:
            status = FAILED
    return status
