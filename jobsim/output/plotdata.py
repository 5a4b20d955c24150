"""The data the figures draw, worked out from a trace table without matplotlib: step series
(rows in the table, live locks, runs in progress) and their thinning, executions paired from
their start and end, and the nodes' spans. The static figures (``plots``) and the interactive
page (``view``) both draw from these, so the page never imports matplotlib."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def kind_is(df: pd.DataFrame, name: str) -> np.ndarray:
    """Rows of ``df`` of one event kind (works for categorical and plain-string kinds)."""
    return (df["kind"] == name).to_numpy(dtype=bool)


def per_time(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One point per instant (``t`` sorted; ``v`` a running level from 0), its last value —
    and before it, where the value rose within the instant above both the level before it
    and its last (a row locked and released, a run begun and ended at one instant), that
    highest value: the step goes up and back at that instant, a spike, instead of leaving
    no trace. Several rows leaving at one instant step down once, with no spike."""
    if len(t) == 0:
        return t, v
    last = np.r_[t[1:] != t[:-1], True]
    first = np.r_[True, t[1:] != t[:-1]]
    peak = np.maximum.reduceat(v, np.flatnonzero(first))
    ends = np.flatnonzero(last)
    before = np.r_[0, v[ends][:-1]]  # the level the instant began at
    spike = peak > np.maximum(v[ends], before)
    times = np.r_[t[ends], t[ends][spike]]
    values = np.r_[v[ends], peak[spike]]
    # each instant's spike (if any) before its last value
    order = np.lexsort((np.r_[np.ones(len(ends)), np.zeros(int(spike.sum()))], times))
    return times[order], values[order]


def step_series(t: np.ndarray, delta: np.ndarray, t0: float, t_end: float,
                 seq: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A running total of ``delta`` (events in trace order, or in ``seq`` order within an
    instant), from 0 at ``t0`` to its last value at ``t_end``, one point per instant and a
    spike where it rose higher within one (``per_time``)."""
    # at one event, a release (-1) before a lock (+1): a lock extended is one lock, not two
    order = np.argsort(t, kind="stable") if seq is None else np.lexsort((delta, seq, t))
    t, level = t[order], np.cumsum(delta[order])
    t, level = per_time(t, level)
    last = level[-1] if len(level) else 0
    return np.r_[t0, t, t_end], np.r_[0, level, last]


#: a step series longer than this is thinned before it is drawn (``thin``)
THIN_ABOVE = 200_000


#: the time bins of a thinned series: several per pixel of the plot's width
THIN_BINS = 8192


def thin(t: np.ndarray, v: np.ndarray, t0: float, t_end: float, above: int = THIN_ABOVE,
          bins: int = THIN_BINS) -> tuple[np.ndarray, np.ndarray]:
    """A long step series as it draws: in each of ``bins`` time bins, its first, lowest,
    highest and last points (the rest lie between them, under a pixel). A series of at
    most ``above`` points is drawn whole (every shipped scenario's, at the defaults)."""
    if len(t) <= above or not t_end > t0:
        return t, v
    b = np.clip(((t - t0) / (t_end - t0) * bins).astype(np.int64), 0, bins - 1)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])  # t is sorted: bins are runs
    ends = np.r_[starts[1:], len(t)] - 1
    counts = ends - starts + 1
    # each bin's first lowest point and last highest one (no sort of the millions)
    low = np.flatnonzero(v == np.repeat(np.minimum.reduceat(v, starts), counts))
    lows = low[np.r_[True, b[low][1:] != b[low][:-1]]]
    high = np.flatnonzero(v == np.repeat(np.maximum.reduceat(v, starts), counts))
    highs = high[np.r_[b[high][1:] != b[high][:-1], True]]
    keep = np.unique(np.concatenate([starts, ends, lows, highs]))
    return t[keep], v[keep]


#: a line of more steps than this (one every 4 pixels or closer, on an axis of about a
#: thousand), each a large part of its height (a fifth, the median step), is one the figure
#: cannot draw: its ups and downs fill a solid block whatever share of the time it spends up
TOGGLE_POINTS = 250


def time_mean(t: np.ndarray, v: np.ndarray) -> float | None:
    """A step series' mean over its span, each value weighted by how long it held (what
    Little's law relates to the rate and the time in the table); None over no time."""
    span = float(t[-1] - t[0]) if len(t) else 0.0
    if not span > 0:
        return None
    return float(np.dot(v[:-1].astype(float), np.diff(t)) / span)


def toggles(t: np.ndarray, v: np.ndarray) -> bool:
    """Whether the step series steps up and down closer together than the figure can show,
    by steps that are a large part of its height (a table that holds 0 or 1 rows, polled)."""
    return len(t) > TOGGLE_POINTS and \
        float(np.median(np.abs(np.diff(v)))) >= 0.2 * max(1.0, float(v.max()))


