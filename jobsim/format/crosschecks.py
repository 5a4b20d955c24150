"""Checks across a scenario's sections: references between them, and uniqueness.

A name must refer to something defined (a node, a handler, a job), names must not repeat,
and some settings only make sense together (a claim strategy and the database's dialect,
the clock's ticks and the nodes that wake by them). The checks run on whatever parts of the
file did validate, so that they are reported together with the field errors; they are made,
and so reported, in the order of ``cross_checks``.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import Problem
from ..executor.config import OPERATIONS
from .fileformat import MAX_JOBS, figure_problem
from .settings import DEFAULT_EXECUTOR, _d, _l, merge_executor, node_list
from .clock_format import clock_checks
from .profile import profile_checks
from .services_format import service_checks
from .window_format import window_problems
from .spec import Name, show, suggest


def cross_checks(v: dict[str, Any], problems: list[Problem]) -> None:
    """References and uniqueness, checked on whatever parts of the file did validate, so
    that they are reported together with the field errors."""
    nodes = node_list(v)
    seen, known = _node_names(nodes, problems)
    ex = merge_executor(v)
    ticked, ticks = _clock(v, nodes, ex, seen, known, problems)
    for name in _d(v.get("variants")):
        Name().check(name, f"variants.{name}", problems)
    _executor_settings(v, nodes, ex, problems)
    if ticked and not ticks and "clock" not in v:
        problems.append(Problem("clock.ticks", "ticks for the nodes that wake by ticks "
                                f"({', '.join(sorted(ticked))})", "none"))
    handlers = tuple(k for k in _d(v.get("handlers")))
    job_names, schedules = _workload(v, ex, seen, known, handlers, problems)
    _faults_and_operations(v, seen, known, job_names | schedules, problems)
    _server_restarts(v, nodes, ex, problems)
    clock_checks(v, nodes, ex, seen, known, problems)
    for i, n in enumerate(nodes):
        for k, h in enumerate(_l(n.get("handles"))):
            if isinstance(h, str) and "handlers" in v and h not in handlers:
                problems.append(Problem(f"nodes[{i}].handles[{k}]", "the name of a handler",
                                        show(h), suggest(h, handlers)))
    _expectations(v, job_names, problems, _boundary_timer_jobs(v, ex))
    _distributions(v, problems)
    _fail_forms(v, nodes, ex, problems)
    service_checks(v, problems)
    window_problems(v, problems)


def _fail_forms(v: dict[str, Any], nodes: list[dict[str, Any]], ex: dict[str, Any],
                problems: list[Problem]) -> None:
    """A worker chooses the retries it sends only where the server stores them as sent (a
    broker); elsewhere the engine counts each failure itself."""
    default_strategy = ex.get("acquisition", DEFAULT_EXECUTOR.acquisition)
    strategies = {n.get("acquisition", default_strategy) for n in nodes} or {default_strategy}
    others = sorted(str(s) for s in strategies if s != "broker")
    for name, h in _d(v.get("handlers")).items():
        form = _d(h).get("fail_retries", "decrement")
        if form != "decrement" and ex.get("count_attempt") == "fetch":
            # a server that stores the retries as sent counts no attempt at fetch (Zeebe);
            # one that counts at fetch takes no retries from the worker (Oban, River)
            problems.append(Problem(f"handlers.{name}.fail_retries",
                                    "decrement where attempts are counted at fetch "
                                    "(count_attempt: fetch): the claim already counts each "
                                    "execution, so a worker's own count would contradict it",
                                    f"{form!r} with count_attempt 'fetch'"))
        elif form != "decrement" and others:
            problems.append(Problem(f"handlers.{name}.fail_retries",
                                    "decrement: only a worker whose server stores the retries "
                                    "as sent (acquisition: broker) chooses what it sends; "
                                    "elsewhere the engine counts each failure",
                                    f"{form!r} with acquisition {others[0]!r}"))


# --- nodes, the clock and the executor's settings ---------------------------------------------

def _node_names(nodes: list[dict[str, Any]],
                problems: list[Problem]) -> tuple[set[str], list[str]]:
    """Each node's name once; the names (as a set, and in order for suggestions)."""
    names = [n.get("name") for n in nodes]
    seen: set[str] = set()
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue
        if name in seen:
            problems.append(Problem(f"nodes[{i}].name", "a name no other node has",
                                    show(name)))
        seen.add(name)
    known = [n for n in names if isinstance(n, str)]
    return seen, known


