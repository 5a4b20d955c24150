"""``jobsim race``: real worker processes racing on a real SQLite or PostgreSQL with a
strategy's SQL, each race beside the simulator's prediction.

Every setting (the plot's path, the profile to read or write) is checked before any race.
With ``--calibrate FILE`` the database is measured (``tools/race/profile.py``): after a
warm-up, each strategy's one-worker races alternate with its K-worker races, so that the
profile and the races it predicts see the same minutes; the profile is written once they are
done, and each race is then also predicted calibrated (as it is at once with ``--profile
FILE``). Each race prints a line as it ends, then a table of every run, then the agreement
table: per
strategy and K, the real runs' mean and range beside each prediction, the difference and
whether it is inside the tolerance (``tools/race/agreement.py``).
"""

from __future__ import annotations

import argparse
import sys

from .status import BAD_INPUT, OK, stopped


def _race(args: argparse.Namespace) -> int:
    from ..base.progress import Bar
    from ..tools.race import RaceError, check, check_plot, handover, predict, race
    from ..tools.race import profile as prof

    workers = args.workers or [2, 4, 8]
    calibrating = bool(args.calibrate)
    # the races in the order run; calibrating, each strategy's one-worker races (its
    # profile) alternate with its K-worker races, so that both see the database and the
    # machine of the same minutes (their speed drifts), after a warm-up of the database
    plan = [("warm-up", args.strategy[0], 1, w) for w in range(prof.WARM_UP if calibrating
                                                                 else 0)]
    plan += [("hand-over", args.strategy[0], 1, 0)] if calibrating else []
    for strategy in args.strategy:
        for rep in range(args.repeat):
            plan += [("alone", strategy, 1, rep)] if calibrating else []
            plan += [("race", strategy, k, rep) for k in workers]
    rows: list = []
    done = 0
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
        if calibrating:
            prof.check_target(args.calibrate)
        warm: list[float] = []
        hand = 0.0
        alone: dict[str, list] = {s: [] for s in args.strategy}
        with Bar(len(plan), "race", unit="races") as bar:
            for what, strategy, k, rep in plan:
                bar.set(done, f"{strategy} K={k} run {rep + 1}" if what == "race" else
                        "hand-over probe" if what == "hand-over" else
                        f"{strategy} alone, {what} {rep + 1}")
                if what == "hand-over":  # no-op UPDATEs alone, then one prober per core
                    hand = handover(args.db, prof.cores())
                    done += 1
                    continue
                real = race(args.db, strategy, k, args.jobs, args.batch,
                            isolation=args.isolation, begin=args.begin,
                            time_limit=args.time_limit,
                            probe=prof.PROBE if what == "alone" else 0)
                done += 1
                bar.set(done)
                if what == "warm-up":
                    warm.append(real.per_second)
                    continue
                if what == "alone":
                    alone[strategy].append(real)
                    continue
                sim = predict(kind, strategy, k, args.jobs, args.batch,
                              isolation=args.isolation, begin=args.begin, seed=1 + rep)
                cal = None if profile is None else predict(
                    kind, strategy, k, args.jobs, args.batch, isolation=args.isolation,
                    begin=args.begin, seed=1 + rep, profile=profile)
                real.timings = []  # a race's timed statements: only a calibration's kept
                rows.append([strategy, k, rep + 1, real, sim, cal])
                print(f"{strategy} K={k} run {rep + 1}: real {real.doubled_jobs} doubled "
                      f"jobs, {real.errors} errors, {real.lost_races} lost races; "
                      f"simulated {sim.doubled_jobs}, {sim.errors}, {sim.lost_races}"
                      + ("" if cal is None else f"; calibrated {cal.doubled_jobs}, "
                         f"{cal.errors}, {cal.lost_races}"), flush=True)
        if calibrating:
            profile = _calibrated(args, kind, alone, warm, hand)
            with Bar(len(rows), "predict", unit="races") as bar:
                for i, row in enumerate(rows):
                    strategy, k, rep = row[:3]
                    bar.set(i, f"{strategy} K={k} run {rep}, calibrated")
                    row[5] = predict(kind, strategy, k, args.jobs, args.batch,
                                     isolation=args.isolation, begin=args.begin,
                                     seed=rep, profile=profile)
                bar.set(len(rows))
    except RaceError as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: race() cleaned up
        left = (f"but {' '.join(str(exc).split())}" if str(exc) else
                "its table dropped and the database left as it was")
        return stopped(exc, f"{done} of {len(plan)} races were run; the workers were "
                            f"stopped, {left}" + ("; no profile was written" if calibrating
                                                   and done < len(plan) else ""))
    rows = [tuple(r) for r in rows]
    _print_runs(args, kind, rows)
    from ..tools.race.agreement import table

    print()
    print(table(rows, kind))
    if args.plot is not None:
        return _plot(args.plot, rows)
    return OK


def _calibrated(args: argparse.Namespace, kind: str, alone: dict[str, list],
                warm: list[float], hand: float) -> dict:
    """The profile of the one-worker races (``--repeat`` of them pooled per strategy),
    written whole, and read back as a scenario reads it."""
    from ..tools.race import profile as prof

    measured = {}
    for strategy, outs in alone.items():
        waits = [o.cpu_wait for o in outs if o.cpu_wait == o.cpu_wait]
        outs[0].cpu_wait = sum(waits) / len(waits) if waits else float("nan")
        measured[strategy] = (outs[0], prof.figures(kind, [t for o in outs
                                                           for t in o.timings]))
    where = "a SQLite file" if kind == "sqlite" else "PostgreSQL"
    doc = prof.build(kind, measured, args.jobs, args.batch, where,
                     hand if kind == "postgres" else None)
    doc["measured"]["warm_up"] = (f"{len(warm)} one-worker races of {args.strategy[0]}, not "
                                  "measured: " + ", ".join(f"{r:,.0f}" for r in warm)
                                  + " claims/s")
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
    rates = "; ".join(f"{s} " + ", ".join(f"{o.per_second:,.0f}" for o in outs)
                      for s, outs in alone.items())
    print(f"profile: {args.calibrate} ({doc['machine']['cores']} cores, a time slice of "
          f"{doc['machine']['quantum']}; each strategy measured with one worker, "
          f"{args.repeat} race(s) each between its K-worker races: {rates} claims/s; after "
          f"a warm-up of {doc['measured']['warm_up']})", flush=True)
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
