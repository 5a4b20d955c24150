"""The statistics of a steady state: the summary's figures over a window of the run.

A run starts from an empty table with nodes making their first polls, and a drained run ends
with the last jobs running on an emptying cluster: neither is the steady state a user means
to compare. A scenario's ``warmup`` and ``cooldown`` (``format/window_format.py``) leave them
out. The window is ``[warmup, end - cooldown]``, where ``end`` is the run's end (``until``,
or the instant a drained run drained; the run starts at 0). Over it, and only where a
warm-up or a cool-down is set, ``windowed`` replaces these figures of the summary:

- ``latency`` (``start_delay``, ``end_to_end``, ``by_priority``): the jobs **due** in the
  window (their first due time), and only those; ``end_to_end`` of those of them that were
  done; ``by_priority.<p>.jobs`` counts them (a class with none keeps its key, ``n: 0``);
- ``throughput_per_s``: the jobs done (their end) in the window, over its length;
- per node (``nodes.<name>``): ``executions`` (started in it), ``claims`` (locked in it),
  ``lost_races`` (of acquisitions made in it), ``time_down``, ``time_paused`` and
  ``time_up`` (the parts of the window), ``busy_thread_seconds`` (the parts of executions
  inside it) and ``busy_share`` (that over ``threads × time_up``).

Everything else stays the whole run's: the counts that say whether the run was correct
(``jobs.*``, ``executions``, ``failures``, duplicates, double acquisitions, completions,
crash recovery, the invariants), the named jobs' own figures, the services', the boundary
timers', the acquisition and poll counts (an idle node's counted polls have no instant, so
no window can take them) with a node's ``acquire_attempts``, and the idle-node detector
(``longest_idle_wait``, ``even_share``, ``idle_while_work_waited``), which judges the whole
run as the liveness check does. The summary's ``window`` says what was left out and how many
jobs counted; ``figures`` lists the windowed ones. A window the run never reached (a drained
run that ended within its warm-up and cool-down) counts no job: its latencies are ``n: 0``,
its throughput 0, the nodes' busy shares None (no time up in it), and ``window.empty`` says
so.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .effects import executions
from .history import Histories
from .metrics import _dist, _r, _span_ends
from ..base.trace import K, Trace
from ..executor.config import NodeConfig
from ..format.window_format import said

#: the figures a window replaces (``nodes.*`` for each node's)
FIGURES = ("latency", "throughput_per_s", "nodes.*.executions", "nodes.*.claims",
           "nodes.*.lost_races", "nodes.*.time_up", "nodes.*.time_down",
           "nodes.*.time_paused", "nodes.*.busy_thread_seconds", "nodes.*.busy_share")


def bounds(warmup: float, cooldown: float, end: float) -> tuple[float, float]:
    """The window ``(start, end)`` of a run that ended at ``end`` (empty if end < start)."""
    return float(warmup), float(end) - float(cooldown)


def _inside(t: np.ndarray, t0: float, t1: float) -> np.ndarray:
    return (t >= t0) & (t <= t1)


def _overlap(a: np.ndarray, b: np.ndarray, t0: float, t1: float) -> float:
    """The seconds of the spans ``[a, b)`` inside ``[t0, t1]``."""
    if t1 <= t0 or len(a) == 0:
        return 0.0
    return float((np.clip(b, t0, t1) - np.clip(a, t0, t1)).sum())


def windowed(s: dict[str, Any], trace: Trace, hist: Histories, *, warmup: float,
             cooldown: float, end_time: float, nodes: tuple[NodeConfig, ...] = ()) -> None:
    """Replace the windowed figures of the summary ``s`` in place and add its ``window``
    (see the module's docstring). Does nothing without a warm-up or a cool-down."""
    if not warmup and not cooldown:
        return
    t0, t1 = bounds(warmup, cooldown, end_time)
    length = max(0.0, t1 - t0)
    jobs = hist.table
    due = jobs["due"].to_numpy(dtype=float)
    counted = _inside(due, t0, t1)
    first = jobs["first_start"].to_numpy(dtype=float)
    end = jobs["end"].to_numpy(dtype=float)
    done = (jobs["outcome"] == "done").to_numpy()
    delay = first - due
    e2e = end - jobs["created"].to_numpy(dtype=float)
    counted_delays = pd.DataFrame({"p": jobs["priority"].to_numpy()[counted],
                                   "d": delay[counted]})
    groups = {str(int(p)): g["d"].to_numpy(dtype=float)
              for p, g in counted_delays.groupby("p", sort=True)}
    none = np.empty(0)
    by_priority = {key: {"jobs": int(len(groups.get(key, none))),
                         "start_delay": _dist(groups.get(key, none))}
                   for key in s["latency"]["by_priority"]}  # every class of the run
    s["latency"] = {"start_delay": _dist(delay[counted]),
                    "end_to_end": _dist(e2e[counted & done]), "by_priority": by_priority}
    finished = int((done & _inside(end, t0, t1)).sum())
    s["throughput_per_s"] = _r(finished / length) if length > 0 else (
        0.0 if not finished else None)
    _node_figures(s["nodes"], trace, nodes, t0, t1, end_time)
    s["window"] = {"warmup": _r(warmup), "cooldown": _r(cooldown), "start": _r(t0),
                   "end": _r(t1), "jobs_counted": int(counted.sum()),
                   "empty": bool(length <= 0), "figures": list(FIGURES)}


def _node_figures(figures: dict[str, dict[str, Any]], trace: Trace,
                  nodes: tuple[NodeConfig, ...], t0: float, t1: float, end: float) -> None:
    """Each node's windowed figures, in place (the spans as ``metrics.node_figures`` makes
    them: an execution ends at its exec_end, else its node's next crash, else the run's
    end; a node is down from a crash to its restart; paused to its resume or a crash)."""
    cols = trace.arrays()
    kind, node, time = cols["kind"], cols["node"], cols["time"]

    def rows(k: str) -> np.ndarray:
        return np.flatnonzero(kind == K[k])

    acq, locked = rows("acquire"), rows("locked")
    crashes, restarts = rows("node_crashed"), rows("node_restarted")
    paused, resumed = rows("node_paused"), rows("node_resumed")
    run_start, run_end, run_node, _ = executions(cols, end)  # the summary's own pairing
    threads = {c.name: c.executor.threads for c in nodes}
    length = max(0.0, t1 - t0)
    for code, name in enumerate(trace.nodes):
        if name not in figures:
            continue
        f = figures[name]
        here = run_node == code
        cut = crashes[node[crashes] == code]
        down = _span_ends(cut, restarts[node[restarts] == code], time, end)
        pause_at = paused[node[paused] == code]
        pause_end = _span_ends(pause_at, np.sort(np.concatenate(
            [resumed[node[resumed] == code], cut])), time, end)
        mine = acq[node[acq] == code]
        time_down = _overlap(time[cut], down, t0, t1)
        busy = _overlap(run_start[here], run_end[here], t0, t1)
        f["executions"] = int(_inside(run_start[here], t0, t1).sum())
        f["claims"] = int(_inside(time[locked[node[locked] == code]], t0, t1).sum())
        f["lost_races"] = int(cols["c"][mine][_inside(time[mine], t0, t1)].sum())
        f["time_down"] = _r(time_down)
        f["time_up"] = _r(length - time_down)
        f["time_paused"] = _r(_overlap(time[pause_at], pause_end, t0, t1))
        f["busy_thread_seconds"] = _r(busy)
        capacity = threads.get(name, 0) * (length - time_down)
        f["busy_share"] = _r(busy / capacity) if name in threads and capacity > 0 else None


def window_line(s: dict[str, Any]) -> str:
    """What a run's window left out, in words, for report.md ('' without a window)."""
    w = s.get("window")
    if not w:
        return ""
    parts = ([f"the first {said(w['warmup'])} (warm-up)"] if w["warmup"] else []) + \
        ([f"the last {said(w['cooldown'])} (cool-down)"] if w["cooldown"] else [])
    left = "Statistics leave out " + " and ".join(parts)
    if w["empty"]:
        return (f"{left}, but the run ended at {said(s['end_time'])}: nothing is left "
                f"between them, so no job counted and the windowed figures are empty (latency "
                f"n 0, busy share —). The job counts, duplicates and invariants are the whole "
                f"run's.")
    counted = (f"{w['jobs_counted']:,} of {s['jobs']['created']:,} jobs counted (those due "
               f"from {said(w['start'])} to {said(w['end'])})" if w["jobs_counted"] else
               f"no job was due from {said(w['start'])} to {said(w['end'])}, so none counted "
               f"and the latency figures are empty (n 0)")
    return (f"{left}: {counted}. Latency, throughput and the "
            f"nodes' executions, claims, lost races, times and busy share are the window's; "
            f"the job counts, duplicates, acquisitions, polls, invariants, the even shares "
            f"and the effects named above (lock-step, uneven work, load, saturation) are the "
            f"whole run's.")


def window_short(s: dict[str, Any]) -> str:
    """The window in one line of the printed summary ('' without one)."""
    w = s.get("window")
    if not w:
        return ""
    if w["empty"]:
        return (f"empty: the run ended at {said(s['end_time'])}, within warm-up "
                f"{said(w['warmup'])} + cool-down {said(w['cooldown'])}; no job counted")
    return (f"{w['jobs_counted']:,} of {s['jobs']['created']:,} jobs counted (due "
            f"{said(w['start'])} to {said(w['end'])}: warm-up {said(w['warmup'])}, "
            f"cool-down {said(w['cooldown'])} left out of latency, throughput and nodes)")


def counted_jobs(jobs: Any, s: dict[str, Any]) -> Any:
    """The rows of a jobs frame that a run's window counts (those due in it): the frame
    itself without a window, so that a plot of the whole run is drawn as before."""
    w = s.get("window")
    if not w:
        return jobs
    due = jobs["due"].to_numpy(dtype=float)
    return jobs[_inside(due, w["start"], w["end"])]