def _clock(v: dict[str, Any], nodes: list[dict[str, Any]], ex: dict[str, Any], seen: set[str],
           known: list[str], problems: list[Problem]) -> tuple[set[str], list[Any]]:
    """The clock's ticks in time order, each naming nodes that wake by ticks; the nodes that
    do (``ticked``) and the ticks, for the check that they have some."""
    default_wakeup = ex.get("wakeup", DEFAULT_EXECUTOR.wakeup)
    wakeup = {n["name"]: n.get("wakeup", default_wakeup) for n in nodes
              if isinstance(n.get("name"), str)}
    ticked = {name for name, w in wakeup.items() if w == "ticks"}
    ticks = _l(_d(v.get("clock")).get("ticks"))
    last = -1.0
    for i, tick in enumerate(ticks):
        tick = _d(tick)
        at = tick.get("at")
        if isinstance(at, float):
            if at < last:
                problems.append(Problem(f"clock.ticks[{i}].at", f"a time no earlier than the "
                                        f"previous tick ({last:g}s)", f"{at:g}s"))
            last = max(last, at)
        for k, name in enumerate(_l(tick.get("nodes"))):
            if not isinstance(name, str):
                continue
            path = f"clock.ticks[{i}].nodes[{k}]"
            if name not in seen:
                problems.append(Problem(path, "the name of a node", show(name),
                                        suggest(name, known)))
            elif name not in ticked:
                problems.append(Problem(path, "a node whose wakeup is ticks",
                                        f"{name!r}, which wakes by {wakeup[name]}"))
    return ticked, ticks


def _executor_settings(v: dict[str, Any], nodes: list[dict[str, Any]], ex: dict[str, Any],
                       problems: list[Problem]) -> None:
    """A claim strategy the database's dialect has; long polling only with a broker;
    attempts counted at fetch with a reset."""
    dialect = _d(v.get("db")).get("dialect", "atomic")
    default_strategy = ex.get("acquisition", DEFAULT_EXECUTOR.acquisition)
    profile_checks(v, [(f"nodes[{i}].acquisition" if "acquisition" in n else
                        "executor.acquisition", n.get("acquisition", default_strategy))
                       for i, n in enumerate(nodes)], problems)
    for i, n in enumerate(nodes):
        strategy = n.get("acquisition", default_strategy)
        where = f"nodes[{i}].acquisition" if "acquisition" in n else "executor.acquisition"
        if strategy == "skip_locked" and dialect == "sqlite":
            problems.append(Problem(where, "a strategy the database has: SQLite has no FOR "
                                    "UPDATE SKIP LOCKED (use db.dialect: postgres or atomic)",
                                    f"'skip_locked' with db.dialect {dialect}"))
            break
        if strategy == "broker" and dialect != "atomic":
            problems.append(Problem(where, "a strategy for this database: broker is a server "
                                    "activating jobs itself, not SQL (use db.dialect: atomic)",
                                    f"'broker' with db.dialect {dialect}"))
            break
        wakeup = n.get("wakeup", ex.get("wakeup", DEFAULT_EXECUTOR.wakeup))
        if wakeup == "long_poll" and strategy != "broker":
            path = f"nodes[{i}].wakeup" if "wakeup" in n else "executor.wakeup"
            problems.append(Problem(path, "poll, notify or ticks: only a server that activates "
                                    "jobs itself (acquisition: broker) holds a request until "
                                    "it has work", f"'long_poll' with acquisition {strategy!r}"))
            break
    if ex.get("count_attempt") == "fetch" and ex.get("lock_expiry", "claim") != "reset":
        problems.append(Problem("executor.count_attempt", "lock_expiry: reset with "
                                "count_attempt: fetch (a rescue decides whether an expired job "
                                "has attempts left)",
                                f"fetch with lock_expiry {ex.get('lock_expiry', 'claim')}"))


# --- the workload, faults and operations ------------------------------------------------------

