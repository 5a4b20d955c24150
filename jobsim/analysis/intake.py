"""**Queue-full waits** (``queue_full_waits``): a polling node with a local queue whose claim
fills it claims again only after ``queue_full_wait``, whatever its threads do meanwhile.
Where its queue runs dry sooner, its threads sit idle for the rest of the wait while due rows
wait in the table, and a stream above what the node so takes in builds a backlog that grows
as long as it lasts (three nodes, a queue of 10 and 4 threads of 500 ms each, a 5 s wait:
14 jobs a node per 5 s, 8.4/s, against 10/s arriving; jobs waited a median 26-33 s).

A queue-full wait is read from the trace as a node's claim on the job table that came back
full followed by its next claim no sooner than ``queue_full_wait`` later (after a full claim
that left room, a node claims again at once; a gap the node crashed, was paused or had a
statement fail in is not one). Counted are the waits whose next claim came back full too,
due rows having waited all along; the figure is the node's thread-seconds idle in them,
against the thread-seconds of the capped nodes' time up.

**Local queues** (``queue_waits``): how long jobs waited in the local queue of the node
whose claim took them, and how many threads the other nodes that run their handler had idle
meanwhile: rows a node holds for its own threads, the others cannot run.

Pure functions of the trace and the nodes' settings; no Python object per event.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..base.trace import K
from ..executor.config import NodeConfig
from ..format.lint_polls import intake_of, queue_capped as capped
from .phases import _groups, node_sets
from .saturation import rounded as _r


def group_queue_full_waits(cols: dict[str, np.ndarray], names: list[str],
                           nodes: tuple[NodeConfig, ...], runs: tuple[np.ndarray, ...],
                           node_figures: dict[str, dict[str, Any]], acq: np.ndarray,
                           jobs: pd.DataFrame) -> dict[str, Any] | None:
    """``queue_full_waits`` of the nodes that compete for the same rows
    (``phases.node_sets``): the cluster's, or where its nodes split the handlers, of the set
    that alone runs the most jobs and has such waits, over its own runs and jobs; with the
    set's nodes (``group``) and handlers (``handlers``), both None for the whole cluster."""
    handler = jobs["handler"].astype(str).to_numpy()
    due = jobs["due"].to_numpy(dtype=float)
    for group, hs, mine in node_sets(nodes, set(handler.tolist()), handler):
        if hs is None:
            out = queue_full_waits(cols, names, nodes, runs, node_figures, acq)
        else:
            own = np.isin(runs[2], [names.index(n.name) for n in group if n.name in names])
            out = queue_full_waits(cols, names, group, tuple(r[own] for r in runs),
                                   node_figures, acq, np.sort(due[mine]))
        if out is not None:
            return out | {"group": None if hs is None else
                          [n.name for n in group if n.name in names],
                          "handlers": None if hs is None else list(hs)}
    return None


