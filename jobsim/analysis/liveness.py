"""The liveness invariant: no job still waiting at the end is stranded or starved (see
``checks``, where every invariant is described)."""

from __future__ import annotations

import math

import numpy as np

from ..base.trace import K, Trace
from ..database.clocks import NodeClock
from ..executor.config import ExecutorConfig, NodeConfig, Scenario
from .expect import declared
from .history import Histories
from .violation import Violation


# --- liveness -----------------------------------------------------------------------------------

_WAITING = ("job", "timer_job", "suspended_job")  # the tables a job waits in to be claimed
#: events after which a job is in a table and not held: created, unlocked, rescheduled, moved
_FREES = [K[k] for k in ("job_created", "unlocked", "retry_scheduled", "timer_due",
                         "suspended", "revived")]
_DUES = [K[k] for k in ("job_created", "retry_scheduled", "timer_due", "revived")]
#: a node's events that make it busy or free (and an erroring claim, which ends an idle span)
_NODE_EVENTS = [K[k] for k in ("exec_start", "exec_end", "node_crashed", "node_restarted",
                               "node_paused", "node_resumed", "partition")]
#: what ends a failed execution's hold on its thread: the failure statement's outcome (the
#: worker may first wait, ``fail_wait``, the job and the thread still its own)
_FAIL_OUTCOMES = [K[k] for k in ("retry_scheduled", "dead_lettered", "stale_write",
                                 "statement_failed")]


def idle_grace(cfg: ExecutorConfig, longest_claim: float) -> float:
    """How long a node that may claim a due job can sit idle without having done so: two of
    its poll cycles with every wait it may take (jitter, initial delay, the waits after an
    error and a full queue, the global lock's), the slowest claim twice, and a second."""
    cycle = (cfg.poll_interval * (1.0 + getattr(cfg, "poll_jitter", 0.0))
             + getattr(cfg, "initial_delay", 0.0) + cfg.error_wait + cfg.queue_full_wait)
    if cfg.global_lock:
        cycle += cfg.global_lock_wait + cfg.global_lock_poll + cfg.global_lock_force
    return 2.0 * cycle + 2.0 * longest_claim + 1.0


