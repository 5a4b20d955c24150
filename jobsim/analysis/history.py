"""One pass over a trace that tells each job's story: its executions, its locks, and which
executions and side effects were duplicates, and why.

A **duplicate execution** is one that starts while another execution of the same job is
running, or after the job already succeeded once or was dead-lettered. Its cause comes from
the acquisition that led to it or, when that one was clean (the first holder's execution may
start after the second's), from the job's last lock conflict:

- ``unsafe_acquisition`` — the node locked the job while another node's lock was still valid
  (a strategy that lets a statement overwrite a live lock);
- ``lock_expired`` — the other node's lock had expired while its execution was still running
  (a run longer than the lock, with no heartbeat), or while the job still waited in that
  node's local queue (prefetched, behind long runs), which runs it later all the same;
- ``pause`` — the same, while the holder was paused (a stop-the-world stall: a zombie);
- ``crash`` — an earlier execution was lost with its node; the job ran again once the lock
  expired. When the lost one had succeeded (its completion never reached the table), every
  later run of the job is a duplicate of that success, a failed re-run and its retries too;
- ``partition`` — an earlier execution succeeded but its completion never reached the
  database (the node was cut off), so the job ran again;
- ``server_restart`` — the Zeebe-like server restored a job that a live worker was still
  running (or held in its local queue, or had run without its outcome back yet), and it was
  activated again;
- ``unexplained`` — none of the above: a bug in the model, flagged by the checks.

A **duplicate side effect** is a side effect of a job that already had one; it takes the cause
of the job's duplicate execution, or one of its own:

- ``failed_after_effect`` — an execution whose effect call succeeded failed afterwards (a
  later call failed), and its retry made the effect again;
- ``ambiguous_timeout`` — a call timed out at its caller but the service went on and took
  effect (a ``side_effect`` at the service, a=1): the caller's timeout was an ambiguous
  outcome, and the retry made the effect again (or the late effect came after the retry's).
  It comes first: the job's other duplicate, if any, is not what made this payment twice.
"""

from __future__ import annotations

import numpy as np

from ..base.trace import K, Trace
from ..database.clocks import NodeClock
from .schedules import retry_delays
from .stories import (KINDS_OF_JOB, Duplicate, Histories, JobStory, member,  # noqa: F401
                      merged, plain_jobs, plain_table)

CAUSES = ("unsafe_acquisition", "lock_expired", "pause", "crash", "partition",
          "server_restart", "failed_after_effect", "ambiguous_timeout", "clock_skew",
          "unexplained")


_INTERESTING = [K[k] for k in ("job_created", "locked", "lock_extended", "unlocked",
                               "exec_start", "side_effect", "exec_end", "completed",
                               "retry_scheduled", "dead_lettered", "pending", "node_crashed",
                               "node_paused", "node_resumed", "statement_failed",
                               "stale_write", "withdrawn", "revived", "cancelled",
                               "timer_due", "clock_set")]


def histories(trace: Trace) -> Histories:
    """Every job's story (see the module's docstring): the plain ones on whole columns, the
    others told event by event (``told``), over their events and the nodes' own."""
    cols = trace.arrays()
    idx = np.flatnonzero(np.isin(cols["kind"], _INTERESTING))
    discard = "lock expired, no attempts left"  # a rescue (reset thread) discarded the job
    discard_text = trace.texts.index(discard) if discard in trace.texts else -2
    plain = plain_jobs(cols, idx, discard_text)
    is_plain = member(cols["job"][idx], plain)
    jobs, found = told(trace, cols, idx[~is_plain])
    # the two are apart and ``plain`` sorted: a stable sort of them end to end is a merge
    ids = np.sort(np.concatenate([plain, np.fromiter(jobs, dtype=np.int64, count=len(jobs))]),
                  kind="stable")
    idx = idx[is_plain]
    del is_plain
    table = merged(plain_table(cols, idx, ids, trace.texts, trace.nodes), jobs)
    causes = {j: s.causes for j, s in jobs.items() if s.causes}
    ids = table["id"].to_numpy()
    delays = {j: d for j, d in retry_delays(trace).items()
              if (i := np.searchsorted(ids, j)) < len(ids) and ids[i] == j}
    return Histories(table, *found, causes=causes, delays=delays)


