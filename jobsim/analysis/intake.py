"""**Queue-full waits** (``queue_full_waits``): a polling node with a local queue whose claim
fills it claims again only after ``queue_full_wait``, whatever its threads do meanwhile.
Where its queue runs dry sooner, its threads sit idle for the rest of the wait while due rows
wait in the table, and a stream above what the node so takes in builds a backlog that grows
as long as it lasts (three nodes, a queue of 10 and 4 threads of 500 ms each, a 5 s wait:
14 jobs a node per 5 s, 8.4/s, against 10/s arriving; jobs waited a median 26-33 s).

A queue-full wait is read from the trace as a node's claim that came back full followed by
its next claim no sooner than ``queue_full_wait`` later (after a full claim that left room, a
node claims again at once; a gap the node crashed or was paused in is not one). Counted are
the waits whose next claim came back full too, due rows having waited all along; the figure
is the node's thread-seconds idle in them, against the thread-seconds of the capped nodes'
time up.

Pure functions of the trace and the nodes' settings; no Python object per event.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.trace import K
from ..executor.config import NodeConfig
from ..format.lint_polls import queue_capped as capped
from .saturation import rounded as _r


def queue_full_waits(cols: dict[str, np.ndarray], names: list[str],
                     nodes: tuple[NodeConfig, ...], runs: tuple[np.ndarray, ...],
                     end: float) -> dict[str, Any] | None:
    """The capped nodes' queue-full waits that ended in a full claim, and their threads'
    idle time in them (see the module's docstring); None where no node is capped or none
    waited so."""
    kind, node, time = cols["kind"], cols["node"], cols["time"]
    if not capped(nodes):
        return None
    acq = np.flatnonzero(kind == K["acquire"])
    a_node, a_time, a_asked, a_got = node[acq], time[acq], cols["a"][acq], cols["b"][acq]
    stop = np.flatnonzero((kind == K["node_crashed"]) | (kind == K["node_paused"]))
    ups = (np.flatnonzero(kind == K["node_crashed"]), np.flatnonzero(kind == K["node_restarted"]))
    began, ended, ran_on = runs[0], runs[1], runs[2]
    waits, idle, span, up = 0, 0.0, 0.0, 0.0
    for n in capped(nodes):
        if n.name not in names:
            continue
        code, W, threads = names.index(n.name), n.executor.queue_full_wait, n.executor.threads
        mine = a_node == code
        t, asked, got = a_time[mine], a_asked[mine], a_got[mine]
        up += threads * _time_up(cols, code, end, ups)
        if len(t) < 2:
            continue
        full = (got >= asked) & (asked > 0)
        i = np.flatnonzero(full[:-1] & full[1:] & (np.diff(t) >= W * (1 - 1e-9)))
        # a gap the node was down or stalled in is not a wait of its own
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
    n0 = capped(nodes)[0].executor
    runs_mean = float((ended - began).mean()) if len(began) else 0.0
    intake = sum((n.executor.queue_size + n.executor.threads) / n.executor.queue_full_wait
                 if n in capped(nodes) else
                 (n.executor.threads / runs_mean if runs_mean > 0 else np.inf)
                 for n in nodes if n.name in names)
    due = cols["x"][kind == K["job_created"]]
    window = float(due.max() - due.min()) if len(due) > 1 else 0.0
    return {"waits": waits, "wait": n0.queue_full_wait, "queue_size": n0.queue_size,
            "threads": n0.threads, "time": _r(span), "idle": _r(max(0.0, idle)),
            "share": _r(max(0.0, idle) / up) if up > 0 else None,
            # the most the nodes take in (a capped node its queue and threads a wait; the
            # others their threads over the mean run), against the jobs falling due
            "intake": _r(intake), "arriving": _r((len(due) - 1) / window) if window else None,
            "window": _r(window)}


def _busy_until(began: np.ndarray, ended: np.ndarray) -> Any:
    """``x ↦`` the executions' busy thread-seconds up to ``x`` (an array of instants):
    ``Σ (x − start)`` over those begun before ``x`` less ``Σ (x − end)`` over those ended."""
    b, e = np.sort(began), np.sort(ended)
    sb, se = np.concatenate([[0.0], np.cumsum(b)]), np.concatenate([[0.0], np.cumsum(e)])

    def at(x: np.ndarray) -> np.ndarray:
        nb, ne = np.searchsorted(b, x), np.searchsorted(e, x)
        return (x * nb - sb[nb]) - (x * ne - se[ne])
    return at


def _time_up(cols: dict[str, np.ndarray], code: int, end: float,
             ups: tuple[np.ndarray, np.ndarray]) -> float:
    """A node's time up over the run: its crashes to its restarts taken out (``ups``: the
    crashes' and the restarts' rows of the trace)."""
    node, time = cols["node"], cols["time"]
    down = time[ups[0][node[ups[0]] == code]]
    back = time[ups[1][node[ups[1]] == code]]
    out = end
    for a in down:
        later = back[back > a]
        out -= (later[0] if len(later) else end) - a
    return max(0.0, out)


def queue_waits(cols: dict[str, np.ndarray], names: list[str], nodes: tuple[NodeConfig, ...],
                runs: tuple[np.ndarray, ...]) -> dict[str, Any] | None:
    """**Local queues** (``local_queues``): how long jobs waited in a node's local queue,
    from the claim that took them to their first start, and how many threads the other
    nodes had idle meanwhile (on average over those waits). A node claims up to its
    queue's room for its own threads; rows it holds, the others cannot run. None where
    fewer than two nodes are up to it or no node has a queue."""
    if len(nodes) < 2 or not any(n.executor.queue_size for n in nodes):
        return None
    kind, job, node, time = cols["kind"], cols["job"], cols["node"], cols["time"]
    first = np.flatnonzero((kind == K["exec_start"]) & (cols["attempt"] == 1))
    lock = np.flatnonzero(kind == K["locked"])
    if not len(first) or not len(lock):
        return None
    # each first start's latest lock of its job by its node at or before it
    key = job[lock].astype(np.int64) * len(names) + node[lock]
    order = np.lexsort((time[lock], key))
    key, at = key[order], time[lock][order]
    want = job[first].astype(np.int64) * len(names) + node[first]
    i = np.searchsorted(key, want, side="right") - 1
    ok = (i >= 0) & (key[np.maximum(i, 0)] == want)
    start, held_on = time[first][ok], node[first][ok]
    claimed = at[i[ok]]
    ok2 = claimed <= start
    start, held_on, claimed = start[ok2], held_on[ok2], claimed[ok2]
    if not len(start):
        return None
    began, ended, ran_on = runs[0], runs[1], runs[2]
    # the other nodes' idle threads: all the nodes' less the holding node's own
    every = _busy_until(began, ended)
    span = start - claimed
    idle = -(every(start) - every(claimed))
    for n in nodes:
        if n.name not in names:
            continue
        code = names.index(n.name)
        idle += n.executor.threads * span
        own = held_on == code
        busy = _busy_until(began[ran_on == code], ended[ran_on == code])
        idle[own] -= n.executor.threads * span[own] - (busy(start[own]) - busy(claimed[own]))
    waited = float((start - claimed).sum())
    created = np.flatnonzero(kind == K["job_created"])
    due = np.full(int(job.max()) + 1, np.nan)
    due[job[created]] = cols["x"][created]
    return {"jobs": int(len(start)), "queued_mean": _r(waited / len(start)),
            "start_delay_mean": _r(float(np.nanmean(start - due[job[first][ok][ok2]]))),
            "idle_elsewhere": _r(max(0.0, float(idle.sum())) / waited) if waited > 0 else 0.0,
            "queue_size": max(n.executor.queue_size for n in nodes),
            "run_mean": _r(float((ended - began).mean())) if len(began) else None}
