"""The effects that decide a run's result without being a job's event: recognised from the
trace, reported as ``summary["effects"]`` and told in words by the report.

**Poll phases** (``poll_phases``). Nodes that poll on a fixed interval ``T`` each poll at a
phase of it. Phases drawn independently leave a job, due at a random instant, waiting
``T/(N+1)`` on average for the first of ``N`` nodes' polls; phases in lock-step leave it
``T/2``. A node whose claim comes back full polls again as soon as a thread frees, and
starts its interval anew there: it falls in just behind the node that emptied the table,
and with no jitter the phases drift together and stay together. The figure is the phases'
*spread*: the shortest arc of the interval that holds every node's phase (the phase of its
latest poll), sampled once an interval — about ``T (N−1)/(N+1)`` for independent phases, 0
in lock-step. The run is in ``lock_step`` when the spread over its last tenth is under a
quarter of the independent phases' (what is left is the claims' and runs' own time);
``from_start`` when the nodes' first polls were already so close. A node down (crashed) has
no phase. The polls decide the wait of a job that falls due with a thread free; one due
while every thread is busy waits for a thread as well: the mean start delay is given for
each (``start_delay_mean_free``, ``start_delay_mean_busy``, ``due_while_busy`` of them), the
first split at the first poll after each job fell due: the wait for it
(``wait_for_poll_free``, where lock-step must show too) and after it
(``wait_after_poll_free``), behind the rows a full claim took first.

**Imbalance** (``imbalance``). Each node's executions against its even share (its threads ×
time up, among the nodes that handle the job: ``nodes.<n>.even_share``). Phases that stay
apart but uneven decide the shares when jobs are short: whoever polls first after a job
falls due takes it, so a node's share follows the gap of the cycle before its polls
(``gap_share``, over the run: phases a full claim shifts move it). Nodes that poll at
different intervals have no phases to compare; there each node's share follows how often
its poll was the first after a job fell due (``first_poll_share``, beside each node's
``poll_interval``), as long as it had a thread free.

**Load** (``load``): ``offered.py``.

**Saturation** (``saturation``). The time every thread that was up was busy with a due job
waiting (the backlog), the longest such span and the most jobs waiting in it.

**Queue-full waits** (``queue_full``), **local queues** (``local_queues``): ``intake.py``.
**Fault windows** (``faults``): ``fault_windows.py``.

Pure functions of the trace, the jobs and the nodes' settings; no Python object per event.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np
import pandas as pd

from ..base.trace import K
from ..executor.config import NodeConfig
from .fault_windows import (KINDS, delaying, due_in, fault_windows, surplus_in, windows_of,
                            with_backlog)
from .intake import group_queue_full_waits, queue_waits, queued_by_priority
from .offered import load
from .phases import (_gaps_before, _largest_gap, _live, claims, first_pollers,
                     first_polls as _first_polls, node_sets, phase_series, runs_it, split,
                     together)
from .short_claims import short_claims
from .saturation import busy_levels, room_by_handler, rounded as _r, saturation, waits_of

#: a run's spread of phases under this share of independent phases' is lock-step (what is
#: left of it is the claims' and runs' own time, which does not shrink with the interval)
LOCK_STEP = 0.25
#: a node beyond this multiple of its even share (or under its inverse) is out of balance
IMBALANCE = 1.5
#: a node's share of the executions this close to its share of the poll cycle is explained
FIT = 0.1


#: the last trace's executions (its time column, weakly; its end; the result), asked twice
_LAST: list[Any] = []


def executions(cols: dict[str, np.ndarray], end: float) -> tuple[np.ndarray, ...]:
    """Each execution's (start, end, node, job), an end missing (a crash, the run's end)
    being the run's end: the busy time of its thread as far as the trace tells it."""
    if _LAST and _LAST[0]() is cols["time"] and _LAST[1] == end:
        return _LAST[2]
    out = _executions(cols, end)
    _LAST[:] = [weakref.ref(cols["time"], lambda _: _LAST.clear()), end, out]
    return out


