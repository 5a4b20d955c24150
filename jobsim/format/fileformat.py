"""The scenario file format: every key, its type, its bounds and its meaning.

``FORMAT`` validates a parsed document (see ``spec``) and describes itself as JSON Schema
(``schema()``, printed by ``jobsim schema`` for editors). The meaning of the values is built by
``scenario``.
"""

from __future__ import annotations

from typing import Any

from ..executor.config import RECURRING_MODES
from ..database.db import DIALECTS
from ..database.dialects import ISOLATIONS, SQLITE_BEGIN
from ..base.durations import parse_duration
from ..base.errors import Problem
from ..executor.policies import PRESETS
from .executor_keys import EXECUTOR as _EXECUTOR, NOT_PER_NODE as _NOT_PER_NODE
from .executor_keys import TABLE_ONLY as _TABLE_ONLY, backoff as _backoff, retry as _retry
from .executor_keys import not_per_node as _not_per_node
from .effects_shape import EFFECTS_SHAPE, WINDOW_SHAPE
from .executor_keys import exponential as _exponential
from ..executor.handlers import FAIL_RETRIES
from .clock_format import CLOCK_FAULT
from .profile import profile_format
from .services_format import calls_format, rate_field, service_format
from .window_format import COOLDOWN, WARMUP
from .report_format import MAX_SEEDS, report_format  # noqa: F401 (MAX_SEEDS: the CLI's)
from .operations_format import OPERATIONS
from .spec import (MISSING, Const, Cycle, Dur, Either, Enum, Epoch, Field, Int, ListOf, MapOf,
                   Name, Num, Obj, Str, is_map_with, show)

MAX_JOBS = 10_000_000

_DIST = {"n": None, "mean": None, "max": None, "p50": None, "p90": None, "p99": None}
_CAUSES = {c: None for c in ("unsafe_acquisition", "lock_expired", "pause", "crash",
                             "partition", "server_restart", "failed_after_effect",
                             "ambiguous_timeout", "clock_skew", "unexplained")}
_INVARIANTS = {k: None for k in ("no_job_lost", "done_means_ran", "exclusive_locks",
                                 "duplicates_explained", "retries_follow_policy",
                                 "terminal_once", "liveness")}
ANY = "<any>"
#: the shape of a run's summary, for checking an expectation's path before the run
#: (``ANY`` stands for a priority, a node or a job name)
SUMMARY_SHAPE: dict[str, Any] = {
    "jobs": {k: None for k in ("created", "done", "dead_lettered", "incident", "withdrawn",
                               "failed", "cancelled", "pending", "lost",
                               "submits_ignored", "resubmitted")},
    "executions": None, "failures": None, "double_acquisitions": None, "statements": None,
    "duplicate_executions": {"total": None, "by_cause": _CAUSES},
    "duplicate_side_effects": {"total": None, "by_cause": _CAUSES},
    "side_effects_refused": None, "operations_ignored": None,
    "completions": {"done": None, "rejected_by_guard": None, "row_gone": None},
    "crash_recovery": {"stranded_jobs": None, "unrecovered": None, "delay": _DIST},
    "acquisition": {k: None for k in ("attempts", "empty", "rows", "lost_races", "errors",
                                      "full", "unacquired", "rows_per_s")},
    "polls": {"total": None, "skipped": None, "by_node": {ANY: None}},
    "latency": {"start_delay": _DIST, "end_to_end": _DIST,
                "by_priority": {ANY: {"jobs": None, "start_delay": _DIST}}},
    "named": {ANY: {k: None for k in ("id", "outcome", "executions", "start_delay",
                                      "end_to_end", "duplicate_executions")}},
    "nodes": {ANY: {k: None for k in (
        "executions", "executions_after_restart", "claims", "acquire_attempts", "lost_races",
        "busy_share", "busy_thread_seconds", "threads", "time_up", "time_down", "time_paused",
        "longest_idle_wait", "even_share", "idle_while_work_waited")}},
    #: only where a service was called or changed its health: see analysis/services.py
    "services": {ANY: {**{k: None for k in (
        "calls", "ok", "unanswered", "calls_in_outage", "attempts_in_outage", "waited",
        "short_circuited", "replayed", "fenced", "completed_after_timeout",
        "completed_after_crash", "effects_after_caller_left",
        "mean_wait", "mean_latency", "recovered_at", "peak_calls_per_s",
        "peak_after_recovery")},
        "errors": {k: None for k in ("error", "timeout", "refused", "rate_limited",
                                     "worker_timeout")},
        "time": {k: None for k in ("up", "down", "brownout", "held")}}},
    #: only where boundary timers are timer jobs (a timer table): see analysis/metrics.py
    "boundary_timers": {**{k: None for k in ("timer_jobs", "done", "cancelled", "pending",
                                             "fired", "withdrew")}, "delay": _DIST},
    "effects": EFFECTS_SHAPE,  # the effects that decided the run: analysis/effects.py
    "throughput_per_s": None, "invariants": _INVARIANTS, "end_time": None, "drained": None,
    "trace_events": None,
    "window": WINDOW_SHAPE,  # only where a warm-up or a cool-down is set: analysis/window.py
}


