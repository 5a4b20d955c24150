"""The command line: a thin shell over the library.

``jobsim run SCENARIO [--out DIR] [--seed N] [--set PATH=VALUE]… [--quiet]`` runs a scenario
(each of its variants), prints its story and a one-screen summary with its expectations,
and writes its run folder with report.md and plots. ``jobsim validate FILE…`` checks scenario
files; ``jobsim schema`` prints the format as JSON Schema; ``jobsim list`` the shipped
scenarios; ``jobsim bench`` measures the simulator against a bare SimPy M/M/c.

Exit status: 0 all is well; 1 an invariant or an expectation failed; 2 bad input (a scenario file, a flag),
reported without a traceback. ``main(argv)`` returns the status, so tests call it in-process.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .base.errors import ScenarioError

OK, FAILED, BAD_INPUT = 0, 1, 2


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="jobsim", description="A deterministic simulator of database-backed "
                                           "job executors.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="run a scenario and write its report folder")
    r.add_argument("scenario", help="a scenario YAML file")
    r.add_argument("--out", help="the report folder (default: reports/<scenario name>)")
    r.add_argument("--seed", type=_seed, help="override the scenario's seed")
    r.add_argument("--set", dest="sets", action="append", default=[], metavar="PATH=VALUE",
                   help="override one value by its dotted path, e.g. executor.lock_time=30s "
                        "(repeatable)")
    r.add_argument("--quiet", action="store_true", help="print only the summary")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    _budget_args(r)
    v = sub.add_parser("validate", help="check scenario files, report every problem, and "
                                        "estimate each run's cost")
    v.add_argument("files", nargs="+")
    _budget_args(v)
    sub.add_parser("schema", help="print the JSON Schema of the scenario format")
    ls = sub.add_parser("list", help="the shipped scenarios with their descriptions")
    ls.add_argument("folder", nargs="?", help="a folder of scenarios (default: scenarios/)")
    ls.add_argument("--policies", action="store_true",
                    help="list the policy presets instead, with their settings")
    rp = sub.add_parser("reports", help="regenerate the report folder of every shipped "
                                        "scenario (reports/<name>/)")
    rp.add_argument("folder", nargs="?", help="a folder of scenarios (default: scenarios/)")
    rp.add_argument("--out", default="reports", help="where the report folders go")
    sw = sub.add_parser("sweep", help="run a scenario over a grid of settings × "
                                      "replications, in parallel, with confidence intervals")
    sw.add_argument("scenario", help="a scenario YAML file (its sweep: section, if any, "
                                     "gives the defaults)")
    sw.add_argument("--grid", action="append", default=[], metavar="PATH=V1,V2,…",
                    help="an axis of the grid, e.g. executor.lock_time=10s,30s,2m "
                         "(repeatable; replaces the file's grid)")
    sw.add_argument("--replications", type=_positive,
                    help="runs per grid point (with --precision: the most per point)")
    sw.add_argument("--workers", type=_positive,
                    help="local worker processes (default: the machine's cores)")
    sw.add_argument("--dask", metavar="ADDRESS",
                    help="run on an existing Dask cluster, e.g. tcp://10.0.0.5:8786")
    sw.add_argument("--out", help="the sweep folder (default: sweeps/<scenario name>)")
    sw.add_argument("--plot", action="append", default=[], metavar="FIGURE",
                    help="a summary figure to plot against the first axis (repeatable)")
    sw.add_argument("--precision", metavar="FIGURE:PCT",
                    help="replicate each point until the 95%% CI half-width of FIGURE is "
                         "within PCT of its mean, e.g. duplicate_executions.total:5%%")
    sw.add_argument("--seed", type=_seed, help="the base seed (default: the scenario's)")
    _budget_args(sw)
    sw.add_argument("--set", dest="sets", action="append", default=[],
                    metavar="PATH=VALUE", help="override one value of the base scenario")
    rc = sub.add_parser("race", help="race real worker processes on a real SQLite or "
                                     "PostgreSQL with a strategy's SQL, beside the "
                                     "simulator's prediction")
    rc.add_argument("--db", required=True, metavar="sqlite:PATH|postgresql://…",
                    help="the database: a SQLite file, or a PostgreSQL DSN")
    rc.add_argument("--strategy", required=True, action="append", metavar="S",
                    help="guarded_update, unguarded_update, read_then_write, optimistic or "
                         "skip_locked (repeatable)")
    from .tools import race as race_mod  # its bounds, checked here before any race runs

    rc.add_argument("--workers", type=race_mod.count_arg("workers", race_mod.MAX_WORKERS),
                    action="append", metavar="K",
                    help="worker processes, at most 64 (repeatable; default 2, 4 and 8)")
    rc.add_argument("--jobs", type=race_mod.count_arg("jobs", race_mod.MAX_JOBS),
                    default=2000, help="due jobs to claim, at most 1,000,000")
    rc.add_argument("--batch", type=race_mod.count_arg("rows", race_mod.MAX_BATCH),
                    default=10, help="rows per claim, at most 10,000")
    rc.add_argument("--repeat", type=race_mod.count_arg("runs", race_mod.MAX_REPEAT),
                    default=1, help="runs of each race, at most 1,000")
    rc.add_argument("--isolation", default="read_committed",
                    help="PostgreSQL: read_committed, repeatable_read or serializable")
    rc.add_argument("--begin", default="autocommit",
                    help="SQLite's read_then_write: autocommit, deferred or immediate")
    rc.add_argument("--time-limit", type=race_mod.seconds_arg, default=120.0,
                    metavar="SECONDS", help="seconds a race may take (above 0, at most "
                                            "86,400)")
    rc.add_argument("--plot", metavar="PNG", help="also draw real beside simulated (a new "
                                                  "file, or a PNG to replace)")
    b = sub.add_parser("bench", help="jobsim beside a bare SimPy M/M/c, as a ratio")
    b.add_argument("--jobs", type=_bounded(10_000_000), default=100_000,
                   help="jobs per run (at most 10,000,000)")
    b.add_argument("--replications", type=_at_least_two, default=5,
                   help="at least 2, for a confidence interval")
    b.add_argument("--seed", type=_seed, default=1)
    b.add_argument("--suite", action="store_true",
                   help="the whole suite: M/M/8 at 200,000 jobs, the full model at 100,000 "
                        "and 1,000,000 jobs (throughput, peak memory, growth), 30 idle days")
    b.add_argument("--quick", action="store_true", help="the suite at a tenth of its sizes")
    return p


def _budget_args(p: argparse.ArgumentParser) -> None:
    from .sim.cost import DEFAULT_EVENTS, DEFAULT_MEMORY

    p.add_argument("--budget", type=_events, default=DEFAULT_EVENTS, metavar="EVENTS",
                   help=f"refuse a run estimated beyond this many simulator events "
                        f"(default {DEFAULT_EVENTS:.0e}, about a minute or two)")
    p.add_argument("--memory-budget", type=_size, default=DEFAULT_MEMORY, metavar="SIZE",
                   help=f"refuse a run estimated beyond this much memory, e.g. 8GB "
                        f"(default {DEFAULT_MEMORY // 1024 ** 3}GB)")


def _events(text: str) -> float:
    from .sim.cost import MAX_EVENTS

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (1 <= value <= MAX_EVENTS):  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a number of events from 1 to "
                                         f"{MAX_EVENTS:.0e}, like 5e7 (got {text!r})")
    return value


def _size(text: str) -> float:
    import re

    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]?)[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a size like 512MB or 8GB (got {text!r})")
    value = float(m.group(1)) * 1024 ** " KMGT".index((m.group(2) or " ").upper())
    if not 1024 ** 2 <= value <= 1024 ** 5:
        raise argparse.ArgumentTypeError(f"expected a size from 1MB to 1PB (got {text!r})")
    return value


def _bounded(hi: int):
    def parse(text: str) -> int:
        value = _positive(text)
        if value > hi:
            raise argparse.ArgumentTypeError(f"expected at most {hi:,} (got {text!r})")
        return value

    return parse


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer (got {text!r})")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer (got {text!r})")
    return value


def _at_least_two(text: str) -> int:
    value = _seed(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 2 (got {text!r})")
    return value


def _positive(text: str) -> int:
    value = _seed(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer (got {text!r})")
    return value


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except _UsageError as exc:
        print(f"{exc}\n(run 'jobsim --help' for usage)", file=sys.stderr)
        return BAD_INPUT
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "validate":
            return _validate(args)
        if args.command == "schema":
            return _schema()
        if args.command == "list":
            return _list(args)
        if args.command == "reports":
            return _reports(args)
        if args.command == "sweep":
            return _sweep(args)
        if args.command == "race":
            return _race(args)
        return _bench(args)
    except ScenarioError as exc:
        print(f"jobsim: {len(exc.problems)} problem(s) in {exc.source}:", file=sys.stderr)
        print(exc.format(), file=sys.stderr)
        return BAD_INPUT


def _run(args: argparse.Namespace) -> int:
    from .format import scenario as scenario_mod
    from .analysis.metrics import trace_frame
    from .analysis.narrative import narrate
    from .sim.cost import Budget, BudgetError, Guard, RunStopped, estimate
    from .sim.cost import check as check_cost
    from .base.progress import Bar
    from .output.report import (ReportError, analyse, check_target, format_summary,
                         format_violation, write)
    from .sim.world import run

    runs = scenario_mod.load_variants(args.scenario, seed=args.seed, sets=args.sets)
    out = Path(args.out) if args.out else Path("reports") / runs[0].name
    try:
        check_target(out)  # before the work, not after it
    except ReportError as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    budget = Budget(args.budget, args.memory_budget)
    estimates = []
    for sc in runs:  # every variant within the budget, before any runs
        est = estimate(sc)
        what = args.scenario + (f" (variant {sc.variant})" if sc.variant else "")
        try:
            check_cost(est, budget, what)
        except BudgetError as exc:
            print(f"jobsim: {exc}", file=sys.stderr)
            return BAD_INPUT
        estimates.append((est, what))
    analyses = []
    for sc, (est, what) in zip(runs, estimates):
        with Bar(100, sc.variant or sc.name, unit="%", show=not args.quiet) as bar:
            try:
                result = run(sc, progress=lambda f, t, unit="s": bar.set(
                    100 * f, f"t={t:,.0f}s" if unit == "s" else f"{t:,.0f} {unit}"),
                    guard=Guard(est, budget, what))
            except RunStopped as exc:
                bar.close()
                print(f"jobsim: {exc}", file=sys.stderr)
                return BAD_INPUT
            bar.stage("analysing the trace")
            analyses.append(analyse(result))
    with Bar(100, "report", unit="%", show=not args.quiet) as bar:
        bar.stage(f"writing {out}")
        try:
            write(analyses, out, with_plots=not args.no_plots)
        except ReportError as exc:
            print(f"jobsim: {exc}", file=sys.stderr)
            return BAD_INPUT
        except OSError as exc:
            print(f"jobsim: cannot write the report folder {out}: {exc.strerror or exc}",
                  file=sys.stderr)
            return BAD_INPUT
    status = OK
    for a in analyses:
        if not args.quiet:
            if a.result.scenario.variant is not None:
                print(f"=== {a.name} ===")
            for line in narrate(a.result.trace):
                print(line)
            print()
        for line in format_summary(a, None):
            print(line)
        if a.unexpected_violations:
            tdf = trace_frame(a.result.trace)
            shown = a.unexpected_violations[:10]
            print(f"\n{len(a.unexpected_violations)} invariant violation(s); the first "
                  f"{len(shown)}:")
            for v in shown:
                print(format_violation(v, tdf))
            where = out / a.name if a.result.scenario.variant is not None else out
            print(f"(all of them: {where}/violations.txt)")
        if not a.ok:
            status = FAILED
        print()
    print(f"report: {out}/report.md")
    return status


def _sweep(args: argparse.Namespace) -> int:
    import copy
    import os
    import signal
    import threading

    import yaml

    from .base import outdir
    from .sim.cost import Budget
    from .base import progress as progress_mod
    from .format import scenario as scenario_mod
    from .base.errors import Problem
    from .format.fileformat import figure_problem
    from .tools.sweep import MAX_REPLICATIONS, MAX_WORKERS, Axis, SweepError, parse_grid, sweep

    if args.replications is not None and args.replications > MAX_REPLICATIONS:
        raise ScenarioError([Problem(
            "--replications", f"at most {MAX_REPLICATIONS:,} runs per grid point",
            f"{args.replications:,}", "lower --replications (with --precision it is the "
            "most runs per point)")], "the command line")
    doc = scenario_mod.read(args.scenario)
    base = scenario_mod.from_dict(doc, args.scenario, sets=args.sets)  # reports every problem
    doc = copy.deepcopy(doc)
    problems: list[Problem] = []
    for item in args.sets:  # valid: from_dict checked them
        path, _, text = item.partition("=")
        scenario_mod.set_path(doc, path.strip(), yaml.safe_load(text) if text.strip() else "",
                              f"--set {path.strip()}", problems)
    spec = doc.get("sweep") or {}
    if args.grid:
        axes = parse_grid(args.grid)
    else:
        axes = [Axis(path, tuple(values)) for path, values in (spec.get("grid") or {}).items()]
    replications = args.replications or spec.get("replications") or 10
    figures = args.plot or list(spec.get("plot") or [])
    precision = None
    if args.precision:
        fig, sep, pct = args.precision.rpartition(":")
        try:
            frac = float(pct.rstrip("%")) / (100.0 if pct.endswith("%") else 1.0)
        except ValueError:
            frac = -1.0
        if not sep or not fig or not 0 < frac < 1:
            problems.append(Problem("--precision", "FIGURE:PCT like "
                                    "duplicate_executions.total:5%", repr(args.precision)))
        else:
            precision = (fig, frac)
    elif spec.get("precision"):
        precision = (spec["precision"]["figure"], spec["precision"]["within"])
    for where, fig in [("--plot", f) for f in figures] + (
            [("--precision", precision[0])] if precision else []):
        why = figure_problem(fig)
        if why is not None:
            problems.append(Problem(where, f"a figure of the summary: {why[0]}", repr(fig)))
    if not axes:
        problems.append(Problem("--grid", "at least one axis (--grid PATH=V1,V2 or the "
                                "file's sweep.grid)", "none"))
    if problems:
        raise ScenarioError(problems, args.scenario)
    out = Path(args.out) if args.out else Path("sweeps") / base.name
    workers = args.workers or min(os.cpu_count() or 1, MAX_WORKERS)
    bar: progress_mod.Bar | None = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None or bar.total != total:  # with --precision, each round has its own
            if bar is not None:
                bar.close()
            bar = progress_mod.Bar(total, f"sweep {base.name}", unit="runs")
        bar.set(done)

    def stage(text: str) -> None:
        if bar is not None:
            bar.stage(text)

    class _Stopped(BaseException):  # not an Exception: no run records it as its own error
        """SIGTERM (a CI timeout, kill): the sweep stops, its workers end, no traceback."""

    def on_sigterm(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: let the clean-up finish
        raise _Stopped

    in_main = threading.current_thread() is threading.main_thread()
    old_sigterm = signal.signal(signal.SIGTERM, on_sigterm) if in_main else None
    try:
        result = sweep(doc, axes, replications, source=args.scenario, seed=args.seed,
                       workers=workers, dask=args.dask, out=out, precision=precision,
                       plot=figures, progress=progress, stage=stage,
                       budget=Budget(args.budget, args.memory_budget))
    except (_Stopped, KeyboardInterrupt) as exc:
        how = "by SIGTERM" if isinstance(exc, _Stopped) else "(interrupted)"
        print(f"jobsim: the sweep was stopped {how} and its worker processes ended; the "
              f"runs that finished are cached in {out}/cache: run the same command again to "
              "compute only the rest", file=sys.stderr)
        return BAD_INPUT
    except (outdir.OutputError, SweepError) as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    except OSError as exc:
        print(f"jobsim: the sweep failed: {exc}", file=sys.stderr)
        return BAD_INPUT
    finally:
        if bar is not None:
            bar.close()
        if in_main:
            signal.signal(signal.SIGTERM,
                          old_sigterm if old_sigterm is not None else signal.SIG_DFL)
    if result.recomputed:
        n = result.recomputed
        print(f"jobsim: {n} cache {'entry was' if n == 1 else 'entries were'} damaged or "
              f"stale and {'was' if n == 1 else 'were'} computed again", file=sys.stderr)
    rows = result.rows
    failed = int((~rows["ok"]).sum()) if len(rows) else 0
    print(f"sweep {base.name}: {len(rows)} runs over {len(result.points)} grid points "
          f"({result.computed} computed, {result.cached} from the cache), {failed} failed")
    for line in (out / "sweep.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("|"):
            print(line)
    if failed:
        first = rows.loc[~rows["ok"], "error"].iloc[0]
        print(f"\nfirst error: {first}")
    print(f"\nsweep: {out}/sweep.md (runs.csv, runs.parquet, points.csv)")
    return FAILED if failed else OK


def _race(args: argparse.Namespace) -> int:
    from .base.progress import Bar
    from .tools.race import RaceError, check, check_plot, predict, race, save_plot

    workers = args.workers or [2, 4, 8]
    races = [(s, k, rep) for s in args.strategy for k in workers for rep in range(args.repeat)]
    rows = []
    try:
        for strategy in args.strategy:  # every setting and the plot's path, before any race
            for k in workers:
                kind, _ = check(args.db, strategy, k, args.jobs, args.batch,
                                isolation=args.isolation, begin=args.begin,
                                time_limit=args.time_limit)
        if args.plot is not None:
            check_plot(args.plot)
        with Bar(len(races), "race", unit="races") as bar:
            for done, (strategy, k, rep) in enumerate(races):
                bar.set(done, f"{strategy} K={k} run {rep + 1}")
                real = race(args.db, strategy, k, args.jobs, args.batch,
                            isolation=args.isolation, begin=args.begin,
                            time_limit=args.time_limit)
                sim = predict(kind, strategy, k, args.jobs, args.batch,
                              isolation=args.isolation, begin=args.begin, seed=1 + rep)
                rows.append((strategy, k, rep + 1, real, sim))
                bar.set(done + 1)
                print(f"{strategy} K={k} run {rep + 1}: real {real.doubled_jobs} doubled "
                      f"jobs, {real.errors} errors, {real.lost_races} lost races; "
                      f"simulated {sim.doubled_jobs}, {sim.errors}, {sim.lost_races}",
                      flush=True)
    except RaceError as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt as exc:  # Ctrl-C: race() stopped its workers and cleaned up
        left = (f"but {' '.join(str(exc).split())}" if str(exc) else
                "its table dropped and the database left as it was")
        print(f"jobsim: interrupted after {len(rows)} of {len(races)} races: the workers "
              f"were stopped, {left}", file=sys.stderr)
        return BAD_INPUT
    print()
    print(f"{kind}, {args.jobs:,} due jobs, batches of {args.batch}"
          + (f", {args.isolation}" if kind == "postgres" else f", {args.begin}"))
    head = ["strategy", "K", "run", "source", "doubled jobs (share)", "lost races", "errors",
            "empty / partial / full attempts", "claims/s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for strategy, k, rep, real, sim in rows:
        for o in (real, sim):
            a = max(o.attempts - o.errors, 1)
            print(f"| {strategy} | {k} | {rep} | {o.source} | {o.doubled_jobs} "
                  f"({o.double_share:.3f}) | {o.lost_races} | {o.errors} | "
                  f"{o.empty / a:.2f} / {o.partial / a:.2f} / {o.full / a:.2f} | "
                  f"{o.per_second:,.0f} |")
    print("\nclaims/s: real rows per wall-clock second; simulated rows per SIMULATED second "
          "(the model's clock, not comparable with the real figure)")
    if args.plot is not None:
        from .output.plots import race_bars

        try:
            save_plot(race_bars([(f"{s} K={k}", r.double_share, m.double_share)
                                 for s, k, _, r, m in rows]), args.plot)
        except RaceError as exc:
            print(f"jobsim: {exc}", file=sys.stderr)
            return BAD_INPUT
        print(f"\nplot: {args.plot}")
    return OK


def _validate(args: argparse.Namespace) -> int:
    from .format import scenario as scenario_mod
    from .sim.cost import Budget, BudgetError, check, estimate

    budget = Budget(args.budget, args.memory_budget)
    status = OK
    for f in args.files:
        try:
            doc = scenario_mod.read(f)
            runs = scenario_mod.variants_of(doc, f)
            grid = _grid_problem(doc, f)
        except ScenarioError as exc:
            print(f"{f}: {len(exc.problems)} problem(s)")
            print(exc.format())
            status = BAD_INPUT
            continue
        sc = runs[0]
        variants = f", variants: {', '.join(r.variant for r in runs)}" \
            if sc.variant is not None else ""
        nodes = f"{len(sc.nodes)} node{'s' if len(sc.nodes) != 1 else ''}"
        handlers = f"{len(sc.handlers)} handler{'s' if len(sc.handlers) != 1 else ''}"
        refused = []
        for r in runs:
            est = estimate(r)
            label = f"  {r.variant}: " if r.variant is not None else "  cost: "
            try:
                check(est, budget, f + (f" (variant {r.variant})" if r.variant else ""))
                refused.append((label + est.describe(), None))
            except BudgetError as exc:
                refused.append((label + est.describe(), str(exc)))
        bad = [why for _, why in refused if why] + ([grid] if grid else [])
        if bad:
            print(f"{f}: valid, but refused ({sc.name}: {nodes}, {handlers}{variants})")
            status = BAD_INPUT
        else:
            print(f"{f}: ok ({sc.name}: {nodes}, {handlers}{variants})")
        for line, why in refused:
            if why is None:
                print(line)
        for why in bad:
            print("  " + why.replace("\n", "\n  "))
    return status


def _grid_problem(doc: dict, source: str) -> str | None:
    """Why the file's own (valid) sweep grid would be refused for its size, or None."""
    from .tools.sweep import Axis, check_size

    spec = doc.get("sweep") or {}
    axes = [Axis(path, tuple(values)) for path, values in (spec.get("grid") or {}).items()]
    try:
        check_size(axes, spec.get("replications") or 10, source)
    except ScenarioError as exc:
        return "its sweep: " + exc.format().strip()
    return None