def liveness(trace: Trace, scenario: Scenario, hist: Histories) -> list[Violation]:
    t = hist.table[hist.table["outcome"] == "pending"]
    waiting = [j for j, r in zip(t["id"].tolist(), t["pending_reason"].tolist())
               if r.split(":")[0] in _WAITING]
    if not waiting:
        return []
    cols = trace.arrays()
    kind, job, node, time, x = (cols[c] for c in ("kind", "job", "node", "time", "x"))
    ends = np.flatnonzero(kind == K["run_end"])
    end = float(time[ends[-1]] if len(ends) else time.max())
    ids = np.asarray(waiting, dtype=np.int64)
    sel = np.flatnonzero(np.isin(job, ids))
    pos, k = np.searchsorted(ids, job[sel]), kind[sel]

    def last(mask: np.ndarray) -> np.ndarray:
        """Per waiting job, the sequence number of its last event in ``mask`` (-1: none)."""
        out = np.full(len(ids), -1, dtype=np.int64)
        np.maximum.at(out, pos[mask], sel[mask])
        return out

    lock, free, due_at = last(k == K["locked"]), last(np.isin(k, _FREES)), last(np.isin(k, _DUES))
    pend, susp = last(k == K["pending"]), last((k == K["suspended"]) & (cols["a"][sel] == 1))
    held = lock > free
    holder = np.where(held, node[np.maximum(lock, 0)], -1)
    mine = held[pos] & (node[sel] == holder[pos]) & (sel > lock[pos])
    ext = last(mine & (k == K["lock_extended"]))
    outcome_texts = [i for i, t in enumerate(trace.texts) if t in ("complete", "fail")]
    lost_write = last(mine & (k == K["statement_failed"]) & np.isin(cols["text"][sel],
                                                                    outcome_texts))
    until = np.where(ext >= 0, x[np.maximum(ext, 0)], x[np.maximum(lock, 0)])
    d = np.maximum(due_at, 0)  # a revived job is due at once; the others say when
    due = np.where(due_at < 0, -math.inf, np.where(kind[d] == K["revived"], time[d], x[d]))
    # claimable since the later of a time the table holds (the due time, a held lock's end:
    # compared with the claimer's clock) and the event that freed it (true time)
    table_since = np.maximum(due, np.where(held, until, -math.inf))
    true_since = np.where(held, -math.inf, time[np.maximum(free, 0)])
    since = np.maximum(table_since, true_since)
    lock, free, pend, susp, held, holder, lost_write, until, since = (a.tolist() for a in (
        lock, free, pend, susp, held, holder, lost_write, until, since))
    crashes = np.flatnonzero(kind == K["node_crashed"])
    pending_names, unrecovered_ok = declared(scenario.expect)
    ex = scenario.executor
    never = ex.lock_expiry == "never" or (ex.lock_expiry == "reset" and not any(
        n.executor.reset_interval for n in scenario.nodes))
    tick_rows = np.flatnonzero(kind == K["tick"])
    ticks_seen, last_tick = len(tick_rows), int(tick_rows[-1]) if len(tick_rows) else -1
    ticked_later = {name for t in scenario.ticks[ticks_seen:] for name in t.nodes}
    activations = {f.node for f in scenario.faults if f.kind == "activate" and f.at >= end}
    #: tasks of serial queues: such a job waits for its queue's turn, claimable or not
    serial = {s.handler for s in (*scenario.jobs, *scenario.streams) if s.queue is not None}
    eligible: dict[str, list[NodeConfig]] = {}
    out: list[Violation] = []
    #: (index of a waiting job, the event it dates from, its pending event, and since when
    #: it is claimable: a time the table holds, a true time; the later of the two counts)
    judge: list[tuple[int, int, int, float, float]] = []
    for i, j in enumerate(waiting):
        s = hist.jobs[j]
        table, reason = s.pending_reason.split(":")[0], s.pending_reason
        if s.handler not in eligible:  # the nodes that may claim it: their handles name it
            eligible[s.handler] = [n for n in scenario.nodes if n.executor.handles is None
                                   or s.handler in n.executor.handles]
        elig = eligible[s.handler]
        gone = -1
        if held[i]:
            after = crashes[(node[crashes] == holder[i]) & (crashes > lock[i])]
            gone = int(after[0]) if len(after) else int(lost_write[i])
        live = (held[i] and gone < 0) or (not held[i] and "locked by" in reason)
        declared_here = s.name in pending_names or (
            unrecovered_ok and gone >= 0 and kind[gone] == K["node_crashed"]
            and time[gone] <= until[i])
        evidence = tuple(int(e) for e in (s.created_seq, pend[i]) if e >= 0)
        why = None
        if not elig and not live:
            why = f"no node runs {s.handler!r} (no node's handles name it)"
        elif table == "suspended_job":
            if not {s.name, "all"} & activations:
                why = "it was suspended and no activation is scheduled"
                evidence = tuple(int(e) for e in (susp[i], pend[i]) if e >= 0)
        elif gone >= 0 and (never or until[i] == math.inf):
            what = f"{trace.nodes[holder[i]]} " + ("crashed" if kind[gone] == K["node_crashed"]
                                                   else "could not write its outcome")
            why = (f"{what} while holding it, and the lock never frees (lock_expiry: "
                   f"{ex.lock_expiry}{', no reset thread' if ex.lock_expiry == 'reset' else ''})")
            evidence = (int(lock[i]), gone) + evidence[-1:]
        elif not live and elig and all(n.executor.wakeup == "ticks" for n in elig) and \
                not any(n.name in ticked_later for n in elig):
            why = ("the nodes that may claim it wake only by ticks, and the clock has no tick "
                   f"left for them ({', '.join(n.name for n in elig)})")
            evidence = tuple(int(e) for e in (max(free[i], lock[i]), last_tick, pend[i])
                             if e >= 0)
        if why is not None:
            if not declared_here:
                out.append(Violation("liveness", j, f"job {j} is stranded in {table}: {why}",
                                     tuple(sorted(set(evidence)))))
            continue
        if table == "suspended_job":
            claimable = False
        elif held[i]:  # its lock frees at a claim once expired (since: max(due, until))
            claimable = ex.lock_expiry == "claim"
        else:
            claimable = "locked by" not in reason
        if claimable and not declared_here and elig and since[i] < end and \
                s.handler not in serial:
            judge.append((i, int(max(free[i], lock[i])), int(pend[i]),
                          float(table_since[i]), float(true_since[i])))
    out += _starved(trace, scenario, hist, waiting, judge, end)
    return sorted(out, key=lambda v: v.job)


