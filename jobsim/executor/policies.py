"""Policies: named presets of executor settings for the systems jobsim simulates.

A scenario names one with ``policy:``; its ``executor:`` section and each node then override
any setting. The defaults come from the systems' own code (their
acquisition, retry and lock code); what each preset models and leaves out is in docs/policies.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Derived:
    """A setting the modelled system derives from another: ``factor × source`` (failsafe's
    heartbeat is lockTimeout / 4). It follows the source wherever the source is set — in
    ``executor:`` or on a node — unless the setting itself is set."""

    source: str
    factor: float
    text: str


PRESETS: dict[str, dict[str, Any]] = {
    # The lesson's executor (docs/lesson.md): one guarded UPDATE acquires up to 10 due rows
    # in table order; a failure unlocks the row and pushes its due date by the backoff
    # (due += backoff: from the due date, not from the failure); retries 3 in all, then the
    # dead-letter table. Nodes tick on a clock the scenario gives. The executor is one loop
    # that runs the jobs it acquired in turn and acquires again only when it has run them
    # all: one thread, the acquired batch its local queue, claim_when: empty, no heartbeat.
    "lesson": {
        "acquisition": "guarded_update",
        "clock": "node",
        "wakeup": "ticks",
        "batch_size": 10,
        "threads": 1,
        "queue_size": 10,
        "heartbeat": None,
        "lock_time": "5m",
        "order": "id",
        "complete_guard": "none",
        "claim_when": "empty",
        "retry": {"attempts": 3, "backoff": ["10s", "60s"], "backoff_from": "due"},
    },
    # The Zeebe-like server, as its "Job Policies" describe it (docs/executors.md): the
    # server activates jobs (no SQL race); the deadline (activation + 300000 ms) is
    # informational, nothing expires; a crashed worker's job stays activated until a server
    # restart; retries are stored as sent (one less per failure), with no retry delay; no
    # retries left → an incident.
    # The worker (its documentation shows one in JavaScript): up to 32 jobs activated at once
    # and run concurrently (the clients' maxJobsActive of 32; a JavaScript handler awaits
    # each job without blocking the others). Its activate request is long-polled, as
    # Zeebe's gateway does: held by the server and answered the moment a job becomes
    # activatable (created, failed with retries left, restored by a restart), else empty
    # after 10 s (the clients' request timeout), then asked again 100 ms later (the clients'
    # poll interval). The job timeout that sets the informational deadline is lock_time:
    # 5 min.
    "zeebe_like": {
        "acquisition": "broker",
        "clock": "database",
        "wakeup": "long_poll",
        "long_poll_timeout": "10s",
        "poll_interval": "100ms",
        "initial_delay": "0s",
        "batch_size": 32,
        "queue_size": 0,
        "threads": 32,
        "heartbeat": None,
        "lock_time": "5m",
        "order": "id",
        "complete_guard": "none",
        "exhausted": "incident",
        "lock_expiry": "never",
        "retry": {"attempts": 3, "backoff": ["0s"]},
    },
    # failsafe-executor v2: one table, an optimistic VERSION
    # lock ordered by created date, a heartbeat every lockTimeout/4 over every task the node
    # holds (WorkerPool.execute registers a task with the heartbeat when it is handed to the
    # pool, before it waits there for a thread, and unregisters it once run), lockTimeout
    # 5 min, 5 threads, a queue of 30, a poll every 5 s after an initial delay of 10 s; a
    # failure marks the task
    # failed and nothing retries it until an operator's retry (or cancel). Version 3 is the
    # same with SKIP LOCKED by planned time and a heartbeat every lockTimeout/3 (set
    # acquisition: skip_locked, order: due, heartbeat: 100s, on db.dialect: postgres).
    "failsafe": {
        "acquisition": "optimistic",
        "clock": "node",
        "wakeup": "poll",
        "poll_interval": "5s",
        "initial_delay": "10s",
        "batch_size": 30,
        "queue_size": 30,
        "threads": 5,
        "lock_time": "5m",
        "heartbeat": Derived("lock_time", 1 / 4, "lock_time / 4"),
        "heartbeat_scope": "held",
        "order": "created",
        "complete_guard": "none",
        "exhausted": "failed",
        "idempotent_submit": True,
        "retry": {"attempts": 1, "backoff": ["0s"]},
    },
}
# failsafe-executor v3: SKIP LOCKED ordered by planned time;
# pickTasks asks for the full queueSize whatever is free (the pool's queue is unbounded, so a
# node can hold far more than it runs); a heartbeat every lockTimeout/3 over every task it
# holds, queued ones too; serial queues (workload queue:).
PRESETS["failsafe_v3"] = {**PRESETS["failsafe"],
                          "acquisition": "skip_locked",
                          "order": "due",
                          "queue_size": 1_000_000,
                          "heartbeat": Derived("lock_time", 1 / 3, "lock_time / 3")}
PRESETS.update({
    # Flowable 6.7+/7.x async executor: jobs created by a
    # node are inserted locked by it and handed to its pool on commit (the hint path);
    # polling is the fallback: an acquisition loop every 10 s (0 after a full batch of 512)
    # selecting unlocked jobs with no ORDER BY, locked optimistically on REV_ with the whole
    # batch rolled back on one conflict (then a 10 s wait); a timer loop that moves due timers
    # to the job table; 8 threads and a queue of 2048 (full: unacquire, wait 5 s); a 1 h lock
    # and no heartbeat, freed only by the reset thread (every 60 s, pages of 3, retries
    # untouched); retries 3 in all, 10 s apart, a failed job waiting in the timer table; then
    # the dead-letter table.
    "flowable": {
        "acquisition": "optimistic_batch",
        "clock": "node",
        "wakeup": "poll",
        "poll_interval": "10s",
        "initial_delay": "0s",
        "batch_size": 512,
        "queue_size": 2048,
        "threads": 8,
        "lock_time": "1h",
        "heartbeat": None,
        "queue_full_wait": "5s",
        "error_wait": "10s",
        "hint": True,
        "on_queue_full": "unacquire",
        "reset_interval": "60s",
        "reset_page": 3,
        "global_lock": False,
        "global_lock_wait": "1m",
        "global_lock_poll": "500ms",
        "global_lock_force": "10m",
        "order": "id",
        "lock_expiry": "reset",
        "timer_table": True,
        "complete_guard": "none",
        "exhausted": "dead_letter",
        "retry": {"attempts": 3, "backoff": {"fixed": "10s"}},
    },
    # Oban, the SKIP LOCKED family; River and pg-boss differ in numbers:
    # a fetch of SELECT … FOR UPDATE SKIP LOCKED ordered by priority, for as many jobs as the
    # queue has idle slots (limit 10; no local queue), woken by insert notifications and a
    # 1 s stager; the attempt counted at fetch; no heartbeat: a job
    # executing for over 60 min is rescued (every minute) back to available, or discarded
    # with no attempts left; 20 attempts, exponential backoff 15 s + 2^attempt s.
    "skip_locked": {
        "acquisition": "skip_locked",
        "clock": "database",
        "wakeup": "notify",
        "poll_interval": "1s",
        "initial_delay": "0s",
        "batch_size": 10,
        "queue_size": 0,
        "threads": 10,
        "lock_time": "60m",
        "heartbeat": None,
        "reset_interval": "1m",
        "reset_page": 1000,
        "order": "priority",
        "lock_expiry": "reset",
        "count_attempt": "fetch",
        "complete_guard": "none",
        "exhausted": "dead_letter",
        "retry": {"attempts": 20, "backoff": {"exponential": {
            "base": "2s", "factor": 2.0, "offset": "15s"}}},
    },
    # db-scheduler with its LOCK_AND_FETCH polling strategy (upper limit
    # 1.0 × threads): one statement locks as many due executions as there are idle threads
    # (FOR UPDATE SKIP LOCKED on PostgreSQL), by execution time; a heartbeat every 5 min for
    # executing jobs; dead after 6 missed (lock_time = 6 × heartbeat: 30 min), found every
    # 10 min and revived to run
    # now; a failed one-time task retries every 5 min, forever. (The default FETCH strategy,
    # which picks each execution only when a thread takes it, is not modelled.)
    "db_scheduler": {
        "acquisition": "skip_locked",
        "clock": "node",
        "wakeup": "poll",
        "poll_interval": "10s",
        "initial_delay": "0s",
        "batch_size": 10,
        "queue_size": 0,
        "threads": 10,
        "heartbeat": "5m",
        "lock_time": Derived("heartbeat", 6.0, "6 × heartbeat"),
        "heartbeat_scope": "running",
        "reset_interval": "10m",
        "reset_page": 1000,
        "order": "due",
        "lock_expiry": "reset",
        "complete_guard": "none",
        "exhausted": "dead_letter",
        "retry": {"attempts": 1_000_000, "backoff": {"fixed": "5m"}},
    },
    # real Zeebe with the Java client's defaults: the broker activates
    # jobs FIFO by key; a job not completed by its deadline (activation + 5 min) times out and
    # is activatable again with its retries unchanged; a late completion is still accepted;
    # retries are sent by the worker, an incident at 0; no backoff by default. The gateway
    # long-polls activate requests (held until a job is activatable, else empty after the
    # client's 10 s request timeout; the client asks again after its 100 ms poll interval).
    "zeebe": {
        "acquisition": "broker",
        "clock": "database",
        "wakeup": "long_poll",
        "long_poll_timeout": "10s",
        "poll_interval": "100ms",
        "initial_delay": "0s",
        "batch_size": 32,
        "queue_size": 32,
        "threads": 1,
        "lock_time": "5m",
        "heartbeat": None,
        "order": "id",
        "lock_expiry": "claim",
        "complete_guard": "none",
        "exhausted": "incident",
        "retry": {"attempts": 3, "backoff": ["0s"]},
    },
})

DESCRIPTIONS = {
    "lesson": "the lesson's executor: guarded UPDATE, retries 3 at [10s, 60s], "
              "dead letters, fake-clock ticks",
    "failsafe": "failsafe-executor v2: optimistic VERSION lock by created date, "
                "heartbeat lockTimeout/4, no automatic retry (failed until retry or cancel)",
    "failsafe_v3": "failsafe-executor v3: SKIP LOCKED by planned time, picks a full queueSize "
                   "each poll, heartbeat lockTimeout/3 over held tasks, serial queues",
    "zeebe_like": "the Zeebe-like server: jobs activated by the server, no lock expiry, "
                  "absolute retries without delay, incidents, restored only by a restart",
    "flowable": "Flowable's async executor: hint path, optimistic REV_ batches rolled back "
                "whole, timer table, 1 h lock freed by a reset thread, retries 3 at 10 s",
    "skip_locked": "the SKIP LOCKED family (Oban's numbers): attempt counted at fetch, "
                   "rescue after 60 min, 20 attempts with backoff 15 s + 2^n s",
    "db_scheduler": "db-scheduler (LOCK_AND_FETCH): locks for idle threads by execution time, "
                    "heartbeat 5 min, dead after 30 min and revived, retries every 5 min "
                    "forever",
    "zeebe": "real Zeebe: broker activation FIFO by key, a 5 min job timeout that makes the "
             "job activatable again (retries unchanged), incidents",
}