def _workload(v: dict[str, Any], ex: dict[str, Any], seen: set[str], known: list[str],
              handlers: tuple[str, ...], problems: list[Problem]) -> tuple[set[str], set[str]]:
    """The workload's references, size and names; the names given to jobs, and those of the
    recurring schedules (an operation may name either: a schedule's is its latest job)."""
    work = _d(v.get("workload"))
    total = _workload_items(v, work, ex, seen, known, handlers, problems)
    if total > MAX_JOBS:
        problems.append(Problem("workload", f"at most {MAX_JOBS:,} jobs in all", f"{total:,}"))
    if total == 0 and isinstance(v.get("workload"), dict) and not any(
            _l(work.get(g)) for g in ("jobs", "streams", "recurring")):
        problems.append(Problem("workload", "at least one job (jobs, streams or recurring)",
                                "none"))
    stream_names: set[str] = set()
    for i, item in enumerate(_l(work.get("streams"))):
        name = _d(item).get("name", f"stream-{i}")
        if not isinstance(name, str):
            continue
        if name in stream_names:
            problems.append(Problem(f"workload.streams[{i}].name",
                                    "a name no other stream has", show(name)))
        stream_names.add(name)
    job_names: set[str] = set()
    for i, item in enumerate(_l(work.get("jobs"))):
        name = _d(item).get("name")
        if isinstance(name, str):
            if name in job_names:
                problems.append(Problem(f"workload.jobs[{i}].name", "a name no other job has",
                                        show(name)))
            job_names.add(name)
    schedules: set[str] = set()
    for i, item in enumerate(_l(work.get("recurring"))):
        name = _d(item).get("name")
        if isinstance(name, str):
            if name in job_names or name in schedules:
                problems.append(Problem(f"workload.recurring[{i}].name",
                                        "a name no job and no other schedule has", show(name)))
            schedules.add(name)
    return job_names, schedules


def _workload_items(v: dict[str, Any], work: dict[str, Any], ex: dict[str, Any],
                    seen: set[str], known: list[str], handlers: tuple[str, ...],
                    problems: list[Problem]) -> int:
    """Each item's handler and creating nodes defined, each job's id once; the number of
    jobs the workload creates."""
    ids: set[int] = set()
    total = 0
    for group in ("jobs", "streams", "recurring"):
        for i, item in enumerate(_l(work.get(group))):
            item = _d(item)
            h = item.get("handler")
            if isinstance(h, str) and "handlers" in v and h not in handlers:
                problems.append(Problem(f"workload.{group}[{i}].handler",
                                        "the name of a handler in handlers", show(h),
                                        suggest(h, handlers)))
            creators = [item.get("node")] if group == "jobs" else _l(item.get("nodes"))
            for k, name in enumerate(creators):
                if isinstance(name, str) and name not in seen:
                    where = "node" if group == "jobs" else f"nodes[{k}]"
                    problems.append(Problem(f"workload.{group}[{i}].{where}",
                                            "the name of a node", show(name),
                                            suggest(name, known)))
            if group == "jobs":
                total += 1
                jid = item.get("id")
                if isinstance(jid, int):
                    if jid in ids and not ex.get("idempotent_submit"):
                        problems.append(Problem(f"workload.jobs[{i}].id",
                                                "an id no other job has (or "
                                                "executor.idempotent_submit: true)",
                                                show(jid)))
                    ids.add(jid)
            elif isinstance(item.get("count"), int):
                total += item["count"]
    return total


def _faults_and_operations(v: dict[str, Any], seen: set[str], known: list[str],
                           job_names: set[str], problems: list[Problem]) -> None:
    """Faults name nodes; operations name jobs or schedules (or ``all``)."""
    for i, f in enumerate(_l(v.get("faults"))):
        f = _d(f)
        for key in ("crash", "pause", "partition"):
            name = f.get(key)
            if isinstance(name, str) and name not in seen:
                problems.append(Problem(f"faults[{i}].{key}", "the name of a node", show(name),
                                        suggest(name, known)))
    for i, o in enumerate(_l(v.get("operations"))):
        o = _d(o)
        for key in OPERATIONS:
            name = o.get(key)
            if isinstance(name, str) and name != "all" and name not in job_names:
                problems.append(Problem(f"operations[{i}].{key}", "all, or the name of a job "
                                        "in workload.jobs or of a schedule in "
                                        "workload.recurring", show(name),
                                        suggest(name, sorted(job_names))))


