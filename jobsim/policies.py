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
}
DESCRIPTIONS = {
    "lesson": "the seed-000 lesson's executor: guarded UPDATE, retries 3 at [10s, 60s], "
              "dead letters, fake-clock ticks",
}
