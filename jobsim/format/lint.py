"""Warnings for known traps: valid settings that predictably produce artefacts or risk.

``lint(scenario)`` reads a validated ``Scenario`` (each node's effective settings; the file's
own document for what the user wrote and where) and returns ``Warning``s: a code, the dotted
path of the setting to change, the reason and the fix. It draws and runs nothing (a p99 is the
distribution's closed form): no random stream or trace is touched. ``lint_runs`` does it for a
file's runs (its variants). The checks, in the order they are reported: the lock against
runs (``lock-shorter-than-run``), the local queue (``queue-outlives-lock``, and with no
heartbeat the wait and the run together: ``queue-and-run-outlive-lock``), the heartbeat
(``heartbeat-not-shorter-than-lock``) and polls (``poll-longer-than-lock``) — all quiet when
no lock can expire within the run; settings that the others make ineffective
(``ignored-setting``, ``IGNORED``); a global lock some nodes take and others do not
(``mixed-global-lock``); idle nodes (``more-nodes-than-jobs``,
``node-without-work``); a job handed back for ever (``handed-back-for-ever``); a schedule
that a failure ends for good (``schedule-stops-on-failure``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..base.durations import format_span
from ..executor.config import ExecutorConfig, Scenario
from .backlog import peak_backlog
from .lint_polls import lock_step, queue_full_caps
from .lint_work import p99, run_p99, workload_traps  # noqa: F401 (p99: the tests')

__all__ = ["IGNORED", "Warning", "lint", "lint_runs", "p99"]

NODE_FAULTS = ("crash", "pause", "partition")


@dataclass(frozen=True)
class Warning:  # noqa: A001 - jobsim's own kind of warning, not Python's
    """One trap: ``code`` names the check, ``path`` the setting to change, ``message`` the
    reason and the fix."""

    code: str
    path: str
    message: str

    def format(self, source: str | None = None, label: str = "warning") -> str:
        return f"{label}: {source + ': ' if source else ''}{self.path}: {self.message}"


def _dur(seconds: float) -> str:  # three significant figures, as a scenario writes it
    return format_span(seconds)


# --- what the file says, and what each node does ----------------------------------------------

@dataclass(frozen=True)
class _Node:
    index: int
    name: str
    cfg: ExecutorConfig
    raw: dict[str, Any]  # the node's own keys in the file ({} for a node count)
    runs: dict[str, int]  # the workload's jobs it may run, by handler


@dataclass
class _Run:
    sc: Scenario
    executor: dict[str, Any]  # the file's executor keys
    nodes: list[_Node] = field(default_factory=list)
    backlog: dict[tuple[frozenset[str], int], float] = field(default_factory=dict)

    def written(self, node: _Node, key: str) -> str | None:
        """Where the file writes ``key`` for ``node`` (its own entry first), or None."""
        return f"nodes[{node.index}].{key}" if key in node.raw else \
            f"executor.{key}" if key in self.executor else None

    def where(self, node: _Node, *keys: str) -> str:
        """Where to change it: the first of ``keys`` the file writes (node-level first)."""
        written = [k for k in keys if k in node.raw] + [k for k in keys if k in self.executor]
        return self.written(node, written[0]) or "" if written else f"executor.{keys[0]}"


def _run_of(sc: Scenario) -> _Run:
    doc = sc.document
    run = _Run(sc, doc.get("executor") if isinstance(doc.get("executor"), dict) else {})
    counts: dict[str, int] = {}
    for h, n in [(j.handler, 1) for j in sc.jobs] + [(s.handler, s.count) for s in sc.streams] \
            + [(r.handler, r.count) for r in sc.recurring]:
        counts[h] = counts.get(h, 0) + n
    raws = doc.get("nodes") if isinstance(doc.get("nodes"), list) else []
    for i, (n, cfg) in enumerate((n, n.executor) for n in sc.nodes):
        # the hint path hands a job a node creates to its own pool, whatever it handles
        hinted = _creates(sc, n.name) if cfg.hint else set()
        runs = {h: k for h, k in sorted(counts.items()) if k > 0 and (
            cfg.handles is None or h in cfg.handles or h in hinted)}
        raw = raws[i] if i < len(raws) and isinstance(raws[i], dict) else {}
        run.nodes.append(_Node(i, n.name, cfg, raw, runs))
    return run


def _creates(sc: Scenario, name: str) -> set[str]:  # handlers of the jobs node ``name`` creates
    return {j.handler for j in sc.jobs if j.node == name} | \
        {s.handler for s in sc.streams if name in s.nodes}


def _expiry(sc: Scenario, cfg: ExecutorConfig) -> str | None:
    """How an expired lock of a node frees its row for another claim: ``claim``, ``reset`` (a
    node runs a reset thread), or None (never; a broker's activation is unbounded but in claim)."""
    mode = sc.executor.lock_expiry
    if mode == "claim" or mode == "reset" and cfg.acquisition != "broker" and \
            any(n.executor.reset_interval for n in sc.nodes):
        return mode
    return None


def _rerun(mode: str) -> str:
    return ("another" if mode == "claim" else "the reset thread frees it and another") + \
        " claim takes it and runs it again"


def _expires(run: _Run, node: _Node) -> str | None:
    """The node's expiry mode when one of its locks can expire within the run, else None."""
    mode = _expiry(run.sc, node.cfg)
    return mode if mode is not None and run.sc.end > node.cfg.lock_time else None


# --- 1-4: the lock against runs, queues, heartbeats and polls ---------------------------------

Found = tuple[str, str, str]  # (code, path, message)


def _lock_shorter_than_run(run: _Run, node: _Node) -> Iterator[Found]:
    cfg, mode, handlers = node.cfg, _expires(run, node), run.sc.handlers
    if mode is None or cfg.heartbeat is not None:
        return
    # a hang outruns any lock on purpose, unless the worker's own timeout cuts it short
    long = [(h, run_p99(handlers[h], run.sc.services)) for h in node.runs
            if handlers[h].outcome != "hang" or handlers[h].worker_timeout is not None]
    # a call that can hang for ever is call-without-timeout's
    long = [(h, t) for h, t in long if cfg.lock_time < t < math.inf]
    if long:
        yield ("lock-shorter-than-run", run.where(node, "lock_time", "heartbeat"),
               f"the lock ({_dur(cfg.lock_time)}) is shorter than the p99 run of "
               f"{', '.join(f'{h!r} (p99 {_dur(t)})' for h, t in long)}, and no heartbeat "
               f"extends it: a run that outlasts its lock is not over when {_rerun(mode)} "
               f"(duplicate executions and side effects); fix: a heartbeat shorter than the "
               f"lock, or a lock_time well above {_dur(max(t for _, t in long))} (one just "
               f"above the p99 still leaves a run in a hundred to outlast it)")


def _queue_outlives_lock(run: _Run, node: _Node) -> Iterator[Found]:
    cfg, mode, handlers = node.cfg, _expires(run, node), run.sc.handlers
    if mode is None or cfg.queue_size == 0 or \
            (cfg.heartbeat is not None and cfg.heartbeat_scope == "held"):
        return
    runs = {h: n for h, n in node.runs.items() if handlers[h].outcome != "hang"}
    mean = sum(handlers[h].duration.mean * n for h, n in runs.items()) / max(1, sum(runs.values()))
    if mean <= 0:
        return
    # A node with a local queue may take all that is due at its poll (up to its size; a full
    # batch is followed at once by another claim), before the other nodes' polls come: the
    # backlog that may sit in its queue is the one its own threads would leave.
    key = frozenset(runs)
    threads = cfg.threads
    if (key, threads) not in run.backlog:
        run.backlog[key, threads] = peak_backlog(run.sc, key, threads, mean)
    depth = min(cfg.queue_size, math.floor(run.backlog[key, threads] + 1e-9))
    wait = depth * mean / cfg.threads
    slow = max((run_p99(handlers[h], run.sc.services) for h in runs), default=0.0)
    if cfg.heartbeat is None and wait <= cfg.lock_time < wait + slow < math.inf and \
            slow <= cfg.lock_time and depth:  # each alone fits the lock, not both
        yield ("queue-and-run-outlive-lock", run.where(node, "queue_size", "lock_time"),
               f"the lock ({_dur(cfg.lock_time)}) runs from the claim: a job that waits in "
               f"the local queue behind {depth} others (about {_dur(wait)}) and then runs "
               f"its p99 ({_dur(slow)}) holds its row for {_dur(wait + slow)}, and no "
               f"heartbeat extends it; then {_rerun(mode)}; fix: a lock_time above "
               f"{_dur(wait + slow)}, a queue_size of at most "
               f"{max(0, math.floor((cfg.lock_time - slow) * cfg.threads / mean))}, or a "
               f"heartbeat")
    if wait > cfg.lock_time:
        held = "no heartbeat" if cfg.heartbeat is None else "a heartbeat over running jobs only"
        yield ("queue-outlives-lock", run.where(node, "queue_size", "lock_time"),
               f"a claimed job may wait in the local queue longer than its lock: {depth} queued "
               f"jobs (queue_size {cfg.queue_size}, or the workload's peak backlog of "
               f"{math.floor(run.backlog[key, threads] + 1e-9)} if smaller) × mean run "
               f"{_dur(mean)} / {cfg.threads} thread{'s' if cfg.threads != 1 else ''} ≈ "
               f"{_dur(wait)} before the last starts, while the lock ({_dur(cfg.lock_time)}) "
               f"runs from the claim and {held} extends it; one that expires in the queue means "
               f"{_rerun(mode)}; fix: a queue_size of at most "
               f"{math.floor(cfg.lock_time * cfg.threads / mean)}, a longer lock, or a "
               f"heartbeat with heartbeat_scope: held")


def _heartbeat_not_shorter(run: _Run, node: _Node) -> Iterator[Found]:
    cfg, mode = node.cfg, _expires(run, node)
    if mode is not None and cfg.heartbeat is not None and cfg.heartbeat >= cfg.lock_time:
        yield ("heartbeat-not-shorter-than-lock", run.where(node, "heartbeat", "lock_time"),
               f"the heartbeat (every {_dur(cfg.heartbeat)}) is not shorter than the lock "
               f"({_dur(cfg.lock_time)}): a lock can expire before the next beat extends it, "
               f"and {_rerun(mode)} while it runs; fix: a heartbeat well under the lock (a "
               f"third or a quarter of it), or a longer lock")


def _poll_longer_than_lock(run: _Run, node: _Node) -> Iterator[Found]:
    cfg, mode = node.cfg, _expires(run, node)
    if mode is not None and cfg.wakeup != "ticks" and cfg.poll_interval > cfg.lock_time:
        yield ("poll-longer-than-lock", run.where(node, "poll_interval", "lock_time"),
               f"the node polls every {_dur(cfg.poll_interval)} but its lock lasts "
               f"{_dur(cfg.lock_time)}: a job freed by an expired lock (a crashed node's, or "
               f"one run past its lock) waits up to another poll interval for a claim, so "
               f"recovery takes up to {_dur(cfg.lock_time + cfg.poll_interval)} and the lock "
               f"no longer bounds it; fix: a poll_interval shorter than the lock, or a longer "
               f"lock")


# --- 5: settings the others make ineffective --------------------------------------------------

Rule = Callable[[Scenario, ExecutorConfig, str], "str | None"]
_TICKS = "a node on the clock's ticks (wakeup: ticks) never waits between its claims"


def _queue_full_wait(sc: Scenario, cfg: ExecutorConfig, name: str) -> str | None:
    if cfg.wakeup == "ticks":
        return _TICKS
    if cfg.on_queue_full == "unacquire" and cfg.claim_when == "room":
        return None
    if cfg.queue_size == 0 or cfg.claim_when == "empty":
        return ("a node with no local queue (queue_size: 0), or that claims only once it holds "
                "nothing (claim_when: empty), waits for a thread to free instead")
    return "a notify node with a full local queue waits for a slot to free instead" \
        if cfg.wakeup == "notify" else None


def _error_wait(sc: Scenario, cfg: ExecutorConfig, name: str) -> str | None:
    if cfg.wakeup == "ticks":
        return _TICKS
    if sc.db.dialect != "atomic" or cfg.acquisition == "optimistic_batch" and not cfg.global_lock:
        return None
    strategy = "read_then_write (under the global lock)" if cfg.global_lock else cfg.acquisition
    return f"on db.dialect atomic only optimistic_batch fails a claim; {strategy} never does"


def _batch_size(sc: Scenario, cfg: ExecutorConfig, name: str) -> str | None:
    if cfg.timer_table:
        return None  # the timer loop asks for whole batches
    if 0 < cfg.queue_size < cfg.batch_size:
        return (f"a claim asks for at most the free slots of the local queue (queue_size "
                f"{cfg.queue_size}), so a batch above {cfg.queue_size} acts as {cfg.queue_size}")
    if cfg.queue_size == 0 and cfg.batch_size > cfg.threads:
        return (f"with no local queue (queue_size: 0) a claim asks for at most the idle "
                f"threads, so a batch above {cfg.threads} acts as {cfg.threads}")
    return None


def _hint(sc: Scenario, cfg: ExecutorConfig, name: str) -> str | None:
    if not cfg.hint or cfg.timer_table or _creates(sc, name):
        return None
    return ("no job of the workload is created by the node (workload jobs[].node, streams[]."
            "nodes) and there is no timer table: nothing is ever hinted to it")


def _heartbeat(sc: Scenario, cfg: ExecutorConfig, name: str) -> str | None:
    if cfg.heartbeat is None or _expiry(sc, cfg) is not None:
        return None
    return (f"no lock ever expires (lock_expiry: {sc.executor.lock_expiry}"
            f"{'' if sc.executor.lock_expiry == 'never' else ', and nothing resets one'}), so "
            f"extending one changes nothing")


def _reset_interval(sc: Scenario, cfg: ExecutorConfig, name: str) -> str | None:
    mode = sc.executor.lock_expiry
    if not cfg.reset_interval or mode == "reset":
        return None
    return (f"with lock_expiry: {mode} the reset thread never finds an expired lock (only "
            f"lock_expiry: reset leaves them to it): it runs empty queries")


def _off(setting: str, why: str) -> Rule:
    return lambda sc, cfg, name: why if not getattr(cfg, setting) else None


_NO_POLLS: Rule = lambda sc, cfg, name: "the node wakes by the clock's ticks (wakeup: ticks), " \
    "never by a poll timer" if cfg.wakeup == "ticks" else None
_GLOBAL_OFF = _off("global_lock", "the global acquire lock is off (global_lock: false)")

#: (setting, why it has no effect on a node (None: it has), the fix), each from how
#: ``jobsim/executor`` reads the setting
IGNORED: tuple[tuple[str, Rule, str], ...] = (
    *((k, _NO_POLLS, "remove it, or wake by poll or notify")
      for k in ("poll_interval", "poll_jitter", "initial_delay")),
    ("long_poll_timeout", lambda sc, cfg, name: None if cfg.wakeup == "long_poll" else
     f"only a long-polling node's requests are held (wakeup: {cfg.wakeup})",
     "remove it, or set wakeup: long_poll"),
    ("heartbeat_scope", _off("heartbeat", "there is no heartbeat (heartbeat: none)"),
     "remove it, or set a heartbeat"),
    ("heartbeat", _heartbeat, "remove it, or let locks expire (lock_expiry: claim)"),
    ("reset_interval", _reset_interval, "remove it, or set lock_expiry: reset"),
    ("reset_page", _off("reset_interval", "there is no reset thread (reset_interval unset)"),
     "remove it, or set reset_interval"),
    *((f"global_lock_{k}", _GLOBAL_OFF, "remove it, or set global_lock: true")
      for k in ("wait", "poll", "force")),
    ("queue_full_wait", _queue_full_wait, "remove it"),
    ("error_wait", _error_wait, "remove it, or use a strategy that can fail a claim"),
    ("batch_size", _batch_size, "a batch_size no larger than that, or a deeper queue"),
    ("hint", _hint, "remove it, or have the node create jobs (workload node: / nodes:)"),
    *((key, lambda sc, cfg, name: f"only order: aging reads it (order: {cfg.order})"
       if cfg.order != "aging" else None, "remove it, or set order: aging")
      for key in ("aging_rate", "aging_from")),
)


def _ignored(run: _Run, node: _Node) -> Iterator[Found]:
    for setting, rule, fix in IGNORED:
        path = run.written(node, setting)
        why = None if path is None else rule(run.sc, node.cfg, node.name)
        if path is not None and why is not None:
            yield ("ignored-setting", path, f"{setting} has no effect here: {why}; fix: {fix}")


NODE_CHECKS = (_lock_shorter_than_run, _queue_outlives_lock, _heartbeat_not_shorter,
               _poll_longer_than_lock, _ignored)


def _mixed_global_lock(run: _Run) -> Iterator[Found]:
    """The global acquire lock taken by some nodes only: under it a node claims with a bulk
    UPDATE and no version check (Flowable's, made safe by the lock), which takes rows the
    nodes that claim without the lock hold."""
    takers = [n for n in run.nodes if n.cfg.global_lock]
    others = [n for n in run.nodes if not n.cfg.global_lock and n.cfg.acquisition != "broker"]
    if not takers or not others:
        return
    node = takers[0] if takers[0].raw.get("global_lock") else others[0]
    yield ("mixed-global-lock", run.where(node, "global_lock"),
           f"only {', '.join(n.name for n in takers)} take{'s' if len(takers) == 1 else ''} "
           f"the global acquire lock, and {', '.join(n.name for n in others)} "
           f"do{'es' if len(others) == 1 else ''} not; under the lock a node claims with a "
           f"bulk UPDATE and no version check, which takes rows the others have just locked "
           f"without it: one job acquired twice; fix: global_lock on every node or on none "
           f"(in Flowable it is the engine's setting, the same on every node)")


# --- 6: nodes without work --------------------------------------------------------------------

def _idle_nodes(run: _Run) -> Iterator[Found]:
    sc, nodes = run.sc, run.nodes
    jobs = sc.job_count
    if len(nodes) > jobs and not any(f.kind in NODE_FAULTS for f in sc.faults):
        idle = len(nodes) - jobs
        yield ("more-nodes-than-jobs", "nodes",
               f"{len(nodes)} nodes for {jobs} job{'s' if jobs != 1 else ''} in all (explicit "
               f"jobs, streams and recurring counts): at least {idle} node"
               f"{' never runs' if idle == 1 else 's never run'} a job, and each figure per "
               f"node is diluted by idle ones; fix: at most {jobs} node"
               f"{'s' if jobs != 1 else ''}, or more work (or a fault that needs a standby)")
    handled = set().union(*(node.runs for node in nodes)) if nodes else set()
    used = {j.handler for j in sc.jobs} | {s.handler for s in sc.streams} | \
        {r.handler for r in sc.recurring}
    expected = any(e.path == "invariants.liveness" for e in sc.expect)
    for name in sorted(used - handled) if not expected else ():
        yield ("work-without-node", f"handlers.{name}",
               f"no node runs '{name}' (no node's handles name it), so its jobs wait in the "
               f"table for good and the run goes on to its horizon; fix: add '{name}' to a "
               f"node's handles, or expect it (invariants.liveness) if it is meant to stay")
    for node in nodes:
        if node.cfg.handles is not None and not node.runs:
            yield ("node-without-work", run.where(node, "handles"),
                   f"{node.name} handles only {', '.join(node.cfg.handles)}, which no job of "
                   f"the workload runs: it never runs a job; fix: add a handler of the "
                   f"workload to handles, or remove the node")


# --- 7: schedules a failure stops --------------------------------------------------------------

# --- entry points -----------------------------------------------------------------------------

def lint(sc: Scenario) -> list[Warning]:
    """The traps of one run, per node's effective settings; a warning several nodes share is
    given once, naming them when its path is not a node's own and not every node has it."""
    run = _run_of(sc)
    found: dict[Found, list[str]] = {}
    for check in NODE_CHECKS:
        for node in run.nodes:
            for item in check(run, node):
                found.setdefault(item, []).append(node.name)
    out = [Warning(code, path, message if path.startswith("nodes[") or
                   len(names) == len(run.nodes) else f"(on {', '.join(names)}) {message}")
           for (code, path, message), names in found.items()]
    return out + [Warning(*item) for item in (*_mixed_global_lock(run), *_idle_nodes(run))] + \
        [Warning(*item) for item in (*workload_traps(sc), *lock_step(sc), *queue_full_caps(sc))]


def lint_runs(runs: list[Scenario]) -> list[Warning]:
    """The warnings of a file's runs: those every run has, once; then each variant's own,
    its path given as ``variants.<name> → <path>``."""
    each = [lint(sc) for sc in runs]
    if len(runs) < 2:
        return each[0] if each else []
    common = set(each[0]).intersection(*each[1:])
    return [w for w in each[0] if w in common] + [
        Warning(w.code, f"variants.{sc.variant} → {w.path}", w.message)
        for sc, warnings in zip(runs, each) for w in warnings if w not in common]
