"""The page's note that ties a run's related counts in words: the locks that expired, the
claims that took an expired lock again (by another node or by the one that held it), and
the summary's duplicate executions and duplicate side effects, by cause.

Computed from the trace and the summary, never written by hand: a lock expiry
is the view's (``data._expiries``: a lock whose ``lock_until`` came before the job's next
lock event); it was taken over when the job's next lock event is a ``locked`` by another
node (or by the same one); the duplicates and their causes are ``history``'s, as the
summary counts them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _plural(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def takeovers(tdf: pd.DataFrame, node_all: np.ndarray,
              expiries: list[tuple[str, float, int]]) -> dict[str, int]:
    """Of the lock expiries: how many were claimed again by another node (``taken``), by
    the node that held the lock (``same``), or never (``never``)."""
    out = {"expired": len(expiries), "taken": 0, "same": 0, "never": 0}
    if not expiries:
        return out
    kind = tdf["kind"]
    locked = np.flatnonzero((kind == "locked").to_numpy(bool))
    lock_t = tdf["time"].to_numpy(float)[locked]
    lock_job = tdf["job"].to_numpy()[locked]
    lock_node = node_all[locked]
    lo = np.lexsort((locked, lock_job))  # the lock events by job, in trace order
    lock_jobs = lock_job[lo]
    for holder, t, job in expiries:
        rows = lo[np.searchsorted(lock_jobs, job):np.searchsorted(lock_jobs, job, "right")]
        later = rows[lock_t[rows] >= t]
        if not len(later):
            out["never"] += 1
            continue
        nxt = later[0]
        out["same" if lock_node[nxt] == holder else "taken"] += 1
    return out


def lock_note(t: dict[str, int], summary: dict) -> str:
    """The note in words ("" when no lock expired)."""
    if not t["expired"]:
        return ""
    again = t["taken"] + t["same"]
    who = [s for s in (f"{t['taken']:,} by another node" if t["taken"] else "",
                       f"{t['same']:,} by the node that held it: a claim does not ask who "
                       "held an expired lock" if t["same"] else "") if s]
    parts = [f"{_plural(t['expired'], 'lock', 'locks')} expired (its lock_until passed "
             "before the job was finished, failed or released): "
             f"{again:,} of them {'was' if again == 1 else 'were'} claimed again"
             + (f" ({' and '.join(who)})" if who else "")
             + (f", {t['never']:,} never {'was' if t['never'] == 1 else 'were'}"
                if t["never"] else "")]
    for key, one, many in (("duplicate_executions", "duplicate execution",
                            "duplicate executions"),
                           ("duplicate_side_effects", "side effect made a second time",
                            "side effects made a second time")):
        found = summary.get(key, {})
        if found.get("total") is None:
            continue
        causes = ", ".join(f"{n:,} {c.replace('_', ' ')}" for c, n in
                           sorted(found.get("by_cause", {}).items()) if n)
        parts.append(f"{_plural(int(found['total']), one, many)}"
                     + (f" (by cause: {causes})" if causes else ""))
    return "; ".join(parts) + "."
