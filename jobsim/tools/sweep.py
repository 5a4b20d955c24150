"""Sweeps: one scenario run over a grid of settings × replications, in parallel.

A sweep takes the scenario's base run (not its variants), a grid of dotted paths and values
(``executor.lock_time = 10s, 30s, 2m``), and a number of replications. Its runs are the grid's
cross product × the replications. Replication ``r`` has the same seed at every grid point
(``replication_seed(base, r)``), so the points differ by their settings, not by their luck:
common random numbers.

Each run gives one row of the **results table** (``runs.csv`` and ``runs.parquet``): the
point, the replication, its seed, each axis' value, whether it ran, its error if not (a run
that fails is recorded, the sweep goes on), and every figure of its summary as a column
(``duplicate_executions.total``, ``latency.start_delay.p50`` …). The **per-point table**
(``points.csv``) has each figure's mean and 95% confidence interval over the replications;
``sweep.md`` and the plots show chosen figures against an axis with confidence bands.

Runs are cached by (scenario, overrides, seed) under ``<out>/cache/``, one file per run
written as it completes, so an interrupted sweep run again computes only what is missing.
An entry is used only if it checks: it records the scenario document's hash, the overrides,
the seed and the model version (``model_version()``: a SHA-256 of the code that makes a row),
its row has a summary row's shape and types, and the SHA-256 of the row's canonical JSON
matches the one stored beside it. Anything else (a torn file, a file edited by hand, a row
from older code) is computed again and counted (``SweepResult.recomputed``).

The sweep folder is ``outdir.Folder(out, "sweep")``: jobsim refuses a folder it did not write
(or the working folder), before any run; it replaces only the files its manifest lists.

Bounds: at most ``MAX_SWEEP_RUNS`` runs (grid points × replications, counted by multiplying
the axes' lengths, before any point is built), ``MAX_AXES`` axes of at most
``MAX_AXIS_VALUES`` values, ``MAX_WORKERS`` local worker processes. Local workers end with
the sweep's process: on Linux by ``PR_SET_PDEATHSIG``, elsewhere by a thread that watches
the parent's pid.

Execution: in this process (``workers=1``), in local worker processes (``workers=K``), or
on an existing Dask cluster (``dask=ADDRESS``); the rows are the same either way, sorted by
point and replication. ``precision=(figure, fraction)`` replicates each point until the
95% CI half-width of ``figure`` is within ``fraction`` of its mean (``replications`` is then
the cap).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..base import outdir
from ..output import plots
from .bench import mean_ci
from ..base.durations import parse_duration
from ..base.errors import JobsimError, Problem, ScenarioError
from ..sim.cost import Budget, Guard, estimate
from ..output.report import analyse
from ..format.scenario import from_dict, set_path
from ..sim.world import run

#: the most runs (grid points × replications) a sweep may have
MAX_SWEEP_RUNS = 100_000
#: a sweep may cost this many times the run budget in all
SWEEP_BUDGET_RUNS = 50
#: the most replications per grid point (the file format's bound too)
MAX_REPLICATIONS = 100_000
#: the most axes, and values per axis (the file format's ``sweep.grid`` bounds)
MAX_AXES = 10
MAX_AXIS_VALUES = 1000
#: the most local worker processes
MAX_WORKERS = 512
#: the folder kind in the sweep folder's manifest
KIND = "sweep"
#: seconds to reach a Dask scheduler
DASK_TIMEOUT = 30.0


class SweepError(JobsimError):
    """The sweep cannot run as asked (the Dask cluster cannot be reached or used)."""


@dataclass(frozen=True)
class Axis:
    path: str
    values: tuple[Any, ...]


@dataclass
class SweepResult:
    rows: pd.DataFrame
    points: pd.DataFrame
    axes: tuple[Axis, ...]
    computed: int
    cached: int
    out: Path | None = None
    plots: list[str] = field(default_factory=list)
    #: cache entries that were there but damaged or stale, and were computed again
    recomputed: int = 0


def parse_grid(items: Iterable[str], where: str = "the command line") -> list[Axis]:
    """``["executor.lock_time=10s,30s,2m", "nodes=2,4"]`` → axes; each value is read as YAML
    (``30s`` stays text, ``4`` is a number)."""
    import yaml

    axes, problems = [], []
    items = list(items)
    if len(items) > MAX_AXES:
        raise ScenarioError([Problem("--grid", f"at most {MAX_AXES} axes",
                                     f"{len(items)} axes")], where)
    for item in items:
        path, sep, text = item.partition("=")
        if sep and text.count(",") >= MAX_AXIS_VALUES:  # counted before anything is parsed
            problems.append(Problem(f"--grid {path.strip()}",
                                    f"at most {MAX_AXIS_VALUES:,} values per axis",
                                    f"{text.count(',') + 1:,} values"))
            continue
        values = [v.strip() for v in text.split(",")] if sep else []
        if not sep or not path.strip() or not all(values):
            problems.append(Problem(f"--grid {item}", "PATH=VALUE,VALUE,… like "
                                    "executor.lock_time=10s,30s,2m", repr(item)))
            continue
        parsed = []
        for v in values:
            try:
                parsed.append(yaml.safe_load(v))
            except yaml.YAMLError:
                parsed.append(v)
        axes.append(Axis(path.strip(), tuple(parsed)))
    if problems:
        raise ScenarioError(problems, where)
    return axes  # ``sweep`` checks them (the file's grid too)


#: columns of the results table an axis may not be named after
RESERVED = ("point", "replication", "seed", "ok", "error", "violations")


def check_axes(axes: Iterable[Axis], where: str = "the command line") -> None:
    """Each path once, not a reserved column (a sweep's seeds come from its replications),
    each value once."""
    axes = list(axes)
    problems = []
    if len(axes) > MAX_AXES:
        problems.append(Problem("--grid", f"at most {MAX_AXES} axes", f"{len(axes)} axes"))
    names = [a.path for a in axes]
    if len(set(names)) != len(names):
        problems.append(Problem("--grid", "each path once", ", ".join(names)))
    for a in axes:
        if a.path in RESERVED:
            problems.append(Problem(f"--grid {a.path}", "a path of the scenario other than "
                                    + ", ".join(RESERVED) + " (replications vary the seed)",
                                    a.path))
        if len(a.values) > MAX_AXIS_VALUES:
            problems.append(Problem(f"--grid {a.path}",
                                    f"at most {MAX_AXIS_VALUES:,} values per axis",
                                    f"{len(a.values):,} values"))
            continue
        texts = [json.dumps(v, sort_keys=True, default=str) for v in a.values]
        if len(set(texts)) != len(texts):
            problems.append(Problem(f"--grid {a.path}", "each value once",
                                    ", ".join(map(str, a.values))))
        if not a.values:
            problems.append(Problem(f"--grid {a.path}", "at least one value", "none"))
    if problems:
        raise ScenarioError(problems, where)


def grid_size(axes: Iterable[Axis]) -> int:
    """The number of grid points: the product of the axes' lengths (nothing is built)."""
    return math.prod(len(a.values) for a in axes)


def check_size(axes: Iterable[Axis], replications: int, where: str = "the command line",
               precision: bool = False) -> int:
    """Refuse a sweep of more than ``MAX_SWEEP_RUNS`` runs (grid points × replications);
    return its number of runs. Counted from the axes' lengths: no point is made."""
    axes = list(axes)
    points = grid_size(axes)
    runs = points * replications
    if replications > MAX_REPLICATIONS or runs > MAX_SWEEP_RUNS:
        sizes = " × ".join(f"{a.path}: {len(a.values):,} values" for a in axes) or "no axis"
        reps = "replications (with --precision: the most per point)" if precision else \
            "replications"
        raise ScenarioError([Problem(
            "--grid × --replications",
            f"at most {MAX_SWEEP_RUNS:,} runs (grid points × replications) and at most "
            f"{MAX_REPLICATIONS:,} replications",
            f"{runs:,} runs = {points:,} grid points ({sizes}) × {replications:,} {reps}",
            "use fewer values per axis or fewer axes (--grid, or the file's sweep.grid), "
            "or fewer replications (--replications N, or the file's sweep.replications)")],
            where)
    return runs


def replication_seed(base: int, replication: int) -> int:
    """The seed of replication ``replication``: the same at every grid point."""
    digest = hashlib.sha256(f"jobsim-sweep/{base}/{replication}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _doc_hash(doc: dict[str, Any]) -> str:
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def task_key(doc_hash: str, overrides: tuple[tuple[str, Any], ...], seed: int) -> str:
    """The cache file's name for a run. The model version is not in it: an entry from older
    code is found, seen to be stale, computed again and replaced (the cache does not grow
    with every change of the code)."""
    text = json.dumps([doc_hash, [list(o) for o in overrides], seed],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# --- the model version ------------------------------------------------------------------------

#: jobsim's modules that cannot change a run's row: the command line, output folders,
#: progress bars, plots and races on real databases. Every other module is in the model
#: version (a change there, even a harmless one, only makes the cache compute again).
NOT_IN_MODEL = frozenset({"cli.py", "__main__.py", "outdir.py", "progress.py", "plots.py",
                          "race.py"})


def code_hash(package: str | Path) -> str:
    """SHA-256 over the names and bytes of the package's ``.py`` files that make a row."""
    h = hashlib.sha256()
    for path in sorted(Path(package).glob("*.py")):
        if path.name in NOT_IN_MODEL:
            continue
        data = path.read_bytes()
        h.update(f"{path.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


@functools.cache
def model_version() -> str:
    """The version of the model, derived from the code (computed once per process): the
    hash of jobsim's own source (``code_hash``) with the versions of Python, NumPy and
    SimPy, whose random streams and scheduling a run depends on."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        code = code_hash(Path(__file__).resolve().parent)
    except OSError:  # the source cannot be read (a zip?): no cache entry is ever trusted
        code = "unreadable-" + os.urandom(16).hex()
    parts = [code, "python " + ".".join(map(str, sys.version_info[:3]))]
    for dist in ("numpy", "simpy"):
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist} ?")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# --- the cache --------------------------------------------------------------------------------

#: a cache entry's keys
ENTRY_KEYS = frozenset({"model", "scenario", "overrides", "seed", "row", "row_sha256"})
#: a cache entry larger than this is not one jobsim wrote (a row is a few kB)
MAX_ENTRY_BYTES = 1 << 20
#: the keys every cached row has, with their types (only runs that ran are cached)
_ROW_REQUIRED: dict[str, type] = {"seed": int, "ok": bool, "violations": int,
                                  "scenario": str, "trace_sha256": str, "trace_events": int}
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
#: columns a row must not carry: the table puts them there
RESERVED_IN_ROW = ("point", "replication")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False, default=str)


def row_sha256(row: dict[str, Any]) -> str:
    """The SHA-256 of the row's canonical JSON (ValueError for a NaN or an infinity)."""
    return hashlib.sha256(_canonical(row).encode()).hexdigest()


def cache_entry(doc_hash: str, overrides: tuple[tuple[str, Any], ...], seed: int,
                row: dict[str, Any]) -> dict[str, Any]:
    """What the cache stores for a run: its key fields, the model version, the row and the
    row's checksum."""
    return {"model": model_version(), "scenario": doc_hash,
            "overrides": json.loads(_canonical([list(o) for o in overrides])), "seed": seed,
            "row": row, "row_sha256": row_sha256(row)}


def _row_ok(row: Any, seed: int, forbidden: frozenset[str]) -> bool:
    if not isinstance(row, dict) or row.get("error", 0) is not None:
        return False
    for key, kind in _ROW_REQUIRED.items():
        value = row.get(key)
        if type(value) is not kind:  # noqa: E721 - exact: a bool is not an int here
            return False
    if row["ok"] is not True or row["seed"] != seed or row["violations"] < 0 or \
            row["trace_events"] < 0 or not _HEX64.match(row["trace_sha256"]):
        return False
    for key, value in row.items():
        if not isinstance(key, str) or key in forbidden:
            return False
        if value is None or type(value) in (bool, int, str):
            continue
        if type(value) is float and math.isfinite(value):
            continue
        return False
    return True


def check_entry(entry: Any, doc_hash: str, overrides: tuple[tuple[str, Any], ...],
                seed: int, forbidden: Iterable[str] = ()) -> dict[str, Any] | None:
    """The entry's row if the entry is one jobsim wrote for this very run with this model
    version, and its row is intact; None otherwise."""
    if not isinstance(entry, dict) or set(entry) != ENTRY_KEYS:
        return None
    if entry["model"] != model_version() or entry["scenario"] != doc_hash:
        return None
    if type(entry["seed"]) is not int or entry["seed"] != seed:
        return None
    try:
        if _canonical(entry["overrides"]) != _canonical([list(o) for o in overrides]):
            return None
    except (TypeError, ValueError):
        return None
    row = entry["row"]
    if not _row_ok(row, seed, frozenset(RESERVED_IN_ROW) | frozenset(forbidden)):
        return None
    try:
        if entry["row_sha256"] != row_sha256(row):
            return None
    except (TypeError, ValueError):
        return None
    return row


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} in a cache entry")


class _Cache:
    """One JSON file per run in ``folder`` (a folder jobsim owns whole)."""

    def __init__(self, folder: Path | None, doc_hash: str = "",
                 forbidden: Iterable[str] = ()):
        self.folder = folder
        self.doc_hash = doc_hash
        self.forbidden = tuple(forbidden)
        self.damaged = 0  # entries there but damaged or stale
        if folder is not None:
            outdir.make_dir(folder)

    def get(self, key: str, overrides: tuple[tuple[str, Any], ...],
            seed: int) -> dict[str, Any] | None:
        if self.folder is None:
            return None
        path = self.folder / f"{key}.json"
        if not path.exists() and not path.is_symlink():
            return None
        row = self._read(path, overrides, seed)
        if row is None:
            self.damaged += 1
        return row

    def _read(self, path: Path, overrides: tuple[tuple[str, Any], ...],
              seed: int) -> dict[str, Any] | None:
        try:
            # not a symlink, a folder or a FIFO (reading one would block), not huge
            if path.is_symlink() or not path.is_file() or \
                    path.stat().st_size > MAX_ENTRY_BYTES:
                return None
            entry = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constant)
        except (OSError, ValueError, RecursionError):
            return None  # torn by an interrupted write, edited, not JSON: compute it again
        return check_entry(entry, self.doc_hash, overrides, seed, self.forbidden)

    def put(self, key: str, overrides: tuple[tuple[str, Any], ...], seed: int,
            row: dict[str, Any]) -> None:
        if self.folder is None:
            return
        try:
            text = json.dumps(cache_entry(self.doc_hash, overrides, seed, row),
                              sort_keys=True, allow_nan=False, default=str)
        except (TypeError, ValueError):
            return  # a row JSON cannot hold exactly (a NaN): not cached, computed next time
        dest = self.folder / f"{key}.json"
        if dest.is_dir() and not dest.is_symlink():
            return  # a folder in the way: leave it, compute this run next time
        tmp = self.folder / f".{key}.{os.getpid()}.tmp"
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, dest)
        finally:
            if tmp.exists():
                tmp.unlink()


# --- running ----------------------------------------------------------------------------------

def flatten(summary: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The summary's leaves as ``dotted.path → value`` (numbers, text, booleans)."""
    out: dict[str, Any] = {}
    for k, v in summary.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
    return out


def run_one(doc: dict[str, Any], source: str, overrides: tuple[tuple[str, Any], ...],
            seed: int) -> dict[str, Any]:
    """One run of the sweep (a top-level function: it travels to worker processes and Dask
    workers). A run that cannot be built or fails is a row with its error."""
    row: dict[str, Any] = {"seed": seed, "ok": False, "error": None}
    try:
        sc = from_dict(_point_doc(doc, source, overrides), source, seed)
        # a run far past its estimate stops (RunStopped, recorded as this row's error)
        a = analyse(run(sc, guard=Guard(estimate(sc))))
        row.update(flatten(a.summary))
        row["ok"] = True
        row["violations"] = len(a.unexpected_violations)
    except ScenarioError as exc:
        row["error"] = exc.format().strip()
    except Exception as exc:  # recorded, not raised: one bad run must not stop a sweep
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def _run_packed(task: tuple[dict[str, Any], str, tuple[tuple[str, Any], ...], int]
                ) -> dict[str, Any]:
    return run_one(*task)


# --- local worker processes: they end with the sweep --------------------------------------------

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> bool:
    """Linux: ask the kernel to SIGKILL this process when its parent ends
    (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
        prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                          ctypes.c_ulong]
        prctl.restype = ctypes.c_int
        return prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError, TypeError):
        return False


def watch_parent(parent: int, interval: float = 0.5,
                 on_orphan: Callable[[int], Any] = os._exit) -> None:
    """Return only after calling ``on_orphan(1)`` when this process's parent is no longer
    ``parent`` (it ended and this process was re-parented): the fallback of
    ``die_with_parent``, run in a daemon thread of each worker."""
    while os.getppid() == parent:
        time.sleep(interval)
    on_orphan(1)


def _worker_init(parent: int) -> None:
    """The pool's initializer, in each worker process."""
    # fork copies the parent's handlers: a worker must die of SIGTERM, and leave Ctrl-C
    # (sent to the whole process group) to the parent, which stops the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    if os.getppid() != parent:  # the parent ended before the line above took effect
        os._exit(1)
    threading.Thread(target=watch_parent, args=(parent,), name="jobsim-watch-parent",
                     daemon=True).start()


def _stop_pool(pool: Any, pending: Iterable[Any]) -> None:
    """Cancel what has not started, kill the workers (their runs are lost, not half-kept:
    only the parent writes the cache) and shut the pool."""
    for fut in pending:
        fut.cancel()
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    pool.shutdown(wait=True, cancel_futures=True)


def _in_pool(todo: list[tuple[str, tuple]], workers: int,
             finish: Callable[[str, dict[str, Any]], None]) -> None:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    # fork where there is one: the workers need not re-import the caller's main module
    # (a notebook, stdin); each run builds everything it uses from its arguments
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                               initializer=_worker_init, initargs=(os.getpid(),))
    pending: dict[Any, str] = {}
    queue = iter(todo)
    window = 4 * workers  # a few runs queued per worker, not the whole sweep at once
    try:
        while True:
            for key, task in itertools.islice(queue, window - len(pending)):
                pending[pool.submit(_run_packed, task)] = key
            if not pending:
                break
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                key = pending.pop(fut)
                try:
                    row = fut.result()
                except BrokenProcessPool as exc:
                    raise SweepError(f"a worker process ended abruptly ({exc}); the runs "
                                     "that finished are cached: run the sweep again (with "
                                     "--workers 1 to see the failing run)") from None
                finish(key, row)
    except BaseException:
        _stop_pool(pool, pending)
        raise
    pool.shutdown(wait=True)


# --- Dask -------------------------------------------------------------------------------------

_HOST = r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)"
_HOST_PORT = re.compile(rf"^(?:(?P<scheme>tcp|tls|ucx|ws|wss)://)?(?P<host>{_HOST}):"
                        r"(?P<port>[0-9]{1,5})/?$")