def queue_full_waits(cols: dict[str, np.ndarray], names: list[str],
                     nodes: tuple[NodeConfig, ...], runs: tuple[np.ndarray, ...],
                     node_figures: dict[str, dict[str, Any]], acq: np.ndarray,
                     due: np.ndarray | None = None) -> dict[str, Any] | None:
    """The capped nodes' queue-full waits that ended in a full claim, and their threads'
    idle time in them, against their time up and not paused (see the module's docstring;
    ``node_figures``: the summary's nodes; ``acq``: the claims on the job table);
    None where no node is capped or none waited so. ``wait`` is the capped nodes' longest;
    where their queues, threads or waits differ, ``queue_size`` and ``threads`` are None (no
    one node's stands for the others). ``due``: the due instants of the nodes' jobs, where
    they run some handlers alone (else every job created)."""
    kind, node, time = cols["kind"], cols["node"], cols["time"]
    held = [n for n in capped(nodes) if n.name in names]
    if not held:  # (``nodes``: those that compete for the same rows, ``poll_groups``)
        return None
    a_node, a_time, a_asked, a_got = node[acq], time[acq], cols["a"][acq], cols["b"][acq]
    stop = np.flatnonzero((kind == K["node_crashed"]) | (kind == K["node_paused"]) |
                          (kind == K["statement_failed"]))
    began, ended, ran_on = runs[0], runs[1], runs[2]
    waits, idle, span, up = 0, 0.0, 0.0, 0.0
    for n in held:
        code, W, threads = names.index(n.name), n.executor.queue_full_wait, n.executor.threads
        mine = a_node == code
        t, asked, got = a_time[mine], a_asked[mine], a_got[mine]
        f = node_figures.get(n.name) or {}
        up += threads * ((f.get("time_up") or 0.0) - (f.get("time_paused") or 0.0))
        if len(t) < 2:
            continue
        full = (got >= asked) & (asked > 0)
        i = np.flatnonzero(full[:-1] & full[1:] & (np.diff(t) >= W * (1 - 1e-9)))
        # a gap the node was down, stalled or failing in is not a wait of its own
        stops = time[stop[node[stop] == code]]
        i = i[np.searchsorted(stops, t[i], side="right") ==
              np.searchsorted(stops, t[i + 1], side="left")]
        if not len(i):
            continue
        lo, hi = t[i], t[i + 1]
        busy = _busy_until(began[ran_on == code], ended[ran_on == code])
        waits += len(i)
        span += float((hi - lo).sum())
        idle += float(threads * (hi - lo).sum() - (busy(hi) - busy(lo)).sum())
    if not waits:
        return None
    run_mean = float((ended - began).mean()) if len(began) else 0.0
    intake = intake_of([n for n in nodes if n.name in names], run_mean) if run_mean > 0 \
        else None  # (no run to measure)
    alike = len({(n.executor.queue_size, n.executor.threads, n.executor.queue_full_wait)
                 for n in held}) == 1
    ex = held[0].executor
    if due is None:
        due = cols["x"][kind == K["job_created"]]
    window = float(due.max() - due.min()) if len(due) > 1 else 0.0
    return {"waits": waits, "wait": max(n.executor.queue_full_wait for n in held),
            "queue_size": ex.queue_size if alike else None,
            "threads": ex.threads if alike else None, "time": _r(span),
            "idle": _r(max(0.0, idle)), "share": _r(max(0.0, idle) / up) if up > 0 else None,
            # the most the nodes take in, against the jobs falling due
            "intake": _r(intake), "arriving": _r((len(due) - 1) / window) if window else None,
            "window": _r(window)}


def queue_waits(cols: dict[str, np.ndarray], names: list[str], nodes: tuple[NodeConfig, ...],
                runs: tuple[np.ndarray, ...], jobs: pd.DataFrame) -> dict[str, Any] | None:
    """**Local queues** (``local_queues``): of each job's first execution, the wait from the
    node's latest claim of it at or before that start to the start, and how many threads
    the other nodes that run its handler had idle meanwhile (on average over those waits).
    None where fewer than two nodes are up to it or no node has a queue."""
    if len(nodes) < 2 or not any(n.executor.queue_size for n in nodes):
        return None
    found = _claimed(cols, names)
    if found is None:
        return None
    first, claimed = found
    job, node, time = cols["job"], cols["node"], cols["time"]
    start, held_on = time[first], node[first]
    span = start - claimed
    began, ended, ran_on = runs[0], runs[1], runs[2]
    by_id = jobs.set_index("id").reindex(job[first])  # each job's handler and due time
    threads = {names.index(n.name): n.executor.threads for n in nodes if n.name in names}
    idle = np.zeros(len(first))
    for sel, codes in _groups(by_id["handler"].astype(str).to_numpy(), nodes, names):
        # the other nodes that run the job: all of them less the holding node, as sums
        every = _busy_until(began[np.isin(ran_on, codes)], ended[np.isin(ran_on, codes)])
        idle[sel] = sum(threads[c] for c in codes) * span[sel] - (
            every(start[sel]) - every(claimed[sel]))
        for code in codes:
            own = sel[held_on[sel] == code]
            if len(own):
                mine = _busy_until(began[ran_on == code], ended[ran_on == code])
                idle[own] -= threads[code] * span[own] - (mine(start[own]) -
                                                          mine(claimed[own]))
    waited = float(span.sum())
    due = by_id["due"].to_numpy(dtype=float)
    by_node = {}  # each node with a queue: its jobs' waits, against the other nodes' jobs'
    for n in nodes:
        if n.executor.queue_size and n.name in names:
            mine = held_on == names.index(n.name)
            if mine.sum() and (~mine).sum():
                held = float(span[mine].sum())
                by_node[n.name] = {
                    "jobs": int(mine.sum()), "queue_size": n.executor.queue_size,
                    "queued_mean": _r(held / int(mine.sum())),
                    "start_delay_mean": _r(float(np.nanmean((start - due)[mine]))),
                    "others_start_delay_mean": _r(float(np.nanmean((start - due)[~mine]))),
                    "idle_elsewhere": _r(max(0.0, float(idle[mine].sum())) / held)
                    if held > 0 else 0.0}
    return {"jobs": int(len(first)), "queued_mean": _r(waited / len(first)),
            "start_delay_mean": _r(float(np.nanmean(start - due))),
            "idle_elsewhere": _r(max(0.0, float(idle.sum())) / waited) if waited > 0 else 0.0,
            "queue_size": max(n.executor.queue_size for n in nodes),
            "run_mean": _r(float((ended - began).mean())) if len(began) else None,
            "by_node": by_node}


