"""The argument parser: every command and its flags.

A usage error (an unknown flag, a bad value) raises ``_UsageError`` instead of exiting, so
``main`` reports it and returns its status; the flags' value types are in ``values``.
"""

from __future__ import annotations

import argparse
import sys

from .values import (_at_least, _at_least_two, _bench_cases, _bounded, _events, _path,
                     _positive, _seed, _size, _window)


class _UsageError(Exception):
    """A command line argparse refused; ``prog`` is the (sub)command whose help to read."""

    def __init__(self, message: str, prog: str = "jobsim"):
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Defaults)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        #: the words this parser was last given (to name a flag it does not know)
        self._words: list[str] = []

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def]
        self._words = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # type: ignore[override]
        if message.startswith("the following arguments are required"):
            # argparse asks for the missing argument before it names a flag it does not know
            # (``jobsim run --nope``): the flag is the mistake to name first
            unknown = self._unknown_flags(self._words)
            if unknown:
                message = f"unrecognized arguments: {' '.join(unknown)}; {message}"
        raise _UsageError(f"{self.prog}: {message}", self.prog)

    def suggestion(self, words: list[str]) -> str:
        """"did you mean --seed?" for each flag of ``words`` this parser does not know and
        that is close to one it does (``--sed``), or ""."""
        import difflib

        known = [o for o in self._option_string_actions if o.startswith("--")]
        unknown = self._unknown_flags(words)
        close = {w: difflib.get_close_matches(w.split("=", 1)[0], known, n=1, cutoff=0.7)
                 for w in unknown}
        close = {w: c[0] for w, c in close.items() if c}
        if not close:
            return ""
        if len(unknown) == 1:
            return f"did you mean {next(iter(close.values()))}?"
        return "did you mean " + ", ".join(f"{c} (for {w})" for w, c in close.items()) + "?"

    def _unknown_flags(self, words: list[str]) -> list[str]:
        """The words that are flags this parser does not know (up to a ``--``)."""
        out = []
        for word in words:
            if word == "--":
                break
            if (word.startswith("-") and word != "-"
                    and not self._negative_number_matcher.match(word)
                    and word.split("=", 1)[0] not in self._option_string_actions):
                out.append(word)
        return out


