"""What a fault window did to the jobs due in it (``summary["effects"]["faults"]``): a
slow database, a node cut off from it (partition), a node down, a service down or browned
out. Each window is read from the trace (``db_slowed``, ``partition``, ``node_crashed`` and
``node_restarted``, ``service_state``), from the
instant it began to the instant it ended (or the run's end), and the jobs due in it are
held against those due before it, outside every window and the backlog a slow or cut-off
database left (all those outside, where under ``BEFORE`` were due before it): their mean
and longest start delay, how many were done and their mean time from due to done; with the
executions that failed in it (a slow database, a partition) or the calls to the service
made in it that failed (an outage, a brown-out: only the jobs that call that service are
counted). A window still open at the run's end takes in its last instant. A crashed
node's downtime is a window too (``down``, from ``node_crashed`` to ``node_restarted``):
the jobs due in it wait for fewer threads; what its crash did to the jobs it held (stranded,
run again) is told where the report names its cause, as a pause's is. So is a paused node's
stall (``pause``, from ``node_paused`` to ``node_resumed``): its threads are held, not
gone, and the jobs due meanwhile wait for the others'.

A slow or cut-off database's cost, or a node's downtime's, can outlast it: jobs due after
it wait behind the backlog it left, until ``cleared_at``: the first instant a job fell due
with no more jobs waiting than ever waited as one fell due before the window (at least
itself).

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
#: the kinds of window that can leave a backlog (``cleared_at``): fewer rows or threads
BACKLOG = ("slow_db", "partition", "down", "pause")


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
    ``down``, ``pause``, ``outage``, ``brownout``), what (the node or the service; None for
    the database), from, to, the largest and the smallest latency factor in it (slow
    database, brown-out) and the largest share of calls answered with an error (brown-out)."""
    kind, time, x = cols["kind"], cols["time"], cols["x"]
    out: list[dict[str, Any]] = []
    slow = np.flatnonzero(kind == K["db_slowed"])
    # (a database whose claims took no time in a window was slowed in nothing: not one)
    lat = x[kind == K["acquire"]], time[kind == K["acquire"]]
    for t0, t1, k in _spans(time[slow], x[slow] != 1.0, end):
        inside = (lat[1] >= t0) & (lat[1] < t1)
        if inside.any() and not np.nan_to_num(lat[0][inside]).any():
            continue
        out.append({"kind": "slow_db", "what": None, "from": t0, "to": t1,
                    "factor": float(x[slow][k].max()), "factor_min": float(x[slow][k].min()),
                    "error_share": None})
    cut = np.flatnonzero(kind == K["partition"])
    for code in np.unique(cols["node"][cut]).tolist():
        mine = cut[cols["node"][cut] == code]
        for t0, t1, _ in _spans(time[mine], cols["a"][mine] == 1, end):
            out.append({"kind": "partition", "what": names[code], "from": t0, "to": t1,
                        "factor": None, "factor_min": None, "error_share": None})
    crashed, back = kind == K["node_crashed"], kind == K["node_restarted"]
    for code in np.unique(cols["node"][crashed]).tolist():
        mine = np.flatnonzero((crashed | back) & (cols["node"] == code))
        for t0, t1, _ in _spans(time[mine], crashed[mine], end):
            out.append({"kind": "down", "what": names[code], "from": t0, "to": t1,
                        "factor": None, "factor_min": None, "error_share": None})
    paused, woke = kind == K["node_paused"], kind == K["node_resumed"]
    for code in np.unique(cols["node"][paused]).tolist():  # a stall holds its threads too
        mine = np.flatnonzero((paused | woke) & (cols["node"] == code))
        for t0, t1, _ in _spans(time[mine], paused[mine], end):
            out.append({"kind": "pause", "what": names[code], "from": t0, "to": t1,
                        "factor": None, "factor_min": None, "error_share": None})
    state = np.flatnonzero(kind == K["service_state"])
    for code in np.unique(cols["text"][state]).tolist():
        mine = state[cols["text"][state] == code]
        a = cols["a"][mine]
        for which, level in (("outage", 1), ("brownout", 2)):
            for t0, t1, k in _spans(time[mine], a == level, end):
                brown = level == 2
                out.append({"kind": which, "what": texts[code], "from": t0, "to": t1,
                            "factor": float(x[mine][k].max()) if brown else None,
                            "factor_min": float(x[mine][k].min()) if brown else None,
                            "error_share": float(cols["c"][mine][k].max()) / 1e6
                            if brown else None})
    return sorted(out, key=lambda w: (w["from"], w["kind"], w["what"] or ""))


