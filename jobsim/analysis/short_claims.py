"""**Short claims** (``short_claims``): claims on the job table that came back with fewer
rows than they asked, racing another node's claim, though rows due when their statement
began were still unlocked when it ended: rows they left in the table.

Where two nodes' claim statements are in flight together they pick the same first rows; the
one that locks them second finds them taken: a guarded UPDATE on PostgreSQL waits for the
other's lock, re-checks the row and leaves it out, and nothing counts it as a lost race. The
node claims again only at its next poll, its threads idle meanwhile while the rows it left
wait. A slow database makes the statements longer and their overlaps more frequent. Only the
claims that raced another node's are counted: one that came back short alone is something
else (a scan's limit, a clock).

Read from the trace: each claim's statement runs from its ``acquire`` row's time less its
latency (``x``) to that time; the rows it left are the jobs whose due instant is at or
before its start and whose first lock is after its end (a retry's row, due again, is not
counted: the figure is a floor). A claim that failed (a serialization failure, SQLITE_BUSY)
or counted lost races is not one: those are told as what they are. Not read where the rows
a node may claim are not all the rows (nodes that split the handlers, the hint path) or
where the nodes' clocks differ (what was due depends on who read it).

Pure functions of the trace and the nodes' settings; no Python object per event.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..base.trace import K
from ..executor.config import NodeConfig
from ..format.lint_polls import splits_handlers
from .saturation import rounded as _r


def short_claims(cols: dict[str, np.ndarray], names: list[str], nodes: tuple[NodeConfig, ...],
                 jobs: pd.DataFrame, acq: np.ndarray, windows: list[dict[str, Any]],
                 end: float, texts: list[str] | None = None) -> dict[str, Any] | None:
    """The claims (of ``acq``'s rows: ``phases.claims``) that came back short with due rows
    left, racing another node's (see the module's docstring): how many, the rows they
    left, how long their nodes took to claim again, and how many fell in each of the
    ``windows`` of a slow database (``fault_windows.windows_of``) against the rest of the
    run. None where the figure cannot be read or no claim came back short so."""
    clocks = (cols["kind"] == K["clock_set"]).any() or any(
        n.executor.clock_offset or n.executor.clock_drift for n in nodes)
    if len(nodes) < 2 or clocks or splits_handlers(nodes) or \
            any(n.executor.hint for n in nodes) or len(acq) < 2 or not len(jobs):
        return None
    time, x = cols["time"][acq], np.nan_to_num(cols["x"][acq])
    asked, got, node = cols["a"][acq], cols["b"][acq], cols["node"][acq]
    began = time - x
    # what each claim left in the table: the rows due by its start less every row locked
    # by its end or by the end of the other claims in flight with it (theirs run), each row
    # counted at its first lock (a row is locked only once due; one due after the start
    # and locked before then is taken off too, so the figure is a floor)
    due = np.sort(jobs["due"].to_numpy(dtype=float))
    locked = cols["kind"] == K["locked"]
    first = pd.Series(cols["time"][locked]).groupby(cols["job"][locked]).min().to_numpy()
    # (a claim that failed, or lost rows it counted as lost races, is told as that)
    short = (got < asked) & (cols["attempt"][acq] == 0) & (cols["c"][acq] == 0)
    # of those, the ones another node's claim statement overlapped, and the latest end of
    # those in flight with it: a row they lock after this one ended was taken, not left
    # (SKIP LOCKED passes over the rows another claim holds, and they run)
    which = np.flatnonzero(short)
    racing, until = _racing(began, time, node, which)
    short[which[~racing]] = False
    horizon = time.copy()
    horizon[which] = np.maximum(time[which], until)
    free = np.searchsorted(due, began, side="right") - np.searchsorted(np.sort(first), horizon,
                                                                       side="right")
    short &= free > 0
    if not short.any():
        return None
    left = np.minimum(asked - got, free)
    # each node's next claim after a short one
    again = np.full(len(acq), np.nan)
    for code in np.unique(node):
        mine = np.flatnonzero(node == code)
        again[mine[:-1]] = time[mine[1:]] - time[mine[:-1]]
    gaps = again[short]
    out: dict[str, Any] = {
        "claims": int(short.sum()), "of_claims": int(len(acq)), "rows": int(left[short].sum()),
        "next_claim_mean": _r(float(np.nanmean(gaps))) if (~np.isnan(gaps)).any() else None,
        "strategy": _most(cols["text"][acq][short], texts), "windows": {}}
    slow = [(str(i + 1), w) for i, w in enumerate(windows) if w["kind"] == "slow_db"]
    outside = np.ones(len(acq), dtype=bool)
    for key, w in slow:
        inside = (time >= w["from"]) & (time < min(w["to"], end))
        outside &= ~inside
        out["windows"][key] = {"claims": int((short & inside).sum()),
                               "rows": int(left[short & inside].sum()),
                               "span": _r(min(w["to"], end) - w["from"])}
    if slow:
        spans = sum(v["span"] or 0.0 for v in out["windows"].values())
        out["outside"] = {"claims": int((short & outside).sum()),
                          "span": _r(max(0.0, end - spans))}
    return out


def _racing(began: np.ndarray, ended: np.ndarray, node: np.ndarray,
            which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each claim of ``which`` overlapped (ends included) another node's claim
    statement, and the latest end among the other nodes' statements begun by its end:
    for each node, the others' statements in order of their starts with the latest end so
    far; one of them overlaps a claim where that latest end reaches its start."""
    out = np.zeros(len(which), dtype=bool)
    until = np.full(len(which), -np.inf)
    for code in np.unique(node[which]):
        mine = node[which] == code
        others = node != code
        if not others.any():
            continue
        order = np.argsort(began[others], kind="stable")
        starts, latest = began[others][order], np.maximum.accumulate(ended[others][order])
        k = np.searchsorted(starts, ended[which[mine]], side="right") - 1
        reach = np.where(k >= 0, latest[np.maximum(k, 0)], -np.inf)
        out[mine] = reach >= began[which[mine]]
        until[mine] = reach
    return out, until


def _most(codes: np.ndarray, texts: list[str] | None) -> str | None:
    """The strategy (an ``acquire`` row's text) most of the claims ``codes`` used."""
    if texts is None or not len(codes):
        return None
    values, counts = np.unique(codes, return_counts=True)
    code = int(values[np.argmax(counts)])
    return texts[code] if 0 <= code < len(texts) else None
