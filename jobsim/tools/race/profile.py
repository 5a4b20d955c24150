"""A database profile drawn from real races (``jobsim race --calibrate FILE``).

**What is measured.** Per strategy, one worker alone (K = 1: no other worker to wait for, no
core to share) claims the jobs, and every statement is timed (``workers.Clock``). From an
attempt's statements, as the model splits an attempt:

- ``select`` and ``update``: a statement's own time, start to last row fetched (on SQLite an
  autocommit statement commits as its last row is fetched: its commit is inside), less the
  part that grows with the rows the worker has locked (``select_per_row``,
  ``update_per_row``: a least-squares line over the race; its scan passes them);
- ``update_unchanged``: a single-row UPDATE that changes nothing (its version never matches:
  a lost race), timed ``PROBE`` times after the race — it writes and commits nothing, so it
  is far cheaper than one that does;
- ``commit``: a transaction's COMMIT, from the end of the statement before it (the locks are
  held until it returns);
- ``between_statements``: the client's time from one statement's end to the next's start;
- ``between_attempts``: from an attempt's last statement's end to the next attempt's first
  statement (a BEGIN and the time after it count here: no row is read or locked yet);
- ``client_cpu``: the worker's own CPU time inside its statements over their wall time — on
  PostgreSQL the rest is the server's (and the socket's); on SQLite, whose statements run in
  the worker's process, the rest is waiting for the disk (a commit's write and sync);
- ``unchanged_cpu`` and ``server_cpu`` (PostgreSQL): the share of the statements' server
  time (a statement's time less the worker's CPU inside it) that the whole machine spent
  on a CPU (``/proc/stat``, less the worker's own CPU) — ``unchanged_cpu`` for the way
  there and back (from the probe's no-op UPDATEs, measured alone: about 0.3–0.5 on the
  machine this was written on), ``server_cpu`` for a statement's own work (the race's
  statements, less one round trip each). The rest is time no core ran anything for the
  statement — a process waking up, the answer's way through the sockets — which costs a
  lone worker time but no core once workers share them;
- ``server_tail`` (PostgreSQL, where that share is 1): the CPU the whole machine spent per
  statement beyond the worker's own and the server's during the statement — the server's
  work after it answered, its background processes', the kernel's: it runs beside the
  worker, so it costs a lone worker nothing, and costs cores once workers share them;
- ``cpu_wait``: the share of the worker's time it was runnable but waited for a core
  (Linux's ``/proc/self/schedstat``), a check that the figures were taken on a quiet machine.

Before anything is measured, ``WARM_UP`` one-worker races of the first strategy run and are
thrown away: a database just started or just made is slower for its first races (measured on
PostgreSQL 15 after a restart: 2,800 and 3,000 claims per second for the first two, 4,000 to
4,900 after, 5,800 once some 30 MB of WAL had been written), and the races the profile
predicts come after the calibration, on the database as it has warmed.

Each figure becomes a lognormal by its median and 99th percentile (a constant where they are
equal). The machine's ``cores`` are the CPUs this process may run on; its ``quantum`` is how
long Linux let a busy process run while another waited, measured with ``2 × cores`` busy
processes for half a second (CPU time over the number of time slices).
"""

from __future__ import annotations

import datetime
import math
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...base.dists import Z99
from ...base.signals import worker_defaults
from .settings import RaceError
from .workers import BEGIN, COMMIT, SELECT, UNCHANGED, UPDATE, schedstat

MARK = "# a database profile made by jobsim race --calibrate"

#: one-worker races run and not measured before a calibration (the module's note)
WARM_UP = 2
#: no-op UPDATEs timed after each one-worker race: enough for ``/proc/stat``'s 10 ms ticks to
#: measure their CPU (about a third of a second on PostgreSQL)
PROBE = 2000


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _spin(seconds: float) -> tuple[float, int] | None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    got = schedstat()
    return None if got is None else (got[0], got[2])


def quantum(n_cores: int) -> float:
    """The scheduler's time slice under contention (3 ms where it cannot be measured)."""
    ctx = multiprocessing.get_context("fork" if "fork" in
                                      multiprocessing.get_all_start_methods() else "spawn")
    with ctx.Pool(2 * n_cores, initializer=worker_defaults) as pool:
        got = pool.map(_spin, [0.5] * (2 * n_cores))
    runs = [cpu / slices for g in got if g is not None for cpu, slices in [g] if slices]
    return float(np.median(runs)) if runs else 0.003


def _ms(seconds: float) -> str:
    """Seconds as a file's duration in milliseconds, four significant digits, no exponent."""
    if seconds <= 0:
        return "0ms"
    return np.format_float_positional(seconds * 1000, precision=4, fractional=False,
                                      trim="-") + "ms"


