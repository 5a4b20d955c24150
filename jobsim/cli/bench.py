"""``jobsim bench``: the simulator beside a bare SimPy M/M/c, or the whole benchmark suite."""

from __future__ import annotations

import argparse

from .status import OK


def _bench(args: argparse.Namespace) -> int:
    from ..tools.bench import format_bench, format_suite, mmc_bench, suite

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
