"""From a trace to tables and figures: the per-job table and the run's summary.

Pure pandas and numpy over the trace (and the per-job stories of ``history``); nothing here
knows about SimPy. The summary holds no wall-clock figure, so it is the same for the same
scenario and seed on every machine.

Per node (``nodes.<name>``, see ``node_figures``): ``executions`` (its ``exec_start`` rows),
``claims`` (rows it locked: its ``locked`` rows — claims on the job table and the timer
table, and Flowable's hint path), ``acquire_attempts`` (its ``acquire`` rows, and the empty
polls an idle sleep counted instead of simulating: the same figure either way),
``lost_races`` (its ``acquire`` rows' ``c``), ``time_down`` (from each ``node_crashed`` to its
``node_restarted``, or the end of the run), ``time_up`` (the run's length minus
``time_down``: a node that starts late is up, and idle, before its ``start_at``),
``time_paused`` (from each ``node_paused`` to its ``node_resumed``, a crash, or the end;
paused time is up), ``busy_thread_seconds`` (the length of its executions, each from its
``exec_start`` to its ``exec_end``, or to the node's next crash, or to the end of the run)
and ``busy_share`` (that over ``threads × time_up``).

A node is **idle** while it is up, not paused and runs fewer executions than it has threads.
A job **waits** from its due time (or the last time an operator made it runnable — revived or
activated — if later) until its first execution starts; a job never started waits until the
end of the run while it is still in the job or timer table (pending, or lost), or until an
interrupting boundary timer withdrew it. ``longest_idle_wait`` is the longest time one job the
node could run (its ``handles``) waited while the node was idle. ``even_share`` is the
executions the node would have run had the executions of each handler been split among the
nodes that handle it in proportion to ``threads × time_up``. ``idle_while_work_waited`` flags
a node whose ``longest_idle_wait`` exceeds one of its poll intervals while it ran fewer than
``max(1, even_share × idle.IDLE_SHARE)`` executions: a node that did (next to) nothing while
work it could run waited for it.

Boundary timers that are timer jobs (a timer table: Flowable) are rows, claimed, moved and
run on executor threads like any job, so they count among the jobs — ``jobs.created``, an
outcome each (``done`` once run, ``cancelled`` when deleted with a task that ended first,
``pending``), the executions, the start delays and the nodes' figures — and, in those runs
only, ``boundary_timers`` says how many of them there are and what they did: ``timer_jobs``
(of ``jobs.created``), ``done``, ``cancelled`` and ``pending`` (of those outcomes), ``fired``
(boundary events fired: the timer job ran while its task's job was still waiting or running),
``withdrew`` (of those, interrupting: ``jobs.withdrawn``) and ``delay`` (from each fired
timer's due time to its firing: the timer loop's poll, the pool's queue, a crash). Where the
engine fires its timers itself (the Zeebe-like server) they are no rows and fire at their
instant: a withdrawn job is in ``jobs.withdrawn``, and there is no ``boundary_timers``.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from .checks import Violation, verdicts
from .history import CAUSES, Histories
from .idle import _idle_figures, _waits
from .effects import detect, executions as executions_of
from .services import figures as service_figures, has_services
from .schedules import schedule_texts
from ..base.trace import KIND_NAMES, K, Trace
from ..executor.config import NodeConfig

JOB_COLUMNS = ("id", "name", "kind", "handler", "priority", "created", "due", "first_start", "end",
               "outcome", "executions", "failures", "side_effects", "duplicate_executions",
               "duplicate_side_effects", "double_acquisitions", "nodes", "pending_reason",
               "deadline", "retry_delays")
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


def _locks(nodes: tuple[NodeConfig, ...], crashed: set[str]) -> dict[str, Any]:
    """The lock the crashed nodes' stranded jobs waited out, where they share one that
    expires (``lock_time``; with a reset thread, its ``reset_interval`` too); None where
    their locks differ or never expire (a Zeebe-like server: its restart frees them)."""
    held = {(n.executor.lock_time, n.executor.lock_expiry, n.executor.reset_interval)
            for n in nodes if n.name in crashed}
    if len(held) != 1 or next(iter(held))[1] == "never":
        return {"lock_time": None, "reset_interval": None}
    lock, how, every = next(iter(held))
    return {"lock_time": _r(lock), "reset_interval": _r(every) if how == "reset" else None}


def jobs_frame(hist: Histories) -> pd.DataFrame:
    """One row per job, in id order."""
    frame = hist.table[list(JOB_COLUMNS[:-1])]
    # the delays it waited before each retry, "10s 60s 300s" (empty: never retried)
    frame["retry_delays"] = schedule_texts(frame["id"].to_numpy(), hist.delays)
    return frame


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
            statements: int, polls: dict[str, int], polls_skipped: dict[str, int],
            nodes: tuple[NodeConfig, ...] = (), boundary_jobs: bool = False,
            services: tuple[str, ...] = (), handlers: dict[str, Any] | None = None) -> dict:
    """The run's figures as a JSON-ready dict (sorted keys when written). ``nodes``, the
    scenario's nodes, give the per-node figures that need a node's settings (threads,
    handles, poll interval); without them those figures are None. ``boundary_jobs``: the
    scenario's boundary timers are timer jobs (``boundary_timers`` is added); ``services``,
    the scenario's, have figures even when nothing called them."""
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
    outcomes = _counts(jobs["outcome"])
    # jobs given up (dead letters, incidents, failed tasks) whose effect had taken place: an
    # operator who moves them back runs it again, unless it is a call that sends the job's key
    gave = (jobs["outcome"].isin(("dead_lettered", "incident", "failed"))
            & (jobs["side_effects"] > 0))
    by_call = {n: h.steps[h.effect_step] for n, h in (handlers or {}).items()
               if h.effect_step is not None}  # (a handler's own effect has no key to send)
    keyed = [n for n, step in by_call.items() if step.idempotency_key == "job"]
    named = {}
    # a named submit that an idempotent submit ignored names the task that holds its id
    ignored = np.flatnonzero((kind == K["submit_ignored"]) & (cols["c"] > 0))
    aliases = {trace.texts[int(cols["c"][i]) - 1]: int(cols["job"][i]) for i in ignored}
    for s in jobs[(jobs["name"] != "") | jobs["id"].isin(list(aliases.values()))].itertuples(
            index=False):
        figures = {"id": s.id, "outcome": s.outcome, "executions": s.executions,
                   "start_delay": _r(s.first_start - s.due),
                   "end_to_end": _r(s.end - s.created) if s.outcome == "done" else None,
                   "duplicate_executions": s.duplicate_executions}
        if s.name:
            named[s.name] = figures
        for alias, jid in aliases.items():
            if jid == s.id and alias not in named:
                named[alias] = dict(figures)
    out = {
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
                 "submits_ignored": int((kind == K["submit_ignored"]).sum()),
                 "resubmitted": int((kind == K["resubmitted"]).sum())},
        "executions": int(jobs["executions"].sum()),
        "failures": int(jobs["failures"].sum()),
        "duplicate_executions": {"total": int(sum(dup_exec.values())),
                                 "by_cause": {c: dup_exec.get(c, 0) for c in CAUSES}},
        "duplicate_side_effects": {"total": int(sum(dup_side.values())),
                                   "by_cause": {c: dup_side.get(c, 0) for c in CAUSES}},
        "given_up_with_effect": {
            "jobs": int(gave.sum()), "more_than_once": int((gave & (jobs["side_effects"] > 1))
                                                           .sum()),
            "by_call": int((gave & jobs["handler"].isin(list(by_call))).sum()),
            "keyed": int((gave & jobs["handler"].isin(keyed)).sum())},
        # side effects a fencing token refused: a stale run's write after a later claim
        "side_effects_refused": int((kind == K["effect_refused"]).sum()),
        # operations that named a job they could not act on (each a line of the transcript)
        "operations_ignored": int((kind == K["operation_ignored"]).sum()),
        "double_acquisitions": len(hist.double_acquisitions),
        "completions": {"done": int(done.sum()), "rejected_by_guard": hist.completions_rejected,
                        "row_gone": hist.completions_row_gone},
        "crash_recovery": {"stranded_jobs": hist.stranded, "unrecovered": hist.unrecovered,
                           "delay": _dist(np.asarray(hist.recoveries, dtype=float)),
                           # each crash that stranded jobs, and the locks they waited out
                           "crashes": {str(i): {"node": n, "at": _r(t), "stranded": k}
                                       for i, (n, t, k) in
                                       enumerate(hist.stranded_by_crash[:20], 1)},
                           **_locks(nodes, {n for n, _, _ in hist.stranded_by_crash})},
        # the polls an idle node counted instead of simulating were empty attempts: the same
        # figures whether they were simulated or not
        "acquisition": {"attempts": int(acq.sum()) + sum(polls_skipped.values()),
                        "empty": int((got == 0).sum()) + sum(polls_skipped.values()),
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
        "nodes": node_figures(trace, jobs, nodes, end_time, polls_skipped),
        # none done is a rate of 0 even in a run of no length; some done in none: undefined
        "throughput_per_s": _r(done.sum() / end_time) if end_time > 0 else (
            0.0 if not done.any() else None),
        "invariants": verdicts(violations),
        "trace_events": len(trace),
        "trace_sha256": trace.sha256(),
    }
    out["effects"] = detect(cols, trace.nodes, jobs, nodes, end_time, out, trace.texts)
    if boundary_jobs:
        out["boundary_timers"] = boundary_figures(cols, jobs)
    if services or has_services(trace):
        out["services"] = service_figures(trace, end_time, services)
    return out


