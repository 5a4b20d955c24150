"""Fuzz jobsim for long: N fresh random scenarios over the whole scenario format (the
generator of tests/fuzzgen.py), run in parallel worker processes and classed.

    python tools/fuzz.py --count 20000 --workers 2 [--seed S] [--out DIR] [--cpu-limit 120]
                         [--shrink]

Each scenario is drawn from its seed alone (``random.Random(seed)``): the same seed gives the
same scenario, so any finding is replayed by its seed. Each run (every variant) is
validated, priced by jobsim's cost estimate, run under the cost guard (stopped at 10× its
estimate or 2 million events, whichever is higher) and analysed, in a worker whose CPU time
per scenario is also limited (RLIMIT_CPU: a hang that the event guard cannot see, inside one
event, counts as a hang too). Classes (see tests/fuzzjudge.py): ok, break (an invariant the
draw's settings do not excuse), expect, crash (exception type and last frame), hang,
invalid and refused (generator bugs), known (a bug known and being fixed).

It prints the seed range, the count per class, each distinct failure with its seeds, the
ratio of each run's events to its estimate (the share over 10×, the worst five), and the
wall and CPU time; it writes every failing scenario as YAML to the output folder
(default ``fuzz-runs/<first seed>/``, git-ignored), named by seed and class, with what
failed and the command that replays it in its header. ``--shrink`` also shrinks the first
scenario of each distinct failure to a few lines (``<seed>-<class>.min.yaml``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import resource
import secrets
import signal
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

import fuzzgen  # noqa: E402
from fuzzjudge import Outcome, as_yaml, judge  # noqa: E402
from fuzzshrink import same_failure, shrink, signature  # noqa: E402

COST_OVER = 10.0  # a run that makes more than this many times its estimated events


class CpuLimit(BaseException):
    """The worker's CPU limit for one scenario ran out (not an Exception: the judge's
    ``except Exception`` must not class it as a crash)."""


def _on_xcpu(signum, frame):  # noqa: ARG001
    raise CpuLimit()


def _init_worker() -> None:
    signal.signal(signal.SIGXCPU, _on_xcpu)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the pool


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _limited(limit: float, work):
    """``work()`` with at most ``limit`` more CPU seconds (SIGXCPU past them)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    start = _cpu()
    want = int(start + limit) + 1
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
    try:
        return work(), _cpu() - start
    except CpuLimit:
        return Outcome("hang", f"past the CPU limit of {limit:g} s"), _cpu() - start
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def one(args: tuple[int, float]) -> tuple[int, Outcome, float]:
    seed, limit = args
    outcome, cpu = _limited(limit, lambda: judge(fuzzgen.scenario(random.Random(seed))))
    return seed, outcome, cpu


def shrunk(args: tuple[int, str, float]) -> tuple[int, str, dict, Outcome]:
    """The scenario of ``seed`` shrunk to what keeps its failure, and its outcome."""
    seed, target, limit = args
    doc = fuzzgen.scenario(random.Random(seed))
    small, _ = _limited(limit, lambda: shrink(doc, same_failure(target, COST_OVER)))
    small = small if isinstance(small, dict) else doc
    o = judge(small)
    if target == "cost":
        o = Outcome("cost", f"{o.ratio:.1f}× its estimate", _ratios(o), o.ratios)
    return seed, target, small, o


def _replay(seed: int) -> str:
    return (f"JOBSIM_FUZZ_SEED={seed} JOBSIM_FUZZ_N=1 python -m pytest -q "
            "'tests/test_fuzz.py::test_fresh_random_scenarios_hold_every_invariant[full]'")


def _write(out: Path, seed: int, kind: str, o: Outcome, doc: dict, suffix: str = "") -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{seed}-{kind}{suffix}.yaml"
    head = [f"fuzz seed {seed}: {kind}: {o.detail}"] + o.text.splitlines()[-40:] + [
        f"replay: {_replay(seed)}", "or: jobsim run THIS_FILE"]
    path.write_text("".join(f"# {line}\n" for line in head) + as_yaml(doc), encoding="utf-8")
    return path