def _schema() -> int:
    import json

    from .format.fileformat import schema

    print(json.dumps(schema(), indent=2, sort_keys=True))
    return OK


def _scenario_folder(given: str | None) -> Path | None:
    folder = Path(given) if given else Path("scenarios")
    if not folder.is_dir():
        shipped = Path(__file__).resolve().parent.parent / "scenarios"
        if given is None and shipped.is_dir():
            return shipped
        print(f"jobsim: {folder}: expected a folder of scenario files (got none)",
              file=sys.stderr)
        return None
    return folder


def _reports(args: argparse.Namespace) -> int:
    from .format import scenario as scenario_mod
    from .output.report import ReportError, analyse, check_target, write
    from .sim.world import run

    folder = _scenario_folder(args.folder)
    if folder is None:
        return BAD_INPUT
    files = sorted(folder.glob("*.yaml"))
    targets = []
    for f in files:  # every file valid and every target writable, before any run
        runs = scenario_mod.load_variants(f)
        target = Path(args.out) / runs[0].name
        try:
            check_target(target)
        except ReportError as exc:
            print(f"jobsim: cannot write the report of {f.name}: {exc}", file=sys.stderr)
            return BAD_INPUT
        targets.append((f, runs, target))
    status = OK
    for f, runs, target in targets:
        analyses = [analyse(run(sc)) for sc in runs]
        try:
            out = write(analyses, target)
        except (OSError, ReportError) as exc:
            print(f"jobsim: cannot write the report of {f.name}: {exc}", file=sys.stderr)
            return BAD_INPUT
        ok = all(a.ok for a in analyses)
        print(f"{'ok    ' if ok else 'FAILED'} {f.name} → {out}/report.md")
        if not ok:
            status = FAILED
    return status