def figure_problem(path: str) -> tuple[str, str] | None:
    """Why ``path`` names no figure of a summary: (the expected keys, the nearest) or None."""
    shape: Any = SUMMARY_SHAPE
    for part in path.split("."):
        if not isinstance(shape, dict):
            return "no further key (this figure is a number)", ""
        if part in shape:
            shape = shape[part]
        elif ANY in shape:
            shape = shape[ANY]
        else:
            keys = tuple(shape)
            return "one of " + ", ".join(keys), part
    if isinstance(shape, dict):
        return "a number, not a group: add one of " + ", ".join(
            k for k in shape if k != ANY) or "a name", ""
    return None


_dist = Either([
    (lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool),
     Dur(doc="a constant duration")),
    (is_map_with("constant"), Obj({"constant": Dur()}, ("constant",))),
    (is_map_with("uniform"), Obj({"uniform": Obj({"low": Dur(), "high": Dur()},
                                                 ("low", "high"))}, ("uniform",))),
    (is_map_with("exponential"), Obj({"exponential": Obj({"mean": Dur()}, ("mean",))},
                                     ("exponential",))),
    (is_map_with("lognormal"), Obj({"lognormal": Obj({"median": Dur(positive=True),
                                                      "p99": Dur(positive=True)},
                                                     ("median", "p99"))}, ("lognormal",))),
], "a duration (constant) or one of {constant: D}, {uniform: {low, high}}, "
   "{exponential: {mean}}, {lognormal: {median, p99}}")

PROFILE = profile_format(_dist)

# a decorrelated jitter grows from the job's previous wait, which a worker does not keep
# between activations of the job: only the stateless forms are taken here
_fail_wait_exponential = _exponential(
    ("full", "equal"), "a fraction from 0 to 1, full or equal (not decorrelated: it grows from "
                       "the previous wait, which a worker does not keep)")
_fail_wait = Either([(test, _fail_wait_exponential if "exponential" in getattr(
                        field, "fields", {}) else field)
                     for test, field in _backoff.options if not isinstance(field, Cycle)],
                    "a list of durations, {fixed: D} or {exponential: {base, factor, cap, "
                    "jitter, offset}} (jitter: a fraction from 0 to 1, full or equal)",
                    doc="the worker's wait before it reports a failure (the job stays its own): "
                        "the k-th wait once the job has used k - 1 retries (a list: the k-th "
                        "delay, the last repeating)")

