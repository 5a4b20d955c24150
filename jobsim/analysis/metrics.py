"""From a trace to tables and figures: the per-job table and the run's summary.

Pure pandas and numpy over the trace (and the per-job stories of ``history``); nothing here
knows about SimPy. The summary holds no wall-clock figure, so it is the same for the same
scenario and seed on every machine.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from .checks import Violation, verdicts
from .history import CAUSES, Histories
from ..base.trace import KIND_NAMES, K, Trace

JOB_COLUMNS = ("id", "name", "kind", "handler", "priority", "created", "due", "first_start", "end",
               "outcome", "executions", "failures", "duplicate_executions",
               "duplicate_side_effects", "double_acquisitions", "nodes", "pending_reason")
PERCENTILES = (50, 90, 99)


def trace_frame(trace: Trace) -> pd.DataFrame:
    """The trace as a DataFrame with names instead of codes (``seq`` is the row number)."""
    cols = trace.arrays()
    df = pd.DataFrame(cols)
    df.insert(0, "seq", np.arange(len(df), dtype=np.int64))
    df["kind"] = pd.Categorical.from_codes(cols["kind"], categories=list(KIND_NAMES))
    names = np.array(trace.nodes + [""], dtype=object)
    df["node"] = names[cols["node"]]
    texts = np.array(trace.texts + [""], dtype=object)
    df["text"] = texts[cols["text"]]
    return df


def jobs_frame(hist: Histories) -> pd.DataFrame:
    """One row per job, in id order."""
    rows = []
    for j in sorted(hist.jobs):
        s = hist.jobs[j]
        rows.append((s.id, s.name, s.kind, s.handler, s.priority, s.created, s.due, s.first_start,
                     s.end, s.outcome, s.executions, s.failures, s.duplicate_executions,
                     s.duplicate_side_effects, s.double_acquisitions, ";".join(s.nodes),
                     s.pending_reason))
    return pd.DataFrame(rows, columns=list(JOB_COLUMNS))


def _claim_rate(t: np.ndarray, got: np.ndarray) -> float | None:
    """Rows claimed per second while claims were getting rows: from the first attempt to the
    last one that got any (None if none did, or all did at one instant)."""
    hit = np.flatnonzero(got > 0)
    if len(hit) == 0:
        return None
    span = float(t[hit[-1]] - t[0])
    return _r(float(got.sum()) / span) if span > 0 else None


def _r(x: float) -> float | None:
    """Round for the summary (exact decimal text, stable across platforms)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return float(round(float(x), 9))


def _dist(values: np.ndarray) -> dict[str, Any]:
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return {"n": 0}
    out: dict[str, Any] = {"n": int(len(values)), "mean": _r(values.mean()),
                           "max": _r(values.max())}
    for p in PERCENTILES:
        out[f"p{p}"] = _r(np.percentile(values, p))
    return out


def summary(trace: Trace, hist: Histories, violations: list[Violation], *,
            scenario_name: str, seed: int, end_time: float, drained: bool,
            statements: int, polls: dict[str, int], polls_skipped: dict[str, int]) -> dict:
    """The run's figures as a JSON-ready dict (sorted keys when written)."""
    jobs = jobs_frame(hist)
    cols = trace.arrays()
    kind = cols["kind"]
    acq = kind == K["acquire"]
    got = cols["b"][acq]
    start_delay = (jobs["first_start"] - jobs["due"]).to_numpy(dtype=float)
    e2e = (jobs["end"] - jobs["created"]).to_numpy(dtype=float)
    done = jobs["outcome"] == "done"
    dup_exec = Counter(d.cause for d in hist.duplicates if d.what == "execution")
    dup_side = Counter(d.cause for d in hist.duplicates if d.what == "side_effect")
    by_priority = {}
    for prio, group in jobs.groupby("priority", sort=True):
        by_priority[str(int(prio))] = {
            "jobs": int(len(group)),
            "start_delay": _dist((group["first_start"] - group["due"]).to_numpy(dtype=float)),
        }
    outcomes = Counter(jobs["outcome"])
    starts = kind == K["exec_start"]
    restarts = kind == K["node_restarted"]
    per_node = {}
    for code, name in enumerate(trace.nodes):
        mine = starts & (cols["node"] == code)
        back = cols["time"][restarts & (cols["node"] == code)]
        per_node[name] = {
            "executions": int(mine.sum()),
            "executions_after_restart": int((cols["time"][mine] > back.max()).sum())
            if len(back) else None}
    named = {}
    for s in hist.jobs.values():
        if s.name:
            named[s.name] = {"id": s.id, "outcome": s.outcome, "executions": s.executions,
                             "start_delay": _r(s.first_start - s.due),
                             "end_to_end": _r(s.end - s.created) if s.outcome == "done"
                             else None,
                             "duplicate_executions": s.duplicate_executions}
    return {
        "scenario": scenario_name,
        "seed": seed,
        "end_time": _r(end_time),
        "drained": drained,
        "jobs": {"created": int(len(jobs)), "done": outcomes.get("done", 0),
                 "dead_lettered": outcomes.get("dead_lettered", 0),
                 "incident": outcomes.get("incident", 0),
                 "withdrawn": outcomes.get("withdrawn", 0),
                 "failed": outcomes.get("failed", 0),
                 "cancelled": outcomes.get("cancelled", 0),
                 "pending": outcomes.get("pending", 0), "lost": outcomes.get("lost", 0),
                 "submits_ignored": int((kind == K["submit_ignored"]).sum())},
        "executions": int(jobs["executions"].sum()),
        "failures": int(jobs["failures"].sum()),
        "duplicate_executions": {"total": int(sum(dup_exec.values())),
                                 "by_cause": {c: dup_exec.get(c, 0) for c in CAUSES}},
        "duplicate_side_effects": {"total": int(sum(dup_side.values())),
                                   "by_cause": {c: dup_side.get(c, 0) for c in CAUSES}},
        "double_acquisitions": len(hist.double_acquisitions),
        "completions": {"done": int(done.sum()), "rejected_by_guard": hist.completions_rejected,
                        "row_gone": hist.completions_row_gone},
        "crash_recovery": {"stranded_jobs": hist.stranded, "unrecovered": hist.unrecovered,
                           "delay": _dist(np.asarray(hist.recoveries, dtype=float))},
        "acquisition": {"attempts": int(acq.sum()), "empty": int((got == 0).sum()),
                        "rows": int(got.sum()), "lost_races": int(cols["c"][acq].sum()),
                        "errors": int(cols["attempt"][acq].sum()),
                        "full": int((got == cols["a"][acq]).sum()),
                        "rows_per_s": _claim_rate(cols["time"][acq], got),
                        "unacquired": int(sum(1 for t in cols["text"][kind == K["unlocked"]]
                                              if trace.texts[t] == "queue full"))},
        "statements": statements,
        "polls": {"total": int(sum(polls.values())), "skipped": int(sum(polls_skipped.values())),
                  "by_node": dict(sorted(polls.items()))},
        "latency": {"start_delay": _dist(start_delay), "end_to_end": _dist(e2e[done.to_numpy()]),
                    "by_priority": by_priority},
        "named": dict(sorted(named.items())),
        "nodes": dict(sorted(per_node.items())),
        "throughput_per_s": _r(done.sum() / end_time) if end_time > 0 else None,
        "invariants": verdicts(violations),
        "trace_events": len(trace),
        "trace_sha256": trace.sha256(),
    }