def told(trace: Trace, cols: dict[str, np.ndarray], idx: np.ndarray) -> tuple[
        dict[int, JobStory], tuple]:
    """The stories of the jobs of the events ``idx``, told event by event, and the run's
    duplicates, double acquisitions, stranded jobs, recoveries, rejected and row-gone
    completions, writes after a terminal event, unrecovered ones and each crash's stranded."""
    t_, k_, n_, j_ = (cols[c][idx].tolist() for c in ("time", "kind", "node", "job"))
    a_, b_, c_, x_, s_ = (cols[c][idx].tolist() for c in ("a", "b", "c", "x", "text"))
    seqs = idx.tolist()
    nodes, texts = trace.nodes, trace.texts
    KC, KL, KX, KU = K["job_created"], K["locked"], K["lock_extended"], K["unlocked"]
    KS, KE, KEND, KC2 = K["exec_start"], K["side_effect"], K["exec_end"], K["completed"]
    KR, KD, KP = K["retry_scheduled"], K["dead_lettered"], K["pending"]
    KCR, KPA, KRE, KSF = K["node_crashed"], K["node_paused"], K["node_resumed"], \
        K["statement_failed"]
    KSW, KWD, KRV, KCA = K["stale_write"], K["withdrawn"], K["revived"], K["cancelled"]
    KTD, KCL = K["timer_due"], K["clock_set"]
    restart_text = trace.texts.index("server restart") if "server restart" in trace.texts \
        else -2
    complete_text = trace.texts.index("complete") if "complete" in trace.texts else -2
    discard = "lock expired, no attempts left"  # a rescue (reset thread) discarded the job
    discard_text = trace.texts.index(discard) if discard in trace.texts else -2

    jobs: dict[int, JobStory] = {}
    #: job -> (node, lock_until, seq, the true instant its writer meant the lock to end)
    holder: dict[int, tuple[int, float, int, float]] = {}
    #: node -> its clock (``clock_set``), for nodes whose clock is not the true one: a lock
    #: a clock ahead takes while its holder's lock is live by true time is clock skew's
    clk: dict[int, NodeClock] = {}

    def reading(node: int, t: float) -> float:
        c = clk.get(node)
        return t if c is None else c.read(t)

    def meant(node: int, until: float) -> float:
        c = clk.get(node)
        return until if c is None else c.true_time(until)

    def expired_why(prev: tuple[int, float, int, float], t: float) -> str:
        """Why a lock its holder still needed ended at ``t``: a pause of the holder (then,
        or when the lock ran out: a node that wakes and claims its own row again before
        its run's completion is written has had its lock expire in the pause), a clock
        (the lock was live by true time, as its writer meant it), or its expiry."""
        node, due = prev[0], prev[3]
        if node in paused or due < t and any(a <= due < b for a, b in pauses.get(node, ())):
            return "pause"
        return "clock_skew" if t <= due else "lock_expired"
    running: dict[int, dict[int, int]] = {}  # job -> node -> executions in progress
    succeeded: set[int] = set()
    acq_cause: dict[tuple[int, int], tuple[str, list[int]]] = {}
    job_cause: dict[int, tuple[str, list[int]]] = {}
    #: job -> (node, seq) of a side effect whose execution has not ended yet; and the job's
    #: executions that failed after their side effect (a service-calling handler whose
    #: later call failed): the retry's side effect is a duplicate of that cause
    effect_at: dict[int, tuple[int, int]] = {}
    effect_failed: dict[int, list[int]] = {}
    #: job -> seq of an effect a service made after its caller had timed out
    ambiguous: dict[int, int] = {}
    conflict: dict[int, tuple[str, list[int]]] = {}
    crashed: dict[int, int] = {}  # job -> seq of the crash that lost an execution of it
    lost_commit: dict[int, int] = {}  # job -> seq of its completion that failed
    #: job -> seq of the crash that lost a successful run's completion: every later run of
    #: the job is a duplicate of that success (``crashed`` explains only the first re-run)
    lost_success: dict[int, int] = {}
    ended_ok: set[int] = set()  # jobs whose uncommitted run (``uncommitted``) succeeded
    paused: set[int] = set()
    pause_start: dict[int, float] = {}
    pauses: dict[int, list[tuple[float, float]]] = {}  # node -> its pauses that ended
    stranded_at: dict[int, float] = {}
    waiting: dict[int, int] = {}  # job -> node that locked it and has not started it yet
    uncommitted: dict[int, int] = {}  # job -> node whose run ended, its statement not back
    recoveries: list[float] = []
    stranded = rejected = row_gone = 0
    by_crash: list[tuple[str, float, int]] = []  # (node, instant, jobs it stranded)
    dead: set[int] = set()  # dead-lettered: any later run of it is a duplicate
    incidents: set[int] = set()
    terminal: dict[int, int] = {}  # job -> seq of its terminal event (done or dead letter)
    after_terminal: list[tuple[int, int, int]] = []  # (job, terminal seq, offending seq)
    dups: list[Duplicate] = []
    doubles: list[tuple[int, int, int]] = []

    def story(j: int) -> JobStory:
        s = jobs.get(j)
        if s is None:
            s = jobs[j] = JobStory(j)
        return s

    for i in range(len(seqs)):
        k, j, node, t, seq = k_[i], j_[i], n_[i], t_[i], seqs[i]
        if k == KC:
            s = story(j)
            s.kind = KINDS_OF_JOB[a_[i]]
            s.handler, s.priority, s.created, s.due, s.created_seq = (
                texts[s_[i]], b_[i], t, x_[i], seq)
            if c_[i] >= 0:
                s.name = texts[c_[i]]
        elif k == KL:
            prev = holder.get(j)
            cause = None
            if prev is not None:
                now = reading(node, t) if clk else t
                if prev[1] >= now and prev[0] != node:
                    cause = ("unsafe_acquisition", [prev[2], seq])
                    doubles.append((j, prev[2], seq))
                    story(j).double_acquisitions += 1
                elif prev[1] < now and (running.get(j, {}).get(prev[0], 0) > 0
                                        or uncommitted.get(j) == prev[0]):
                    # the holder (maybe this very node) still runs the job it lost the lock
                    # of, or has run it and not yet committed the outcome
                    cause = (expired_why(prev, t), [prev[2], seq])
                elif prev[1] < now and waiting.get(j) == prev[0]:
                    # the lock expired while the job sat in the holder's local queue: the
                    # holder will run it when a thread frees, whoever runs it meanwhile
                    conflict[j] = (expired_why(prev, t), [prev[2], seq])
            if cause is not None:
                acq_cause[(j, node)] = cause
                conflict[j] = cause
            else:
                acq_cause.pop((j, node), None)
            holder[j] = (node, x_[i], seq, meant(node, x_[i]) if clk else x_[i])
            waiting[j] = node
            if c_[i] > 0:  # a broker's activation: its deadline, in Unix epoch ms
                story(j).deadline = float(c_[i])
            if j in terminal:
                after_terminal.append((j, terminal[j], seq))
            if j in stranded_at:
                recoveries.append(t - stranded_at.pop(j))
        elif k == KX:
            h = holder.get(j)
            if h is not None and h[0] == node:
                holder[j] = (node, x_[i], h[2], meant(node, x_[i]) if clk else x_[i])
        elif k == KU:
            prev = holder.pop(j, None)
            if s_[i] == restart_text and (sum(running.get(j, {}).values()) > 0 or (
                    prev is not None and (waiting.get(j) == prev[0]
                                          or uncommitted.get(j) == prev[0]))):
                # the server handed back a job its worker still runs, holds in its local
                # queue, or has run without its outcome back yet: whoever activates it next
                # runs it again, and the worker runs or reports it all the same
                conflict[j] = ("server_restart", [seq])
            elif prev is not None and prev[1] < (reading(node, t) if clk else t) and (
                    running.get(j, {}).get(prev[0], 0) > 0 or uncommitted.get(j) == prev[0]
                    or waiting.get(j) == prev[0]):
                # a reset thread freed an expired lock while its holder still runs the job
                # (or holds it in its local queue): whoever takes it next runs it twice
                conflict[j] = (expired_why(prev, t), [prev[2], seq])
        elif k == KCL:
            clk[node] = NodeClock.traced(x_[i], c_[i], t)
        elif k == KTD:
            holder.pop(j, None)  # the timer's row lock ends with its move to the job table
        elif k == KRV:  # back from failed / dead letter: live again
            dead.discard(j)
            terminal.pop(j, None)
            story(j).outcome = "lost"  # until its next end, or a pending event
        elif k == KCA:
            s = story(j)
            s.outcome, s.end = "cancelled", t
        elif k == KWD:
            s = story(j)
            s.outcome, s.end = "withdrawn", t
            holder.pop(j, None)
            if j in terminal:
                after_terminal.append((j, terminal[j], seq))
            else:
                terminal[j] = seq
        elif k == KS:
            s = story(j)
            s.executions += 1
            if s.executions == 1:
                s.first_start = t
            name = nodes[node]
            if name not in s.nodes:
                s.nodes.append(name)
            if waiting.get(j) == node:
                del waiting[j]
            runs = running.setdefault(j, {})
            if sum(runs.values()) > 0 or j in succeeded or j in crashed or j in dead:
                # The acquisition that led here, or else the job's last lock conflict (the
                # first holder's execution may start after the overwriting node's), or a
                # crash or a lost completion before it.
                found = acq_cause.get((j, node)) or conflict.get(j)
                if found is None and j in crashed:
                    found = ("crash", [crashed[j]])
                if found is None and j in lost_commit:
                    found = ("partition", [lost_commit[j]])
                if found is None and j in succeeded and j in lost_success:
                    found = ("crash", [lost_success[j]])
                cause, evidence = found or ("unexplained", [])
                crashed.pop(j, None)
                dups.append(Duplicate(seq, t, j, name, "execution", cause, evidence + [seq]))
                s.duplicate_executions += 1
                s.causes.append(cause)
                job_cause[j] = (cause, evidence + [seq])
            runs[node] = runs.get(node, 0) + 1
        elif k == KE or (k == KEND and b_[i] == 1):
            s = story(j)
            s.side_effects += 1
            late = k == KE and a_[i] > 0  # at the service, its caller gone
            if k == KE and not late:
                effect_at[j] = (node, seq)
            if late and a_[i] == 1:
                ambiguous.setdefault(j, seq)
            if s.side_effects > 1:
                cause, evidence = (("ambiguous_timeout", [ambiguous[j]]) if j in ambiguous
                                   else None) or job_cause.get(j) or (
                    ("failed_after_effect", effect_failed[j]) if j in effect_failed
                    else ("unexplained", []))
                if evidence and evidence[-1] == seq:
                    evidence = evidence[:-1]
                dups.append(Duplicate(seq, t, j, nodes[node], "side_effect", cause,
                                      evidence + [seq]))
                s.duplicate_side_effects += 1
            if k == KEND:
                runs = running.get(j)
                if runs and runs.get(node, 0) > 0:
                    runs[node] -= 1
                succeeded.add(j)
                uncommitted[j] = node
                ended_ok.add(j)
        elif k == KEND:
            uncommitted[j] = node
            runs = running.get(j)
            if runs and runs.get(node, 0) > 0:
                runs[node] -= 1
            if a_[i] == 1:
                succeeded.add(j)
                ended_ok.add(j)
            else:
                ended_ok.discard(j)
                story(j).failures += 1
                said = effect_at.get(j)
                if said is not None and said[0] == node:
                    effect_failed[j] = [said[1], seq]
            if effect_at.get(j, (-1,))[0] == node:
                del effect_at[j]
        elif k == KC2:
            if uncommitted.get(j) == node:
                del uncommitted[j]
            if a_[i] == 0:
                if b_[i] == 0:
                    row_gone += 1
                else:
                    rejected += 1
            if a_[i] == 1:
                if j in terminal:
                    after_terminal.append((j, terminal[j], seq))
                else:
                    terminal[j] = seq
                s = story(j)
                s.outcome, s.end = "done", t
                holder.pop(j, None)
        elif k == KR or k == KSW:
            if uncommitted.get(j) == node:
                del uncommitted[j]
            if k == KR:
                holder.pop(j, None)
        elif k == KD:
            rescued = s_[i] == discard_text
            if uncommitted.get(j) == node and not rescued:
                del uncommitted[j]  # the run's own outcome (a rescue's discard is not one)
            dead.add(j)
            if a_[i] == 1:
                incidents.add(j)
            if j in terminal:
                after_terminal.append((j, terminal[j], seq))
            else:
                terminal[j] = seq
            s = story(j)
            s.outcome, s.end = ("dead_lettered", "incident", "failed")[a_[i]], t
            prev = holder.pop(j, None)
            if prev is not None and rescued and prev[1] < (reading(node, t) if clk else t) and (
                    running.get(j, {}).get(prev[0], 0) > 0 or uncommitted.get(j) == prev[0]
                    or waiting.get(j) == prev[0]):
                # a rescue discarded a job whose expired lock's holder still runs or holds it,
                # or has run it and not yet committed the outcome (a success the table then
                # refuses: revived, the job runs again)
                conflict[j] = (expired_why(prev, t), [prev[2], seq])
        elif k == KCR:
            for job in [jb for jb, n in waiting.items() if n == node]:
                del waiting[job]  # the crashed node's local queue is gone
            for job, runs in running.items():
                if runs.get(node, 0) > 0:
                    runs[node] = 0
                    crashed[job] = seq
            for job in [jb for jb, n in uncommitted.items() if n == node]:
                del uncommitted[job]  # ran, but died before its outcome was committed
                crashed[job] = seq
                if job in ended_ok:  # a success the table never heard of
                    lost_success.setdefault(job, seq)
            before = stranded
            for job, (owner, until, _, meant_until) in holder.items():
                if owner == node and meant_until >= t and job not in stranded_at:
                    stranded_at[job] = t
                    stranded += 1
            by_crash += [(nodes[node], t, stranded - before)] if stranded > before else []
            if node in paused:  # a crash ends a pause
                pauses.setdefault(node, []).append((pause_start[node], t))
            paused.discard(node)
        elif k == KPA:
            paused.add(node)
            pause_start[node] = t
        elif k == KRE:
            if node in paused:
                pauses.setdefault(node, []).append((pause_start[node], t))
            paused.discard(node)
        elif k == KSF:
            if j >= 0 and uncommitted.get(j) == node:
                del uncommitted[j]
            if s_[i] == complete_text and j >= 0:
                lost_commit[j] = seq
        elif k == KP:
            s = story(j)
            reason = texts[s_[i]]
            s.pending_reason = reason
            if s.outcome == "lost":
                s.outcome = "pending"
    unrecovered = sum(1 for j in stranded_at if jobs[j].outcome == "pending")
    return jobs, (dups, doubles, stranded, recoveries, rejected, row_gone, after_terminal,
                  unrecovered, by_crash)
