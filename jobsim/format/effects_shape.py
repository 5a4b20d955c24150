"""The shapes of ``summary["effects"]`` (``analysis/effects.py``) and ``summary["window"]``
(``analysis/window.py``), for checking an expectation's path before the run; ``ANY`` stands
for a node or a priority. An effect's entry is null where it means nothing in the run (a
comparison with it then fails as "no figure")."""

from __future__ import annotations

from typing import Any

ANY = "<any>"

EFFECTS_SHAPE: dict[str, Any] = {
    "poll_phases": {k: None for k in (
        "interval", "nodes", "jitter", "spread_start", "spread_end", "spread_independent",
        "lock_step", "start_delay_mean", "start_delay_mean_free", "start_delay_mean_busy",
        "due_while_busy", "start_delay_independent",
        "start_delay_lock_step", "from_start", "wait_for_poll_free", "wait_after_poll_free",
        "polled_free", "first_poll_full_free", "queue_size", "group", "handlers",
        "other_sets", "together", "phases_apart", "together_conflicts", "together_lost")} |
    {"gap_share": {ANY: None}},
    "imbalance": {k: None for k in ("most", "most_executions", "most_even", "least",
                                    "least_executions", "least_even", "imbalanced",
                                    "why", "full_claims")} |
    {"poll_interval": {ANY: None}, "first_poll_share": {ANY: None}},
    "load": {"offered": None, "threads": None, "window": None, "verdict": None,
             "aging_horizon": None,
             "by_priority": {ANY: {k: None for k in ("jobs", "offered", "with_higher",
                                                     "never_started", "worst_wait",
                                                     "overtaken")}}},
    "saturation": {k: None for k in ("threads", "time", "share", "longest",
                                     "longest_from", "most_waiting")},
    "queue_full": {k: None for k in ("waits", "wait", "queue_size", "threads", "time", "idle",
                                     "share", "intake", "arriving", "window", "group",
                                     "handlers")},
    "local_queues": {k: None for k in ("jobs", "queued_mean", "start_delay_mean",
                                       "idle_elsewhere", "queue_size", "run_mean")},
    "short_claims": {"claims": None, "of_claims": None, "rows": None, "strategy": None,
                     "next_claim_mean": None, "windows": {ANY: {"claims": None, "rows": None,
                                                                "span": None}},
                     "outside": {"claims": None, "span": None}},
    "queued_by_priority": {"queue_size": None, "by_priority": {ANY: {k: None for k in (
        "jobs", "queued_mean", "start_delay_mean", "start_delay_max", "lower_ahead_mean")}}},
    "faults": {"more": None, "windows": {ANY: {k: None for k in (
        "kind", "what", "from", "to", "factor", "factor_min", "error_share",
        "failed_executions", "failed_calls", "cleared_at", "jobs_after", "jobs",
        "dead_lettered", "dead_lettered_last", "failed_call_mean",
        "lost_completions", "lost_done", "lost_done_after_due_mean",
        "baseline", "baseline_jobs") + tuple(p + k for p in ("", "baseline_") for k in (
            "start_delay_mean", "start_delay_max", "never_started", "done",
            "done_after_due_mean"))} | {"overlaps": {ANY: None}}}}}

WINDOW_SHAPE: dict[str, Any] = {k: None for k in ("warmup", "cooldown", "start", "end",
                                                  "jobs_counted", "empty")}
