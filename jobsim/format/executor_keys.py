"""The executor settings of a scenario file: each key, its type, its default and its meaning.

A setting a scenario does not give comes from its policy preset, else from the generic
executor's default (``ExecutorConfig``). The defaults shown by ``jobsim schema`` and listed in
the README are read from ``ExecutorConfig`` here, so they cannot drift from what a run uses
(``settings_table()`` renders the README's table; a test compares the two).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..base.durations import format_duration
from ..database.claims import STRATEGIES
from ..database.indexes import AGING_FROM
from ..database.store import LOCK_EXPIRY, ORDERS
from ..executor.config import (CLAIM_WHEN, CLOCKS, COMPLETE_GUARDS, COUNT_ATTEMPT, EXHAUSTED, HEARTBEAT_SCOPES,
                               QUEUE_FULL, WAKEUPS, ExecutorConfig)
from ..executor.retry import BACKOFF_FROM, JITTER_FORMS, ListBackoff
from .clock_format import DRIFT, OFFSET, SignedDur
from .spec import (Const, Cycle, Dur, Either, Enum, Field, Int, ListOf, Num, NumOrName, Obj,
                   Str, is_map_with)

JITTER_DOC = ("d = min(cap, offset + base × factor^(k−1)) for the k-th failure, then: a "
              "fraction j from 0 to 1 waits d × (1 ± j), uniformly; full waits U(0, d); "
              "equal waits d/2 + U(0, d/2); decorrelated waits min(cap, U(offset + base, "
              "3 × the job's previous delay)), from offset + base before the first, and "
              "ignores factor. Drawn from the failing node's stream")


def exponential(forms: tuple[str, ...], expected: str = "") -> Obj:
    """The ``{exponential: {...}}`` backoff, its jitter a fraction or one of ``forms``."""
    return Obj({"exponential": Obj({
        "base": Dur(positive=True), "factor": Num(2.0, lo=1.0, hi=100.0),
        "cap": Dur(None, none_ok=True),
        "jitter": NumOrName(forms, 0.0, doc=JITTER_DOC, expected=expected),
        "offset": Dur(0.0, doc="added to every delay (Oban: 15s)")}, ("base",))},
        ("exponential",))


backoff = Either([
    (lambda v: isinstance(v, list), ListOf(Dur(), min_len=1, max_len=100,
                                           doc="the k-th failure waits the k-th delay; "
                                               "the last repeats")),
    (lambda v: isinstance(v, str) and v.startswith("R"), Cycle()),
    (is_map_with("fixed"), Obj({"fixed": Dur()}, ("fixed",))),
    (is_map_with("exponential"), exponential(JITTER_FORMS)),
], "a list of durations, an ISO-8601 cycle like R5/PT10M, {fixed: D} or "
   "{exponential: {base, factor, cap, jitter, offset}} (jitter: a fraction from 0 to 1, "
   "full, equal or decorrelated)")


def bool_field(doc: str = "") -> Const:
    return Const(lambda v: isinstance(v, bool), "true or false", {"type": "boolean"}, doc=doc)


retry = Obj({"attempts": Int(doc="executions in all (Flowable's RETRIES_); set on a job when "
                                 "it is created", lo=1, hi=1_000_000),
             "backoff": backoff,
             "backoff_from": Enum(BACKOFF_FROM, doc="what the wait counts from: failure "
                                                   "(the new due time is the failure's "
                                                   "instant + the backoff) or due (the "
                                                   "lesson's due += backoff: the job's due "
                                                   "time + the backoff, which may be past "
                                                   "already)")},
            doc="the retry policy: attempts in all, and the wait before each retry")

#: settings a node may set for itself
EXECUTOR: dict[str, Field] = {
    "acquisition": Enum(STRATEGIES, doc="how a node claims due jobs: one guarded UPDATE, an "
                                        "unguarded one, SELECT then UPDATE, an optimistic "
                                        "version lock (per row, or Flowable's batch), SKIP "
                                        "LOCKED, or a broker that activates jobs itself"),
    "handles": ListOf(Str(), min_len=1, max_len=1000,
                      doc="the task names (handlers) this node runs; others are left to the "
                          "nodes that registered them; absent: all"),
    "wakeup": Enum(WAKEUPS, doc="poll: every poll_interval; notify: also at once on an insert "
                                "and when a thread frees; long_poll: a request that finds "
                                "nothing is held by the server and answered the moment a job "
                                "becomes claimable (an insert, a failure with retries left, a "
                                "lock freed, a due time), or empty after long_poll_timeout; "
                                "ticks: on the fake clock only"),
    "poll_interval": Dur(positive=True, doc="the wait between two polls (after a poll that "
                                            "did not fill its batch; with long_poll, after "
                                            "a held request was answered empty)"),
    "long_poll_timeout": Dur(positive=True, doc="long_poll: how long the server holds a "
                                                "request that found nothing"),
    "poll_jitter": Num(lo=0.0, hi=0.9, doc="each wait between polls is poll_interval × "
                                           "(1 ± poll_jitter), drawn uniformly from the "
                                           "node's own stream"),
    "initial_delay": Dur(doc="the wait between a node's start and its first poll (added to "
                             "its phase)"),
    "batch_size": Int(lo=1, hi=100_000, doc="the most rows one claim asks for"),
    "queue_size": Int(lo=0, hi=1_000_000, doc="the node's bounded local queue of claimed jobs "
                                              "waiting for a thread; 0: none, a claim asks "
                                              "only for idle threads (no prefetch)"),
    "threads": Int(lo=1, hi=1024, doc="worker threads: executions a node runs at once"),
    "lock_time": Dur(positive=True, doc="how long a claim's lock is valid"),
    "heartbeat": Dur(none_ok=True, positive=True, doc="extend the locks of the jobs a node "
                                                      "holds this often; none: no heartbeat"),
    "heartbeat_scope": Enum(HEARTBEAT_SCOPES, doc="running: the jobs being run; held: also "
                                                  "those waiting in the local queue"),
    "claim_when": Enum(CLAIM_WHEN, doc="room: claim whenever the local queue (with none, a "
                                       "thread) has room; empty: only once the node holds "
                                       "nothing, no job running or waiting (the lesson's "
                                       "loop: acquire a batch, run it through, acquire "
                                       "again)"),
    "queue_full_wait": Dur(positive=True, doc="the wait before claiming again when the local "
                                              "queue is full"),
    "complete_guard": Enum(COMPLETE_GUARDS, doc="none: DELETE by id; owner: AND "
                                                "locked_by=me (a stale completion does "
                                                "nothing)"),
    "exhausted": Enum(EXHAUSTED, doc="where a job goes when its retries run out: the "
                                     "dead-letter table, an incident (Zeebe-like), or "
                                     "failed (failsafe-executor)"),
    "hint": bool_field("Flowable's hint path: a job this node creates (workload node:) is "
                       "inserted locked by it and handed to its own pool on commit"),
    "on_queue_full": Enum(QUEUE_FULL, doc="a job handed to a full local queue: queue (waits "
                                          "there anyway) or unacquire (Flowable: unlocked for "
                                          "any node, and the acquisition waits "
                                          "queue_full_wait)"),
    "error_wait": Dur(doc="the wait after a claim failed with an error (40001, SQLITE_BUSY, "
                          "an optimistic-lock rollback)"),
    "reset_interval": Dur(none_ok=True, positive=True,
                          doc="run a reset thread this often: unlock rows whose lock expired "
                              "(lock_expiry: reset); none: no reset thread"),
    "reset_page": Int(lo=1, hi=1_000_000, doc="rows the reset thread fetches per page; it "
                                              "repeats until a page is empty"),
    "stager_interval": Dur(none_ok=True, positive=True,
                           doc="run a stager this often: when rows wait to be claimed, it "
                               "notifies the nodes as an insert does (Oban); none: no stager"),
    "global_lock": bool_field("Flowable's global acquire lock: one node at a time acquires, "
                              "in bulk without REV_"),
    "global_lock_wait": Dur(positive=True, doc="how long a node waits for the global lock"),
    "global_lock_poll": Dur(positive=True, doc="how often it tries; also the least wait "
                                               "after each acquisition cycle"),
    "global_lock_force": Dur(positive=True, doc="a holder this old is overridden (crashed)"),
    "clock_offset": OFFSET,
    "clock_drift": DRIFT,
}
NOT_PER_NODE = Const(lambda v: False, "no retry policy per node: retries are set on a job when "
                     "it is created; set retry in executor or in the handler", {"not": {}})

def not_per_node(key: str) -> Const:
    """A key of the cluster as a whole written on a node: refused, saying where it goes."""
    return Const(lambda v: False, f"no {key} per node: it is a setting of the table every "
                 f"node shares; set executor.{key}", {"not": {}})


#: settings of the cluster as a whole, not of a node: the table's ORDER BY (its index), and
#: the retry policy (retries are set on a job when it is created, and every node follows them)
TABLE_ONLY: dict[str, Field] = {
    "retry": retry,
    "order": Enum(ORDERS, doc="the ORDER BY of acquisition: id, created, due, priority, or "
                              "aging (priority raised with the job's age, see aging_from)"),
    "aging_rate": Num(lo=0.0, hi=1e6, doc="priority gained per second of age (order: aging)"),
    "aging_from": Enum(AGING_FROM, doc="what a job's age counts from (order: aging): due — "
                                       "the time since it fell due, so time spent waiting to "
                                       "fall due earns no priority; created — since it was "
                                       "created"),
    "lock_expiry": Enum(LOCK_EXPIRY, doc="claim: an expired lock frees its row at the next "
                                         "claim; reset: only a reset thread frees it "
                                         "(Flowable, db-scheduler, Oban); never: nothing "
                                         "does (the Zeebe-like server)"),
    "timer_table": bool_field("timers, jobs waiting to retry and boundary timers' timer "
                              "jobs live in timer_job and are moved to job when due "
                              "(Flowable)"),
    "count_attempt": Enum(COUNT_ATTEMPT, doc="when an execution counts against the job's "
                                             "retries: at its failure, or at the claim (fetch: "
                                             "Oban, River)"),
    "clock": Enum(CLOCKS, doc="whose clock the claims compare and write (lock_until, the "
                              "expiry guard, heartbeats, the due times a failure sets): "
                              "node — each node's own, passed as a parameter (the lesson, "
                              "Flowable, failsafe-executor); database — the server's now() "
                              "(a broker's own clock)"),
    "idempotent_submit": bool_field("a submit with an id already in the table does nothing; "
                                    "once that task is gone (done, cancelled) the id takes a "
                                    "new task (failsafe-executor)"),
}


def file_value(value: Any) -> Any:
    """A setting's value as a scenario file writes it (durations with a unit)."""
    if isinstance(value, ListBackoff):
        return [format_duration(d) for d in value.delays]
    return value