def _list(args: argparse.Namespace) -> int:
    from .format import scenario as scenario_mod

    if args.policies:
        from .executor.policies import DESCRIPTIONS, PRESETS

        width = max(len(n) for n in PRESETS)
        for name in PRESETS:
            print(f"{name:<{width}}  {DESCRIPTIONS[name]}")
            settings = ", ".join(f"{k}: {v}" for k, v in PRESETS[name].items())
            print(f"{'':<{width}}  {settings}")
        return OK

    folder = _scenario_folder(args.folder)
    if folder is None:
        return BAD_INPUT
    files = sorted(folder.glob("*.yaml"))
    width = max((len(f.stem) for f in files), default=0)
    for f in files:
        try:
            sc = scenario_mod.load(f)
            text = sc.description or "(no description)"
        except ScenarioError as exc:
            text = f"INVALID: {len(exc.problems)} problem(s); run jobsim validate {f}"
        print(f"{f.stem:<{width}}  {text}")
    return OK


def _bench(args: argparse.Namespace) -> int:
    from .tools.bench import format_bench, format_suite, mmc_bench, suite

    if args.suite or args.quick:
        figures = suite(quick=args.quick, progress=lambda line: print(line, flush=True))
        for line in format_suite(figures):
            print(line)
        below = [f.name for f in figures if not f.meets]
        print(f"\n{len(figures) - len(below)} of {len(figures)} figures meet their target"
              + (f"; below target: {'; '.join(below)}" if below else ""))
        return OK

    result = mmc_bench(jobs=args.jobs, replications=args.replications, seed=args.seed,
                       progress=lambda line: print(line, flush=True))
    for line in format_bench(result):
        print(line)
    return OK


def entry() -> None:
    """The console script."""
    try:
        status = main()
        sys.stdout.flush()
    except KeyboardInterrupt:
        # Ctrl-C: a report or sweep folder is only ever replaced whole, at the end, so
        # nothing half-written is left looking complete
        print("\njobsim: interrupted; nothing half-written was left", file=sys.stderr)
        status = BAD_INPUT
    except BrokenPipeError:
        # The reader (``| head``) went away: not an error of ours, and no traceback.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = OK
    sys.exit(status)
