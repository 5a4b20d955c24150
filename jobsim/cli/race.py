"""``jobsim race``: real worker processes racing on a real SQLite or PostgreSQL with a
strategy's SQL, each race beside the simulator's prediction.

Every setting (the plot's path, the profile to read or write) is checked before any race.
With ``--calibrate FILE`` the database is measured first (``tools/race/profile.py``) and the
profile written; with it (or ``--profile FILE``) each race is also predicted calibrated. Each
race prints a line as it ends, then a table of every run, then the agreement table: per
strategy and K, the real runs' mean and range beside each prediction, the difference and
whether it is inside the tolerance (``tools/race/agreement.py``).
"""

from __future__ import annotations

import argparse
import math
import sys

from .status import BAD_INPUT, OK


def _race(args: argparse.Namespace) -> int:
    from ..base.progress import Bar
    from ..tools.race import RaceError, check, check_plot, predict, race
    from ..tools.race import profile as prof

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
        if args.calibrate and args.profile:
            raise RaceError("--calibrate FILE measures a profile, --profile FILE reads one: "
                            "give one of them")
        profile = prof.load(args.profile, kind) if args.profile else None
        missing = [s for s in args.strategy if profile and s not in profile["strategies"]]
        if missing:
            raise RaceError(f"--profile {args.profile} has no figures for "
                            f"{', '.join(missing)} (it measured "
                            f"{', '.join(profile['strategies'])}): jobsim race --calibrate "
                            "FILE --strategy S measures them")
        if args.calibrate:
            prof.check_target(args.calibrate)
            profile = _calibrate(args, kind)
        with Bar(len(races), "race", unit="races") as bar:
            for done, (strategy, k, rep) in enumerate(races):
                bar.set(done, f"{strategy} K={k} run {rep + 1}")
                real = race(args.db, strategy, k, args.jobs, args.batch,
                            isolation=args.isolation, begin=args.begin,
                            time_limit=args.time_limit)
                sim = predict(kind, strategy, k, args.jobs, args.batch,
                              isolation=args.isolation, begin=args.begin, seed=1 + rep)
                cal = None if profile is None else predict(
                    kind, strategy, k, args.jobs, args.batch, isolation=args.isolation,
                    begin=args.begin, seed=1 + rep, profile=profile)
                real.timings = []  # a race's timed statements: only a calibration's kept
                rows.append((strategy, k, rep + 1, real, sim, cal))
                bar.set(done + 1)
                print(f"{strategy} K={k} run {rep + 1}: real {real.doubled_jobs} doubled "
                      f"jobs, {real.errors} errors, {real.lost_races} lost races; "
                      f"simulated {sim.doubled_jobs}, {sim.errors}, {sim.lost_races}"
                      + ("" if cal is None else f"; calibrated {cal.doubled_jobs}, "
                         f"{cal.errors}, {cal.lost_races}"), flush=True)
    except RaceError as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt as exc:  # Ctrl-C: race() stopped its workers and cleaned up
        left = (f"but {' '.join(str(exc).split())}" if str(exc) else
                "its table dropped and the database left as it was")
        print(f"jobsim: interrupted after {len(rows)} of {len(races)} races: the workers "
              f"were stopped, {left}", file=sys.stderr)
        return BAD_INPUT
    _print_runs(args, kind, rows)
    from ..tools.race.agreement import table

    print()
    print(table(rows, kind))
    if args.plot is not None:
        return _plot(args.plot, rows)
    return OK