def waiting_at(due: np.ndarray, start: np.ndarray, at: np.ndarray) -> np.ndarray:
    """How many jobs were due and not yet started at each instant of ``at`` (a job that
    never started waits to the end; one falling due at the instant counts)."""
    d = np.sort(due)
    s = np.sort(np.where(np.isnan(start), np.inf, start))
    return np.searchsorted(d, at, side="right") - np.searchsorted(s, at, side="right")


def cleared_at(due: np.ndarray, start: np.ndarray, windows: list[dict[str, Any]]
               ) -> list[float | None]:
    """Per window, for a slow database or a partition, the first instant from its end on
    at which a job fell due with no more jobs waiting than ever waited as one fell due
    before the window, and at least itself (see the module's docstring): the backlog it
    left was gone. None for the other kinds, and where it never cleared."""
    order = np.sort(due)
    waits = waiting_at(due, start, order)
    highest = np.maximum.accumulate(waits) if len(waits) else waits
    out: list[float | None] = []
    for w in windows:
        if w["kind"] not in BACKLOG:
            out.append(None)
            continue
        i = int(np.searchsorted(order, w["from"], side="left"))
        level = max(1, int(highest[i - 1]) if i else 0)
        j = _first_at_most(waits, int(np.searchsorted(order, w["to"], side="left")), level)
        out.append(float(order[j]) if j is not None else None)
    return out


def _first_at_most(values: np.ndarray, i: int, level: int) -> int | None:
    """The first index from ``i`` on whose value is at most ``level``: looked for in
    growing stretches, a backlog clearing soon after its window in the usual run."""
    step = 64
    while i < len(values):
        hit = np.flatnonzero(values[i:i + step] <= level)
        if len(hit):
            return i + int(hit[0])
        i, step = i + step, step * 4
    return None


def with_backlog(windows: list[dict[str, Any]], due: np.ndarray, start: np.ndarray
                 ) -> list[dict[str, Any]]:
    """``windows`` with each one's ``cleared_at`` (``cleared_at``; None for a service's)."""
    if not any(w["kind"] in BACKLOG for w in windows):
        return [w | {"cleared_at": None} for w in windows]  # (no backlog to read: no sort)
    return [w | {"cleared_at": c} for w, c in zip(windows, cleared_at(due, start, windows))]


def due_in(due: np.ndarray, windows: list[dict[str, Any]], kinds: tuple[str, ...],
           end: float, backlog: bool = False) -> np.ndarray:
    """Which of the instants ``due`` fall in a window of ``kinds`` (``windows_of``'s; one
    open at the run's ``end`` takes in that instant), or, with ``backlog``, in it or the
    backlog it left (``with_backlog``'s windows: to ``cleared_at``, or the end)."""
    spans = sorted((w["from"], _until(w, end, backlog)) for w in windows if w["kind"] in kinds)
    if not spans:
        return np.zeros(len(due), dtype=bool)
    starts = np.array([a for a, _ in spans])
    ends = np.maximum.accumulate(np.array([b for _, b in spans]))  # merged: the latest end
    i = np.searchsorted(starts, due, side="right") - 1
    return (i >= 0) & (due < ends[np.maximum(i, 0)])


def paid(mean: float | None, base: float | None) -> bool:
    """Whether the jobs due in a node's down time paid for it: they started later than
    those of the baseline by half again and a second (the others may have had the threads
    to spare), or the figures to say otherwise are missing."""
    return mean is None or base is None or (mean >= 1.5 * base and mean >= base + 1.0)


def delaying(windows: list[dict[str, Any]], due: np.ndarray, run_mean: float,
             threads: dict[str, int], end: float) -> list[dict[str, Any]]:
    """The windows whose jobs' waits are theirs, not the polls': a slow or cut-off
    database's, and a node's down time that left the others short of threads (the jobs due
    in it asked for ``NEEDED`` or more of the threads still up, at ``run_mean`` seconds a
    run; ``threads``: each node's). A down time the others had the threads for leaves the
    waits to the polls (two survivors drifting into lock-step, say)."""
    out = []
    for w in windows:
        if w["kind"] in ("slow_db", "partition"):
            out.append(w)
        elif w["kind"] in ("down", "pause"):
            to = _until(w, end, False)
            span = min(to, end) - w["from"]
            up = sum(threads.values()) - threads.get(w["what"], 0)
            asked = ((due >= w["from"]) & (due < to)).sum() / span * run_mean if span > 0 \
                else 0.0
            if up <= 0 or asked >= NEEDED * up:
                out.append(w)
    return out