def _server_restarts(v: dict[str, Any], nodes: list[dict[str, Any]], ex: dict[str, Any],
                     problems: list[Problem]) -> None:
    """A server restart, and an operation's fail, need a server: every node's jobs handed
    out by one (acquisition: broker). Rows claimed with SQL stay locked through a database's
    restart, so a restart that unlocked them would model no real system."""
    default_strategy = ex.get("acquisition", DEFAULT_EXECUTOR.acquisition)
    others = sorted({str(n.get("acquisition", default_strategy)) for n in nodes} - {"broker"})
    if not others:
        return
    server = ("a server that activates jobs itself on every node (acquisition: broker, as in "
              "policy: zeebe_like or zeebe)")
    for i, f in enumerate(_l(v.get("faults"))):
        if "restart_server" in _d(f):
            problems.append(Problem(f"faults[{i}].restart_server", server,
                                    f"acquisition {others[0]!r}: no server to restart"))
    for i, o in enumerate(_l(v.get("operations"))):
        if "fail" in _d(o):
            problems.append(Problem(f"operations[{i}].fail", server, f"acquisition "
                                    f"{others[0]!r}: no server to call fail on"))


# --- expectations and distributions -----------------------------------------------------------

def _boundary_timer_jobs(v: dict[str, Any], ex: dict[str, Any]) -> bool:
    """Whether the run's boundary timers are timer jobs (a timer table, and a handler with a
    boundary timer): only then has its summary ``boundary_timers``."""
    return bool(ex.get("timer_table", DEFAULT_EXECUTOR.timer_table)) and any(
        "boundary_timer" in _d(h) for h in _d(v.get("handlers")).values())


def _expectations(v: dict[str, Any], job_names: set[str], problems: list[Problem],
                  boundary_jobs: bool) -> None:
    """Each expectation names a figure of the summary (``named.<job>`` a named job;
    ``boundary_timers`` only where boundary timers are timer jobs)."""
    for path in _d(v.get("expect")):
        parts = path.split(".")
        if parts[0] == "boundary_timers" and not boundary_jobs:
            problems.append(Problem(f"expect.{path}", "a figure this run has: boundary_timers "
                                    "exists only where boundary timers are timer jobs (a "
                                    "handler's boundary_timer, and timer_table: true, as in "
                                    "the flowable policy)", show(path)))
            continue
        declared = tuple(_d(v.get("services")))
        if parts[0] == "services" and (len(parts) < 3 or parts[1] not in declared):
            problems.append(Problem(f"expect.{path}", "services.<name>.<figure> for a service "
                                    "declared under services" + (f" ({', '.join(declared)})"
                                                                  if declared else
                                                                  " (the file declares none)"),
                                    show(path), suggest(parts[1], declared)
                                    if len(parts) > 1 else ""))
            continue
        if parts[0] == "named":
            if len(parts) < 3 or parts[1] not in job_names:
                problems.append(Problem(f"expect.{path}", "named.<job name>.<figure> for a "
                                        "job given a name in workload.jobs", show(path),
                                        suggest(parts[1], sorted(job_names))
                                        if len(parts) > 1 else ""))
                continue
        why = figure_problem(path)
        if why is not None:
            expected, near = why
            hint = ""
            if near:
                shape_keys = [k for k in expected.removeprefix("one of ").split(", ")]
                hint = suggest(near, shape_keys)
            problems.append(Problem(f"expect.{path}", f"a figure of the summary: {expected}",
                                    show(path), hint))


def _distributions(v: dict[str, Any], problems: list[Problem]) -> None:
    """Handlers' durations and the database's latency: a lognormal's p99 no smaller than its
    median (all of them first), then a uniform's low no higher than its high."""
    dists_at = [(f"handlers.{n}.duration", _d(h).get("duration"))
                for n, h in _d(v.get("handlers")).items()]
    dists_at.append(("db.latency", _d(v.get("db")).get("latency")))
    profile = _d(_d(v.get("db")).get("profile"))
    dists_at.append(("db.profile.statement", profile.get("statement")))
    dists_at += [(f"db.profile.strategies.{s}.{k}", d) for s, f in
                 _d(profile.get("strategies")).items() for k, d in _d(f).items()
                 if k in ("select", "update", "commit", "update_unchanged",
                          "between_attempts", "between_statements")]
    for where, d in dists_at:
        ln = _d(_d(d).get("lognormal"))
        if isinstance(ln.get("median"), float) and isinstance(ln.get("p99"), float) \
                and ln["p99"] < ln["median"]:
            problems.append(Problem(f"{where}.lognormal.p99", "a p99 no smaller than the median "
                                    f"({ln['median']:g}s)", f"{ln['p99']:g}s"))
    for where, d in dists_at:
        u = _d(_d(d).get("uniform"))
        if isinstance(u.get("low"), float) and isinstance(u.get("high"), float) \
                and u["low"] > u["high"]:
            problems.append(Problem(f"{where}.uniform", "low <= high",
                                    f"low {u['low']:g}s, high {u['high']:g}s"))
