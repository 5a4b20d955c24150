"""The sweep folder's files: the tables (``runs.csv``, ``runs.parquet``, ``points.csv``),
the plots of chosen figures against the first axis with confidence bands, and ``sweep.md``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ...analysis.expect import seconds_figure
from ...base import outdir
from ...base.durations import parse_duration
from ...base.printable import printable
from ...output.csvtext import printable_frame
from .grid import Axis
from .tables import BOOTSTRAP, SweepResult

#: the folder kind in the sweep folder's manifest
KIND = "sweep"


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


def plain(x: float) -> str:
    """A number as a reader reads it: ``12,500``, ``12.5``, ``0.0125`` (never ``1.25e+04``)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 1:
        return f"{x:.4g}"
    return f"{x:.{2 - math.floor(math.log10(a))}f}"


def _unit(path: str, values: list[Any] | None = None) -> str:
    """A figure's or an axis's name with its unit: seconds for a time (by the figure's
    words, or an axis whose values are durations)."""
    timed = seconds_figure(path) or bool(values) and all(
        isinstance(v, str) and _numeric(v) is not None for v in values)
    return f"{path} (s)" if timed else path


def _write(folder: outdir.Folder, result: SweepResult, figures: list[str],
           precision: tuple[str, float] | None, name: str = "",
           notes: list[str] | None = None, source: str = "", sets: list[str] = ()) -> None:
    """Every file through ``folder``: each replaces only a file jobsim wrote there."""
    rows = result.rows
    folder.write_with("runs.csv", lambda p: printable_frame(rows).to_csv(p, index=False))
    parquet = rows.copy()
    for c in parquet.columns:  # one type per column: mixed text/number become text
        if parquet[c].dtype == object:
            parquet[c] = parquet[c].map(lambda v: None if v is None else str(v))
    folder.write_with("runs.parquet", lambda p: parquet.to_parquet(p, index=False))
    folder.write_with("points.csv", lambda p: printable_frame(result.points).to_csv(
        p, index=False))
    axes = result.axes
    made = []
    if axes:
        from ...output import plots  # matplotlib: imported by what draws, not by the import
        #                              of the sweep (``jobsim run`` reads its pool)
        x_axis = axes[0]
        others = axes[1:]
        for f in figures:
            if f not in result.points:
                continue
            fig = _band_plot(result.points, x_axis, others, f, name)
            png = "sweep_" + "".join(ch if ch.isalnum() else "_" for ch in f) + ".png"
            folder.write_with(png, lambda p, fig=fig: plots.save(fig, p))
            made.append(png)
    result.plots = made
    over = " × ".join(a.path for a in axes) or "no axis"
    lines = [f"# sweep of {name or 'a scenario'} over {over}", "",
             f"{len(rows)} runs: {len(result.points)} grid points × replications "
             f"({result.computed} computed, {result.cached} from the cache); "
             f"{int((~rows['ok']).sum()) if len(rows) else 0} failed.", ""]
    lines += [" ".join(notes or []), ""] if notes else []
    lines += crash_lines(rows, axes, source, list(sets))
    lines += judged(rows)
    if result.recomputed:
        lines += [f"{result.recomputed} cache entries were damaged or stale (written by "
                  "other code) and were computed again.", ""]
    if precision:
        lines += [f"Replicated until the 95% CI half-width of `{precision[0]}` was within "
                  f"{precision[1]:.0%} of its mean.", ""]
    shown = [f for f in figures if f in result.points]
    if not shown:
        lines += ["No figure was chosen to show: give `--plot FIGURE` (e.g. "
                  "`duplicate_executions.total`, `latency.start_delay.p99`) or a `plot:` list in "
                  "the scenario's `sweep:` section. Every figure of every run is in "
                  "`runs.csv`, and its mean and interval per grid point in `points.csv`.", ""]
    if shown:
        head = [a.path for a in axes] + ["runs"] + shown
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for _, p in result.points.iterrows():
            cells = [str(p[a.path]) for a in axes] + [str(int(p["runs"]))]
            for f in shown:
                m, lo, hi = p[f], p[f + ".lo"], p[f + ".hi"]
                boot = "*" if p.get(f + ".ci") == "bootstrap" else ""
                cells.append("—" if pd.isna(m) else (plain(m) if pd.isna(lo) else
                                                     f"{plain(m)} [{plain(lo)}, {plain(hi)}]"
                                                     f"{boot}"))
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", "Each cell: the mean over the replications and its 95 % confidence "
                  "interval, the t-interval of the mean; * where that would leave the "
                  "figure's range (below 0 for a count or a time, above 1 for a share) and "
                  f"the bootstrap percentile interval ({BOOTSTRAP:,} resamples) is given "
                  "instead.", ""]
    lines += [f"![{n}]({n})" for n in made] + [""]
    lines += ["Files: `runs.csv` and `runs.parquet` (one row per run), `points.csv` (mean and "
              "95% CI per grid point), `cache/` (one file per run).", ""]
    folder.write_text("sweep.md", printable("\n".join(lines), lines=True))