_INPROC = re.compile(r"^inproc://[^\s/]+(?:/[^\s]*)?$")


def check_dask_address(address: Any, where: str = "the command line") -> None:
    """Refuse an address that is not a Dask scheduler's: ``tcp://``, ``tls://``, ``ucx://``,
    ``ws://``/``wss://`` with ``host:port``, ``inproc://…``, or a bare ``host:port``."""
    ok = isinstance(address, str)
    if ok and not _INPROC.match(address):
        m = _HOST_PORT.match(address)
        ok = m is not None and 1 <= int(m["port"]) <= 65535
    if not ok:
        raise ScenarioError([Problem(
            "--dask", "a Dask scheduler's address: tcp://HOST:PORT (also tls://, ucx://, "
            "ws://, wss://, inproc://…) or HOST:PORT, e.g. tcp://10.0.0.5:8786", repr(address),
            "the scheduler prints its address when it starts")], where)


def _tcp_target(address: str) -> tuple[str, int] | None:
    m = _HOST_PORT.match(address)
    if m is None or m["scheme"] == "ucx":
        return None
    return m["host"].strip("[]"), int(m["port"])


def connect_dask(address: str, timeout: float = DASK_TIMEOUT) -> Any:
    """A ``distributed.Client`` on the scheduler at ``address``; SweepError with the reason
    when it cannot be reached (a refused connection fails at once, not after ``timeout``)."""
    try:
        from distributed import Client
    except ImportError:
        raise SweepError("--dask needs Dask's distributed package: pip install "
                         "'jobsim[dask]'") from None
    target = _tcp_target(address)
    if target is not None:
        import socket

        try:
            socket.create_connection(target, timeout=min(5.0, timeout)).close()
        except OSError as exc:
            raise SweepError(f"cannot reach the Dask scheduler at {address}: "
                             f"{exc.strerror or exc or type(exc).__name__}; is it running, and "
                             "is that its address?") from None
    try:
        return Client(address, timeout=f"{timeout}s")
    except Exception as exc:  # noqa: BLE001 - whatever distributed raises: one clear message
        raise SweepError(f"cannot connect to the Dask scheduler at {address}: "
                         f"{type(exc).__name__}: {exc}") from None


