"""The run told as a story, one line per notable event — the lesson's transcript format.

- a tick of the fake clock: ``t=0: <note>`` / ``t=+10s:``;
- what a handler says at its side effect: ``      -> bureau responded, token advances``;
- a failure: ``  [node-A] job 2 failed (bureau 502 (attempt 1)); retry in 10s (2 left)``;
- a dead letter: ``  [node-B] job 3 DEAD-LETTERED: bad config``;
- an async job done: ``  [node-B] job 2 (async) done`` (a timer's firing is told by its
  handler's own line); a completion rejected by its owner guard, or finding its row gone;
- an operator's retry or cancel, and an id submitted again once its task was gone;
- a crash, a pause and its end;
- a double acquisition, and a completion that found its row gone (a duplicate run);
- at the end: ``dead letters: [(3, 'async')]``.

Pure: a function of the trace, returning lines; printing is the CLI's business.
"""

from __future__ import annotations

import numpy as np

from ..base.durations import format_duration
from ..base.trace import K, Trace

_TOLD = [K[k] for k in ("tick", "job_created", "side_effect", "exec_end", "retry_scheduled",
                        "dead_lettered", "completed", "locked", "pending", "node_crashed",
                        "node_restarted", "node_paused", "node_resumed", "withdrawn",
                        "server_restarted", "revived", "cancelled", "resubmitted")]


def _clock(t: float) -> str:
    return "t=0" if t == 0 else f"t=+{format_duration(t)}"


def narrate(trace: Trace, limit: int | None = 60) -> list[str]:
    """The story's lines; past ``limit`` lines, one line says how many more there are."""
    cols = trace.arrays()
    idx = np.flatnonzero(np.isin(cols["kind"], _TOLD))
    kinds, times, nodes_, jobs = (cols[c][idx].tolist() for c in ("kind", "time", "node", "job"))
    a_, b_, x_, s_ = (cols[c][idx].tolist() for c in ("a", "b", "x", "text"))
    names, texts = trace.nodes, trace.texts
    kind_of: dict[int, str] = {}
    dead: list[tuple[int, str]] = []
    lines: list[str] = []
    for i, k in enumerate(kinds):
        j = jobs[i]
        who = f"[{names[nodes_[i]]}]" if nodes_[i] >= 0 else ""
        text = texts[s_[i]] if s_[i] >= 0 else ""
        if k == K["job_created"]:
            kind_of[j] = "timer" if a_[i] == 1 else "async"
        elif k == K["tick"]:
            lines.append(f"{_clock(times[i])}:" + (f" {text}" if text else ""))
        elif (k == K["side_effect"] or (k == K["exec_end"] and b_[i] == 1)) and text:
            lines.append(f"      -> {text}")
        elif k == K["retry_scheduled"]:
            lines.append(f"  {who} job {j} failed ({text}); retry in "
                         f"{format_duration(x_[i] - times[i])} ({a_[i]} left)")
        elif k == K["dead_lettered"] and a_[i] == 2:
            lines.append(f"  {who} job {j} FAILED: {text} (kept until retried or cancelled)")
        elif k == K["revived"]:
            lines.append(f"      job {j} RETRIED by an operator at t={times[i]:g}s")
        elif k == K["cancelled"]:
            lines.append(f"      job {j} CANCELLED by an operator at t={times[i]:g}s")
        elif k == K["resubmitted"]:
            lines.append(f"      id {a_[i]} submitted again after its task was gone: a new "
                         f"task, job {j}")
        elif k == K["dead_lettered"] and a_[i] == 1:
            lines.append(f"  {who} job {j} failed with no retries left: INCIDENT (JOB_FAILED, "
                         f"critical): {text}")
        elif k == K["dead_lettered"]:
            lines.append(f"  {who} job {j} DEAD-LETTERED: {text}")
        elif k == K["withdrawn"]:
            lines.append(f"      job {j} WITHDRAWN by its interrupting boundary timer at "
                         f"t={times[i]:g}s")
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
                lines.append(f"  {who} job {j} done again: its row was already gone "
                             "(a duplicate run)")
            elif kind_of.get(j) != "timer":
                lines.append(f"  {who} job {j} ({kind_of.get(j, 'async')}) done")
        elif k == K["locked"] and b_[i] == 1:
            lines.append(f"  {who} job {j} ACQUIRED TWICE: {names[a_[i]]}'s lock was still "
                         "valid")
        elif k == K["node_crashed"]:
            lines.append(f"  {who} CRASHED at t={times[i]:g}s: {a_[i]} running and {b_[i]} "
                         "queued jobs lost from memory; their locks stay")
        elif k == K["node_restarted"]:
            lines.append(f"  {who} restarted at t={times[i]:g}s with an empty queue")
        elif k == K["node_paused"]:
            lines.append(f"  {who} PAUSED at t={times[i]:g}s for {format_duration(x_[i])}")
        elif k == K["node_resumed"]:
            lines.append(f"  {who} resumed at t={times[i]:g}s as if nothing happened")
        elif k == K["pending"] and text == "deadletter_job":
            dead.append((j, kind_of.get(j, "async")))
    if limit is not None and len(lines) > limit:
        more = len(lines) - limit
        lines = lines[:limit] + [f"  … {more} more lines (the whole story is in trace.csv)"]
    if len(dead) <= 10:
        lines.append(f"dead letters: {dead!r}")
    else:
        lines.append(f"dead letters: {len(dead)} (first ten: {dead[:10]!r})")
    return lines