def fit(samples: list[float]) -> Any:
    """A lognormal with the samples' mean (what a throughput depends on) and the spread of
    their median to their 99th percentile, in a file's form."""
    if not samples:
        return "0ms"
    a = np.asarray(samples, dtype=float)
    median, p99, mean = float(np.median(a)), float(np.percentile(a, 99)), float(a.mean())
    if median <= 0:
        return _ms(mean) if mean > 0 else "0ms"
    if p99 <= median * 1.0001:
        return {"constant": _ms(mean)}
    sigma = (math.log(p99) - math.log(median)) / Z99
    median = mean / math.exp(sigma ** 2 / 2)
    return {"lognormal": {"median": _ms(median), "p99": _ms(median * math.exp(Z99 * sigma))}}


def per_row(times: list[float], held: list[int]) -> tuple[list[float], float]:
    """The least-squares line ``time = base + per_row × held`` (``per_row`` ≥ 0), with the
    spread around it as a factor of the whole time (a statement twice as long varies twice
    as much): the bases ``base × time / line(held)``, and the per-row time."""
    if len(times) < 10 or len(set(held)) < 2:
        return times, 0.0
    x, y = np.asarray(held, dtype=float), np.asarray(times, dtype=float)
    slope, base = (float(v) for v in np.polyfit(x, y, 1))
    if slope <= 0:
        return times, 0.0
    base = max(base, 0.05 * float(np.median(y)))  # never below a twentieth of the median
    ratio = y / (base + slope * x)
    ratio /= ratio.mean()  # the line keeps the times' mean
    return [float(v) for v in base * ratio], slope


def server_cpu(timings: list[dict[str, Any]]) -> tuple[float, float, float | None]:
    """PostgreSQL: how much of its statements' server time — a statement's time less the
    worker's CPU inside it — the machine spent on a CPU, from the whole machine's CPU
    (``/proc/stat``) less the worker's own: (the share for a statement's own work, the CPU
    per statement beyond it, the share for the way there and back — ``None`` without the
    probe). The probe's no-op UPDATEs are nearly all way there and back, and their share
    (``unchanged_cpu``) is well below one: a process waking up, the sockets, no core
    running anything; each SELECT and UPDATE of the race has one such round trip (the
    model's ``pre`` and ``post`` halves), the rest of its server time is its own work. A
    share below 1 is time that costs a lone worker time and no core once workers share
    them. Beyond a share of 1, the rest is the server's work after its answer, its
    background processes', the kernel's: ``server_tail``, run beside the worker's next
    steps."""
    spent = server = 0.0
    statements = 0
    probe_spent = probe_server = 0.0
    n_probe = 0
    for w in timings:
        stmts = [s for s in w["stmts"] if s[0] != UNCHANGED]
        if w.get("probe") is not None:
            machine, mine = w["probe"]
            probe_spent += machine - mine
            probe = [t1 - t0 - c for k, t0, t1, c in w["stmts"] if k == UNCHANGED]
            probe_server += sum(probe)
            n_probe += len(probe)
        if w.get("machine") is None or w.get("sched") is None:
            continue
        server += sum(t1 - t0 - c for _, t0, t1, c in stmts)
        spent += w["machine"] - w["sched"][0]
        statements += sum(1 for s in stmts if s[0] in (SELECT, UPDATE))  # as the model
        # charges it: once per SELECT and UPDATE (a BEGIN, a COMMIT are parts of these)
    unchanged = None
    trip = 0.0
    if probe_server > 0 and n_probe:
        unchanged = min(1.0, max(0.0, probe_spent / probe_server))
        trip = min(server, statements * probe_server / n_probe)  # the race's round trips
    if server <= 0 or not statements:
        return 1.0, 0.0, unchanged
    own = server - trip
    rest = spent - (unchanged or 0.0) * trip
    if own <= 0:
        return 1.0, max(0.0, rest / statements), unchanged
    if rest < own:
        return max(0.0, rest / own), 0.0, unchanged
    return 1.0, (rest - own) / statements, unchanged