def _on_dask(client: Any, todo: list[tuple[str, tuple]],
             finish: Callable[[str, dict[str, Any]], None]) -> None:
    from distributed import as_completed

    try:
        threads = sum(client.nthreads().values())
    except Exception:  # noqa: BLE001 - only the window's size depends on it
        threads = 8
    queue = iter(todo)
    keys = {client.submit(_run_packed, task, pure=False): key
            for key, task in itertools.islice(queue, max(16, 4 * threads))}
    running = as_completed(list(keys))
    try:
        for fut in running:
            key = keys.pop(fut)
            try:
                row = fut.result()
            except Exception as exc:  # noqa: BLE001 - the cluster failed, not the run
                raise SweepError(f"the Dask cluster failed: {type(exc).__name__}: {exc}"
                                 ) from None
            finish(key, row)
            for k, task in itertools.islice(queue, 1):
                nxt = client.submit(_run_packed, task, pure=False)
                keys[nxt] = k
                running.add(nxt)
    except BaseException:
        try:
            client.cancel(list(keys))
        except Exception:  # noqa: BLE001 - the client may be gone already
            pass
        raise


def _execute(tasks: list[tuple[str, tuple]], cache: _Cache, workers: int, client: Any,
             progress: Callable[[int, int], None] | None) -> tuple[dict[str, dict], int]:
    """Run the tasks not in the cache; return every row by key, and how many were run."""
    rows: dict[str, dict[str, Any]] = {}
    todo = []
    by_key = dict(tasks)
    for key, task in tasks:
        hit = cache.get(key, task[2], task[3])
        if hit is not None:
            rows[key] = hit
        else:
            todo.append((key, task))
    total, done = len(tasks), len(rows)
    if progress:
        progress(done, total)

    def finish(key: str, row: dict[str, Any]) -> None:
        nonlocal done
        rows[key] = row
        if row.get("ok"):  # a failure may be transient: it is tried again next time
            task = by_key[key]
            cache.put(key, task[2], task[3], row)
        done += 1
        if progress:
            progress(done, total)

    if not todo:
        return rows, 0
    if client is not None:
        _on_dask(client, todo, finish)
    elif workers <= 1 or len(todo) == 1:
        for key, task in todo:
            finish(key, _run_packed(task))
    else:
        _in_pool(todo, min(workers, len(todo)), finish)
    return rows, len(todo)


