"""What a fault window did to the jobs due in it (``summary["effects"]["faults"]``): a
slow database, a node cut off from it (partition), a service down or browned out. Each
window is read from the trace (``db_slowed``, ``partition``, ``service_state``), from the
instant it began to the instant it ended (or the run's end), and the jobs due in it are
held against those due before it, outside every window (all those outside, where under
``BEFORE`` were due before it): their mean and longest start delay, and their mean time
from due to done; with the executions that failed in it. A fault the report names by its
cause (a crash, a pause) is told where it causes what it does, not here.

A window's cost can outlast it: jobs due just after it wait behind the backlog it left.
Those count as outside it, so the figures understate what a window cost, never overstate.

Pure functions of the trace and the jobs; no Python object per event.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..base.trace import K
from .saturation import rounded as _r

#: jobs due before a window, outside every window, under which all those outside it are
#: its baseline instead
BEFORE = 10
#: windows told at most (the first ones); the rest are counted
MOST = 20


def _spans(times: np.ndarray, opens: np.ndarray, end: float
           ) -> list[tuple[float, float, slice]]:
    """Spans from an event that opens (``opens``) to the next that does not, in order, with
    the slice of the events that opened it (one still open ends at ``end``); a span of no
    length is none."""
    out, first = [], None
    for i, (t, o) in enumerate(zip(times.tolist(), opens.tolist())):
        if o and first is None:
            first = i
        elif not o and first is not None:
            out.append((times[first], t, slice(first, i)))
            first = None
    if first is not None:
        out.append((times[first], end, slice(first, len(times))))
    return [(float(a), float(b), k) for a, b, k in out if b > a]


def windows_of(cols: dict[str, np.ndarray], texts: list[str], names: list[str],
               end: float) -> list[dict[str, Any]]:
    """The run's fault windows, in order of their start: kind (``slow_db``, ``partition``,
    ``outage``, ``brownout``), what (the node or the service; None for the database),
    from, to, and the largest latency factor (slow database, brown-out) or the share of
    calls failed (brown-out) in it."""
    kind, time, x = cols["kind"], cols["time"], cols["x"]
    out: list[dict[str, Any]] = []
    slow = np.flatnonzero(kind == K["db_slowed"])
    for t0, t1, k in _spans(time[slow], x[slow] != 1.0, end):
        out.append({"kind": "slow_db", "what": None, "from": t0, "to": t1,
                    "factor": float(x[slow][k].max()), "error_share": None})
    cut = np.flatnonzero(kind == K["partition"])
    for code in np.unique(cols["node"][cut]).tolist():
        mine = cut[cols["node"][cut] == code]
        for t0, t1, _ in _spans(time[mine], cols["a"][mine] == 1, end):
            out.append({"kind": "partition", "what": names[code], "from": t0, "to": t1,
                        "factor": None, "error_share": None})
    state = np.flatnonzero(kind == K["service_state"])
    for code in np.unique(cols["text"][state]).tolist():
        mine = state[cols["text"][state] == code]
        a = cols["a"][mine]
        for which, level in (("outage", 1), ("brownout", 2)):
            for t0, t1, k in _spans(time[mine], a == level, end):
                out.append({"kind": which, "what": texts[code], "from": t0, "to": t1,
                            "factor": float(x[mine][k].max()) if level == 2 else None,
                            "error_share": float(cols["c"][mine][k].max()) / 1e6
                            if level == 2 else None})
    return sorted(out, key=lambda w: (w["from"], w["kind"], w["what"] or ""))


def waiting_at(due: np.ndarray, start: np.ndarray, at: np.ndarray) -> np.ndarray:
    """How many jobs were due and not yet started at each instant of ``at`` (a job that
    never started waits to the end)."""
    d = np.sort(due)
    s = np.sort(np.where(np.isnan(start), np.inf, start))
    return np.searchsorted(d, at, side="right") - np.searchsorted(s, at, side="right")


def cleared_at(due: np.ndarray, start: np.ndarray, windows: list[dict[str, Any]]
               ) -> list[float | None]:
    """Per window, for a slow database or a partition, the first instant from its end on
    at which a job fell due with no more jobs waiting than ever waited as one fell due
    before the window (none, where none fell due before it): the backlog it left was gone.
    None for the other kinds, and where it never cleared."""
    order = np.sort(due)
    waits = waiting_at(due, start, order)
    out: list[float | None] = []
    for w in windows:
        if w["kind"] not in ("slow_db", "partition"):
            out.append(None)
            continue
        before = order < w["from"]
        level = int(waits[before].max()) if before.any() else 0
        ok = np.flatnonzero((order >= w["to"]) & (waits <= level))
        out.append(float(order[ok[0]]) if len(ok) else None)
    return out


def due_in(due: np.ndarray, windows: list[dict[str, Any]], kinds: tuple[str, ...]
           ) -> np.ndarray:
    """Which of the instants ``due`` fall in a window of ``kinds`` (``windows_of``'s)."""
    inside = np.zeros(len(due), dtype=bool)
    for w in windows:
        if w["kind"] in kinds:
            inside |= (due >= w["from"]) & (due < w["to"])
    return inside


def fault_windows(cols: dict[str, np.ndarray], texts: list[str], names: list[str],
                  jobs: pd.DataFrame, end: float, windows: list[dict[str, Any]] | None = None
                  ) -> dict[str, Any] | None:
    """``summary["effects"]["faults"]``: each window (``windows_of``, the first ``MOST``)
    by its number, with the jobs due in it and their figures beside their baseline's (see
    the module's docstring); ``more``: the windows left untold. None where the run had
    none. ``windows``: ``windows_of``'s, where already read."""
    found = windows_of(cols, texts, names, end) if windows is None else windows
    if not found:
        return None
    due = jobs["due"].to_numpy(dtype=float)
    start = jobs["first_start"].to_numpy(dtype=float)
    done = (jobs["outcome"] == "done").to_numpy()
    finished = jobs["end"].to_numpy(dtype=float)
    inside_any = due_in(due, found, ("slow_db", "partition", "outage", "brownout"))
    cleared = cleared_at(due, start, found)
    failed = (cols["kind"] == K["exec_end"]) & (cols["a"] == 0)
    out: dict[str, Any] = {}
    for i, w in enumerate(found[:MOST]):
        here = (due >= w["from"]) & (due < w["to"])
        before = ~inside_any & (due < w["from"])
        base = before if before.sum() >= BEFORE else ~inside_any
        t = cols["time"][failed]
        out[str(i + 1)] = {
            **{k: (_r(v) if isinstance(v, float) else v) for k, v in w.items()},
            "failed_executions": int(((t >= w["from"]) & (t < w["to"])).sum()),
            "cleared_at": _r(cleared[i]) if cleared[i] is not None else None,
            "jobs": int(here.sum()), **_figures(here, due, start, done, finished, ""),
            "baseline": "before" if base is before else "outside",
            "baseline_jobs": int(base.sum()),
            **_figures(base, due, start, done, finished, "baseline_")}
    return {"windows": out, "more": max(0, len(found) - MOST)}


def _figures(sel: np.ndarray, due: np.ndarray, start: np.ndarray, done: np.ndarray,
             finished: np.ndarray, prefix: str) -> dict[str, Any]:
    """The jobs of ``sel``: mean and longest start delay (of those that started), how many
    never started, and the mean from due to done (of those done)."""
    delay = (start - due)[sel]
    ran = delay[~np.isnan(delay)]
    to_done = (finished - due)[sel & done]
    return {f"{prefix}start_delay_mean": _r(float(ran.mean())) if len(ran) else None,
            f"{prefix}start_delay_max": _r(float(ran.max())) if len(ran) else None,
            f"{prefix}never_started": int(np.isnan(delay).sum()),
            f"{prefix}done_after_due_mean": _r(float(to_done.mean())) if len(to_done)
            else None}