def crashed_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """The runs in which the model raised (``crashed``): each a bug in jobsim."""
    if not len(rows) or "crashed" not in rows:
        return rows.iloc[0:0]
    return rows[rows["crashed"].eq(True)]


def crash_lines(rows: pd.DataFrame, axes: tuple[Axis, ...], source: str,
                sets: list[str]) -> list[str]:
    """sweep.md's words on the runs that crashed: how many, each named by its point,
    replication and seed with the ``jobsim run`` that reproduces it, and the first one's
    traceback."""
    import json
    import shlex

    from .grid import grid_points

    bad = crashed_runs(rows)
    if not len(bad):
        return []
    points = grid_points(axes)
    lines = [f"**{len(bad)} of {len(rows)} runs crashed**: the model raised an error — a bug "
             "in jobsim, not a figure of the scenario. Each is reproduced by the command "
             "beside it:", ""]
    for _, r in bad.head(20).iterrows():
        values = [f"{p}={v if isinstance(v, str) else json.dumps(v)}"
                  for p, v in points[int(r["point"])]]
        run = " ".join(["jobsim run", shlex.quote(source)] + [
            f"--set {shlex.quote(s)}" for s in list(sets) + values] + [f"--seed {r['seed']}"])
        lines.append(f"- point {r['point']}, replication {r['replication']}: {r['error']} — "
                     f"`{run}`")
    if len(bad) > 20:
        lines.append(f"- … and {len(bad) - 20} more (`crashed` in `runs.csv`)")
    lines += ["", "The first one's traceback, its last lines:", "", "```",
              *str(bad["traceback"].iloc[0]).splitlines(), "```", ""]
    return lines


def judged(rows: pd.DataFrame) -> list[str]:
    """What a sweep does not stop on, said: the runs that broke an invariant or missed one
    of the scenario's expectations (each row's ``violations``, ``expectations_missed``)."""
    if not len(rows) or "violations" not in rows:
        return []
    broke = int((rows["violations"].fillna(0) > 0).sum())
    missed = int((rows.get("expectations_missed", pd.Series(0, index=rows.index))
                  .fillna(0) > 0).sum())
    if not broke and not missed:
        return ["Every run held every invariant and every expectation of the scenario.", ""]
    return [f"{broke} of {len(rows)} runs broke an invariant and {missed} missed one of the "
            "scenario's expectations (`violations` and `expectations_missed` in `runs.csv`): "
            "a sweep measures, it does not stop on them.", ""]


def _band_plot(points: pd.DataFrame, x_axis: Axis, others: tuple[Axis, ...], figure: str,
               name: str = ""):
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
    from ...output import plots

    return plots.sweep_bands(series, _unit(x_axis.path, xs_raw), _unit(figure),
                             [str(v) for v in xs_raw] if categorical else None, name)