_handler = Obj({
    "duration": _dist,
    "outcome": Either([
        (lambda v: isinstance(v, str),
         Enum(("succeed", "always_fail", "hang"))),
        (is_map_with("fail_first"), Obj({"fail_first": Int(lo=0, hi=1_000_000)},
                                        ("fail_first",))),
        (is_map_with("fail_rate"), Obj({"fail_rate": Num(lo=0.0, hi=1.0)}, ("fail_rate",))),
        (is_map_with("hang"), Obj({"hang": Dur(positive=True, hi=1e12)}, ("hang",))),
    ], "succeed, always_fail, hang, {fail_first: N}, {fail_rate: p} or {hang: D}"),
    "error": Str(doc="the error message; {attempt} is the execution number (default: "
                     "handler failed)"),
    "calls": calls_format(_dist),
    "side_effect": Obj({
        "at": Either([(lambda v: isinstance(v, str), Enum(("start", "end", "commit"))),
                      (lambda v: True, Num(lo=0.0, hi=1.0))],
                     "start, end, commit (a row written in the completion's transaction: "
                     "only a completion that deletes the job makes it), or a fraction of the "
                     "run from 0 to 1"),
        "say": Str(doc="what the handler prints at its side effect"),
        "fencing": Const(lambda v: isinstance(v, bool), "true or false", {"type": "boolean"},
                         False, doc="written with the run's fencing token (the row's lock "
                                   "generation at its claim): refused, and the run fails, "
                                   "once a later claim took the row or the row is gone")},
        doc="the run's effect on the world, which a second run of the job makes again "
            "(duplicate_side_effects); every handler has one, at the run's end (at: end) "
            "unless this says otherwise"),
    "retry": _retry,
    "boundary_timer": Obj({"after": Dur(positive=True),
                           "interrupting": Const(lambda v: isinstance(v, bool), "true or false",
                                                 {"type": "boolean"}, True)},
                          ("after",), doc="a timer boundary event on the task: after this "
                                          "long from the job's creation, an interrupting one "
                                          "withdraws the job; with a timer table it is a "
                                          "timer job of its own, which fires when an "
                                          "executor thread has run it (Flowable)"),
    "worker_timeout": Dur(positive=True, doc="the worker's own timeout on a run (it races the "
                                             "run): a longer run, a hanging one too, fails "
                                             "there with 'processing took too long'"),
    "fail_wait": _fail_wait,
    "fail_retries": Enum(FAIL_RETRIES, "decrement",
                         "what the worker's fail call sends, where the server stores retries "
                         "as sent (acquisition: broker): decrement (job.retries - 1: uses "
                         "one), unchanged (job.retries: hands the job back without using "
                         "one), omitted (counts as 0: an incident at once)"),
})

_job = Obj({"id": Int(lo=1, hi=2**53), "name": Str(doc="names the job in expectations"),
            "kind": Enum(("async", "timer"), "async"),
            "handler": Str(), "at": Dur(0.0), "due_in": Dur(0.0),
            "priority": Int(0, lo=-1_000_000, hi=1_000_000),
            "node": Str(doc="the node whose transaction creates it (Flowable's hint path)"),
            "queue": Str(doc="a serial queue: one of its jobs runs at a time "
                             "(failsafe-executor's registerQueue)"),
            "record_failure": Str(doc="insert it already failed, with this error "
                                      "(failsafe-executor's recordFailure)")}, ("handler",))
_stream = Obj({"name": Str(), "handler": Str(), "count": Int(lo=1, hi=MAX_JOBS),
               "rate": rate_field("Poisson arrivals (absent: all at once)"),
               "start": Dur(0.0), "kind": Enum(("async", "timer"), "async"),
               "due_in": Dur(0.0), "priority": Int(0, lo=-1_000_000, hi=1_000_000),
               "nodes": ListOf(Str(), min_len=1, max_len=256,
                               doc="the nodes whose transactions create its jobs, in turn "
                                   "(Flowable's hint path)"),
               "queue": Str(doc="a serial queue for all its jobs")},
              ("handler", "count"))

_recurring = Obj({
    "name": Str(doc="names the schedule in operations (its latest job)"), "handler": Str(),
    "every": Dur(positive=True),
    "count": Int(lo=1, hi=MAX_JOBS), "mode": Enum(RECURRING_MODES, "fixed_rate",
                                                  "fixed_rate: every `every`; fixed_delay: "
                                                  "`every` after the previous one finished"),
    "start": Dur(0.0), "kind": Enum(("async", "timer"), "timer"),
    "priority": Int(0, lo=-1_000_000, hi=1_000_000)}, ("name", "handler", "every", "count"))

_fault = Either([
    (is_map_with("crash"), Obj({"at": Dur(), "crash": Str(doc="the node that dies"),
                                "restart_after": Dur(positive=True)}, ("at", "crash"))),
    (is_map_with("pause"), Obj({"at": Dur(), "pause": Str(doc="the node that stalls"),
                                "for": Dur(positive=True)}, ("at", "pause", "for"))),
    (is_map_with("slow_db"), Obj({"at": Dur(), "slow_db": Num(lo=0.0, hi=1e6,
                                                              doc="latency multiplier"),
                                  "for": Dur(positive=True)}, ("at", "slow_db", "for"))),
    (is_map_with("partition"), Obj({"at": Dur(), "partition": Str(doc="the node cut off"),
                                    "for": Dur(positive=True), "timeout": Dur(5.0)},
                                   ("at", "partition", "for"))),
    (is_map_with("restart_server"), Obj({"at": Dur(), "restart_server": Const(
        lambda v: v is True, "true", {"const": True})}, ("at", "restart_server"))),
    (is_map_with("clock"), CLOCK_FAULT),
], "one of {at, crash: NODE, restart_after}, {at, pause: NODE, for}, {at, slow_db: FACTOR, "
   "for}, {at, partition: NODE, for, timeout}, {at, restart_server: true}, {at, clock: NODE, "
   "step, drift}")