def figures(dialect: str, timings: list[dict[str, Any]]) -> dict[str, Any]:
    """One strategy's figures (the module's note) from one race's timed statements."""
    kinds: dict[str, list[float]] = {"select": [], "update": [], "commit": []}
    held: dict[str, list[int]] = {"select": [], "update": []}
    between_s: list[float] = []
    between_a: list[float] = []
    inside = cpu = 0.0
    attempts = 0
    unchanged = [t1 - t0 for w in timings for kind, t0, t1, _ in w["stmts"]
                 if kind == UNCHANGED]
    for w in timings:
        stmts = [s for s in w["stmts"] if s[0] != UNCHANGED]
        starts = w["starts"][:len(w.get("got", w["starts"]))]
        bounds = list(starts) + [len(stmts)]
        got = list(w.get("got", [])) + [0] * len(bounds)
        last_end = None
        locked = 0  # rows the worker has locked before this attempt (it races alone)
        for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
            attempt = stmts[a:b]
            locked_before, locked = locked, locked + got[i]
            if not attempt:
                continue
            attempts += 1
            pre = 0.0 if last_end is None else attempt[0][1] - last_end
            prev_end = None
            first = True
            for kind, t0, t1, c in attempt:
                inside += t1 - t0
                cpu += c
                if kind == BEGIN:
                    pre += t1 - t0
                elif kind == COMMIT:
                    kinds["commit"].append(t1 - (prev_end if prev_end is not None else t0))
                else:
                    if first:
                        pre += t0 - prev_end if prev_end is not None else 0.0
                        first = False
                    elif prev_end is not None:
                        between_s.append(t0 - prev_end)
                    name = "select" if kind == SELECT else "update"
                    kinds[name].append(t1 - t0)
                    held[name].append(locked_before)
                prev_end = t1
            if last_end is not None:
                between_a.append(pre)
            last_end = prev_end
    if not kinds["update"]:
        raise RaceError("calibration: the race ran no UPDATE to time")
    select, select_row = per_row(kinds["select"], held["select"])
    update, update_row = per_row(kinds["update"], held["update"])
    out: dict[str, Any] = {
        "select": fit(select or update),
        "update": fit(update),
        "select_per_row": _ms(select_row) if select_row else "0ms",
        "update_per_row": _ms(update_row) if update_row else "0ms",
        "between_attempts": fit(between_a),
        "between_statements": fit(between_s or [0.0]),
    }
    if kinds["commit"]:
        out["commit"] = fit(kinds["commit"])
    if unchanged:
        out["update_unchanged"] = fit(unchanged)
    out["client_cpu"] = round(min(1.0, cpu / inside), 3) if inside > 0 else 0.0
    if dialect == "postgres":
        share, tail, trip = server_cpu(timings)
        out["server_cpu"] = round(share, 3)
        if trip is not None:
            out["unchanged_cpu"] = round(trip, 3)
        out["server_tail"] = _ms(tail)
    out["attempts"] = attempts
    return out


def build(dialect: str, measured: dict[str, tuple[Any, dict[str, Any]]], jobs: int,
          batch: int, database: str, handover: float | None = None) -> dict[str, Any]:
    """The profile's document: ``measured`` maps a strategy to (its K = 1 race's outcome,
    its figures); ``handover``: PostgreSQL's (``race.handover``)."""
    n = cores()
    strategies = {}
    for name, (outcome, fig) in measured.items():
        fig = dict(fig)
        if not math.isnan(outcome.cpu_wait):
            fig["cpu_wait"] = round(outcome.cpu_wait, 4)
        strategies[name] = fig
    doc: dict[str, Any] = {
        "dialect": dialect,
        "machine": {"cores": n, "quantum": _ms(quantum(n)),
                    **({} if handover is None else {"handover": _ms(handover)})},
        "measured": {"at": datetime.datetime.now(datetime.timezone.utc)
                     .strftime("%Y-%m-%dT%H:%M:%SZ"), "jobs": jobs, "batch": batch,
                     "database": database},
        "strategies": strategies,
    }
    if "optimistic" in measured:  # its UPDATEs are single-row: any other statement's time
        doc["statement"] = strategies["optimistic"]["update"]
    return doc


def save(path: str, doc: dict[str, Any]) -> None:
    """Write the profile to ``path`` whole (a temporary file renamed), never over a file
    jobsim did not write (``check_target``, again: the races took a while)."""
    import yaml

    check_target(path)
    p = Path(path)
    text = (f"{MARK} (the claim statements' times on this machine; a scenario reads it with "
            "db: {profile: FILE})\n" + yaml.safe_dump(doc, sort_keys=False))
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, p)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RaceError(f"--calibrate {path}: cannot write it: {exc}") from None


def check_target(path: str) -> None:
    """``--calibrate``'s file can be written: a new one in a folder that exists, or a
    profile jobsim wrote (its first line carries the mark)."""
    p = Path(path)
    if p.exists():
        try:
            with open(p, "rb") as f:
                head = f.read(len(MARK.encode())).decode(errors="replace")
        except OSError as exc:  # a folder, no permission
            raise RaceError(f"--calibrate {path}: cannot read it: {exc}") from None
        if head != MARK:
            raise RaceError(f"--calibrate {path}: the file exists and is not a profile jobsim "
                            "wrote; it is left as it is (name another file)")
    if not p.parent.is_dir():
        raise RaceError(f"--calibrate {path}: no folder {p.parent}")


def load(path: str, dialect: str) -> dict[str, Any]:
    """A profile file, checked as a scenario checks it; in its file form (for a scenario)."""
    from ...base.errors import ScenarioError
    from ...format.profile import resolve

    if not Path(path).is_file():
        raise RaceError(f"--profile {path}: no such file (jobsim race --calibrate FILE "
                        "writes one)")
    try:
        doc = resolve({"db": {"profile": str(Path(path).resolve())}}, "<race>")
    except ScenarioError as exc:
        raise RaceError(f"--profile {path} is not a profile: "
                        + "; ".join(exc.format().splitlines())) from None
    raw = doc["db"]["profile"]
    if raw.get("dialect") != dialect:
        raise RaceError(f"--profile {path}: a profile of {raw.get('dialect')}, not of the "
                        f"race's database ({dialect})")
    return raw
