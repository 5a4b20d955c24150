"""The run told as a story, one line per notable event — the lesson's transcript format.

- a tick of the fake clock: ``t=0: <note>`` / ``t=+10s:``;
- what a handler says at its side effect: ``      -> bureau responded, token advances``;
- a failure: ``  [node-A] job 2 failed (bureau 502 (attempt 1)); retry in 10s (2 left)``
  (and how long the worker waited before it reported it, with ``fail_wait``);
- a dead letter: ``  [node-B] job 3 DEAD-LETTERED: bad config``;
- an async job done: ``  [node-B] job 2 (async) done`` (a timer's firing is told by its
  handler's own line); a completion rejected by its owner guard, or finding its row gone;
- an operator's action: a failed task retried (failsafe), a dead letter moved back to the
  job table with its new retries (Flowable), a failed task cancelled; an id submitted again
  once its task was gone;
- a boundary timer firing: an interrupting one withdraws its job — the engine's own timer
  (the Zeebe-like server), or the timer job an executor thread ran (Flowable), which is late
  by its poll and queue — and a non-interrupting one only fires;
- a crash, a pause and its end;
- a double acquisition, and a completion that found its row gone: a duplicate run — unless
  a boundary timer withdrew the job (the engine answers that the job is gone: the Zeebe-like
  server's "job not found", 404), or the row was a boundary timer's timer job, deleted with
  its task when the task ended first (the timer fires nothing); a failure of a withdrawn job
  is told the same way (its ``stale_write``; other stale writes change nothing and are not
  told);
- at the end: ``dead letters: [(3, 'async')]``.

Pure: a function of the trace, returning lines; printing is the CLI's business.
"""

from __future__ import annotations

import numpy as np

from ..base.durations import format_duration, format_span
from ..base.trace import K, Trace
from .history import KINDS_OF_JOB

_TOLD = [K[k] for k in ("tick", "job_created", "side_effect", "exec_end", "retry_scheduled",
                        "dead_lettered", "completed", "locked", "pending", "node_crashed",
                        "node_restarted", "node_paused", "node_resumed", "withdrawn",
                        "boundary_timer", "server_restarted", "revived", "cancelled",
                        "resubmitted", "service_state", "effect_refused",
                        "operation_ignored", "stale_write", "unlocked")]
#: jobs whose run is told by what it does, not by a "done" line
_QUIET = ("timer", "boundary_timer")


def _clock(t: float) -> str:
    return "t=0" if t == 0 else f"t=+{format_duration(t)}"


def _waited(ms: int) -> str:
    """The worker's wait before it reported the failure (``fail_wait``), if any."""
    return f", reported after the worker waited {format_span(ms / 1000.0)}" if ms else ""


def _timer_job(tid: int, due: float, t: float) -> str:
    """A boundary timer's timer job that fired: when it was due, how late it ran."""
    return (f"its timer job {tid}, due at t={due:g}s, ran {format_span(t - due)} late"
            if t > due else f"its timer job {tid} ran at its due time")


def _row_gone(j: int, withdrawn_by: dict[int, int], ended_with: dict[int, int],
              what: str = "completion") -> str:
    """A completion (or failure) of job ``j`` that found its row gone, and why."""
    if j in withdrawn_by:
        if withdrawn_by[j] == 0:
            return (f'job {j} {what} answered "job not found" (404): the job was '
                    "withdrawn by its boundary timer")
        return (f"job {j} {what} found no row: the job was withdrawn by its boundary "
                f"timer (timer job {withdrawn_by[j]})")
    if j in ended_with:
        return (f"job {j} (a boundary timer) ran, but its row is gone: deleted with its task, "
                f"job {ended_with[j]}, which ended first (the timer fires nothing)")
    return f"job {j} done again: its row was already gone (a duplicate run)"


def _service_state(name: str, t: float, state: int, b: int, c: int, x: float) -> str:
    if state == 1 and b:
        return f"  [{name}] still DOWN at t={t:g}s: the calls it receives hold it down"
    if state == 1:
        return f"  [{name}] DOWN at t={t:g}s: " + ("its calls are not answered" if c else
                                                  "its calls fail at once")
    if state == 2:
        return (f"  [{name}] BROWN-OUT at t={t:g}s: latency ×{x:g}, {c / 1e4:g}% of calls "
                "fail")
    return f"  [{name}] back up at t={t:g}s"