class Condition(Field):
    """``"<op> <value>"``: ``== 0``, ``> 0``, ``<= 31s`` (a duration is compared in
    seconds), ``== true``, ``== done``."""

    doc = "a comparison: one of ==, !=, <=, >=, <, > and a value (a duration with a unit, " \
          "a number, true/false or a word)"

    def check(self, value, path, problems):
        parsed = parse_condition(value)
        if parsed is None:
            problems.append(Problem(path, "a comparison like '== 0', '> 0' or '<= 31s'",
                                    show(value)))
            return MISSING
        return parsed

    def schema(self):
        return self._described({"type": "string",
                                "pattern": r"^\s*(==|!=|<=|>=|<|>)\s*\S.*$"})


def parse_condition(text: object) -> tuple[str, object] | None:
    """``"<= 31s"`` → ``("<=", 31.0)``; ``None`` if it is not a comparison."""
    if not isinstance(text, str):
        return None
    t = text.strip()
    for op in ("==", "!=", "<=", ">=", "<", ">"):
        if t.startswith(op):
            rest = t[len(op):].strip()
            break
    else:
        return None
    if not rest:
        return None
    if rest in ("true", "false"):
        return op, rest == "true"
    if rest.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return None  # nan compares false with everything; a figure is never infinite
    try:
        return op, float(rest)
    except ValueError:
        pass
    try:
        return op, parse_duration(rest)
    except ValueError:
        pass
    if op in ("==", "!=") and rest.replace("_", "").replace("-", "").isalnum():
        return op, rest
    return None


