"""A summary figure's dotted path in words, with its unit, for a figure's title and axis
(``plots.common``'s convention): ``named.urgent.start_delay`` → ("start delay of the job
named urgent", "s"); why a run has no value for it ("never recovered"); and the bounds a
scenario's expectations put on it, for reference lines."""

from __future__ import annotations

from typing import Any

from ..analysis.expect import NO_FIGURE, figure, seconds_figure
from .plots.common import PER_SECOND, SECONDS

#: the words of a path's parts (a part not here is its own words, underscores as spaces)
_WORDS = {
    "double_acquisitions": "double acquisitions", "acquisition": "acquisitions",
    "empty": "empty", "lost_races": "lost races", "errors": "errors",
    "attempts": "attempts", "crash_recovery": "crash recovery", "unrecovered":
    "jobs stranded by a crash, never taken again", "stranded_jobs": "jobs stranded by a crash",
    "duplicate_executions": "duplicate executions",
    "duplicate_side_effects": "duplicate side effects", "dead_lettered": "dead-lettered jobs",
    "failed": "failed jobs (kept until an operator acts)", "incident": "incidents",
    "cancelled": "cancelled jobs", "submits_ignored": "submits ignored (idempotent)",
    "done": "jobs done", "lost": "lost jobs", "pending": "jobs pending at the end",
    "created": "jobs created", "end_time": "time the run ended", "polls": "polls",
    "side_effects_refused": "stale side effects refused (fencing)",
    "operations_ignored": "operations that found nothing to act on",
    "rejected_by_guard": "completions the owner guard rejected",
    "row_gone": "completions that found the row gone", "executions": "executions",
    "failures": "failed executions", "statements": "statements",
    "replayed": "calls answered from an idempotency key (replayed)",
    "fenced": "calls refused for a stale fencing token", "calls": "calls",
    "peak_after_recovery": "peak load after it recovered",
    "peak_calls_per_s": "peak load", "recovered_at": "time it came back up",
    "calls_in_outage": "calls in an outage", "attempts_in_outage": "job attempts in an outage",
    "short_circuited": "calls cut by an open circuit breaker", "mean_latency":
    "mean service time of ok calls", "mean_wait": "mean wait for a token or a place",
}
#: whole paths' words
_PATHS = {"acquisition.empty": ("empty acquisitions", "acquisitions"),
          "acquisition.attempts": ("acquisition attempts", "acquisitions"),
          "acquisition.errors": ("acquisitions failed with an error", "acquisitions"),
          "acquisition.lost_races": ("races lost", "races"),
          "crash_recovery.unrecovered": ("jobs stranded by a crash, never taken again", "jobs"),
          "crash_recovery.stranded_jobs": ("jobs stranded by a crash", "jobs")}
#: a service's figures' words ({s}: its name)
_SERVICE = {"peak_after_recovery": "peak load on {s} after it recovered",
            "peak_calls_per_s": "peak load on {s}", "calls": "calls to {s}",
            "replayed": "calls to {s} answered from an idempotency key",
            "fenced": "calls to {s} refused for a stale fencing token",
            "recovered_at": "time {s} came back up"}
#: a statistic's words, put before what it is of
_STATS = {"max": "longest", "min": "shortest", "mean": "mean", "p50": "median",
          "p90": "90th percentile of the", "p99": "99th percentile of the", "total": ""}
#: what a count counts, by the path's first part (the axis's unit)
_COUNTS = {"jobs": "jobs", "acquisition": "acquisitions", "double_acquisitions":
           "acquisitions", "duplicate_executions": "executions", "duplicate_side_effects":
           "side effects", "polls": "polls", "executions": "executions", "failures":
           "executions", "statements": "statements", "side_effects_refused": "side effects",
           "operations_ignored": "operations", "completions": "completions", "crash_recovery": "jobs"}