def _progress(total: int):
    if sys.stderr.isatty():
        from tqdm import tqdm
        return tqdm(total=total, unit="run", file=sys.stderr, smoothing=0.05)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=1000, help="scenarios to run")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--seed", type=int, default=None, help="the first seed (default: fresh)")
    ap.add_argument("--out", type=Path, default=None, help="folder for failing scenarios")
    ap.add_argument("--cpu-limit", type=float, default=120.0,
                    help="CPU seconds one scenario may take before it counts as a hang")
    ap.add_argument("--shrink", action="store_true",
                    help="shrink the first scenario of each distinct failure")
    a = ap.parse_args(argv)
    if a.count < 1 or a.workers < 1 or a.cpu_limit <= 0:
        ap.error("--count, --workers and --cpu-limit must be positive")
    first = a.seed if a.seed is not None else secrets.randbits(40)
    out = a.out or Path("fuzz-runs") / str(first)
    seeds = range(first, first + a.count)
    print(f"fuzz: seeds {first}..{first + a.count - 1} ({a.count} scenarios, "
          f"{a.workers} workers); failing scenarios go to {out}", flush=True)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    results: dict[int, tuple[Outcome, float]] = {}
    bar = _progress(a.count)
    pool = mp.get_context("fork").Pool(a.workers, _init_worker, maxtasksperchild=200)
    try:
        for seed, o, cpu in pool.imap_unordered(one, [(s, a.cpu_limit) for s in seeds]):
            results[seed] = (o, cpu)
            if o.kind not in ("ok",):
                _write(out, seed, o.kind, o, fuzzgen.scenario(random.Random(seed)))
            if o.kind == "ok" and o.ratio > COST_OVER:
                _write(out, seed, "cost", Outcome("cost", f"{o.ratio:.1f}× its estimate",
                                                  _ratios(o)), fuzzgen.scenario(
                                                      random.Random(seed)))
            if bar is not None:
                bar.update()
                bar.set_postfix_str(_short(results), refresh=False)
            elif len(results) % max(1, a.count // 20) == 0:
                print(f"  {len(results)}/{a.count}: {_short(results)}", flush=True)
        distinct = _report(results, a.count)
        if a.shrink and distinct:
            print(f"shrinking {len(distinct)} distinct failure(s)…", flush=True)
            jobs = [(s, sig, a.cpu_limit * 10) for sig, s in sorted(distinct.items())]
            for seed, sig, doc, o in pool.imap_unordered(shrunk, jobs):
                print(f"  {sig}: {_write(out, seed, o.kind, o, doc, '.min')}", flush=True)
    except KeyboardInterrupt:
        pool.terminate()
        print("interrupted", file=sys.stderr)
        return 2
    finally:
        if bar is not None:
            bar.close()
        pool.close()
        pool.join()
    worker_cpu = sum(c for _, c in results.values())
    print(f"time: wall {time.perf_counter() - wall0:.0f} s, CPU "
          f"{time.process_time() - cpu0 + worker_cpu:.0f} s (workers {worker_cpu:.0f} s)")
    bad = sum(1 for o, _ in results.values() if o.kind not in ("ok", "known"))
    return 1 if bad else 0


def _ratios(o: Outcome) -> str:
    return "\n".join(f"{run}: {ev:,.0f} events, estimate {est:,.0f}"
                     + (" (kept going to its horizon, undrained)" if alive else "")
                     for run, ev, est, alive in o.ratios)


def _short(results: dict) -> str:
    c = Counter(o.kind for o, _ in results.values())
    return " ".join(f"{k} {v}" for k, v in sorted(c.items()))


def _report(results: dict[int, tuple[Outcome, float]], count: int) -> dict[str, int]:
    """Print the classes, the distinct failures and the cost figures; the first seed of
    each distinct failure (by signature), for shrinking."""
    kinds = Counter(o.kind for o, _ in results.values())
    order = ("ok", "break", "expect", "crash", "hang", "known", "invalid", "refused")
    print("classes: " + " · ".join(f"{k} {kinds.get(k, 0)}" for k in order))
    by_sig: dict[str, list[int]] = defaultdict(list)
    for seed in sorted(results):
        o = results[seed][0]
        if o.kind != "ok":
            by_sig[signature(o)].append(seed)
    for sig, seeds in sorted(by_sig.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(map(str, seeds[:5])) + (" …" if len(seeds) > 5 else "")
        print(f"  {len(seeds):5d}  {sig[:150]}  (seeds {shown})")
    ratios = sorted(((o.ratio, s) for s, (o, _) in results.items() if o.ratios), reverse=True)
    over = [s for r, s in ratios if r > COST_OVER]
    alive = [s for s in over if results[s][0].kept_alive]
    print(f"cost: actual/estimated events over {COST_OVER:g}× in {len(over)} of {len(ratios)} "
          f"runs ({100 * len(over) / max(len(ratios), 1):.2f} %), {len(alive)} of them drained "
          "runs kept going to their horizon by work that never finishes; worst: " + ", ".join(
              f"{r:.1f}×{'*' if results[s][0].kept_alive else ''} (seed {s})"
              for r, s in ratios[:5]) + "  (* kept going to the horizon)")
    others = [s for s in over if s not in alive]
    if others:
        print("  over 10× otherwise: " + ", ".join(
            f"{results[s][0].ratio:.1f}× (seed {s})" for s in others[:10]))
    distinct = {sig: seeds[0] for sig, seeds in by_sig.items()
                if not sig.startswith(("known", "invalid", "refused"))}
    if others:
        distinct["cost"] = others[0]
    return distinct


if __name__ == "__main__":
    sys.exit(main())
