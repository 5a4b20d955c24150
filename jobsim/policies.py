"""Policies: named presets of executor settings for the systems jobsim simulates.

A scenario names one with ``policy:``; its ``executor:`` section and each node then override
any setting. This issue ships the lesson's executor; the seeded systems (Flowable,
failsafe-executor, the Zeebe-like server) and the SKIP LOCKED family come with the database
dialects that make them faithful.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # Seed 000, "Build It": one guarded UPDATE acquires up to 10 due rows in table order;
    # a failure unlocks the row and pushes its due date by the backoff; retries 3 in all,
    # then the dead-letter table. Nodes tick on a clock the scenario gives.
    "lesson": {
        "acquisition": "guarded_update",
        "wakeup": "ticks",
        "batch_size": 10,
        "lock_time": "5m",
        "order": "id",
        "complete_guard": "none",
        "retry": {"attempts": 3, "backoff": ["10s", "60s"]},
    },
    # Seed 003, "Job Policies": the server activates jobs (no SQL race); the deadline
    # (activation + 300000 ms) is informational, nothing expires; a crashed worker's job stays
    # activated until a server restart; retries are stored as sent (one less per failure),
    # with no retry delay; no retries left → an incident.
    "zeebe_like": {
        "acquisition": "broker",
        "wakeup": "notify",
        "lock_time": "5m",
        "order": "id",
        "complete_guard": "none",
        "exhausted": "incident",
        "retry": {"attempts": 3, "backoff": ["0s"]},
    },
    # Seed 002 and executors.md §2 (failsafe-executor v2): one table, an optimistic VERSION
    # lock ordered by created date, a heartbeat every lockTimeout/4 for running tasks,
    # lockTimeout 5 min, 5 threads, a queue of 30, a poll every 5 s; a failure marks the task
    # failed and nothing retries it until an operator's retry (or cancel). Version 3 is the
    # same with SKIP LOCKED by planned time, a heartbeat over every held task every
    # lockTimeout/3 (set acquisition: skip_locked, order: due, heartbeat: 100s,
    # heartbeat_scope: held, on db.dialect: postgres).
    "failsafe": {
        "acquisition": "optimistic",
        "wakeup": "poll",
        "poll_interval": "5s",
        "batch_size": 30,
        "queue_size": 30,
        "threads": 5,
        "lock_time": "5m",
        "heartbeat": "75s",
        "heartbeat_scope": "running",
        "order": "created",
        "complete_guard": "none",
        "exhausted": "failed",
        "retry": {"attempts": 1, "backoff": ["0s"]},
    },
}
DESCRIPTIONS = {
    "lesson": "the seed-000 lesson's executor: guarded UPDATE, retries 3 at [10s, 60s], "
              "dead letters, fake-clock ticks",
    "failsafe": "failsafe-executor v2 (seed 002): optimistic VERSION lock by created date, "
                "heartbeat lockTimeout/4, no automatic retry (failed until retry or cancel)",
    "zeebe_like": "the seed-003 server: jobs activated by the server, no lock expiry, "
                  "absolute retries without delay, incidents, restored only by a restart",
}