class _Defaults(argparse.HelpFormatter):
    """Every option's help ends with its default, unless it has none to show (a flag that
    is off, an empty list, no value) or its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (default in (None, False, [], argparse.SUPPRESS) or "default" in text
                or not action.option_strings):
            return text
        shown = f"{default:,}" if isinstance(default, int) and not isinstance(default, bool) \
            else f"{default:g}" if isinstance(default, float) else str(default)
        return f"{text} (default: {shown})".replace("%", "%%")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="jobsim", description="A deterministic simulator of database-backed "
                                           "job executors.")
    from ..base.outdir import version

    p.add_argument("--version", action="version", version=f"jobsim {version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p.commands = sub.choices  # type: ignore[attr-defined]  # (its name → its parser)
    r = sub.add_parser("run", help="run a scenario and write its report folder")
    r.add_argument("scenario", help="a scenario YAML file")
    r.add_argument("--out", type=_path,
                   help="the report folder (default: reports/<scenario name>; a "
                        "what-if run — --set, --seed or --no-expect — goes to "
                        "reports/_scratch/<scenario name>/<its overrides>, a "
                        "git-ignored folder)")
    r.add_argument("--seed", type=_seed, help="override the scenario's seed (default: the "
                                              "file's)")
    r.add_argument("--set", dest="sets", action="append", default=[], metavar="PATH=VALUE",
                   help="override one value by its dotted path, e.g. executor.lock_time=30s "
                        "(repeatable)")
    r.add_argument("--no-expect", action="store_true",
                   help="skip the file's expectations (and its variants'): a what-if run "
                        "whose exit status says only whether the invariants hold")
    r.add_argument("--quiet", action="store_true", help="print only the summary")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    r.add_argument("--no-view", action="store_true",
                   help="skip view.html, the run's interactive page")
    r.add_argument("--every-poll", action="store_true",
                   help="simulate every poll of an idle node instead of counting the ones "
                        "that cannot find anything (the same run, less the empty polls' "
                        "trace records, and slower)")
    r.add_argument("--strict", action="store_true",
                   help="treat warnings about known traps as errors: run nothing, exit 2")
    _seeds_args(r)
    r.add_argument("--timings", type=_path, metavar="FILE",
                   help="also write FILE: JSON of the wall and CPU seconds of each phase "
                        "(start: the imports; simulate, analysis, seeds, csv, plots, page, other) "
                        "and the peak memory (MB); "
                        "the report is the same with or without it")
    _budget_args(r)
    _window_args(r)
    vw = sub.add_parser("view", help="write the interactive page (view.html) of a run "
                                     "folder, from its files")
    vw.add_argument("run_dir", metavar="RUN_DIR", help="a run folder that jobsim run wrote")
    vw.add_argument("--out", type=_path, metavar="FILE",
                    help="the page (default: RUN_DIR/view.html); an existing file only if "
                         "jobsim wrote it")
    v = sub.add_parser("validate", help="check scenario files, report every problem, and "
                                        "estimate each run's cost")
    v.add_argument("files", nargs="+")
    v.add_argument("--strict", action="store_true",
                   help="treat warnings about known traps as errors (exit 2)")
    v.add_argument("--set", dest="sets", action="append", default=[], metavar="PATH=VALUE",
                   help="override one value by its dotted path in every file, as run's --set "
                        "does: a what-if checked (and warned of) before it runs (repeatable)")
    _budget_args(v)
    sub.add_parser("schema", help="print the JSON Schema of the scenario format")
    nw = sub.add_parser("new", help="write a small commented scenario that runs as written "
                                    "(NAME.yaml), to start one's own from")
    nw.add_argument("name", metavar="NAME", help="the scenario's name (and its file's)")
    nw.add_argument("--policy", metavar="P", help="a real system's executor (jobsim list "
                                                  "--policies); default: the generic one")
    nw.add_argument("--out", type=_path, metavar="FILE",
                    help="the file to write (default: NAME.yaml "
                         "here); an existing file is left alone")
    ls = sub.add_parser("list", help="the shipped scenarios with their descriptions")
    ls.add_argument("folder", nargs="?", help="a folder of scenarios (default: scenarios/)")
    ls.add_argument("--policies", action="store_true",
                    help="list the policy presets instead, with their settings")
    rp = sub.add_parser("reports", help="regenerate the report folder of every shipped "
                                        "scenario (reports/<name>/) and its sweep "
                                        "(reports/sweeps/<name>/)")
    rp.add_argument("folder", nargs="?", help="a folder of scenarios (default: scenarios/)")
    rp.add_argument("--out", type=_path, default="reports", help="where the report folders go")
    rp.add_argument("--no-sweeps", dest="sweeps", action="store_false",
                    help="leave out the sweeps: by default each file with a sweep: section "
                         "is also swept, into OUT/sweeps/<scenario name>")
    sw = sub.add_parser("sweep", help="run a scenario over a grid of settings × "
                                      "replications, in parallel, with confidence intervals")
    sw.add_argument("scenario", help="a scenario YAML file (its sweep: section, if any, "
                                     "gives the defaults)")
    sw.add_argument("--grid", action="append", default=[], metavar="PATH=V1,V2,…",
                    help="an axis of the grid, e.g. executor.lock_time=10s,30s,2m "
                         "(repeatable; replaces the file's grid; default: the file's "
                         "sweep.grid)")
    sw.add_argument("--replications", type=_positive,
                    help="runs per grid point (with --precision: the most per point; "
                         "default: the file's sweep.replications, else 10)")
    sw.add_argument("--workers", type=_positive,
                    help="local worker processes (default: the machine's cores)")
    sw.add_argument("--dask", metavar="ADDRESS",
                    help="run on an existing Dask cluster, e.g. tcp://10.0.0.5:8786")
    sw.add_argument("--out", type=_path,
                    help="the sweep folder (default: sweeps/<scenario name>, in a "
                         "sweeps/ folder git ignores)")
    sw.add_argument("--plot", action="append", default=[], metavar="FIGURE",
                    help="a summary figure to plot against the first axis (repeatable; "
                         "default: the file's sweep.plot)")
    sw.add_argument("--precision", metavar="FIGURE:PCT",
                    help="replicate each point until the 95%% CI half-width of FIGURE is "
                         "within PCT of its mean, e.g. duplicate_executions.total:5%%")
    sw.add_argument("--seed", type=_seed, help="the base seed (default: the scenario's)")
    sw.add_argument("--variant", help="sweep one variant of the scenario, its settings and "
                                      "expectations (default: its base run)")
    _budget_args(sw)
    sw.add_argument("--set", dest="sets", action="append", default=[],
                    metavar="PATH=VALUE", help="override one value of the base scenario")
    _cache_arg(sw, "sweep", "the sweep stops there, keeping its cached runs")
    sw.add_argument("--fresh", action="store_true",
                    help="compute every run again, reading nothing from the cache (which "
                         "is written anew): sweep.md then reads the same whatever the "
                         "cache held")
    _window_args(sw)
    hu = sub.add_parser("hunt", help="search the fault space for runs that break a property "
                                     "(an invariant or an expectation), and shrink the first "
                                     "to a minimal scenario file")
    hu.add_argument("scenario", help="a scenario YAML file (its hunt: section, if any, bounds "
                                     "the faults)")
    hu.add_argument("--break", dest="prop", required=True, metavar="PROPERTY",
                    help="an invariant (exclusive_locks, liveness, …) or FIGURE OP VALUE, e.g. "
                         "'duplicate_executions == 0', 'latency.start_delay.max <= 30s'")
    hu.add_argument("--variant", help="hunt one variant of the scenario (default: its base)")
    hu.add_argument("--budget", default="200", metavar="RUNS|TIME",
                    help="the search's runs (a number), or a time (10m), or both (500,10m); "
                         "shrinking follows, up to 1,000 runs more")
    hu.add_argument("--faults", metavar="KINDS",
                    help="the kinds of fault to draw, comma-separated: crash, pause, slow_db, "
                         "partition, restart_server, clock (default: the file's hunt.kinds, else "
                         "pause, crash, partition, slow_db and, with a server, "
                         "restart_server)")
    hu.add_argument("--seed", type=_seed, help="the hunt's seed (default: the scenario's)")
    hu.add_argument("--workers", type=_positive,
                    help="local worker processes (default: the machine's cores)")
    hu.add_argument("--dask", metavar="ADDRESS",
                    help="run on an existing Dask cluster, e.g. tcp://10.0.0.5:8786")
    hu.add_argument("--out", type=_path,
                    help="the hunt folder (default: hunts/<scenario name>, in a "
                         "hunts/ folder git ignores)")
    hu.add_argument("--set", dest="sets", action="append", default=[],
                    metavar="PATH=VALUE", help="override one value of the configuration, e.g. "
                                               "faults=[] (repeatable)")
    _cache_arg(hu, "hunt", "the search stops there and the hunt reports what it found")
    rc = sub.add_parser("race", help="race real worker processes on a real SQLite or "
                                     "PostgreSQL with a strategy's SQL, beside the "
                                     "simulator's prediction")
    rc.add_argument("--db", required=True, metavar="sqlite:PATH|postgresql://…",
                    help="the database: a SQLite file, or a PostgreSQL DSN")
    rc.add_argument("--strategy", required=True, action="append", metavar="S",
                    help="guarded_update, unguarded_update, read_then_write, optimistic or "
                         "skip_locked (repeatable)")
    from ..tools import race as race_mod  # its bounds, checked here before any race runs

    rc.add_argument("--workers", type=race_mod.count_arg("workers", race_mod.MAX_WORKERS),
                    action="append", metavar="K",
                    help="worker processes, at most 64 (repeatable; default 2, 4 and 8)")
    rc.add_argument("--jobs", type=race_mod.count_arg("jobs", race_mod.MAX_JOBS),
                    default=2000, help="due jobs to claim, at most 1,000,000")
    rc.add_argument("--batch", type=race_mod.count_arg("rows", race_mod.MAX_BATCH),
                    default=10, help="rows per claim, at most 10,000")
    rc.add_argument("--repeat", type=race_mod.count_arg("runs", race_mod.MAX_REPEAT),
                    default=1, help="runs of each race (and, with --calibrate, of each "
                                    "one-worker race it measures), at most 1,000")
    rc.add_argument("--isolation", default="read_committed",
                    help="PostgreSQL: read_committed, repeatable_read or serializable")
    rc.add_argument("--begin", default="autocommit",
                    help="SQLite's read_then_write: autocommit, deferred or immediate")
    rc.add_argument("--time-limit", type=race_mod.seconds_arg, default=120.0,
                    metavar="SECONDS", help="seconds a race may take (above 0, at most "
                                            "86,400)")
    rc.add_argument("--plot", metavar="PNG", help="also draw real beside simulated (a new "
                                                  "file, or a PNG to replace)")
    rc.add_argument("--calibrate", metavar="FILE",
                    help="also measure the database (after a warm-up, one worker per "
                         "strategy alone between its K-worker races, every statement timed, "
                         "--repeat races pooled), write the profile to FILE (new, or a "
                         "profile jobsim wrote) and predict with it too")
    rc.add_argument("--profile", metavar="FILE",
                    help="predict with this measured profile too (from --calibrate)")
    b = sub.add_parser("bench", help="jobsim beside a bare SimPy M/M/c, as a ratio; or the "
                                     "whole suite (--suite)")
    b.add_argument("--jobs", type=_bounded(10_000_000),
                   help="jobs per run of the plain bench (default 100,000; at most "
                        "10,000,000)")
    b.add_argument("--replications", type=_at_least_two,
                   help="replications of the plain bench (default 5; at least 2, for a "
                        "confidence interval)")
    b.add_argument("--seed", type=_seed, default=1)
    b.add_argument("--suite", action="store_true",
                   help="the whole suite, in CPU seconds of a fresh child process per run, "
                        "each figure paired with its baseline: M/M/8 beside bare SimPy and "
                        "Ciw, the full model per job and its growth from 100,000 to "
                        "1,000,000 jobs, 30 idle days, a backlog of 100,000 jobs, jobsim "
                        "run's report of 1,000,000 jobs (the simulation's share, peak memory), "
                        "and jobsim run as a user waits for it (everyday: the lesson, the "
                        "challenge's variants, 20,000 and 200,000 jobs, phase by phase)")
    b.add_argument("--quick", action="store_true", help="the suite at a tenth of its sizes")
    b.add_argument("--pairs", type=_at_least(3),
                   help="the suite's pairs per figure (default 3; at least 3, for a median "
                        "with a spread)")
    b.add_argument("--only", type=_bench_cases, metavar="CASE,…",
                   help="run only these of the suite's cases: mmc, ciw, full, growth, idle, "
                        "backlog, report, everyday (default: all of them)")
    return p


def _seeds_args(p: argparse.ArgumentParser) -> None:
    from ..format.fileformat import MAX_SEEDS

    p.add_argument("--seeds", type=_bounded(MAX_SEEDS), metavar="N",
                   help="also run the scenario's seed and the N-1 after it (every variant on "
                        "the same seeds) and report each headline figure's mean and range and "
                        "each expectation's seeds over them; 1: the seed alone (default: the "
                        f"file's report.seeds, else 1; at most {MAX_SEEDS:,})")
    p.add_argument("--workers", type=_positive, metavar="K",
                   help="with --seeds: local worker processes (default: the machine's cores)")


def _budget_args(p: argparse.ArgumentParser) -> None:
    from ..sim.cost import DEFAULT_EVENTS, DEFAULT_MEMORY

    p.add_argument("--budget", type=_events, default=DEFAULT_EVENTS, metavar="EVENTS",
                   help=f"refuse a run estimated beyond this many simulator events "
                        f"(default {DEFAULT_EVENTS:.0e}, about a minute or two)")
    p.add_argument("--memory-budget", type=_size, default=DEFAULT_MEMORY, metavar="SIZE",
                   help=f"refuse a run estimated beyond this much memory, e.g. 8GB "
                        f"(default {DEFAULT_MEMORY // 1024 ** 3}GB)")


def _cache_arg(p: argparse.ArgumentParser, what: str, then: str) -> None:
    from ..sim.cost.budget import DEFAULT_CACHE_LIMIT

    p.add_argument("--cache-limit", type=_size, default=DEFAULT_CACHE_LIMIT, metavar="SIZE",
                   help=f"the most disk the {what}'s cache (<out>/cache) may take, e.g. 5GB; "
                        f"runs beyond it are refused or capped before it starts, and if it "
                        f"fills anyway {then} (default "
                        f"{DEFAULT_CACHE_LIMIT // 1024 ** 3}GB)")


def _window_args(p: argparse.ArgumentParser) -> None:
    for flag, what in (("warmup", "first"), ("cooldown", "last")):
        p.add_argument(f"--{flag}", type=_window, metavar="DURATION",
                       help=f"leave the {what} DURATION of each run out of its statistics "
                            f"(latency, throughput, the nodes' figures; not the job counts "
                            f"or the invariants), e.g. {'5m' if what == 'first' else '1m'}; "
                            f"over the file's {flag} (default: the file's, else none)")