def _starved(trace: Trace, scenario: Scenario, hist: Histories, waiting: list[int],
             judge: list[tuple[int, int, int, float, float]], end: float
             ) -> list[Violation]:
    """Of the jobs due and claimable since ``c`` (``judge``), those a node which may claim
    them passed over (a claim with room, on the atomic database) or left waiting while it sat
    idle longer than its grace; nodes in the scenario's order, the first finding per job."""
    if not judge:
        return []
    cols = trace.arrays()
    kind, node, time = cols["kind"], cols["node"], cols["time"]
    acq = kind == K["acquire"]
    longest = float(cols["x"][acq].max()) if acq.any() else 0.0
    timer_text = np.array([t.endswith(" timer_job") for t in trace.texts] + [False])
    room = _by_node(node, np.flatnonzero(acq & (cols["attempt"] == 0) & (cols["c"] == 0)
                                         & (cols["a"] > cols["b"])), len(trace.nodes))
    frees = _threads_freed(trace, cols)
    # a claim that errored ends an idle span, and so does a full one: it shows the node had
    # more due work than its batch, its pace set by its loop (the wait after a full queue),
    # not idle — a job its order keeps behind others is passed over by a busy node
    full = acq & (cols["a"] > 0) & (cols["b"] == cols["a"])
    events = _by_node(node, np.flatnonzero(np.isin(kind, _NODE_EVENTS) | frees | (
        acq & (cols["attempt"] > 0)) | full | _raced(cols, acq, scenario)), len(trace.nodes))
    slowed = np.flatnonzero(kind == K["db_slowed"])
    stories = [hist.jobs[waiting[i]] for i, *_ in judge]
    table_since = np.array([j[3] for j in judge])
    true_since = np.array([j[4] for j in judge])
    clocks = node_clocks(trace, cols)
    timers = np.array([st.pending_reason.split(":")[0] == "timer_job" for st in stories])
    handler = np.array([st.handler for st in stories], dtype=object)
    found: dict[int, Violation] = {}
    for n in scenario.nodes:
        mine = np.ones(len(judge), dtype=bool) if n.executor.handles is None else np.isin(
            handler, list(n.executor.handles))
        mine[list(found)] = False
        if n.name not in trace.nodes or not mine.any():
            continue
        code = trace.nodes.index(n.name)
        # the table's due times and lock ends are compared with the claimer's clock
        c = np.maximum(by_clock(clocks.get(code, []), table_since), true_since)
        if scenario.db.dialect == "atomic":  # a claim sees the table as it is: no excuse
            claims = room(code)
            for table in (False, True):
                rows = claims[timer_text[cols["text"][claims]] == table]
                starts = time[rows] - cols["x"][rows]
                order = np.argsort(starts, kind="stable")
                starts, rows = starts[order], rows[order]
                ks = np.flatnonzero(mine & (timers == table))
                first = np.searchsorted(starts, c[ks], side="right")
                hit = first < len(rows)
                for k, f in zip(ks[hit].tolist(), first[hit].tolist()):
                    seq, j = int(rows[f]), stories[k].id
                    found[k] = Violation("liveness", j, f"job {j} is starved: due and claimable "
                                         f"since t={c[k]:g}s, but {n.name}'s claim at "
                                         f"t={time[seq]:g}s asked for {cols['a'][seq]} rows, got "
                                         f"{cols['b'][seq]} and passed it over; nothing claimed "
                                         "it by the end", tuple(sorted(
                                             e for e in (judge[k][1], seq, judge[k][2]) if e >= 0)))
                    mine[k] = False
        if n.executor.wakeup == "ticks" or scenario.db.connections or not mine.any():
            continue  # a tick is its only poll; a bounded pool may hold a claim up for long
        rows = np.union1d(events(code), slowed)
        # a node that claims only once it holds nothing (claim_when: empty) is busy while
        # it runs any job, whatever its free threads
        busy_at = 1 if n.executor.claim_when == "empty" else n.executor.threads
        s0, s1 = _idle_spans(cols, rows, frees, busy_at, n.start_at or 0.0, end)
        # a statement sent while the node was cut off fails only at its timeout, which may
        # come after the partition healed: the node waits on it, not idle (a fuzz draw: a
        # broker's activation sent at 107.1 s failed at 112.1 s, 2.1 s after the heal)
        grace = idle_grace(n.executor, longest) + max(
            (f.timeout for f in scenario.faults if f.kind == "partition" and f.node == n.name),
            default=0.0)
        if not len(s0):
            continue
        span = s1 - s0
        after = np.append(np.maximum.accumulate(span[::-1])[::-1], -math.inf)  # from span i on
        ks = np.flatnonzero(mine)
        f = np.searchsorted(s1, c[ks], side="right")  # the first span that ends after c
        g = np.minimum(f, len(s0) - 1)
        straddle = np.where(f < len(s0), s1[g] - np.maximum(s0[g], c[ks]), -math.inf)
        longest_idle = np.maximum(straddle, after[np.minimum(f + 1, len(s0))])
        over = longest_idle > grace
        for k, fk, idle in zip(ks[over].tolist(), f[over].tolist(), longest_idle[over].tolist()):
            at = max(float(s0[fk]), float(c[k]))
            if idle > s1[fk] - at:  # a later span is the longest
                at = float(s0[fk + 1 + int(np.argmax(span[fk + 1:]))])
            j = stories[k].id
            found[k] = Violation("liveness", j, f"job {j} is starved: due and claimable since "
                                 f"t={c[k]:g}s, while {n.name}, which may run it, sat idle "
                                 f"(up, a thread free) for {idle:g}s from t={at:g}s, past its "
                                 f"{grace:g}s grace (two poll cycles and every wait)",
                                 tuple(e for e in judge[k][1:3] if e >= 0))
    return list(found.values())