_FIGURE = Const(lambda v: isinstance(v, str) and bool(v) and all(
    part and part.replace("_", "").replace("-", "").isalnum() for part in v.split(".")),
    "a dotted path into the run's summary, like jobs.lost or named.urgent.start_delay",
    {"type": "string", "pattern": r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$"})
_expect = MapOf(Either([(lambda v: isinstance(v, list), ListOf(Condition(), min_len=1,
                                                                  max_len=10)),
                        (lambda v: True, Condition())],
                       "a comparison like '== 0' or a list of them"),
                doc="figure of the summary → comparison (or a list of them); the run fails "
                    "(exit 1) when one does not hold", max_len=200)
_ANY = Const(lambda v: True, "any value", {})
#: the table's settings refused on a node, saying where they go (retry has its own words)
_CLUSTER_ONLY = {key: _not_per_node(key) for key in _TABLE_ONLY if key != "retry"}

FORMAT = Obj({
    "name": Name(doc="the scenario's name; its report folder"),
    "description": Str("", nonempty=False),
    "seed": Int(0, lo=0, hi=2**63 - 1),
    "until": Either([(lambda v: v == "drained", Const(lambda v: True, "drained",
                                                      {"const": "drained"})),
                     (lambda v: True, Dur(positive=True, hi=3650 * 86400.0))],
                    "drained or a duration", "drained"),
    "horizon": Dur(30 * 86400.0, positive=True, hi=3650 * 86400.0,
                   doc="the latest instant a drained run may reach"),
    "warmup": WARMUP, "cooldown": COOLDOWN,
    "db": Obj({"dialect": Enum(DIALECTS, "atomic",
                               "atomic: each statement at one instant; postgres: READ "
                               "COMMITTED snapshots, row locks, EvalPlanQual; sqlite: one "
                               "write lock"),
               "latency": _dist,
               "connections": Int(0, "0 = unbounded", lo=0, hi=100_000),
               "isolation": Enum(ISOLATIONS, "read_committed", "postgres only"),
               "sqlite_begin": Enum(SQLITE_BEGIN, "autocommit",
                                    "sqlite only: how read_then_write opens its "
                                    "transaction"),
               "sqlite_busy": Enum(("queue", "sleep"), "queue",
                                   "sqlite only: a claim that finds the write lock held "
                                   "waits in a queue, or as SQLite's busy handler does, in "
                                   "sleeps of 1, 2, 5 … 100 ms between tries (other "
                                   "statements queue)"),
               "profile": Either([(lambda v: isinstance(v, str), Str(
                                      doc="a profile file (jobsim race --calibrate), relative "
                                          "to the scenario's folder")),
                                  (lambda v: True, PROFILE)],
                                 "a profile file's path or the profile's figures",
                                 doc="the claim statements' times as measured"),
               "cpu": Obj({"cores": Int(lo=1, hi=4096, doc="the cores the nodes' processes "
                                        "and the database server share (default: the "
                                        "profile's machine)"),
                           "quantum": Dur(positive=True, hi=1.0,
                                          doc="how long a process runs while others wait "
                                              "(default: the profile's, else 3ms)")},
                          doc="a CPU model (off unless given): a run queue with a time slice")}),
    "policy": Enum(tuple(PRESETS), doc="a preset of executor settings"),
    "executor": Obj({**_EXECUTOR, **_TABLE_ONLY}),
    "nodes": Either([(lambda v: isinstance(v, int) and not isinstance(v, bool),
                      Int(lo=1, hi=256)),
                     (lambda v: True, ListOf(Obj({"name": Str(), "start_at": Dur(
                                                  doc="pin the node's start (its first poll "
                                                      "then follows initial_delay); absent: "
                                                      "it starts at 0 and polls first at a "
                                                      "phase drawn within one poll interval"),
                                                  **_EXECUTOR, **_CLUSTER_ONLY,
                                                  "retry": _NOT_PER_NODE},
                                                 ("name",)),
                                             min_len=1, max_len=256))],
                    "a node count or a list of nodes"),
    "clock": Obj({"ticks": ListOf(Obj({"at": Dur(), "nodes": ListOf(Str(), min_len=1),
                                       "note": Str()}, ("at", "nodes")), max_len=100_000),
                  "epoch": Epoch(doc="the wall-clock instant of t = 0, an ISO-8601 time with "
                                     "its zone (2026-01-01T00:00:00Z, the default): a "
                                     "broker's deadlines are Unix epoch milliseconds from it")}),
    "handlers": MapOf(_handler),
    "services": service_format(_dist),
    "workload": Obj({"jobs": ListOf(_job), "streams": ListOf(_stream, max_len=1000),
                     "recurring": ListOf(_recurring, max_len=1000)}),
    "faults": ListOf(_fault, max_len=10_000),
    "operations": OPERATIONS,
    "expect": _expect,
    "sweep": Obj({
        "grid": MapOf(ListOf(_ANY, min_len=1, max_len=1000), max_len=10,
                      doc="dotted path → the values it takes (the cross product is run)"),
        "replications": Int(lo=1, hi=100_000, doc="runs per grid point"),
        "plot": ListOf(_FIGURE, max_len=20, doc="figures drawn against the first axis"),
        "precision": Obj({"figure": _FIGURE,
                          "within": Num(lo=1e-6, hi=0.999,
                                        doc="the CI half-width as a fraction of the mean")},
                         ("figure", "within"))},
        doc="defaults for jobsim sweep: the grid, replications, plots"),
    "hunt": Obj({
        "nodes": ListOf(Str(), min_len=1, max_len=256, doc="the nodes faults may hit"),
        "faults": Int(lo=1, hi=20, doc="at most this many faults in one run (default 3)"),
        "kinds": ListOf(Enum(("crash", "pause", "slow_db", "partition", "restart_server",
                              "clock")),
                        min_len=1, max_len=6, doc="the kinds of fault drawn"),
        "between": ListOf(Dur(), min_len=2, max_len=2, doc="[FROM, TO]: when faults start"),
        "length": ListOf(Dur(), min_len=2, max_len=2, doc="[SHORTEST, LONGEST] window"),
        "slow_factor": ListOf(Num(lo=1.0, hi=1e6), min_len=2, max_len=2,
                              doc="[LOW, HIGH] latency multiplier of slow_db"),
        "seeds": Const(lambda v: isinstance(v, bool), "true or false",
                       {"type": "boolean"}, doc="draw each run's seed (default true)")},
        doc="bounds of jobsim hunt's fault space"),
    "report": report_format(_FIGURE),
    "variants": MapOf(Obj({"description": Str(), "set": MapOf(_ANY, max_len=200),
                           "expect": _expect}), max_len=20,
                      doc="runs of the same scenario with some values set otherwise, "
                          "reported side by side"),
}, required=("name", "nodes", "handlers", "workload"))

def schema() -> dict[str, Any]:
    """The scenario format as JSON Schema."""
    s = FORMAT.schema()
    s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    s["title"] = "jobsim scenario"
    return s
