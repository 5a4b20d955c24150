"""The ``everyday`` case of ``jobsim bench --suite``: what a user waits for, ``jobsim run``
as a command, measured in CPU seconds of a fresh process (imports, simulation, report and
all), each beside a baseline measured in the same pair.

- **the lesson**: ``jobsim run`` of the shipped 3-job lesson with its whole report beside
  ``python -c "import pandas"`` (≤ 3×): a small run should cost little more than the
  libraries it cannot do without;
- **variants**: ``jobsim run`` of the shipped challenge (every variant, their report with
  the figures that set them side by side) beside a process that runs the same variants and
  writes one run's report through the Python API (≤ 2×): a run of variants should cost
  about the sum of its runs plus one report;
- **20,000 and 200,000 jobs with services** (``everyday_document``): the CPU after the
  simulation (analysis, CSV files, plots, page, the rest) over the simulation's own CPU
  (≤ 1), read from ``--timings`` in each of ≥ 3 runs, with each phase's CPU and the share
  of the wall time spent simulating.

Every side runs as a command in a temporary folder of its own (``in_command``): its CPU and
peak memory are the child's, read from ``os.wait4``. jobsim's own modules are compiled to
bytecode first where theirs is missing or stale (``bytecode``), as an installed copy has it
and as Python writes it at a first import: pandas' bytecode was written when it was
installed, and where ``PYTHONDONTWRITEBYTECODE`` is set every ``jobsim`` command would
compile jobsim's ~190 modules again (0.4 CPU s on a 2-core machine: 1.6 -> 2.0 s for the
lesson), a cost of the setting, not of jobsim.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from .bench_measure import Sample, Side

#: the everyday scenario's cluster and load: 8 nodes × 8 threads polling every second,
#: a handler that works 200 ms and then calls a payments service (median 50 ms, p99
#: 400 ms, 40 calls at once), 150 jobs/s (busy about 75 %), a 30 s brown-out
EVERYDAY_RATE = 150.0

#: the phases of ``--timings`` after the simulation
AFTER = ("analysis", "csv", "plots", "page", "other")


def everyday_document(jobs: int, seed: int = 1) -> dict[str, Any]:
    """A scenario a user might write first for their own system: nodes polling a
    PostgreSQL-like table, retries with backoff, a downstream service with a brown-out."""
    return {
        "name": "everyday", "seed": seed, "until": "drained",
        "executor": {"acquisition": "skip_locked", "wakeup": "poll", "poll_interval": "1s",
                     "batch_size": 8, "threads": 8, "lock_time": "5m",
                     "retry": {"attempts": 3, "backoff": {"exponential": {
                         "base": "5s", "factor": 2, "cap": "1m"}}}},
        "nodes": 8,
        "services": {"payments": {
            "latency": {"lognormal": {"median": "50ms", "p99": "400ms"}},
            "capacity": 40, "when_full": "queue",
            "brownouts": [{"at": "30s", "for": "30s", "latency_factor": 3,
                           "error_share": 0.2}]}},
        "handlers": {"charge": {"calls": [{"work": {"exponential": {"mean": "200ms"}}},
                                          {"service": "payments", "timeout": "2s"}]}},
        "workload": {"streams": [{"name": "orders", "handler": "charge", "count": jobs,
                                  "rate": f"{EVERYDAY_RATE:g}/s"}]},
    }


def in_command(side: Side, seed: int) -> Sample:
    """``side.fn(*side.args, folder, seed)`` gives a command (argv) to run in a fresh
    temporary ``folder``; its CPU seconds (user + system) and peak memory are the child's;
    ``side.after(folder)`` reads what it wrote before the folder goes."""
    with tempfile.TemporaryDirectory(prefix="jobsim-bench-everyday-") as tmp:
        folder = Path(tmp)
        argv = side.fn(*side.args, folder, seed)
        env = {**os.environ, "JOBSIM_PROGRESS": "0", "PYTHONHASHSEED": "0"}
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=env, cwd=folder)
        # the child's own rusage (not all the children's so far): wait4 reaps it
        err = proc.stderr.read() if proc.stderr is not None else b""
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):  # 1: an expectation did not hold; still a run
            raise RuntimeError(f"{side.label}: {' '.join(map(str, argv))} exited with "
                               f"{proc.returncode}:\n{err.decode(errors='replace')[-2000:]}")
        result = side.after(folder) if side.after is not None else None
        return Sample(usage.ru_utime + usage.ru_stime, side.units, result,
                      usage.ru_maxrss / 1024.0)


def _jobsim(*args: str) -> list[str]:
    return [sys.executable, "-m", "jobsim", *args]


def shipped(name: str) -> Path:
    from ..format.reading import shipped_folder

    folder = Path("scenarios") if Path("scenarios").is_dir() else shipped_folder()
    if folder is None or not (folder / name).is_file():
        raise FileNotFoundError(f"the shipped scenario {name} is not here")
    return (folder / name).resolve()


# --- the sides: each gives its command ----------------------------------------------------

def lesson_run(folder: Path, seed: int) -> list[str]:
    return _jobsim("run", str(shipped("lesson.yaml")), "--out", str(folder / "report"),
                   "--quiet")


def import_pandas(folder: Path, seed: int) -> list[str]:
    return [sys.executable, "-c", "import pandas"]


def variants_run(folder: Path, seed: int) -> list[str]:
    return _jobsim("run", str(shipped("challenge.yaml")), "--out", str(folder / "report"),
                   "--quiet")


def variants_api(folder: Path, seed: int) -> list[str]:
    """The baseline of a variant run: its runs and their analyses, and one run's report
    (the first variant's), through the Python API in one process."""
    code = ("import sys\n"
            "from jobsim.format.scenario import load_variants\n"
            "from jobsim.output.report import analyse, write\n"
            "from jobsim.sim.world import run\n"
            "analyses = [analyse(run(sc)) for sc in load_variants(sys.argv[1])]\n"
            "write(analyses[0], sys.argv[2])\n")
    return [sys.executable, "-c", code, str(shipped("challenge.yaml")),
            str(folder / "report")]


def everyday_run(jobs: int, folder: Path, seed: int) -> list[str]:
    path = folder / "everyday.yaml"
    path.write_text(yaml.safe_dump(everyday_document(jobs, seed), sort_keys=False),
                    encoding="utf-8")
    return _jobsim("run", str(path), "--out", str(folder / "report"), "--quiet",
                   "--timings", str(folder / "timings.json"))


def timings(folder: Path) -> dict[str, Any]:
    """What ``--timings`` wrote: each phase's CPU, the simulation's share of the wall."""
    figures = json.loads((folder / "timings.json").read_text(encoding="utf-8"))
    order = ("start", "simulate") + AFTER  # as they came (the file's keys are sorted)
    cpu = {name: figures["phases"][name]["cpu_s"] for name in order
           if name in figures["phases"]}
    return {"cpu": cpu, "simulate_share": figures["simulate_share"],
            "after_over_simulate": sum(cpu.get(p, 0.0) for p in AFTER) /
            max(cpu["simulate"], 1e-9)}


def bytecode() -> tuple[int, bool]:
    """Compile jobsim's modules whose bytecode is missing or older than their source, into
    their ``__pycache__`` folders (what ``pip install`` and a first import write). Returns
    how many needed it and whether all of them could be written."""
    import compileall
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    stale = 0
    for source in root.rglob("*.py"):
        cached = Path(importlib.util.cache_from_source(str(source)))
        if not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime:
            stale += 1
    if not stale:
        return 0, True
    return stale, bool(compileall.compile_dir(root, quiet=2, workers=1))


# --- the case ---------------------------------------------------------------------------------

def case(s: Any) -> list[Any]:
    """The everyday figures (``bench_suite.Settings`` ``s``; ``s.jobs`` sizes the runs)."""
    from .bench_measure import cost, pairs
    from .bench_suite import Figure

    measure = s.measure or in_command

    def paired(measured: Side, baseline: Side) -> Any:
        return pairs(measured, baseline, s.pairs, cost, s.say, measure, s.seed)

    figures = []
    stale, written = bytecode()
    if stale:
        s.say(f"everyday: {stale} of jobsim's modules had no bytecode or a stale one: "
              + ("compiled first, as an installed copy has them" if written else
                 "they could not be compiled here, so every command below compiles them"))
    s.say(f"everyday: jobsim run of the lesson (3 jobs, its whole report) beside python -c "
          f"'import pandas', {s.pairs} pairs")
    p = paired(Side("jobsim run lesson", 3, lesson_run), Side("import pandas", 0,
                                                              import_pandas))
    figures.append(Figure(
        "everyday: jobsim run of the lesson, whole report, a fresh process",
        f"{p.median_of('measured', lambda x: x.cpu):.2f} CPU s",
        f"python -c 'import pandas': {p.median_of('baseline', lambda x: x.cpu):.2f} CPU s",
        p.median, p.spread, "≤ 3", p.median <= 3.0))
    s.say(f"everyday: jobsim run of the challenge (every variant) beside its runs and one "
          f"report through the API, {s.pairs} pairs")
    p = paired(Side("jobsim run challenge", 0, variants_run),
               Side("runs + one report (API)", 0, variants_api))
    figures.append(Figure(
        "everyday: jobsim run of the challenge's variants, a fresh process",
        f"{p.median_of('measured', lambda x: x.cpu):.2f} CPU s",
        f"its runs and one run's report through the API: "
        f"{p.median_of('baseline', lambda x: x.cpu):.2f} CPU s", p.median, p.spread, "≤ 2",
        p.median <= 2.0))
    for size in (20_000, 200_000):
        n = s.jobs(size)
        s.say(f"everyday: jobsim run, {n:,} jobs with a service, whole report: the CPU after "
              f"the simulation over the simulation's, {s.pairs} runs")
        runs = []
        for i in range(s.pairs):
            got = measure(Side(f"everyday {n:,}", n, everyday_run, (n,), timings), s.seed + i)
            t = got.result
            runs.append((got, t))
            s.say(f"  run {i + 1}/{s.pairs}: {got.cpu:.2f} CPU s in all; " +
                  ", ".join(f"{k} {v:.2f}" for k, v in t["cpu"].items()) +
                  f"; after/simulate {t['after_over_simulate']:.2f}, simulating "
                  f"{t['simulate_share']:.0%} of the wall time; peak {got.peak_mb:,.0f} MB")
        ratios = [t["after_over_simulate"] for _, t in runs]
        median = statistics.median(ratios)
        # the value and the baseline are those of the run whose ratio is the median (of an
        # even number, the upper one): one run's figures, not medians taken apart
        mid = sorted((t for _, t in runs), key=lambda t: t["after_over_simulate"])[
            len(runs) // 2]
        after = sum(mid["cpu"].get(p, 0.0) for p in AFTER)
        figures.append(Figure(
            f"everyday: jobsim run, {n:,} jobs with a service: CPU after the simulation",
            f"{after:.2f} CPU s (the median run; simulating {mid['simulate_share']:.0%} of "
            "the wall)",
            f"the simulation: {mid['cpu']['simulate']:.2f} CPU s", median,
            (min(ratios), max(ratios)), "≤ 1",
            median <= 1.0 if s.scale == 1 else None,
            "" if s.scale == 1 else f"everyday: the {size:,}-job case ran {n:,} jobs (the "
            f"sizes divided by {s.scale:g}): its figure is information, its target being for "
            f"{size:,}"))
    return figures