def _executions(cols: dict[str, np.ndarray], end: float) -> tuple[np.ndarray, ...]:
    kind = cols["kind"]
    starts, ends = np.flatnonzero(kind == K["exec_start"]), np.flatnonzero(kind == K["exec_end"])
    span = np.int64(int(cols["attempt"].max()) + 1) if len(cols["attempt"]) else np.int64(1)
    key = cols["job"].astype(np.int64) * span + cols["attempt"]
    stop = np.full(len(starts), float(end))
    crash = np.flatnonzero(kind == K["node_crashed"])
    if len(ends):
        order = np.argsort(key[ends], kind="stable")
        keys = key[ends][order]
        i = np.minimum(np.searchsorted(keys, key[starts]), len(ends) - 1)
        hit = keys[i] == key[starts]
        stop[hit] = cols["time"][ends[order][i[hit]]]
    else:
        hit = np.zeros(len(starts), bool)
    open_ = np.flatnonzero(~hit)
    for code in np.unique(cols["node"][crash]):  # cut short: its node's next crash, if any
        mine = open_[cols["node"][starts[open_]] == code]
        theirs = crash[cols["node"][crash] == code]
        i = np.searchsorted(theirs, starts[mine])
        cut = i < len(theirs)
        stop[mine[cut]] = cols["time"][theirs[i[cut]]]
    return cols["time"][starts], stop, cols["node"][starts], cols["job"][starts]


# --- poll phases and imbalance ----------------------------------------------------------------