#: a down time whose jobs asked for this share of the threads still up leaves their waits
#: to the threads, not the polls
NEEDED = 0.8


def _until(w: dict[str, Any], end: float, backlog: bool) -> float:
    """A window's end as ``due_in`` takes it: past the run's end for one open at it (an
    instant at the end is in it), at ``cleared_at`` or the end with ``backlog``."""
    to = w["to"]
    if backlog and w["kind"] in BACKLOG:
        to = end if w.get("cleared_at") is None else max(to, w["cleared_at"])
    return np.inf if to >= end else to


def fault_windows(cols: dict[str, np.ndarray], texts: list[str], jobs: pd.DataFrame,
                  end: float, windows: list[dict[str, Any]], names: list[str] | None = None
                  ) -> dict[str, Any] | None:
    """``summary["effects"]["faults"]``: each window (``with_backlog``'s, the first
    ``MOST``; ``names``: the trace's nodes) by its number, with the jobs due in it and their
    figures beside their
    baseline's (see the module's docstring); ``more``: the windows beyond those, counted
    only. None where the run had none."""
    if not windows:
        return None
    due = jobs["due"].to_numpy(dtype=float)
    start = jobs["first_start"].to_numpy(dtype=float)
    done = (jobs["outcome"] == "done").to_numpy()
    dead = (jobs["outcome"] == "dead_lettered").to_numpy()
    finished = jobs["end"].to_numpy(dtype=float)
    ids = jobs["id"].to_numpy()
    inside_any = due_in(due, windows, KINDS, end, backlog=True)
    kind, time = cols["kind"], cols["time"]
    failed_at = time[(kind == K["exec_end"]) & (cols["a"] == 0)]
    out: dict[str, Any] = {}
    for i, w in enumerate(windows[:MOST]):
        to = _until(w, end, False)
        here = (due >= w["from"]) & (due < to)
        callers, failed, took = _service(cols, texts, w, to) \
            if w["kind"] in ("outage", "brownout") else \
            (None, int(((failed_at >= w["from"]) & (failed_at < to)).sum()), None)
        if callers is not None:  # only the jobs that call the service
            mine = np.isin(ids, callers)
            here &= mine
        before = ~inside_any & (due < w["from"]) & (mine if callers is not None else True)
        others = ~inside_any & (mine if callers is not None else True)
        base = before if before.sum() >= BEFORE else others
        c = w.get("cleared_at")
        out[str(i + 1)] = {
            **{k: (_r(v) if isinstance(v, float) else v) for k, v in w.items()
               if k != "cleared_at"},
            "failed_executions" if callers is None else "failed_calls": failed,
            # how long a failed call held its caller's thread, on average (None: no answer)
            **({} if callers is None else {"failed_call_mean": took}),
            **(_lost_completions(cols, texts, names or [], w, to, jobs)
               if w["kind"] == "partition" else {}),
            "cleared_at": _r(c) if c is not None else None,
            "jobs_after": int((due >= to).sum()),  # due after it (behind its backlog, maybe)
            "jobs": int(here.sum()), **_figures(here, due, start, done, finished, ""),
            # its jobs whose retries ran out: how many, and when the last of them did
            "dead_lettered": int((here & dead).sum()),
            "dead_lettered_last": _r(float(finished[here & dead].max()))
            if (here & dead).any() else None,
            "baseline": "before" if base is before else "outside",
            "baseline_jobs": int(base.sum()),
            **_figures(base, due, start, done, finished, "baseline_"),
            # the other windows its jobs were due in too: by number, how many of them
            # (only the windows whose spans meet: a pass over the jobs for each of those)
            "overlaps": {str(j + 1): n for j, o in enumerate(windows[:MOST]) if j != i and
                         o["from"] < to and w["from"] < _until(o, end, False) and (
                n := int((here & (due >= o["from"]) & (due < _until(o, end, False))).sum()))}}
    return {"windows": out, "more": max(0, len(windows) - MOST)}


#: the kinds of window told (``windows_of``)
KINDS = ("slow_db", "partition", "down", "pause", "outage", "brownout")


