"""Invariants checked on every run, each a pure function of the trace (and the scenario).

- ``no_job_lost`` — every job created ends done, dead-lettered, or is still in a table at the
  end (a ``pending`` event says where and why);
- ``done_means_ran`` — a job deleted as done ran successfully at least once before;
- ``exclusive_locks`` — no node locks a job while another node's lock on it is still valid
  (a double acquisition). Recomputed here from the lock events, not taken from the store;
- ``duplicates_explained`` — every duplicate execution and side effect has a cause;
- ``retries_follow_policy`` — each retry waits what the policy's backoff says for that
  failure, leaves the retries it says, and a job is dead-lettered exactly when they run out;
- ``terminal_once`` — a job is done or dead-lettered once, and nothing locks, deletes or
  dead-letters it afterwards;
- ``liveness`` — no job still waiting at the end (job, timer or suspended table) is
  **stranded** — no node ``handles`` its task; it is suspended with no activation scheduled;
  a node that lost it (crashed, or its outcome statement failed) holds it under a lock that
  never frees (``lock_expiry: never``, an infinite lock, ``reset`` with no reset thread); or
  only nodes woken by ticks may claim it and the clock has no tick left for them — or
  **starved**: due and claimable (unlocked, or its lock expired under ``lock_expiry: claim``)
  since ``c`` while a node that may claim it passed it over (a claim begun after ``c`` got
  fewer rows than it asked, with no lost race or error, on the ``atomic`` database) or sat
  idle (up, not paused, cut off or slowed, a thread free) after ``c`` for longer than its
  ``idle_grace`` (not judged with a bounded pool, for ticks nodes, nor for a serial queue's
  tasks). Expected by ``invariants.liveness``, or job by job (``expect.declared``).

A violation names the invariant, the job and the sequence numbers of the events that show it.
The checker can fail: an unsafe strategy with latency breaks ``exclusive_locks``.
"""

from __future__ import annotations

import math

import numpy as np

from ..database.clocks import NodeClock
from ..executor.config import Scenario
from .history import Histories, histories
from .liveness import idle_grace, liveness
from .violation import Violation
from ..base.trace import K, Trace

__all__ = ["INVARIANTS", "Violation", "check", "idle_grace", "verdicts"]

INVARIANTS = ("no_job_lost", "done_means_ran", "exclusive_locks", "duplicates_explained",
              "retries_follow_policy", "terminal_once", "liveness")


def check(trace: Trace, scenario: Scenario, hist: Histories | None = None) -> list[Violation]:
    """All violations of all invariants, in the order of the invariants, then of jobs."""
    hist = hist or histories(trace)
    out: list[Violation] = []
    out += _lost(hist)
    out += _done_means_ran(trace, hist)
    out += [Violation("exclusive_locks", j, f"job {j} was acquired by a second node while "
                      "the first node's lock was still valid (double acquisition)",
                      (first, second)) for j, first, second in hist.double_acquisitions]
    out += [Violation("duplicates_explained", d.job, f"duplicate {d.what} of job {d.job} on "
                      f"{d.node} has no known cause", tuple(d.evidence))
            for d in hist.duplicates if d.cause == "unexplained"]
    out += _retries(trace, scenario)
    out += [Violation("terminal_once", j, f"job {j} was written to (locked, deleted or "
                      "dead-lettered) after it was done or dead-lettered", (first, later))
            for j, first, later in hist.after_terminal]
    out += liveness(trace, scenario, hist)
    return out


def verdicts(violations: list[Violation]) -> dict[str, int]:
    """Violations counted per invariant (0 = holds)."""
    counts = {name: 0 for name in INVARIANTS}
    for v in violations:
        counts[v.invariant] += 1
    return counts


def _lost(hist: Histories) -> list[Violation]:
    return [Violation("no_job_lost", s.id, f"job {s.id} was created but is neither done, "
                      "dead-lettered nor still in a table", (s.created_seq,))
            for s in hist.table[hist.table["outcome"] == "lost"].itertuples(index=False)]


def _done_means_ran(trace: Trace, hist: Histories) -> list[Violation]:
    cols = trace.arrays()
    kind, job, a = cols["kind"], cols["job"], cols["a"]
    ok_runs = np.flatnonzero((kind == K["exec_end"]) & (a == 1))
    # each job's first successful execution (rows in event order: unique's first index)
    ran, first = np.unique(job[ok_runs], return_index=True)
    done = np.flatnonzero((kind == K["completed"]) & (a == 1))
    at = np.minimum(np.searchsorted(ran, job[done]), max(len(ran) - 1, 0))
    ran_before = (ran[at] == job[done]) & (ok_runs[first][at] < done) if len(ran) else \
        np.zeros(len(done), bool)
    return [Violation("done_means_ran", j, f"job {j} was deleted as done without a "
                      "successful execution", (seq,))
            for seq, j in zip(done[~ran_before].tolist(), job[done[~ran_before]].tolist())]