def poll_phases(cols: dict[str, np.ndarray], names: list[str], nodes: tuple[NodeConfig, ...],
                end: float, start_delay_mean: float | None,
                waits: tuple[float | None, float | None, int] = (None, None, 0),
                room: tuple[np.ndarray, ...] | None = None, acq: np.ndarray | None = None
                ) -> dict[str, Any] | None:
    """The nodes' poll phases (see the module's docstring), or None where they mean nothing:
    fewer than two polling nodes, intervals that differ, a fake clock, under ten intervals.
    ``waits``: ``saturation.waits_of`` — the polls decide only the waits of jobs that fell due
    with a thread free; ``room``: those jobs' due instants, first starts and handlers, whose
    wait is split at the first poll after they fell due (``_first_polls``); ``acq``: the
    claims on the job table (``phases.claims``)."""
    acq = claims(cols) if acq is None else acq
    series = phase_series(cols, names, nodes, end, acq)
    if series is None:
        return None
    _, phase, polling, T = series
    live = _live(phase)  # a node down (crashed) has no phase: the live nodes' spread
    spread = T - _largest_gap(live, T)
    spread[np.isnan(phase).sum(axis=1) > phase.shape[1] - 2] = np.nan  # under two live
    tenth = max(1, len(spread) // 10)
    last = float(np.nanmedian(spread[-tenth:])) if (~np.isnan(spread[-tenth:])).any() \
        else math.nan
    acq_node, acq_time = cols["node"][acq], cols["time"][acq]
    firsts = np.array([acq_time[acq_node == names.index(n)][0] % T
                       for n in polling])  # each node's first poll: the phases it started at
    first = float(T - _largest_gap(firsts[None, :], T)[0])
    n = len(polling)
    jitter, queued = (max(getattr(c.executor, k) for c in nodes if c.name in polling)
                      for k in ("poll_jitter", "queue_size"))
    independent = T * (n - 1) / (n + 1)
    free, busy, n_busy = waits
    decided = start_delay_mean if not n_busy else free
    to_poll, after, polled, full, settled = _first_polls(
        cols, acq, [names.index(p) for p in polling], nodes, names, room, T)
    shown = to_poll if to_poll is not None else decided  # the wait must show lock-step too
    out = {"interval": T, "nodes": n, "jitter": jitter,
           "spread_start": _r(first), "spread_end": _r(last),
           "spread_independent": _r(independent),
           "lock_step": bool(last < LOCK_STEP * independent and (
               shown is None or shown >= 1.25 * T / (n + 1))),
           "from_start": bool(first < LOCK_STEP * independent),  # pinned, or drawn close
           "start_delay_mean": _r(start_delay_mean) if start_delay_mean is not None else None,
           # the waits the polls decide (due with a thread free), and the others'
           "start_delay_mean_free": _r(decided), "start_delay_mean_busy": _r(busy),
           "due_while_busy": n_busy, "queue_size": queued,  # the largest local queue
           "start_delay_independent": _r(T / (n + 1)), "start_delay_lock_step": _r(T / 2),
           # the first split at the first poll after each job fell due
           "wait_for_poll_free": _r(to_poll), "wait_after_poll_free": _r(after),
           "polled_free": _r(polled), "first_poll_full_free": _r(full),
           # of them, those that started within an interval of that poll: the polls'
           "started_by_poll_free": _r(settled)}
    # nodes at one phase though the whole was not in lock-step: they poll as one
    out["together"] = [] if out["lock_step"] else together(phase, polling, T)
    out["phases_apart"] = n - sum(len(g) - 1 for g in out["together"])
    # what their claims met: those that failed on a conflict, and the rows lost to another
    mine = np.isin(acq_node, [names.index(x) for g in out["together"] for x in g])
    out["together_conflicts"] = int(cols["attempt"][acq][mine].sum())
    out["together_lost"] = int(cols["c"][acq][mine].sum())
    # the share of the cycle before each node's polls, over the run (as its work is counted)
    gaps = _gaps_before(live, T).mean(axis=0) / T
    out["gap_share"] = {name: _r(g) for name, g in sorted(zip(polling, gaps))}
    return out


def _group_phases(cols: dict[str, np.ndarray], names: list[str], nodes: tuple[NodeConfig, ...],
                  end: float, mean: float | None, room: tuple[np.ndarray, ...],
                  acq: np.ndarray, used: set[str]) -> dict[str, Any] | None:
    """``poll_phases`` of the nodes that compete for the same rows (``phases.node_sets``):
    the cluster's, or where its nodes split the handlers (``used``: those with jobs), of
    each set that alone runs some (and has phases to speak of), over its own jobs: the one
    that ran the most first, with the others in ``other_sets``; with the set's polling nodes
    (``group``) and handlers (``handlers``), both None for the whole cluster."""
    found = []
    for group, hs, mine in node_sets(nodes, used, room[3]):
        d, s, b, h = room if mine is None else (r[mine] for r in room)
        out = poll_phases(cols, names, group, end, mean if hs is None else
                          float((s - d).mean()), waits_of((d, s, b, h)),
                          (d[~b], s[~b], h[~b]), acq)
        if out is not None:
            found.append(out | {"group": None if hs is None else [
                n.name for n in group if n.name in names and n.executor.wakeup == "poll"],
                "handlers": None if hs is None else list(hs)})
    return found[0] | {"other_sets": found[1:]} if found else None


def imbalance(node_figures: dict[str, dict[str, Any]], phases: dict[str, Any] | None,
              full_claims: int, intervals: dict[str, float] | None = None,
              pollers: dict[str, float] | None = None) -> dict[str, Any] | None:
    """The nodes' executions against their even shares, and what explains the spread: the
    poll phases, when each node's share of the executions is within ``FIT`` of its share of
    the cycle before its polls (``full_claims``: claims that came back full, which move a
    node's phase); or, for nodes that poll at different ``intervals`` (no phases to speak
    of), their polls' pace, when each node's share is within ``FIT`` of its share of the
    jobs whose first poll after they fell due was its (``pollers``, ``first_pollers``)."""
    shares = {n: (f["executions"], f.get("even_share")) for n, f in node_figures.items()
              if f.get("even_share")}
    total = sum(e for e, _ in shares.values())
    if len(shares) < 2 or total < 20 * len(shares):
        return None
    ratio = {n: e / even for n, (e, even) in shares.items()}
    most = max(sorted(ratio), key=lambda n: ratio[n])
    least = min(sorted(ratio), key=lambda n: ratio[n])
    out: dict[str, Any] = {
        "most": most, "most_executions": shares[most][0], "most_even": _r(shares[most][1]),
        "least": least, "least_executions": shares[least][0],
        "least_even": _r(shares[least][1]),
        "imbalanced": bool(ratio[most] >= IMBALANCE or ratio[least] <= 1 / IMBALANCE) and
        max(abs(e - even) for e, even in shares.values()) >= max(10.0, 0.1 * total / len(shares)),
        "why": None, "full_claims": int(full_claims),
        "poll_interval": dict(sorted(intervals.items())) if pollers and intervals else None,
        "first_poll_share": {n: _r(x) for n, x in sorted(pollers.items())}
        if pollers and intervals else None, "window": None}
    if out["imbalanced"] and phases and not phases["lock_step"]:
        gap = phases["gap_share"]
        ran = sum(shares[n][0] for n in gap if n in shares)
        if ran and all(n in shares and abs(shares[n][0] / ran - gap[n]) <= FIT
                       for n in (most, least) if n in gap) and most in gap and least in gap:
            out["why"] = "poll_phases"
    elif out["imbalanced"] and pollers and intervals:
        ran = sum(shares[n][0] for n in pollers if n in shares)
        if ran and all(n in shares and n in pollers and
                       abs(shares[n][0] / ran - pollers[n]) <= FIT for n in (most, least)):
            out["why"] = "poll_intervals"
    return out


def _paces(cols: dict[str, np.ndarray], names: list[str], nodes: tuple[NodeConfig, ...],
           acq: np.ndarray, due: np.ndarray) -> tuple[dict[str, float] | None, ...]:
    """Where every node polls, at intervals that differ, all for the same rows: each one's
    interval and its share of the jobs due at ``due`` (those due with a thread free) whose
    first poll after they fell due was its (``first_pollers``); (None, None) otherwise."""
    up = [n for n in nodes if n.name in names]
    if len(up) < 2 or any(n.executor.wakeup != "poll" for n in up) or split(nodes) or \
            len({n.executor.poll_interval for n in up}) < 2 or len(due) < 20 or \
            (cols["kind"] == K["tick"]).any():
        return None, None
    shares = first_pollers(cols, acq, names, due)
    return ({n.name: n.executor.poll_interval for n in up},
            None if shares is None else {n.name: shares[n.name] for n in up})


# --- load, starvation and saturation ----------------------------------------------------------

def _feeders(imb: dict[str, Any], node_figures: dict[str, Any], windows: list[dict[str, Any]],
             runs: tuple[np.ndarray, ...], cols: dict[str, np.ndarray], names: list[str],
             queues: dict[str, Any] | None) -> None:
    """What fed the busiest node beyond its share, weighed over the poll phases (which fit a
    node's share within ``FIT`` only by the way): a service window whose fast failures it
    took (``fault_window``, its figures in ``window``), else its own local queue, where that
    held its rows a run or more (``local_queue``: it claims for the queue beside its
    threads)."""
    even = sum((f.get("even_share") or 0.0) for f in node_figures.values())
    imb["window"] = surplus_in(windows, runs, cols, names, imb["most"],
                               imb["most_even"] / even if even else 0.0,
                               imb["most_executions"] - imb["most_even"])
    mine = ((queues or {}).get("by_node") or {}).get(imb["most"])
    if imb["window"]:
        imb["why"] = "fault_window"
    elif mine and (mine["queued_mean"] or 0.0) >= (queues["run_mean"] or math.inf):
        imb["why"] = "local_queue"


def detect(cols: dict[str, np.ndarray], names: list[str], jobs: pd.DataFrame,
           nodes: tuple[NodeConfig, ...], end: float, figures: dict[str, Any],
           texts: list[str] | None = None) -> dict[str, Any]:
    """``summary["effects"]``: each detector's figures (an entry is None where its effect
    means nothing in this run). ``figures``: the summary so far (its nodes and latency);
    ``texts``: the trace's (a timer loop's claims are told apart by theirs)."""
    runs, acq = executions(cols, end), claims(cols, texts)
    mean = figures["latency"]["start_delay"].get("mean")
    threads_of = {names.index(n.name): n.executor.threads for n in nodes if n.name in names}
    threads = sum(threads_of.values())
    levels = busy_levels(jobs, runs, threads, end)
    room = room_by_handler(jobs, runs, end, threads_of, lambda h: runs_it(nodes, names, h),
                           levels)
    windows = with_backlog(windows_of(cols, texts or [], names, end),
                           jobs["due"].to_numpy(dtype=float),
                           jobs["first_start"].to_numpy(dtype=float))
    # the polls' own waits: a slow or cut-off database's are its own, a costly down time's
    slowed = due_in(room[0], delaying(windows, room[0], float((runs[1] - runs[0]).mean()) if len(
        runs[0]) else 0.0, {names[c]: t for c, t in threads_of.items()}, end), KINDS, end, True)
    if slowed.any():
        room = tuple(r[~slowed] for r in room)
        mean = float((room[1] - room[0]).mean()) if len(room[0]) else None
    used = set(jobs["handler"].astype(str).tolist())
    phases = _group_phases(cols, names, nodes, end, mean, room, acq, used)
    aging = nodes[0].executor.aging_rate if nodes and nodes[0].executor.order == "aging" else 0.0
    full = int((cols["b"][acq] == cols["a"][acq]).sum())  # the job table's claims (not timers)
    paces = _paces(cols, names, nodes, acq, room[0][~room[2]]) if phases is None else ()
    imb = imbalance(figures["nodes"], phases, full, *paces)
    queues = queue_waits(cols, names, nodes, runs, jobs)
    if imb and imb["imbalanced"] and imb["why"] in (None, "poll_phases"):
        _feeders(imb, figures["nodes"], windows, runs, cols, names, queues)
    return {"poll_phases": phases, "imbalance": imb,
            "load": load(jobs, runs, figures["nodes"], aging, end),
            "saturation": saturation(levels, threads, end) if len(runs[0]) else None,
            "queue_full": group_queue_full_waits(cols, names, nodes, runs, figures["nodes"],
                                                 acq, jobs),
            "local_queues": queues,
            "queued_by_priority": queued_by_priority(cols, names, nodes, jobs),
            "short_claims": short_claims(cols, names, nodes, jobs, acq, windows, end,
                                         texts),
            "faults": fault_windows(cols, texts or [], jobs, end, windows, names)}
