"""``jobsim race``: real worker processes racing on a real SQLite or PostgreSQL with a
strategy's SQL, each race beside the simulator's prediction.

Every setting (and the plot's path) is checked before any race; each race prints a line as
it ends, then a table of real beside simulated, and, with ``--plot``, a bar chart.
"""

from __future__ import annotations

import argparse
import sys

from .status import BAD_INPUT, OK


def _race(args: argparse.Namespace) -> int:
    from ..base.progress import Bar
    from ..tools.race import RaceError, check, check_plot, predict, race

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
    _print_table(args, kind, rows)
    if args.plot is not None:
        return _plot(args.plot, rows)
    return OK


def _print_table(args: argparse.Namespace, kind: str, rows: list) -> None:
    """The races as a table: each run real beside simulated."""
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


def _plot(path: str, rows: list) -> int:
    """The share of doubled jobs, real beside simulated, drawn to ``path``."""
    from ..output.plots import race_bars
    from ..tools.race import RaceError, save_plot

    try:
        save_plot(race_bars([(f"{s} K={k}", r.double_share, m.double_share)
                             for s, k, _, r, m in rows]), path)
    except RaceError as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    print(f"\nplot: {path}")
    return OK