def _numeric(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError:
            return None
    return None


def point_table(rows: pd.DataFrame, axes: tuple[Axis, ...]) -> pd.DataFrame:
    """Per grid point: runs, runs that failed, and each numeric figure's mean with its 95%
    confidence interval over the replications that ran (``fig``, ``fig.lo``, ``fig.hi``)."""
    axis_cols = [a.path for a in axes]
    skip = {"point", "replication", "seed", "ok", "error", "violations", "end_time",
            "trace_events"}
    figures = [c for c in rows.columns if c not in skip and c not in axis_cols
               and pd.api.types.is_numeric_dtype(rows[c]) and not c.startswith("seed")]
    out = []
    for point, group in rows.groupby("point", sort=True):
        rec: dict[str, Any] = {"point": point}
        for a in axis_cols:
            rec[a] = group[a].iloc[0]
        ok = group[group["ok"]]
        rec["runs"] = int(len(group))
        rec["failed_runs"] = int((~group["ok"]).sum())
        for f in figures:
            vals = ok[f].dropna().to_numpy(dtype=float)
            if len(vals) >= 2:
                m, lo, hi = mean_ci(vals.tolist())
            elif len(vals) == 1:
                m, lo, hi = float(vals[0]), math.nan, math.nan
            else:
                m = lo = hi = math.nan
            rec[f], rec[f + ".lo"], rec[f + ".hi"] = m, lo, hi
        out.append(rec)
    return pd.DataFrame(out)


def _half_width_ok(rows: pd.DataFrame, figure: str, fraction: float) -> bool:
    vals = rows.loc[rows["ok"], figure].dropna().to_numpy(dtype=float) \
        if figure in rows else np.array([])
    if len(vals) < 2:
        return False
    m, lo, hi = mean_ci(vals.tolist())
    if m == 0:
        return hi - lo == 0
    return (hi - lo) / 2 <= fraction * abs(m)


def sweep(doc: dict[str, Any], axes: list[Axis], replications: int, *,
          source: str = "<scenario>", seed: int | None = None, workers: int = 1,
          dask: str | None = None, out: str | Path | None = None,
          precision: tuple[str, float] | None = None, min_replications: int = 3,
          plot: Iterable[str] = (), progress: Callable[[int, int], None] | None = None,
          stage: Callable[[str], None] | None = None,
          budget: Budget | None = None) -> SweepResult:
    """Run the sweep; write its tables, plots and ``sweep.md`` under ``out`` if given.

    Everything that can be refused is refused before any run, and before ``out`` is made:
    the axes, the sweep's size, the workers, the Dask address, the folder (``OutputError``)
    and every grid point's scenario. ``progress(done, total)`` follows the runs;
    ``stage(text)`` says what comes after them."""
    if isinstance(replications, bool) or not isinstance(replications, int) or \
            replications < 1:
        raise ValueError(f"replications must be a positive integer (got {replications!r})")
    base_seed = int(doc.get("seed", 0)) if seed is None else seed
    axes = tuple(axes)
    check_axes(axes, source)
    check_size(axes, replications, source, precision is not None)  # before any point is made
    if workers > MAX_WORKERS:
        raise ScenarioError([Problem("--workers", f"at most {MAX_WORKERS} worker processes",
                                     f"{workers:,}")], source)
    if dask is not None:
        check_dask_address(dask, source)
    if out is not None:
        outdir.check(out, KIND)  # a folder jobsim may not write is refused now, not at the end
        if (Path(out) / "cache").is_symlink():
            raise outdir.OutputError(f"refusing to write into {Path(out) / 'cache'}: it is a "
                                     "symbolic link; choose another folder")
    combos = list(itertools.product(*[[(a.path, v) for v in a.values] for a in axes])) or [()]
    # Build every point's scenario now (no run), so that a bad path or value anywhere in
    # the grid is reported, all at once, before any work; and estimate each point's cost:
    # a point beyond the run budget, or a sweep beyond SWEEP_BUDGET_RUNS × the budget in
    # all, is refused here, before any run.
    problems: list[Problem] = []
    total_events = 0.0
    for combo in combos:
        where = ", ".join(f"{p}={v}" for p, v in combo)
        try:
            sc = from_dict(_point_doc(doc, source, combo), source)
        except ScenarioError as err:
            problems += [Problem(f"{p.path} (grid point {where})", p.expected, p.got, p.hint)
                         for p in err.problems]
            continue
        if budget is not None:
            est = estimate(sc)
            total_events += est.events * replications
            why = est.over(budget)
            if why is not None:
                problems.append(Problem(f"grid point {where or '(base)'}",
                                        "a run within the budget (raise it with --budget)",
                                        f"{why}: {est.describe()}"))
    if budget is not None and total_events > budget.events * SWEEP_BUDGET_RUNS:
        problems.append(Problem("--grid/--replications", f"a sweep of at most "
                                f"{budget.events * SWEEP_BUDGET_RUNS:.2g} events in all "
                                f"({SWEEP_BUDGET_RUNS} × the run budget; raise it with "
                                "--budget)", f"about {total_events:.2g} events: "
                                f"{grid_size(axes):,} points × {replications} replications"))
    if len(problems) > 50:  # a grid of bad points: the first ones say what is wrong
        problems = problems[:50] + [Problem("--grid", "every grid point valid",
                                            f"{len(problems) - 50:,} more problems")]
    if problems:
        raise ScenarioError(problems, source)
    doc_hash = _doc_hash(doc)
    reps = {i: (min(min_replications, replications) if precision else replications)
            for i in range(len(combos))}
    computed = cached = 0
    rows_by_key: dict[str, dict[str, Any]] = {}
    with ExitStack() as stack:
        client = stack.enter_context(connect_dask(dask)) if dask is not None else None
        folder = outdir.Folder(out, KIND, dirs=("cache",)) if out is not None else None
        cache = _Cache(folder.path / "cache" if folder is not None else None, doc_hash,
                       [a.path for a in axes])
        while True:
            tasks = []
            meta = {}
            for i, combo in enumerate(combos):
                for r in range(reps[i]):
                    s = replication_seed(base_seed, r)
                    key = task_key(doc_hash, combo, s)
                    meta[key] = (i, r, combo)
                    if key not in rows_by_key:
                        tasks.append((key, (doc, source, combo, s)))
            got, ran = _execute(tasks, cache, workers, client, progress)
            computed += ran
            cached += len(got) - ran
            rows_by_key.update(got)
            table = _table(rows_by_key, meta, axes)
            if precision is None:
                break
            figure, fraction = precision
            more = False
            for i in range(len(combos)):
                if reps[i] < replications and not _half_width_ok(
                        table[table["point"] == i], figure, fraction):
                    reps[i] = min(replications, reps[i] * 2)
                    more = True
            if not more:
                break
    points = point_table(table, axes)
    result = SweepResult(table, points, axes, computed, cached,
                         folder.path if folder is not None else None,
                         recomputed=cache.damaged)
    if folder is not None:
        if stage:
            stage("writing tables and plots")
        _write(folder, result, list(plot), precision)
    return result


def _point_doc(doc: dict[str, Any], source: str,
               combo: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The base scenario's document (no variants, no sweep) with a grid point's values."""
    d = copy.deepcopy(doc)
    d.pop("variants", None)  # a sweep runs the base scenario
    d.pop("sweep", None)
    problems: list[Problem] = []
    for path, value in combo:
        set_path(d, path, value, f"--grid {path}", problems)
    if problems:
        raise ScenarioError(problems, source)
    return d


def _table(rows_by_key: dict[str, dict[str, Any]], meta: dict[str, tuple],
           axes: tuple[Axis, ...]) -> pd.DataFrame:
    records = []
    for key, (i, r, combo) in meta.items():
        row = rows_by_key.get(key)
        if row is None:
            continue
        rec = {"point": i, "replication": r}
        for path, value in combo:
            rec[path] = value if not isinstance(value, (dict, list)) else json.dumps(value)
        rec.update(row)
        records.append(rec)
    df = pd.DataFrame(records)
    if len(df):
        df = df.sort_values(["point", "replication"], kind="stable").reset_index(drop=True)
        lead = ["point", "replication"] + [a.path for a in axes] + ["seed", "ok", "error"]
        rest = sorted(c for c in df.columns if c not in lead)
        df = df[lead + rest]
    return df


def _write(folder: outdir.Folder, result: SweepResult, figures: list[str],
           precision: tuple[str, float] | None) -> None:
    """Every file through ``folder``: each replaces only a file jobsim wrote there."""
    rows = result.rows
    folder.write_with("runs.csv", lambda p: rows.to_csv(p, index=False))
    parquet = rows.copy()
    for c in parquet.columns:  # one type per column: mixed text/number become text
        if parquet[c].dtype == object:
            parquet[c] = parquet[c].map(lambda v: None if v is None else str(v))
    folder.write_with("runs.parquet", lambda p: parquet.to_parquet(p, index=False))
    folder.write_with("points.csv", lambda p: result.points.to_csv(p, index=False))
    axes = result.axes
    made = []
    if axes:
        x_axis = axes[0]
        others = axes[1:]
        for f in figures:
            if f not in result.points:
                continue
            fig = _band_plot(result.points, x_axis, others, f)
            name = "sweep_" + "".join(ch if ch.isalnum() else "_" for ch in f) + ".png"
            folder.write_with(name, lambda p, fig=fig: plots.save(fig, p))
            made.append(name)
    result.plots = made
    lines = ["# sweep", "",
             f"{len(rows)} runs: {len(result.points)} grid points × replications "
             f"({result.computed} computed, {result.cached} from the cache); "
             f"{int((~rows['ok']).sum()) if len(rows) else 0} failed.", ""]
    if result.recomputed:
        lines += [f"{result.recomputed} cache entries were damaged or stale (written by "
                  "other code) and were computed again.", ""]
    if precision:
        lines += [f"Replicated until the 95% CI half-width of `{precision[0]}` was within "
                  f"{precision[1]:.0%} of its mean.", ""]
    shown = [f for f in figures if f in result.points]
    if shown:
        head = [a.path for a in axes] + ["runs"] + shown
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for _, p in result.points.iterrows():
            cells = [str(p[a.path]) for a in axes] + [str(int(p["runs"]))]
            for f in shown:
                m, lo, hi = p[f], p[f + ".lo"], p[f + ".hi"]
                cells.append("—" if pd.isna(m) else (f"{m:.4g}" if pd.isna(lo) else
                                                     f"{m:.4g} [{lo:.4g}, {hi:.4g}]"))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [f"![{n}]({n})" for n in made] + [""]
    lines += ["Files: `runs.csv` and `runs.parquet` (one row per run), `points.csv` (mean and "
              "95% CI per grid point), `cache/` (one file per run).", ""]
    folder.write_text("sweep.md", "\n".join(lines))


def _band_plot(points: pd.DataFrame, x_axis: Axis, others: tuple[Axis, ...], figure: str):
    xs_raw = list(x_axis.values)
    numeric = [_numeric(v) for v in xs_raw]
    categorical = any(v is None for v in numeric)
    series = []
    groups = points.groupby([a.path for a in others], sort=False) if others else \
        [((), points)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{a.path}={k}" for a, k in zip(others, key)) or figure
        order = [xs_raw.index(v) if v in xs_raw else 0 for v in g[x_axis.path]]
        g = g.assign(_o=order).sort_values("_o")
        x = g["_o"].to_numpy(dtype=float) if categorical else \
            np.array([_numeric(v) for v in g[x_axis.path]], dtype=float)
        series.append((label, x, g[figure].to_numpy(dtype=float),
                       g[figure + ".lo"].to_numpy(dtype=float),
                       g[figure + ".hi"].to_numpy(dtype=float)))
    return plots.sweep_bands(series, x_axis.path, figure,
                             [str(v) for v in xs_raw] if categorical else None)