def _retries(trace: Trace, scenario: Scenario) -> list[Violation]:
    cols = trace.arrays()
    kind = cols["kind"]
    sel = np.flatnonzero(np.isin(kind, [K["job_created"], K["retry_scheduled"],
                                        K["dead_lettered"], K["revived"], K["clock_set"]]))
    # a creation matters only to a job that fails, is revived or dead-lettered later
    created = kind[sel] == K["job_created"]
    later = cols["job"][sel[~created & (kind[sel] != K["clock_set"])]]
    sel = sel[~created | np.isin(cols["job"][sel], later)]
    #: node -> its clock, where it is not the true one: a failure's due time counts from the
    #: failing node's reading of now
    clocks: dict[int, NodeClock] = {}
    handler_of: dict[int, str] = {}
    failures: dict[int, int] = {}
    #: executions an operation gave a job back (Flowable's move with its retries)
    budget: dict[int, int] = {}
    #: each job's previous delay, as traced, and how far off that may be (a decorrelated
    #: jitter's next delay is at most 3 × the previous one)
    previous: dict[int, tuple[float, float]] = {}
    #: each job's due time, as traced: the lesson's backoff counts from it (``due += backoff``)
    due_of: dict[int, float] = {}
    out = []
    # counted at fetch (Oban): a crash or a rescue also used an attempt, so a job may have
    # fewer retries left, and reach its end sooner, than its failures alone say
    fetch = scenario.executor.count_attempt == "fetch"
    for seq in sel.tolist():
        k, j = int(kind[seq]), int(cols["job"][seq])
        if k == K["clock_set"]:
            clocks[int(cols["node"][seq])] = NodeClock.traced(cols["x"][seq], cols["c"][seq],
                                                              cols["time"][seq])
            continue
        if k == K["job_created"]:
            handler_of[j] = trace.texts[cols["text"][seq]]
            due_of[j] = float(cols["x"][seq])
            continue
        if k == K["revived"]:  # an operator's retry or move: the count starts again
            failures[j] = 0
            due_of[j] = float(cols["time"][seq])  # due at the operator's instant
            budget[j] = int(cols["a"][seq])
            previous.pop(j, None)
            continue
        if k == K["dead_lettered"] and int(cols["attempt"][seq]) == 0:
            continue  # not after a failed execution: recorded failed, or rescued exhausted
        node = trace.nodes[cols["node"][seq]]
        policy = scenario.retry_for(node, handler_of[j])
        f = failures.get(j, 0) + 1
        failures[j] = f
        total = budget.get(j, policy.total_attempts())
        # what the worker's fail call sends, where the server stores it as sent
        form = scenario.handlers[handler_of[j]].fail_retries
        if form != "decrement":
            # sent as the job holds them: what it was created with, or an operator gave it
            # (a cycle's repeat count is the engine's own count, not what a worker sends)
            held = budget.get(j, scenario.initial_retries(handler_of[j]))
            out += _sent_retries(k, j, seq, f, form, held, int(cols["a"][seq]))
            if k == K["dead_lettered"]:
                continue
        elif k == K["dead_lettered"]:
            if f < total and not fetch:
                out.append(Violation("retries_follow_policy", j, f"job {j} was dead-lettered "
                                     f"after {f} failures; the policy allows {total}", (seq,)))
            continue
        t, due, left = float(cols["time"][seq]), float(cols["x"][seq]), int(cols["a"][seq])
        clock = clocks.get(int(cols["node"][seq]))
        t = t if clock is None else clock.read(t)
        prev, prev_tol = previous.get(j, (None, 0.0))
        lo, hi = policy.backoff.bounds(f, prev)
        if policy.backoff_from == "due":  # from the due time it had
            t = due_of.get(j, t)
        due_of[j] = due
        delay = due - t
        tol = 1e-9 + 4 * math.ulp(due)  # (t + d) - t is exact only to half an ulp of t + d
        previous[j] = delay, tol
        # an uncapped exponential backoff past a float's range waits forever (inf - inf
        # would be nan: compare it as it is)
        if not (delay == lo == math.inf or lo - tol <= delay <= hi + tol + 3 * prev_tol):
            out.append(Violation("retries_follow_policy", j, f"job {j}'s failure {f} waits "
                                 f"{delay:g}s; the policy says {lo:g}s..{hi:g}s", (seq,)))
        if form != "decrement":
            continue
        if left != total - f and not (fetch and left < total - f):
            out.append(Violation("retries_follow_policy", j, f"job {j} has {left} retries "
                                 f"left after failure {f}; the policy says {total - f}",
                                 (seq,)))
        if f >= total:
            out.append(Violation("retries_follow_policy", j, f"job {j} was retried after "
                                 f"failure {f}; the policy allows {total} executions", (seq,)))
    return out


def _sent_retries(k: int, j: int, seq: int, f: int, form: str, total: int,
                  left: int) -> list[Violation]:
    """A failure whose worker sent the job's retries unchanged (it keeps the ``total`` it
    holds, never exhausted by failing) or sent none (exhausted at once)."""
    why = None
    if form == "omitted" and k != K["dead_lettered"]:
        why = f"job {j} was retried after failure {f}; its worker sends no retries (0)"
    elif form == "unchanged" and k == K["dead_lettered"]:
        why = f"job {j} ran out of retries at failure {f}; its worker hands it back unchanged"
    elif form == "unchanged" and left != total:
        why = f"job {j} has {left} retries left after failure {f}; its worker sends {total}"
    return [] if why is None else [Violation("retries_follow_policy", j, why, (seq,))]