def binned_mean(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The step series' mean in each bin between ``edges``, each level weighted by how long
    it held; NaN for the bins that begin at or after its end."""
    area = np.r_[0.0, np.cumsum(v[:-1] * np.diff(t))]  # its integral at each point
    i = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, len(t) - 1)
    at = area[i] + v[i] * (edges - t[i])
    mean = np.diff(at) / np.diff(edges)
    mean[edges[:-1] >= t[-1]] = np.nan
    return mean


def gone_rows(df: pd.DataFrame) -> np.ndarray:
    """Events that take a row out of the acquirable tables for good: done (``completed``
    with a=1), ``dead_lettered``, and deleted otherwise — ``withdrawn`` by a boundary timer,
    ``cancelled`` (by an operator, or a boundary timer's timer job with its task)."""
    return (kind_is(df, "completed") & (df["a"] == 1).to_numpy()) | kind_is(
        df, "dead_lettered") | kind_is(df, "withdrawn") | kind_is(df, "cancelled")


def table_steps(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The instants and steps (+1, -1) of the rows in the job table: each job's row in from
    its ``job_created`` and back from an operator's ``revived`` (a failed or dead-lettered
    job retried), out at its ``gone_rows`` event. Each job is followed on its own, so an
    exit of a row already out — an operator's cancel of a failed task — is no step, and a
    revived one that ends again is counted out once more (the count never goes below 0)."""
    ins = kind_is(df, "job_created") | kind_is(df, "revived")
    sel = np.flatnonzero(ins | gone_rows(df))
    job, state = df["job"].to_numpy()[sel], ins[sel].astype(np.int64)
    order = np.argsort(job, kind="stable")  # each job's events in trace order
    js, st = job[order], state[order]
    before = np.r_[0, st[:-1]]
    before[np.r_[True, js[1:] != js[:-1]]] = 0  # a job's first event: its row was not in
    delta = np.empty(len(sel), np.int64)
    delta[order] = st - before
    keep = delta != 0
    return df["time"].to_numpy(dtype=float)[sel][keep], np.where(delta[keep] > 0, 1, -1)


def lock_series(df: pd.DataFrame, t0: float, t_end: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding a live lock over time. A ``locked`` or ``lock_extended`` event holds the
    job's lock until its ``lock_until`` (``x``) or the job's next lock event, whichever comes
    first; ``completed`` (a row deleted), ``retry_scheduled``, ``dead_lettered``,
    ``unlocked`` and a row deleted otherwise (``withdrawn``, ``cancelled``) release it."""
    holds = kind_is(df, "locked") | kind_is(df, "lock_extended")
    sel = holds | kind_is(df, "retry_scheduled") | kind_is(df, "unlocked") | gone_rows(df)
    idx = np.flatnonzero(sel)
    if len(idx) == 0:
        return np.array([t0, t_end]), np.array([0, 0])
    job = df["job"].to_numpy()[idx]
    t = df["time"].to_numpy(dtype=float)[idx]
    x = df["x"].to_numpy(dtype=float)[idx]
    hold = holds[idx]
    del holds, sel
    order = np.lexsort((idx, job))  # by job, then trace order
    idx_sorted = idx[order]
    del idx
    job, t, x, hold = job[order], t[order], x[order], hold[order]
    del order
    same_next = np.r_[job[1:] == job[:-1], False]
    del job
    next_t = np.where(same_next, np.r_[t[1:], np.inf], np.inf)[hold]
    # the order within an instant: a lock at its event, a release at the event that
    # released it, an expiry before the events of its instant
    seq = idx_sorted[hold]
    next_seq = np.r_[idx_sorted[1:], 0][hold]
    expires = np.where(np.isnan(x[hold]), np.inf, x[hold])
    end = np.minimum(expires, next_t)
    end_seq = np.where(expires < next_t, -1, next_seq)
    del next_t, x
    start = t[hold]
    end = np.maximum(end, start)
    released = end <= t_end
    times = np.r_[start, end[released]]
    delta = np.r_[np.ones(len(start)), -np.ones(int(released.sum()))]
    return step_series(times, delta, t0, t_end, np.r_[seq, end_seq[released]])


def pair_executions(df: pd.DataFrame, t_end: float) -> pd.DataFrame:
    """Executions as rows (node, job, attempt, thread, start, end, status) in start order;
    status is ``ok``, ``failed`` or ``open`` (no exec_end: lost to a crash — it ends at the
    crash — or hung — it runs to ``t_end``)."""
    cols = ["node", "job", "attempt"]
    starts = df.loc[kind_is(df, "exec_start"), cols + ["time", "a"]]
    ex = starts.rename(columns={"time": "start", "a": "thread"}).reset_index(drop=True)
    # each start's end: the first exec_end of the same node, job and attempt (a left join)
    ends = df.loc[kind_is(df, "exec_end"), cols + ["time", "a"]]
    key = row_codes([pd.factorize(pd.concat([ex["node"], ends["node"]], ignore_index=True))[0],
                 np.r_[ex["job"].to_numpy(), ends["job"].to_numpy()],
                 np.r_[ex["attempt"].to_numpy(), ends["attempt"].to_numpy()]])
    start_key, end_key = key[:len(ex)], key[len(ex):]
    first = np.full(int(key.max()) + 1 if len(key) else 0, len(end_key), np.int64)
    np.minimum.at(first, end_key, np.arange(len(end_key)))  # each key's first end
    match = first[start_key] if len(ex) else np.zeros(0, np.int64)
    found = match < len(end_key)
    at = np.minimum(match, max(len(end_key) - 1, 0))
    for name, col in (("end", "time"), ("ok", "a")):
        ex[name] = np.where(found, ends[col].to_numpy(dtype=float)[at], np.nan) \
            if len(ends) else np.nan
    opened = ex["end"].isna().to_numpy()
    ok = ex["ok"].to_numpy(dtype=float) == 1
    # coded, not a string per execution (pandas would copy a million of them into Arrow)
    ex["status"] = pd.Categorical.from_codes(np.where(opened, 2, np.where(ok, 0, 1)),
                                             categories=["ok", "failed", "open"])
    # An execution without an end stops at its node's next crash (it died there), or runs
    # to the end of the trace (hung).
    crashes = df.loc[kind_is(df, "node_crashed"), ["node", "time"]]
    ends_at = np.full(len(ex), t_end)
    if len(crashes) and opened.any():
        by_node: dict[str, np.ndarray] = {
            n: np.sort(g["time"].to_numpy(dtype=float)) for n, g in crashes.groupby("node")}
        for i in np.flatnonzero(opened):
            times = by_node.get(ex.at[i, "node"])
            if times is not None:
                k = np.searchsorted(times, ex.at[i, "start"], side="left")
                if k < len(times):
                    ends_at[i] = times[k]
    ex["end"] = ex["end"].fillna(pd.Series(ends_at, index=ex.index))
    # a duplicate: a run of a job after an earlier run of it that did not fail (it succeeded,
    # or was still running, or died in a crash) — the runs the analysis counts twice
    kept = (ex["status"] != "failed").astype(np.int64)
    ex["duplicate"] = (kept.groupby(ex["job"]).cumsum() - kept).to_numpy() > 0
    return ex.reset_index(drop=True)


def row_codes(columns: list[np.ndarray]) -> np.ndarray:
    """A dense code per distinct row of the integer ``columns`` (0, 1, ...)."""
    key = np.zeros(len(columns[0]), np.int64)
    room = 1
    for c in columns:
        c = c.astype(np.int64) - (int(c.min()) if len(c) else 0)
        width = int(c.max()) + 1 if len(c) else 1
        if room * width >= 2 ** 62:  # too wide for one integer: code the rows themselves
            return np.unique(np.stack(columns), axis=1, return_inverse=True)[1].reshape(-1)
        key, room = key * width + c, room * width
    return pd.factorize(key)[0]


def node_spans(df: pd.DataFrame, node: np.ndarray, begin: str, finish: str, t_end: float,
           length_from_x: bool) -> list[tuple[str, float, float]]:
    """(node, start, end) spans opened by ``begin`` events and closed by the node's next
    ``finish`` event (or by ``x`` when ``length_from_x`` and it is a number), else by
    ``t_end``."""
    out: list[tuple[str, float, float]] = []
    sel = np.flatnonzero(kind_is(df, begin) | kind_is(df, finish))
    times = df["time"].to_numpy(dtype=float)[sel]
    xs = df["x"].to_numpy(dtype=float)[sel]
    is_begin = kind_is(df, begin)[sel]
    open_at: dict[str, int] = {}
    for i, n in enumerate(node[sel].tolist()):
        if is_begin[i]:
            if n in open_at:  # a second begin without a finish: close the first here
                j = open_at.pop(n)
                out.append((n, times[j], times[i]))
            if length_from_x and not math.isnan(xs[i]):
                out.append((n, times[i], min(times[i] + xs[i], t_end)))
            else:
                open_at[n] = i
        elif n in open_at:
            j = open_at.pop(n)
            out.append((n, times[j], times[i]))
    out.extend((n, times[j], t_end) for n, j in sorted(open_at.items()))
    return out


def node_strings(node: pd.Series) -> np.ndarray:
    """The node names as an object array ("" for none); from a categorical, each name one
    shared string (not a string object per event)."""
    if isinstance(node.dtype, pd.CategoricalDtype):
        names = np.array([str(c) for c in node.cat.categories] + [""], dtype=object)
        codes = node.cat.codes.to_numpy()
        return names[np.where(codes < 0, len(names) - 1, codes)]
    return node.fillna("").astype(str).to_numpy(dtype=object)


def node_names(node: pd.Series) -> list[str]:
    """The node names the events name, sorted."""
    if isinstance(node.dtype, pd.CategoricalDtype):
        used = node.cat.categories[np.unique(node.cat.codes[node.cat.codes >= 0])]
        return sorted(n for n in used.astype(str) if n)
    return sorted({n for n in node.fillna("").astype(str).tolist() if n})


def evenly_spaced(ex: pd.DataFrame, max_bars: int) -> pd.DataFrame:
    """The executions to draw: all of them, or with more than ``max_bars`` an evenly spaced
    subset in start order."""
    n_exec = len(ex)
    max_bars = max(1, int(max_bars))
    if n_exec > max_bars:
        pick = np.unique(np.linspace(0, n_exec - 1, max_bars).round().astype(np.int64))
        return ex.iloc[pick]
    return ex