def _claimed(cols: dict[str, np.ndarray], names: list[str]
             ) -> tuple[np.ndarray, np.ndarray] | None:
    """Each job's first execution (its trace row) and the instant of its node's latest
    claim of it at or before that start; None where the trace has no start or no claim."""
    kind, job, node, time = cols["kind"], cols["job"], cols["node"], cols["time"]
    starts = np.flatnonzero(kind == K["exec_start"])
    lock = np.flatnonzero(kind == K["locked"])
    if not len(starts) or not len(lock):
        return None
    # each job's first execution (the trace is in time order: its first start row)
    _, first = np.unique(job[starts], return_index=True)
    first = starts[first]
    # its node's latest claim of it at or before the start: (job, node) and then time, as one
    # integer key, the time by its rank among the instants both have
    instants = np.unique(np.concatenate([time[lock], time[first]]))
    width = np.int64(len(instants) + 1)

    def keyed(rows: np.ndarray) -> np.ndarray:
        pair = job[rows].astype(np.int64) * len(names) + node[rows]
        return pair * width + np.searchsorted(instants, time[rows])
    locks = np.sort(keyed(lock))
    want = keyed(first)
    i = np.searchsorted(locks, want, side="right") - 1
    ok = (i >= 0) & (locks[np.maximum(i, 0)] // width == want // width)
    first = first[ok]
    if not len(first):
        return None
    return first, instants[locks[i[ok]] % width]


def _busy_until(began: np.ndarray, ended: np.ndarray) -> Any:
    """``x ↦`` the executions' busy thread-seconds up to ``x`` (an array of instants):
    ``Σ (x − start)`` over those begun before ``x`` less ``Σ (x − end)`` over those ended."""
    b, e = np.sort(began), np.sort(ended)
    sb, se = np.concatenate([[0.0], np.cumsum(b)]), np.concatenate([[0.0], np.cumsum(e)])

    def at(x: np.ndarray) -> np.ndarray:
        nb, ne = np.searchsorted(b, x), np.searchsorted(e, x)
        return (x * nb - sb[nb]) - (x * ne - se[ne])
    return at


def queued_by_priority(cols: dict[str, np.ndarray], names: list[str],
                       nodes: tuple[NodeConfig, ...], jobs: pd.DataFrame
                       ) -> dict[str, Any] | None:
    """**Priority behind a local queue** (``queued_by_priority``): under an order by
    priority (or aging), each class's mean wait in the local queue of the node that claimed
    its jobs (claim to first start) beside its mean and longest start delay. The table
    hands out rows by priority, but a node runs its queue in the order it claimed them: a
    top-class job claimed after lower ones waits behind them. None where no node has a
    queue, the table is not ordered by priority, or the jobs have one class."""
    if not nodes or not any(n.executor.queue_size for n in nodes) or \
            nodes[0].executor.order not in ("priority", "aging") or \
            jobs["priority"].nunique() < 2:
        return None
    found = _claimed(cols, names)
    if found is None:
        return None
    first, claimed = found
    start = cols["time"][first]
    by_id = jobs.set_index("id").reindex(cols["job"][first])
    prio = by_id["priority"].to_numpy()
    delay = start - by_id["due"].to_numpy(dtype=float)
    queued = start - claimed
    # the rows of lower classes ahead of each top-class job in its node's queue when it was
    # claimed: claimed before it by that node, not yet started
    top, node = prio == prio.max(), cols["node"][first]
    ahead = np.zeros(len(first))
    for code in np.unique(node[top]):
        low, mine = ~top & (node == code), top & (node == code)
        # claimed before it less started before it (a row started at its very instant
        # counts as ahead: it took a thread then); a row is started only once claimed
        ahead[mine] = (np.searchsorted(np.sort(claimed[low]), claimed[mine], side="left")
                       - np.searchsorted(np.sort(start[low]), claimed[mine], side="left"))
    classes = {}
    for p in sorted(set(prio.tolist()), reverse=True):
        mine = prio == p
        classes[str(p)] = {"jobs": int(mine.sum()), "queued_mean": _r(float(queued[mine].mean())),
                           "start_delay_mean": _r(float(delay[mine].mean())),
                           "start_delay_max": _r(float(delay[mine].max()))}
    classes[str(prio.max())]["lower_ahead_mean"] = _r(float(ahead[top].mean()))
    return {"queue_size": max(n.executor.queue_size for n in nodes), "by_priority": classes}