def _by_node(node: np.ndarray, rows: np.ndarray, nodes: int):
    """``rows`` grouped by node: a function from a node's code to its rows, in order."""
    order = np.argsort(node[rows], kind="stable")
    rows = rows[order]
    bounds = np.searchsorted(node[rows], np.arange(nodes + 1))
    return lambda code: rows[bounds[code]:bounds[code + 1]]


def _threads_freed(trace: Trace, cols: dict[str, np.ndarray]) -> np.ndarray:
    """Per trace row: whether it gives a worker thread back. A successful ``exec_end``
    does; a failed one does not, for its thread goes on to the failure statement (after the
    handler's ``fail_wait``, if any): the outcome of that statement by the same node for the
    same job and attempt does (a crash, which may come between, frees every thread)."""
    kind = cols["kind"]
    end = kind == K["exec_end"]
    fail_text = trace.texts.index("fail") if "fail" in trace.texts else -2
    outcome = np.isin(kind, _FAIL_OUTCOMES[:2]) | (
        np.isin(kind, _FAIL_OUTCOMES[2:]) & (cols["text"] == fail_text))
    failed = end & (cols["a"] == 0)
    frees = end & (cols["a"] == 1)
    rows = np.flatnonzero(failed | (outcome & (cols["attempt"] > 0)))
    if len(rows) > 1:
        key = np.lexsort((rows, cols["attempt"][rows], cols["job"][rows], cols["node"][rows]))
        r = rows[key]
        same = ((cols["node"][r[1:]] == cols["node"][r[:-1]])
                & (cols["job"][r[1:]] == cols["job"][r[:-1]])
                & (cols["attempt"][r[1:]] == cols["attempt"][r[:-1]]))
        paired = same & failed[r[:-1]] & outcome[r[1:]]
        frees[r[1:][paired]] = True
    return frees