def _counts(texts: pd.Series) -> Counter:
    """How often each text occurs (``Counter(texts)``, counted by pandas: no Python string
    per row)."""
    return Counter({str(k): int(n) for k, n in texts.value_counts(sort=False).items()})


def boundary_figures(cols: dict[str, np.ndarray], jobs: pd.DataFrame) -> dict[str, Any]:
    """What the boundary timers' timer jobs did (see the module's docstring)."""
    kind = cols["kind"]
    fired = np.flatnonzero(np.isin(kind, [K["withdrawn"], K["boundary_timer"]])
                           & (cols["a"] > 0))  # a: the timer job that fired it
    outcomes = _counts(jobs["outcome"][jobs["kind"] == "boundary_timer"])
    return {"timer_jobs": int(sum(outcomes.values())), "done": outcomes.get("done", 0),
            "cancelled": outcomes.get("cancelled", 0), "pending": outcomes.get("pending", 0),
            "fired": int(len(fired)), "withdrew": int((kind[fired] == K["withdrawn"]).sum()),
            "delay": _dist(cols["time"][fired] - cols["x"][fired])}


# --- per node ---------------------------------------------------------------------------------

def idle_note(name: str, f: dict[str, Any]) -> str:
    """What a node flagged ``idle_while_work_waited`` did, in one sentence."""
    return (f"{name} ran {f['executions']} execution{'' if f['executions'] == 1 else 's'} "
            f"(its even share: {f['even_share']:.4g}) while a job it could run waited "
            f"{f['longest_idle_wait']:.4g}s with a thread of it free")