def _lost_completions(cols: dict[str, np.ndarray], texts: list[str], names: list[str],
                      w: dict[str, Any], to: float, jobs: pd.DataFrame) -> dict[str, Any]:
    """A partition's completions that failed (the node had run the job to its end and could
    not write it): how many, and the mean from due to done of their jobs, which stayed
    locked by the cut-off node until their locks expired or were released."""
    if "complete" not in texts or w["what"] not in names:
        return {"lost_completions": 0, "lost_done": 0, "lost_done_after_due_mean": None}
    kind, t = cols["kind"], cols["time"]
    lost = (kind == K["statement_failed"]) & (cols["text"] == texts.index("complete")) & \
        (cols["node"] == names.index(w["what"])) & (t >= w["from"]) & (t < to) & \
        (cols["job"] >= 0)
    ids = np.unique(cols["job"][lost])
    mine = jobs[jobs["id"].isin(ids) & (jobs["outcome"] == "done")]
    after = (mine["end"] - mine["due"]).to_numpy(dtype=float)
    return {"lost_completions": int(len(ids)), "lost_done": int(len(mine)),
            "lost_done_after_due_mean": _r(float(after.mean())) if len(after) else None}


def _service(cols: dict[str, np.ndarray], texts: list[str], w: dict[str, Any], to: float
             ) -> tuple[np.ndarray, int, float | None]:
    """The jobs that called a window's service (ever), how many of the calls made to it in
    the window failed (answered with its error, timed out, refused at its capacity, or
    never answered: the ok answers, a replay of one, and a call its rate limiter held back,
    which never reached it, are not), and the mean time from such a call to its
    failed answer: how long it held its caller's thread (None where none was answered)."""
    code = texts.index(w["what"])
    kind, text = cols["kind"], cols["text"]
    calls = np.flatnonzero((kind == K["service_call"]) & (text == code))
    replies = np.flatnonzero((kind == K["service_reply"]) & (text == code))
    answered_ok = np.isin(cols["a"][replies], (0, 7))
    # a call its own rate limiter refused (429) never reached the service: not its failure
    ok = cols["b"][replies][answered_ok | (cols["a"][replies] == 4)]
    t = cols["time"][calls]
    made = calls[(t >= w["from"]) & (t < to)]
    failed = cols["b"][made][~np.isin(cols["b"][made], ok)]
    took = cols["x"][replies][~answered_ok & np.isin(cols["b"][replies], failed)]
    return (np.unique(cols["job"][calls]), int(len(failed)),
            _r(float(took.mean())) if len(took) else None)


def _figures(sel: np.ndarray, due: np.ndarray, start: np.ndarray, done: np.ndarray,
             finished: np.ndarray, prefix: str) -> dict[str, Any]:
    """The jobs of ``sel``: mean and longest start delay (of those that started), how many
    never started, how many were done, and the mean from due to done (of those done)."""
    delay = (start - due)[sel]
    ran = delay[~np.isnan(delay)]
    to_done = (finished - due)[sel & done]
    return {f"{prefix}start_delay_mean": _r(float(ran.mean())) if len(ran) else None,
            f"{prefix}start_delay_max": _r(float(ran.max())) if len(ran) else None,
            f"{prefix}never_started": int(np.isnan(delay).sum()),
            f"{prefix}done": int((sel & done).sum()),
            f"{prefix}done_after_due_mean": _r(float(to_done.mean())) if len(to_done)
            else None}


def surplus_in(windows: list[dict[str, Any]], runs: tuple[np.ndarray, ...],
               cols: dict[str, np.ndarray], names: list[str], most: str, share: float,
               surplus: float) -> dict[str, Any] | None:
    """The service window (outage, brown-out) whose executions make half or more of node
    ``most``'s ``surplus`` over its even share (``share``: its even share of all the
    executions): the executions started in it, ``most``'s of them and how many of those
    failed; None where no window does. Calls that fail at once free their threads at once,
    and a node whose claim came back full claims again as soon as one frees: the node that
    took the first rows of the window may take them all."""
    if most not in names or surplus <= 0:
        return None
    code = names.index(most)
    ends = cols["kind"] == K["exec_end"]
    for w in windows:
        if w["kind"] not in ("outage", "brownout"):
            continue
        inside = (runs[0] >= w["from"]) & (runs[0] < w["to"])
        mine = int((inside & (runs[2] == code)).sum())
        if mine - share * int(inside.sum()) < 0.5 * surplus:
            continue
        failed = ends & (cols["node"] == code) & (cols["a"] != 1) & \
            (cols["time"] >= w["from"]) & (cols["time"] <= w["to"])
        return {"kind": w["kind"], "what": w["what"], "from": _r(w["from"]),
                "to": _r(w["to"]), "executions": int(inside.sum()), "most": mine,
                "most_failed": int(failed.sum())}
    return None