def _idle_spans(cols: dict[str, np.ndarray], rows: np.ndarray, frees: np.ndarray,
                threads: int, start: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    """The spans ``[s0, s1)`` from ``start`` to ``end`` during which a node was up, not
    paused, cut off or slowed, and ran fewer executions than ``threads`` (a failed one holds
    its thread until its failure statement is done: ``frees``); ``rows``: its events (and
    the database's slowdowns), in order. An erroring claim, or a full one, ends a span."""
    k, t, a, x = (cols[c][rows] for c in ("kind", "time", "a", "x"))
    ix = np.arange(len(rows))
    crash = k == K["node_crashed"]
    running = np.cumsum((k == K["exec_start"]).astype(np.int64) - frees[rows])
    at_crash = np.maximum.accumulate(np.where(crash, ix, -1))
    running = running - np.where(at_crash >= 0, running[np.maximum(at_crash, 0)], 0)

    def flag(on: np.ndarray, off: np.ndarray) -> np.ndarray:
        p = np.maximum.accumulate(np.where(on | off, ix, -1))
        return (p >= 0) & on[np.maximum(p, 0)]

    part, slow = k == K["partition"], k == K["db_slowed"]
    busy = (flag(crash, k == K["node_restarted"]) | (running >= threads)
            | flag(k == K["node_paused"], (k == K["node_resumed"]) | crash)
            | flag(part & (a == 1), part & (a == 0)) | flag(slow & (x != 1.0), slow & (x == 1.0)))
    idle = np.concatenate([[True], ~busy])
    t0 = np.maximum(np.concatenate([[start], t]), start)
    t1 = np.maximum(np.concatenate([t, [end]]), start)
    cut = np.concatenate([[False], k == K["acquire"]])
    new = idle & (np.concatenate([[True], ~idle[:-1]]) | cut)
    group = (np.cumsum(new) - 1)[idle]
    s0 = np.full(int(new.sum()), math.inf)
    s1 = np.zeros(len(s0))
    np.minimum.at(s0, group, t0[idle])
    np.maximum.at(s1, group, t1[idle])
    return s0, s1


def node_clocks(trace: Trace, cols: dict[str, np.ndarray]) -> dict[int, list[tuple[float,
                                                                               NodeClock]]]:
    """Each skewed node's clock (``clock_set``) as pieces: (from, the clock from then on)."""
    out: dict[int, list[tuple[float, NodeClock]]] = {}
    for seq in np.flatnonzero(cols["kind"] == K["clock_set"]).tolist():
        t = float(cols["time"][seq])
        out.setdefault(int(cols["node"][seq]), []).append(
            (t, NodeClock.traced(cols["x"][seq], cols["c"][seq], t)))
    return out


def by_clock(pieces: list[tuple[float, NodeClock]], c: np.ndarray) -> np.ndarray:
    """The true instants from which a node's clock (``pieces``, none: the true one) reads at
    least ``c`` and goes on doing so (a step back may take a due time away again): within a
    piece the clock rises, so each piece, from the last, either already reads ``c`` at its
    start or reaches it inside."""
    if not pieces:
        return c
    out = np.full(len(c), math.nan)
    open_ = np.ones(len(c), dtype=bool)
    t1 = math.inf  # where the piece ends (the next one's start)
    for t0, clock in reversed(pieces):
        hit = open_ & (clock.read(t0) < c)
        out[hit] = np.clip(clock.true_time(c[hit]), t0, t1)
        open_ &= ~hit
        t1 = t0
    out[open_] = np.minimum(c[open_], pieces[0][0])  # the true clock before the first piece
    return out


def _raced(cols: dict[str, np.ndarray], acq: np.ndarray, scenario: Scenario) -> np.ndarray:
    """Claims that came back short while another node locked rows during their statement (a
    SQL database only): a guarded UPDATE whose rows a concurrent claim took re-checks them and
    returns fewer, a race the node lost, not idleness — nodes whose polls fall together lose
    round after round (found by the fuzz: 3 empty claims in 30 s, each beside another's)."""
    out = np.zeros(len(acq), dtype=bool)
    if scenario.db.dialect == "atomic":
        return out
    short = np.flatnonzero(acq & (cols["b"] < cols["a"]))
    locks = np.flatnonzero(cols["kind"] == K["locked"])
    if not len(short) or not len(locks):
        return out
    lt, ln = cols["time"][locks], cols["node"][locks]
    end = cols["time"][short]
    lo = np.searchsorted(lt, end - cols["x"][short], side="left")
    hi = np.searchsorted(lt, end, side="right")
    some = hi > lo  # another node's lock fell in the statement, or its own
    for i, a, b in zip(short[some].tolist(), lo[some].tolist(), hi[some].tolist()):
        out[i] = bool((ln[a:b] != cols["node"][i]).any())
    return out