def _calibrate(args: argparse.Namespace, kind: str) -> dict:
    """One worker per strategy, every statement timed: the profile, written whole."""
    from ..base.progress import Bar
    from ..tools.race import race
    from ..tools.race import profile as prof

    measured = {}
    runs = [(s, rep) for s in args.strategy for rep in range(args.repeat)]
    first, warm = args.strategy[0], []
    with Bar(prof.WARM_UP + len(runs), "calibrate", unit="races") as bar:
        for w in range(prof.WARM_UP):  # a cold database is slower: not measured
            bar.set(w, f"warm-up: {first} alone, run {w + 1}")
            out = race(args.db, first, 1, args.jobs, args.batch, isolation=args.isolation,
                       begin=args.begin, time_limit=args.time_limit)
            warm.append(out.claims / out.seconds if out.seconds > 0 else math.nan)
        for i, strategy in enumerate(args.strategy):  # --repeat R races pooled: a database's
            outs = []  # speed moves from minute to minute, and the races span many
            for rep in range(args.repeat):
                bar.set(prof.WARM_UP + i * args.repeat + rep,
                        f"{strategy} alone, run {rep + 1}")
                outs.append(race(args.db, strategy, 1, args.jobs, args.batch,
                                 isolation=args.isolation, begin=args.begin,
                                 time_limit=args.time_limit, probe=200))
            waits = [o.cpu_wait for o in outs if o.cpu_wait == o.cpu_wait]
            outs[0].cpu_wait = sum(waits) / len(waits) if waits else float("nan")
            measured[strategy] = (outs[0], prof.figures(kind, [t for o in outs
                                                               for t in o.timings]))
            bar.set(prof.WARM_UP + (i + 1) * args.repeat)
    where = "a SQLite file" if kind == "sqlite" else "PostgreSQL"
    doc = prof.build(kind, measured, args.jobs, args.batch, where)
    doc["measured"]["warm_up"] = (f"{len(warm)} one-worker races of {first}, not measured: "
                                  + ", ".join(f"{r:,.0f}" for r in warm) + " claims/s")
    for strategy in args.strategy:
        doc["strategies"][strategy].update(
            {"isolation": args.isolation} if kind == "postgres" else {"begin": args.begin})
    prof.save(args.calibrate, doc)
    busy = {s: f["cpu_wait"] for s, f in doc["strategies"].items() if f.get("cpu_wait", 0) > 0.02}
    if busy:
        print("warning: the one-worker races waited for a core ("
              + ", ".join(f"{s} {w:.0%} of the time" for s, w in busy.items())
              + "): something else was running, and the profile measured a busier machine "
              "than a quiet one", file=sys.stderr, flush=True)
    print(f"profile: {args.calibrate} ({doc['machine']['cores']} cores, a time slice of "
          f"{doc['machine']['quantum']}; {', '.join(args.strategy)} measured with one worker, "
          f"{args.repeat} race(s) each, after a warm-up of {doc['measured']['warm_up']})",
          flush=True)
    return prof.load(args.calibrate, kind)


def _print_runs(args: argparse.Namespace, kind: str, rows: list) -> None:
    """Every run: real beside each prediction."""
    print()
    print(f"{kind}, {args.jobs:,} due jobs, batches of {args.batch}"
          + (f", {args.isolation}" if kind == "postgres" else f", {args.begin}"))
    head = ["strategy", "K", "run", "source", "doubled jobs (share)", "lost races", "errors",
            "empty / partial / full attempts", "claims/s", "CPU wait", "CPU µs per claim"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for strategy, k, rep, real, sim, cal in rows:
        for o in (real, sim, cal):
            if o is None:
                continue
            a = max(o.attempts - o.errors, 1)
            wait = "—" if o.cpu_wait != o.cpu_wait else f"{o.cpu_wait:.2f}"
            per = o.cpu_per_claim * 1e6
            per = "—" if per != per else f"{per:,.0f}"
            print(f"| {strategy} | {k} | {rep} | {o.source} | {o.doubled_jobs} "
                  f"({o.double_share:.3f}) | {o.lost_races} | {o.errors} | "
                  f"{o.empty / a:.2f} / {o.partial / a:.2f} / {o.full / a:.2f} | "
                  f"{o.per_second:,.0f} | {wait} | {per} |")
    print("\nclaims/s: real rows per wall-clock second; simulated rows per SIMULATED second "
          "of an assumed database (statements of 0.2–2 ms on PostgreSQL, 20–100 µs on "
          "SQLite, no CPU: not comparable with the real figure); calibrated rows per "
          "simulated second of the measured database on this machine's cores (meant to be "
          "compared). CPU wait: the share of the workers' time spent waiting for a core; CPU µs "
          "per claim: the whole machine's CPU (from /proc/stat; the model's: its cores' busy "
          "time) over the rows claimed.")


def _plot(path: str, rows: list) -> int:
    """The share of doubled jobs, real beside simulated, drawn to ``path``."""
    from ..output.plots import race_bars
    from ..tools.race import RaceError, save_plot

    try:
        save_plot(race_bars([(f"{s} K={k}", r.double_share, m.double_share)
                             for s, k, _, r, m, _c in rows]), path)
    except RaceError as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    print(f"\nplot: {path}")
    return OK
