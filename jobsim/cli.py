"""The command line: a thin shell over the library.

``jobsim run SCENARIO [--out DIR] [--seed N] [--quiet]`` runs a scenario, prints its story and
a one-screen summary, and writes its run folder. ``jobsim validate FILE…`` checks scenario
files. ``jobsim bench`` measures the simulator against a bare SimPy M/M/c.

Exit status: 0 all is well; 1 an invariant failed; 2 bad input (a scenario file, a flag),
reported without a traceback. ``main(argv)`` returns the status, so tests call it in-process.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import ScenarioError

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
    r.add_argument("--quiet", action="store_true", help="print only the summary")
    v = sub.add_parser("validate", help="check scenario files and report every problem")
    v.add_argument("files", nargs="+")
    b = sub.add_parser("bench", help="jobsim beside a bare SimPy M/M/c, as a ratio")
    b.add_argument("--jobs", type=_positive, default=100_000, help="jobs per run")
    b.add_argument("--replications", type=_positive, default=5)
    b.add_argument("--seed", type=_seed, default=1)
    return p


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer (got {text!r})")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer (got {text!r})")
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
        return _bench(args)
    except ScenarioError as exc:
        print(f"jobsim: {len(exc.problems)} problem(s) in {exc.source}:", file=sys.stderr)
        print(exc.format(), file=sys.stderr)
        return BAD_INPUT


def _run(args: argparse.Namespace) -> int:
    from . import scenario as scenario_mod
    from .narrative import narrate
    from .report import analyse, format_summary, format_violation, write
    from .metrics import trace_frame
    from .world import run

    sc = scenario_mod.load(args.scenario, seed=args.seed)
    result = run(sc)
    analysis = analyse(result)
    out = Path(args.out) if args.out else Path("reports") / sc.name
    try:
        write(analysis, out)
    except OSError as exc:
        print(f"jobsim: cannot write the report folder {out}: {exc.strerror or exc}",
              file=sys.stderr)
        return BAD_INPUT
    if not args.quiet:
        for line in narrate(result.trace):
            print(line)
        print()
    for line in format_summary(analysis.summary, analysis.violations, out):
        print(line)
    if analysis.violations:
        tdf = trace_frame(result.trace)
        shown = analysis.violations[:10]
        print(f"\n{len(analysis.violations)} invariant violation(s); the first {len(shown)}:")
        for v in shown:
            print(format_violation(v, tdf))
        print(f"(all of them: {out}/violations.txt)")
        return FAILED
    return OK


def _validate(args: argparse.Namespace) -> int:
    from . import scenario as scenario_mod

    status = OK
    for f in args.files:
        try:
            sc = scenario_mod.load(f)
        except ScenarioError as exc:
            print(f"{f}: {len(exc.problems)} problem(s)")
            print(exc.format())
            status = BAD_INPUT
        else:
            print(f"{f}: ok ({sc.name}: {len(sc.nodes)} nodes, {len(sc.handlers)} handlers)")
    return status


def _bench(args: argparse.Namespace) -> int:
    from .bench import format_bench, mmc_bench

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
    except BrokenPipeError:
        # The reader (``| head``) went away: not an error of ours, and no traceback.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = OK
    sys.exit(status)