def _ignored(op: str, job: int, where: int, node: str, t: float) -> str:
    """The line of an operation that found nothing to act on."""
    from ..executor.operation_kinds import ACTS_ON, WHERE

    found = (f"job {job} is " + WHERE[where] + (f" ({node})" if node and where in (2, 7)
                                                 else "")) if job >= 0 else \
        "no job of that name was created yet"
    return (f"      WARNING: {op} at t={t:g}s did nothing: {found}; {op} acts on "
            f"{ACTS_ON.get(op, 'a job')}")


#: kinds whose every event is a line of the story
_ALWAYS = [K[k] for k in ("tick", "retry_scheduled", "dead_lettered", "revived", "resubmitted",
                          "withdrawn", "boundary_timer", "server_restarted", "node_crashed",
                          "node_restarted", "node_paused", "node_resumed", "service_state",
                          "effect_refused", "operation_ignored")]


def _kind_names(cols: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """The kind (``KINDS_OF_JOB``) of the job of each of ``rows``, by its last
    ``job_created`` before the row ("" if none)."""
    created = np.flatnonzero(cols["kind"] == K["job_created"])
    out = np.full(len(rows), "", dtype=object)
    if not len(created) or not len(rows):
        return out
    span = np.int64(len(cols["kind"]) + 1)
    key = cols["job"][created].astype(np.int64) * span + created
    order = np.argsort(key, kind="stable")
    key, created = key[order], created[order]
    job = cols["job"][rows].astype(np.int64)
    at = np.searchsorted(key, job * span + rows) - 1
    ok = (at >= 0) & (cols["job"][created[np.maximum(at, 0)]] == job)
    out[ok] = np.array(KINDS_OF_JOB, dtype=object)[cols["a"][created[at[ok]]]]
    return out


def _after_withdrawal(cols: dict[str, np.ndarray], idx: np.ndarray) -> np.ndarray:
    """Whether each event of ``idx`` comes after a withdrawal of its job (its row gone)."""
    w = np.flatnonzero(cols["kind"] == K["withdrawn"])
    first = dict(zip(cols["job"][w[::-1]].tolist(), w[::-1].tolist()))
    return np.array([first.get(j, i) < i for j, i in zip(cols["job"][idx].tolist(),
                                                         idx.tolist())], dtype=bool)


def _lines(cols: dict[str, np.ndarray], idx: np.ndarray, texts: list[str],
           resets: np.ndarray) -> np.ndarray:
    """Whether each event of ``idx`` tells a line (the branches of ``narrate``);
    ``resets``: those that begin a reset thread's statement (``_resets``)."""
    k, a, b = cols["kind"][idx], cols["a"][idx], cols["b"][idx]
    said = np.array([bool(t) for t in texts] + [False])[cols["text"][idx]]  # -1: the last
    done = k == K["completed"]
    quiet = np.zeros(len(idx), bool)
    quiet[done] = np.isin(_kind_names(cols, idx[done]), _QUIET)
    late = np.zeros(len(idx), bool)
    stale = k == K["stale_write"]
    late[stale] = _after_withdrawal(cols, idx[stale])
    return (np.isin(k, _ALWAYS) | late | resets
            | (((k == K["side_effect"]) | ((k == K["exec_end"]) & (b == 1))) & said)
            | ((k == K["cancelled"]) & (a <= 0)) | (done & ((a == 0) | ~quiet))
            | ((k == K["locked"]) & ((b == 1) | (a >= 0))))


#: what a reset thread writes when it frees an expired lock (``parts/reset.py``)
RESET = "lock expired (reset)"


def _resets(cols: dict[str, np.ndarray], idx: np.ndarray, texts: list[str]
            ) -> tuple[np.ndarray, np.ndarray]:
    """Which events of ``idx`` are a reset thread freeing an expired lock, and which of
    those begin a run of them (one statement: one instant, one node), told as one line."""
    code = texts.index(RESET) if RESET in texts else -2
    reset = (cols["kind"][idx] == K["unlocked"]) & (cols["text"][idx] == code)
    t, n = cols["time"][idx], cols["node"][idx]
    same = np.r_[False, reset[:-1] & (t[1:] == t[:-1]) & (n[1:] == n[:-1])]
    return reset, reset & ~same


def _routine(cols: dict[str, np.ndarray], idx: np.ndarray) -> np.ndarray:
    """Whether each event of ``idx`` is a routine line: a job done, as expected."""
    return (cols["kind"][idx] == K["completed"]) & (cols["a"][idx] > 0)


def _done_runs(times: np.ndarray, group: np.ndarray, groups: int) -> list[str]:
    """Per group (the kept line each run of routine lines comes before; ``groups``: after
    the last), the line that counts it: how many jobs were done, and when."""
    out = [""] * (groups + 1)
    if not len(group):
        return out
    first = np.r_[0, np.flatnonzero(np.diff(group)) + 1]
    for s, e in zip(first, np.r_[first[1:], len(group)]):
        n, t0, t1 = e - s, times[s], times[e - 1]
        when = f"at t={t0:.5g}s" if t0 == t1 else f"from t={t0:.5g}s to t={t1:.5g}s"
        out[group[s]] = f"  ({n:,} job{'s' if n != 1 else ''} done {when})"
    return out


#: what the first line of a long story counts: (one, many, which told events)
_SHORT = (("crash", "crashes", lambda k, a, b: k == K["node_crashed"]),
          ("pause", "pauses", lambda k, a, b: k == K["node_paused"]),
          ("failure retried", "failures retried", lambda k, a, b: k == K["retry_scheduled"]),
          ("dead letter", "dead letters", lambda k, a, b: (k == K["dead_lettered"]) & (a == 0)),
          ("incident", "incidents", lambda k, a, b: (k == K["dead_lettered"]) & (a == 1)),
          ("job kept failed", "jobs kept failed",
           lambda k, a, b: (k == K["dead_lettered"]) & (a == 2)),
          ("service outage", "service outages",
           lambda k, a, b: (k == K["service_state"]) & (a == 1) & (b == 0)),
          ("brown-out", "brown-outs", lambda k, a, b: (k == K["service_state"]) & (a == 2)),
          ("reset of expired locks", "resets of expired locks",
           lambda k, a, b: k == K["unlocked"]),
          ("takeover of an expired lock", "takeovers of an expired lock",
           lambda k, a, b: (k == K["locked"]) & (b == 0)),
          ("double acquisition", "double acquisitions",
           lambda k, a, b: (k == K["locked"]) & (b == 1)),
          ("completion rejected", "completions rejected",
           lambda k, a, b: (k == K["completed"]) & (a == 0) & (b > 0)),
          ("completion that found its row gone", "completions that found their row gone",
           lambda k, a, b: (k == K["completed"]) & (a == 0) & (b == 0)))


def _in_short(cols: dict[str, np.ndarray], told: np.ndarray) -> str:
    """A long story's first line: how many of each thing that matters it tells."""
    k, a, b = (cols[c][told] for c in ("kind", "a", "b"))
    parts = []
    for one, many, which in _SHORT:
        n = int(which(k, a, b).sum())
        if n:
            parts.append(f"{n:,} {one if n == 1 else many}")
    nothing = "no crash, pause, failure, outage or lock taken over"
    return "in short: " + (", ".join(parts) if parts else nothing)


#: what the run's faults did, told however late in a long story: a node's crash, restart,
#: pause and resume, the server's restart, a service's change of health
_LANDMARKS = [K[k] for k in ("node_crashed", "node_restarted", "node_paused", "node_resumed",
                             "server_restarted", "service_state")]


def narrate(trace: Trace, limit: int | None = 60) -> list[str]:
    """The story's lines. Past ``limit`` lines, what matters leads: every line that is not
    a job done as expected (a failure, a crash, a takeover, a double run, a rejected
    completion…) is told, up to ``limit`` of them, and each run of routine completions
    between them is one line that counts it. Past those, the landmarks (``_LANDMARKS``: a
    crash, a pause, an outage…, up to ``limit`` more) are told still, each after a line that
    counts what was left out before it: 60 failures in the first half minute must not hide
    the outage at 8 minutes."""
    cols = trace.arrays()
    told = np.flatnonzero(np.isin(cols["kind"], _TOLD))
    reset, head = _resets(cols, told, trace.texts)
    line = _lines(cols, told, trace.texts, head)
    count = int(line.sum())
    keep = line.copy()
    runs: list[str] = []  # with a long story: the count of jobs done before each kept line
    lead, hidden, after = "", 0, np.zeros(0, dtype=np.int64)
    routine = np.zeros(0, dtype=np.int64)
    if limit is not None and count > limit:
        done = line & _routine(cols, told)
        keep &= ~done
        notable = np.flatnonzero(keep)
        hidden = max(0, len(notable) - limit)
        if hidden:
            keep[notable[limit]:] = False
            past = notable[limit:]
            keep[past[np.isin(cols["kind"][told[past]], _LANDMARKS)][:limit]] = True
        routine = np.flatnonzero(done)
        lead = _in_short(cols, told[line])
    # and the deletions of boundary timers' timer jobs before the last line told (what a
    # completion that found its row gone says)
    last = np.flatnonzero(keep)[-1] + 1 if keep.any() else 0
    keep[:last] |= (cols["kind"][told[:last]] == K["cancelled"]) & (cols["a"][told[:last]] > 0)
    gaps: list[int] = []  # with lines left out: how many before each line told
    if lead:
        kept = np.flatnonzero(keep)
        if hidden:
            left = np.zeros(len(told) + 1, dtype=np.int64)
            left[notable + 1] = 1
            left[kept + 1] = 0
            left = np.cumsum(left)  # the notable lines left out before each position
            gaps = np.diff(np.r_[0, left[kept]]).tolist()
            hidden = int(left[-1] - left[last])  # those after the last line told
        if hidden:  # the jobs done after the last line told are counted with what is hidden
            routine, after = routine[routine < last], routine[routine >= last]
        runs = _done_runs(cols["time"][told[routine]], np.searchsorted(kept, routine),
                          len(kept))
    group = np.cumsum(head)[reset]  # each reset's run, numbered from 1
    freed = dict(zip(np.flatnonzero(head).tolist(), np.bincount(group)[1:].tolist()))
    at = np.flatnonzero(keep).tolist()  # each line's place among the told events
    idx = told[keep]
    kinds, times, nodes_, jobs = (cols[c][idx].tolist() for c in ("kind", "time", "node", "job"))
    a_, b_, c_, x_, s_ = (cols[c][idx].tolist() for c in ("a", "b", "c", "x", "text"))
    kind_of = _kind_names(cols, idx).tolist()
    names, texts = trace.nodes, trace.texts
    #: job -> the timer job whose boundary event withdrew it (0: the engine's own timer)
    withdrawn_by: dict[int, int] = {}
    #: boundary timer job -> its task, whose end deleted it
    ended_with: dict[int, int] = {}
    lines: list[str] = [lead] if lead else []
    for i, k in enumerate(kinds):
        if runs and runs[i]:
            lines.append(runs[i])
        if gaps and gaps[i]:
            lines.append(f"  … {gaps[i]:,} more line{'s' if gaps[i] != 1 else ''} left out "
                         "before this one")
        j = jobs[i]
        who = f"[{names[nodes_[i]]}]" if nodes_[i] >= 0 else ""
        text = texts[s_[i]] if s_[i] >= 0 else ""
        if k == K["tick"]:
            lines.append(f"{_clock(times[i])}:" + (f" {text}" if text else ""))
        elif (k == K["side_effect"] or (k == K["exec_end"] and b_[i] == 1)) and text:
            lines.append(f"      -> {text}")
        elif k == K["effect_refused"]:
            now = "the row is gone" if b_[i] < 0 else f"a later claim holds token {b_[i]}"
            lines.append(f"  {who} job {j}'s side effect{f' ({text})' if text else ''} REFUSED "
                         f"at t={times[i]:g}s: its fencing token {a_[i]} is stale ({now}); "
                         "no effect, the run fails")
        elif k == K["retry_scheduled"]:
            lines.append(f"  {who} job {j} failed ({text}){_waited(c_[i])}; retry in "
                         f"{format_span(x_[i] - times[i])} ({a_[i]} left)")
        elif k == K["dead_lettered"] and a_[i] == 2:
            lines.append(f"  {who} job {j} FAILED: {text} (kept until retried or cancelled)")
        elif k == K["operation_ignored"]:
            lines.append(_ignored(text, j, a_[i], names[nodes_[i]] if nodes_[i] >= 0 else "",
                                  times[i]))
        elif k == K["revived"] and text == "fail":
            lines.append(f"      job {j} FAILED by an operator's call at t={times[i]:g}s with "
                         f"{a_[i]} retr{'y' if a_[i] == 1 else 'ies'} left: waiting again")
        elif k == K["revived"] and text == "move":
            lines.append(f"      job {j} MOVED back from the dead-letter table to the job table "
                         f"by an operator at t={times[i]:g}s, with {a_[i]} "
                         f"retr{'y' if a_[i] == 1 else 'ies'}")
        elif k == K["revived"]:
            lines.append(f"      job {j} RETRIED by an operator at t={times[i]:g}s")
        elif k == K["cancelled"] and a_[i] > 0:
            ended_with[j] = a_[i]  # a boundary timer deleted with its task: not worth a line
        elif k == K["cancelled"]:
            lines.append(f"      job {j} CANCELLED by an operator at t={times[i]:g}s")
        elif k == K["resubmitted"]:
            lines.append(f"      id {a_[i]} submitted again after its task was gone: a new "
                         f"task, job {j}")
        elif k == K["dead_lettered"] and a_[i] == 1:
            lines.append(f"  {who} job {j} failed{_waited(c_[i])} with no retries left: "
                         f"INCIDENT (JOB_FAILED, critical): {text}")
        elif k == K["dead_lettered"]:
            lines.append(f"  {who} job {j} DEAD-LETTERED: {text}")
        elif k == K["withdrawn"]:
            withdrawn_by[j] = a_[i]
            lines.append(f"      job {j} WITHDRAWN by its interrupting boundary timer at "
                         f"t={times[i]:g}s" if a_[i] == 0 else
                         f"  {who} job {j} WITHDRAWN by its interrupting boundary timer at "
                         f"t={times[i]:g}s: {_timer_job(a_[i], x_[i], times[i])}")
        elif k == K["boundary_timer"]:
            lines.append(f"      job {j}'s non-interrupting boundary timer FIRED at "
                         f"t={times[i]:g}s; the job stays" if a_[i] == 0 else
                         f"  {who} job {j}'s non-interrupting boundary timer FIRED at "
                         f"t={times[i]:g}s: {_timer_job(a_[i], x_[i], times[i])}; the job "
                         "stays")
        elif k == K["stale_write"]:  # told only for a withdrawn job (``_lines``)
            lines.append(f"  {who} {_row_gone(j, withdrawn_by, ended_with, 'failure')}")
        elif k == K["server_restarted"]:
            lines.append(f"  the server RESTARTED at t={times[i]:g}s: {a_[i]} activated jobs "
                         "restored to waiting, same keys and retries")
        elif k == K["completed"]:
            if a_[i] == 0 and b_[i] == 1:
                lines.append(f"  {who} job {j} completion REJECTED: another node holds its "
                             "row now")
            elif a_[i] == 0 and b_[i] == 2:
                lines.append(f"  {who} job {j} completion REJECTED: its row is no longer "
                             "locked by this node (rescheduled or moved)")
            elif a_[i] == 0:
                lines.append(f"  {who} {_row_gone(j, withdrawn_by, ended_with)}")
            elif kind_of[i] not in _QUIET:
                lines.append(f"  {who} job {j} ({kind_of[i] or 'async'}) done")
        elif k == K["locked"] and b_[i] == 1:
            lines.append(f"  {who} job {j} ACQUIRED TWICE: {names[a_[i]]}'s lock was still "
                         "valid")
        elif k == K["unlocked"]:
            n = freed.get(at[i], 1)
            lines.append(f"  {who} its reset thread FREED {n:,} expired lock"
                         f"{'s' if n != 1 else ''} at t={times[i]:g}s (job {j}"
                         f"{f' and {n - 1:,} more' if n != 1 else ''}): free to be claimed "
                         "again")
        elif k == K["locked"]:
            whose = "its own lock" if a_[i] == nodes_[i] else f"{names[a_[i]]}'s lock"
            lines.append(f"  {who} job {j} TAKEN OVER at t={times[i]:g}s: {whose} had expired")
        elif k == K["node_crashed"]:
            lines.append(f"  {who} CRASHED at t={times[i]:g}s: {a_[i]} running and {b_[i]} "
                         "queued jobs lost from memory; their locks stay")
        elif k == K["node_restarted"]:
            lines.append(f"  {who} restarted at t={times[i]:g}s with an empty queue")
        elif k == K["node_paused"]:
            lines.append(f"  {who} PAUSED at t={times[i]:g}s for {format_duration(x_[i])}")
        elif k == K["node_resumed"]:
            lines.append(f"  {who} resumed at t={times[i]:g}s as if nothing happened")
        elif k == K["service_state"]:
            lines.append(_service_state(text, times[i], a_[i], b_[i], c_[i], x_[i]))
    if runs and runs[-1]:
        lines.append(runs[-1])
    if hidden:
        also = f", and {len(after):,} jobs done," if len(after) else ""
        since = f" after t={times[-1]:.5g}s" if times else ""
        lines.append(f"  … {hidden:,} more lines{also}{since} (the whole story is in "
                     "trace.csv)")
    pend = told[(cols["kind"][told] == K["pending"]) & (cols["text"][told] == (
        texts.index("deadletter_job") if "deadletter_job" in texts else -2))]
    dead = list(zip(cols["job"][pend[:11]].tolist(),
                    [k or "async" for k in _kind_names(cols, pend[:11]).tolist()]))
    if len(pend) > 10:
        lines.append(f"dead letters: {len(pend)} (first ten: {dead[:10]!r})")
        return lines
    lines.append(f"dead letters: {dead!r}")
    return lines
