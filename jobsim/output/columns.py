"""The trace's columns as the report's writers read them, over the trace's own arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..base.trace import KIND_NAMES


def trace_columns(trace: Any) -> dict[str, Any]:
    """trace.csv's columns, straight from the trace's arrays (``write_csv``'s form: codes
    with their names where the file has names): the columns of ``trace_frame``."""
    cols = trace.arrays()
    out: dict[str, Any] = {"seq": np.arange(len(cols["time"]), dtype=np.int64)}
    for name, values in cols.items():
        out[name] = values
    out["kind"] = (cols["kind"], KIND_NAMES)
    out["node"] = (cols["node"], trace.nodes)
    out["text"] = (cols["text"], trace.texts)
    return out


def plot_frame(trace: Any) -> pd.DataFrame:
    """The trace as the plots read it (``trace_frame``'s columns they use), over the trace's
    own arrays: no copy of a column, and node names as a categorical (``""``: none)."""
    cols = trace.arrays()
    frame = {c: cols[c] for c in ("time", "job", "attempt", "a", "b", "c", "x")}
    frame["kind"] = pd.Categorical.from_codes(cols["kind"], categories=list(KIND_NAMES))
    codes = np.where(cols["node"] < 0, len(trace.nodes), cols["node"])
    frame["node"] = pd.Categorical.from_codes(codes, categories=list(trace.nodes) + [""])
    return pd.DataFrame(frame, copy=False)