def describe(path: str) -> tuple[str, str]:
    """``(words, unit)`` of the summary figure at ``path``; the unit is ``s``, ``calls/s``
    or what a count counts ("jobs", "executions", …)."""
    parts = path.split(".")
    leaf = parts[-1]
    stat = _STATS.get(leaf) if len(parts) > 1 else None
    if stat is not None:
        parts = parts[:-1]
    if parts[0] == "named" and len(parts) == 3:
        words = f"{_word(parts[2])} of the job named {parts[1]}"
    elif parts[0] == "latency" and len(parts) >= 4 and parts[1] == "by_priority":
        words = f"{_word(parts[3])} of priority {parts[2]}"
    elif parts[0] == "latency":
        words = _word(parts[-1])
    elif parts[0] == "services" and len(parts) >= 3:
        rest = ".".join(parts[2:])
        words = _SERVICE.get(rest, f"{_word(rest)} at {{s}}").format(s=parts[1])
    elif parts[0] == "crash_recovery" and parts[-1] == "delay":
        words = "time a crashed node's jobs were stranded"
    elif len(parts) >= 3 and parts[-2] == "by_cause":
        words = f"{_word(parts[0])} by cause: {_word(parts[-1])}"
    elif path in _PATHS:
        return _PATHS[path]
    elif parts[0] in ("jobs", "completions", "polls") and len(parts) == 2:
        words = _word(parts[1])
    else:
        words = " ".join(_word(p) for p in parts)
    if stat:
        words = f"{stat} {words}"
    return words, _unit(path)


def _word(part: str) -> str:
    return _WORDS.get(part, part.replace("_", " "))


def _unit(path: str) -> str:
    leaf = path.rsplit(".", 1)[-1]
    if "per_s" in path or leaf.startswith("peak"):
        return PER_SECOND
    if seconds_figure(path) or leaf in ("recovered_at", "mean_latency", "mean_wait") or \
            path.startswith("services.") and ".time." in path:
        return SECONDS
    head = path.split(".", 1)[0]
    if head == "named":
        return "executions" if leaf == "executions" else ""
    if head == "services":
        return "calls" if "attempts" not in leaf else "attempts"
    if path == "jobs.submits_ignored":
        return "submits"
    return _COUNTS.get(head, "count")


def why_none(summary: dict[str, Any], path: str) -> str:
    """Why a run has no value at ``path`` (its figure is ``None`` or absent), in words:
    "never recovered", "never started", …; ``""`` when the summary does not say."""
    value = figure(summary, path)
    parts = path.split(".")
    if parts[0] == "services" and len(parts) >= 3:
        if figure(summary, f"services.{parts[1]}.recovered_at") is None and \
                parts[2] in ("peak_after_recovery", "recovered_at"):
            return "never recovered"
        if parts[2] == "mean_latency":
            return "no call answered ok"
        if parts[2] == "mean_wait":
            return "no call waited"
    if parts[0] == "named" and len(parts) == 3:
        return "never started" if parts[2] == "start_delay" else ""
    if parts[0] == "crash_recovery":
        stranded = figure(summary, "crash_recovery.stranded_jobs")
        never = figure(summary, "crash_recovery.unrecovered")
        if isinstance(never, int) and never and stranded == never:
            return f"never recovered: {never} stranded, none taken again"
        if stranded == 0:
            return "no job stranded by a crash"
    if parts[0] == "latency":
        return "no job started"
    if figure(summary, ".".join(parts[:-1] + ["n"])) == 0:
        return "nothing to measure (n = 0)"
    return "not in this run's summary" if value is NO_FIGURE else ""


def bounds(expectations: Any, path: str) -> list[tuple[float, str]]:
    """The numbers an expectation on ``path`` compares with (``< 2s`` → 2.0), each with its
    words (``"expected ≤ 2 s"``), for a reference line."""
    out = []
    for e in expectations or ():
        if e.path != path or e.op in ("==", "!=") or isinstance(e.value, (bool, str)):
            continue
        op = {"<=": "≤", ">=": "≥"}.get(e.op, e.op)
        unit = " s" if _unit(path) == SECONDS else ""
        out.append((float(e.value), f"expected {op} {float(e.value):g}{unit}"))
    return out