def defaults() -> dict[str, Any]:
    """The generic executor's default of every setting, as a file writes it."""
    base = ExecutorConfig()
    out: dict[str, Any] = {}
    for f in dataclasses.fields(base):
        value = getattr(base, f.name)
        field = EXECUTOR.get(f.name) or TABLE_ONLY.get(f.name)
        if field is None:
            continue
        if f.name == "retry":
            value = {"attempts": value.attempts, "backoff": file_value(value.backoff)}
        elif isinstance(field, Dur) and value is not None:
            value = format_duration(value)
        elif isinstance(field, SignedDur):
            value = field._file_form(value)
        out[f.name] = value
    return out


def show_defaults() -> None:
    """Give every setting's field its default, for the schema only (a parsed file never
    gets it: a setting it does not give comes from its preset first)."""
    for name, value in defaults().items():
        field = EXECUTOR.get(name) or TABLE_ONLY[name]
        if value is not None:
            field.shown = value
        elif isinstance(field, Dur) and field.none_ok:
            field.shown = "none"  # else (handles) absent means all: the doc says so


def settings_table() -> str:
    """The README's table of executor settings: name, default, meaning."""
    rows = ["| setting | default | meaning |", "|---|---|---|"]
    for name, value in defaults().items():
        field = EXECUTOR.get(name) or TABLE_ONLY[name]
        if name == "retry":
            shown = f"{value['attempts']} attempts, backoff {', '.join(value['backoff'])}"
        elif name == "handles":
            shown = "all"
        else:
            shown = "none" if value is None else str(value).lower() \
                if isinstance(value, bool) else str(value)
        scope = "" if name in EXECUTOR else " (the whole cluster: not per node)"
        rows.append(f"| `{name}` | `{shown}` | {field.doc}{scope} |")
    return "\n".join(rows)


