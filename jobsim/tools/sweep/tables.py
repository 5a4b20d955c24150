"""A sweep's results: the results table (one row per run, sorted by point and replication),
the per-point table (each figure's mean and 95% confidence interval over the replications)
and the precision test that decides whether a point needs more replications.
"""

from __future__ import annotations

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
