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

Execution: in this process (``workers=1``), in local worker processes (``workers=K``), or
on an existing Dask cluster (``dask=ADDRESS``); the rows are the same either way, sorted by
point and replication. ``precision=(figure, fraction)`` replicates each point until the
95% CI half-width of ``figure`` is within ``fraction`` of its mean (``replications`` is then
the cap).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import plots
from .bench import mean_ci
from .durations import parse_duration
from .errors import Problem, ScenarioError
from .report import analyse
from .scenario import from_dict, set_path
from .world import run

#: bump when a change makes cached rows stale (the model or the summary's shape)
CACHE_VERSION = "1"


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


def parse_grid(items: Iterable[str], where: str = "the command line") -> list[Axis]:
    """``["executor.lock_time=10s,30s,2m", "nodes=2,4"]`` → axes; each value is read as YAML
    (``30s`` stays text, ``4`` is a number)."""
    import yaml

    axes, problems = [], []
    for item in items:
        path, sep, text = item.partition("=")
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
    names = [a.path for a in axes]
    if len(set(names)) != len(names):
        problems.append(Problem("--grid", "each path once", ", ".join(names)))
    for a in axes:
        if a.path in RESERVED:
            problems.append(Problem(f"--grid {a.path}", "a path of the scenario other than "
                                    + ", ".join(RESERVED) + " (replications vary the seed)",
                                    a.path))
        texts = [json.dumps(v, sort_keys=True, default=str) for v in a.values]
        if len(set(texts)) != len(texts):
            problems.append(Problem(f"--grid {a.path}", "each value once",
                                    ", ".join(map(str, a.values))))
        if not a.values:
            problems.append(Problem(f"--grid {a.path}", "at least one value", "none"))
    if problems:
        raise ScenarioError(problems, where)


def replication_seed(base: int, replication: int) -> int:
    """The seed of replication ``replication``: the same at every grid point."""
    digest = hashlib.sha256(f"jobsim-sweep/{base}/{replication}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _doc_hash(doc: dict[str, Any]) -> str:
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def task_key(doc_hash: str, overrides: tuple[tuple[str, Any], ...], seed: int) -> str:
    text = json.dumps([CACHE_VERSION, doc_hash, [list(o) for o in overrides], seed],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


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
        a = analyse(run(sc))
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


class _Cache:
    def __init__(self, folder: Path | None):
        self.folder = folder
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> dict[str, Any] | None:
        if self.folder is None:
            return None
        path = self.folder / f"{key}.json"
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # a torn file from an interrupted write: compute it again

    def put(self, key: str, row: dict[str, Any]) -> None:
        if self.folder is None:
            return
        tmp = self.folder / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(row, sort_keys=True, allow_nan=True), encoding="utf-8")
        tmp.replace(self.folder / f"{key}.json")


def _execute(tasks: list[tuple[str, tuple]], cache: _Cache, workers: int, dask: str | None,
             progress: Callable[[int, int], None] | None) -> tuple[dict[str, dict], int]:
    """Run the tasks not in the cache; return every row by key, and how many were run."""
    rows: dict[str, dict[str, Any]] = {}
    todo = []
    for key, task in tasks:
        hit = cache.get(key)
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
            cache.put(key, row)
        done += 1
        if progress:
            progress(done, total)

    if not todo:
        return rows, 0
    if dask is not None:
        from distributed import Client, as_completed

        with Client(dask, timeout="30s") as client:
            futures = {client.submit(_run_packed, task, pure=False): key
                       for key, task in todo}
            for fut in as_completed(futures):
                finish(futures[fut], fut.result())
    elif workers <= 1 or len(todo) == 1:
        for key, task in todo:
            finish(key, _run_packed(task))
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed as done_first

        # fork where there is one: the workers need not re-import the caller's main module
        # (a notebook, stdin); each run builds everything it uses from its arguments
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(_run_packed, task): key for key, task in todo}
            for fut in done_first(futures):
                finish(futures[fut], fut.result())
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
          plot: Iterable[str] = (), progress: Callable[[int, int], None] | None = None
          ) -> SweepResult:
    """Run the sweep; write its tables, plots and ``sweep.md`` under ``out`` if given."""
    if replications < 1:
        raise ValueError("replications must be at least 1")
    base_seed = int(doc.get("seed", 0)) if seed is None else seed
    axes = tuple(axes)
    check_axes(axes, source)
    combos = list(itertools.product(*[[(a.path, v) for v in a.values] for a in axes])) or [()]
    # Build every point's scenario now (no run), so that a bad path or value anywhere in
    # the grid is reported, all at once, before any work.
    problems: list[Problem] = []
    for combo in combos:
        err = run_one_check(doc, source, combo)
        if err is not None:
            where = ", ".join(f"{p}={v}" for p, v in combo)
            problems += [Problem(f"{p.path} (grid point {where})", p.expected, p.got, p.hint)
                         for p in err.problems]
    if problems:
        raise ScenarioError(problems, source)
    doc_hash = _doc_hash(doc)
    cache = _Cache(Path(out) / "cache" if out is not None else None)
    outdir = Path(out) if out is not None else None
    reps = {i: (min(min_replications, replications) if precision else replications)
            for i in range(len(combos))}
    computed = cached = 0
    rows_by_key: dict[str, dict[str, Any]] = {}
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
        got, ran = _execute(tasks, cache, workers, dask, progress)
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
    result = SweepResult(table, points, axes, computed, cached, outdir)
    if outdir is not None:
        _write(result, list(plot), precision)
    return result


def run_one_check(doc: dict[str, Any], source: str,
                  combo: tuple[tuple[str, Any], ...]) -> ScenarioError | None:
    """The error building the scenario of ``combo`` would give, or None (no run)."""
    try:
        from_dict(_point_doc(doc, source, combo), source)
    except ScenarioError as exc:
        return exc
    return None


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


def _write(result: SweepResult, figures: list[str],
           precision: tuple[str, float] | None) -> None:
    out = result.out
    assert out is not None
    out.mkdir(parents=True, exist_ok=True)
    rows = result.rows
    rows.to_csv(out / "runs.csv", index=False)
    parquet = rows.copy()
    for c in parquet.columns:  # one type per column: mixed text/number become text
        if parquet[c].dtype == object:
            parquet[c] = parquet[c].map(lambda v: None if v is None else str(v))
    parquet.to_parquet(out / "runs.parquet", index=False)
    result.points.to_csv(out / "points.csv", index=False)
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
            plots.save(fig, out / name)
            made.append(name)
    result.plots = made
    lines = [f"# sweep", "",
             f"{len(rows)} runs: {len(result.points)} grid points × replications "
             f"({result.computed} computed, {result.cached} from the cache); "
             f"{int((~rows['ok']).sum()) if len(rows) else 0} failed.", ""]
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
    (out / "sweep.md").write_text("\n".join(lines), encoding="utf-8")


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