def _span_ends(opens: np.ndarray, closes: np.ndarray, time: np.ndarray,
               end: float) -> np.ndarray:
    """The end of each span opened at a row of ``opens``: the time of the first row of
    ``closes`` after it (rows are sorted: event order), or ``end``."""
    if len(closes) == 0:
        return np.full(len(opens), float(end))
    i = np.searchsorted(closes, opens)
    return np.where(i < len(closes), time[closes[np.minimum(i, len(closes) - 1)]], end)


def node_figures(trace: Trace, jobs: pd.DataFrame, nodes: tuple[NodeConfig, ...],
                 end: float, skipped: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Each node's figures (see the module's docstring), by node name, sorted."""
    cols = trace.arrays()
    kind, node, time = cols["kind"], cols["node"], cols["time"]
    n = len(trace.nodes)

    def rows(k: str) -> np.ndarray:
        return np.flatnonzero(kind == K[k])

    def per_node(r: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(node[r], weights, minlength=n)[:n] if len(r) else np.zeros(n)

    acq, locked = rows("acquire"), rows("locked")
    attempts, lost, claims = per_node(acq), per_node(acq, cols["c"][acq]), per_node(locked)
    starts = rows("exec_start")
    crashes, restarts = rows("node_crashed"), rows("node_restarted")
    paused, resumed = rows("node_paused"), rows("node_resumed")
    # each execution's end: its exec_end (same job and attempt), else its node's next crash,
    # else the run's end (one pairing for the summary, its effects and the load figure)
    run_starts, run_end, run_node, _ = executions_of(cols, end)
    executions = per_node(starts)
    figures: dict[str, dict[str, Any]] = {}
    for code, name in enumerate(trace.nodes):
        here = run_node == code
        cut = crashes[node[crashes] == code]
        back = restarts[node[restarts] == code]
        down = _span_ends(cut, back, time, end)
        pause_at = paused[node[paused] == code]
        pause_end = _span_ends(pause_at, np.sort(np.concatenate(
            [resumed[node[resumed] == code], cut])), time, end)
        time_down = float((down - time[cut]).sum())
        run_start = run_starts[here]
        figures[name] = {
            "executions": int(executions[code]),
            "executions_after_restart": int((run_start > time[back].max()).sum())
            if len(back) else None,
            "claims": int(claims[code]),
            "acquire_attempts": int(attempts[code]) + (skipped or {}).get(name, 0),
            "lost_races": int(lost[code]), "time_down": _r(time_down),
            "time_up": _r(end - time_down),
            "time_paused": _r(float((pause_end - time[pause_at]).sum())),
            "busy_thread_seconds": _r(float((run_end[here] - run_start).sum())),
            "_spans": ((run_start, run_end[here]), (np.concatenate([time[cut], time[pause_at]]),
                                                    np.concatenate([down, pause_end]))),
        }
    configs = {c.name: c for c in nodes}
    _idle_figures(figures, configs, jobs, _waits(cols, jobs, end), end)
    return {name: dict(sorted(figures[name].items())) for name in sorted(figures)}