show_defaults()


def preset_settings(policy: str) -> list[tuple[str, str, str]]:
    """Every setting a policy resolves to: (key, value as a file writes it, where it comes
    from: ``preset``, ``derived: <rule>`` or ``default``)."""
    from ..executor.policies import PRESETS, Derived
    from .settings import merge_executor

    merged = merge_executor({"policy": policy})
    preset = PRESETS[policy]
    out = []
    for key, default in defaults().items():
        if key not in merged:
            value, origin = default, "default"
        else:
            value = merged[key]
            field = EXECUTOR.get(key) or TABLE_ONLY[key]
            if key == "retry":
                value = {"attempts": value.get("attempts"), "backoff": value.get("backoff")}
            elif isinstance(field, Dur) and isinstance(value, (int, float)):
                value = format_duration(value)
            rule = preset.get(key)
            origin = f"derived: {rule.text}" if isinstance(rule, Derived) else "preset"
        out.append((key, _text(key, value), origin))
    return out


def _text(key: str, value: Any) -> str:
    if key == "handles" and value is None:
        return "all"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if key == "retry":
        return f"{value['attempts']} attempts, backoff {_backoff_text(value['backoff'])}"
    return str(value)


def _backoff_text(b: Any) -> str:
    d = format_duration
    if isinstance(b, list):
        return "[" + ", ".join(d(x) if isinstance(x, (int, float)) else str(x) for x in b) + "]"
    if isinstance(b, tuple):  # an ISO-8601 cycle: (count, interval)
        return f"{b[0]} × {d(b[1])}"
    if isinstance(b, dict) and "fixed" in b:
        return f"fixed {d(b['fixed'])}"
    if isinstance(b, dict) and "exponential" in b:
        e = b["exponential"]
        text = f"{d(e['base'])} × {e['factor']:g}^n"
        if e.get("offset"):
            text = f"{d(e['offset'])} + " + text
        if e.get("cap") is not None:
            text += f", at most {d(e['cap'])}"
        j = e.get("jitter")
        if isinstance(j, str):
            text += f", {j} jitter"
        elif j:
            text += f", jitter {j:g}"
        return text
    return str(b)
