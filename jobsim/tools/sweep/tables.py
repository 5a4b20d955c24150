"""A sweep's results: the results table (one row per run, sorted by point and replication),
the per-point table (each figure's mean and 95% confidence interval over the replications)
and the precision test that decides whether a point needs more replications.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..bench import mean_ci
from .grid import Axis


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


#: resamples of a bootstrap interval
BOOTSTRAP = 2000


def range_ci(values: np.ndarray, name: str) -> tuple[float, float, float, str]:
    """The mean of ``values`` with a 95 % interval that stays in the figure's range: the
    t-interval of the mean, unless it crosses a bound the figure cannot cross — 0 for a
    figure all of whose runs are 0 or more (a count, a time), 1 above for a share — and then
    the bootstrap percentile interval of the mean (``BOOTSTRAP`` resamples, drawn from a
    generator seeded by the values themselves: the same values, the same interval). The
    last item says which: ``t`` or ``bootstrap``."""
    x = np.asarray(values, dtype=float)
    m, lo, hi = mean_ci(x.tolist())
    floor = 0.0 if (x >= 0).all() else -math.inf
    ceiling = 1.0 if "share" in name and (x <= 1).all() else math.inf
    if lo >= floor and hi <= ceiling:
        return m, lo, hi, "t"
    seed = int.from_bytes(hashlib.sha256(x.tobytes()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(BOOTSTRAP, len(x)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return m, float(lo), float(hi), "bootstrap"


def point_table(rows: pd.DataFrame, axes: tuple[Axis, ...]) -> pd.DataFrame:
    """Per grid point: runs, runs that failed, and each numeric figure's mean with its 95%
    confidence interval over the replications that ran (``fig``, ``fig.lo``, ``fig.hi``;
    ``range_ci``, which says in ``fig.ci`` how the interval was made)."""
    axis_cols = [a.path for a in axes]
    skip = {"point", "replication", "seed", "ok", "error", "violations", "expectations_missed",
            "end_time", "trace_events", "crashed", "traceback"}
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
        if "crashed" in group:
            rec["crashed_runs"] = int(group["crashed"].eq(True).sum())
        for f in figures:
            vals = ok[f].dropna().to_numpy(dtype=float)
            how = ""
            if len(vals) >= 2:
                m, lo, hi, how = range_ci(vals, f)
            elif len(vals) == 1:
                m, lo, hi = float(vals[0]), math.nan, math.nan
            else:
                m = lo = hi = math.nan
            rec[f], rec[f + ".lo"], rec[f + ".hi"], rec[f + ".ci"] = m, lo, hi, how
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
