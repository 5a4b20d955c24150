"""``jobsim bench``: the simulator beside a bare SimPy M/M/c, or the whole benchmark suite.
Progress (what is being measured, each pair as it comes) goes to stderr, as a run's does; the
results to stdout, so that ``jobsim bench --suite > bench.txt`` holds the table alone."""

from __future__ import annotations

import argparse
import sys

from .status import BAD_INPUT, OK


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _bench(args: argparse.Namespace) -> int:
    suite_run = args.suite or args.quick
    if suite_run and (args.jobs is not None or args.replications is not None):
        return _usage("--jobs and --replications size the plain bench; the suite's sizes "
                      "are its own (--quick: a tenth of them)")
    if not suite_run and (args.pairs is not None or args.only is not None):
        return _usage("--pairs and --only belong to the suite: add --suite (or --quick)")
    if suite_run:
        return _suite(args)
    from ..tools.bench import format_bench, mmc_bench

    result = mmc_bench(jobs=args.jobs or 100_000, replications=args.replications or 5,
                       seed=args.seed, progress=_progress)
    for line in format_bench(result):
        print(line)
    return OK


def _suite(args: argparse.Namespace) -> int:
    from ..tools.bench_suite import KEYS, format_suite, suite

    figures = suite(quick=args.quick, progress=_progress,
                    only=args.only or KEYS, pairs_per_figure=args.pairs or 3,
                    seed=args.seed)
    for line in format_suite(figures):
        print(line)
    judged = [f for f in figures if f.meets is not None]
    below = [f.name for f in judged if not f.meets]
    print(f"\n{len(judged) - len(below)} of {len(judged)} figures with a target meet it"
          + (f"; below target: {'; '.join(below)}" if below else ""))
    return OK


def _usage(message: str) -> int:
    print(f"jobsim bench: {message}\n(run 'jobsim bench --help' for usage)", file=sys.stderr)
    return BAD_INPUT
