"""Building a validated scenario's objects: the ``Scenario`` and what it holds.

Runs only on a document that passed the format and the cross checks, so every value is
already of its type; defaults come from the policy preset and ``ExecutorConfig``.
"""

from __future__ import annotations

from typing import Any

from ..base import dists
from ..database.cpu import Timing
from ..executor.config import (EPOCH_MS, DbConfig, ExecutorConfig, Expectation, Fault, JobSpec,
                               NodeConfig, RecurringSpec, Scenario, StreamSpec, Tick)
from ..executor.handlers import Handler
from ..executor.retry import (Backoff, CycleBackoff, ExponentialBackoff, FixedBackoff,
                              ListBackoff, RetryPolicy)
from .services_format import build_services, build_steps, per_second
from .settings import DEFAULT_EXECUTOR, derive, derived_settings, merge_executor, node_list


def _build_dist(d: Any) -> dists.Distribution:
    if d is None:
        return dists.ZERO
    if isinstance(d, float):
        return dists.Constant(d)
    (form, params), = d.items()
    if form == "constant":
        return dists.Constant(params)
    if form == "uniform":
        return dists.Uniform(params["low"], params["high"])
    if form == "exponential":
        return dists.Exponential(params["mean"])
    return dists.LogNormal(params["median"], params["p99"])


def _build_retry(r: dict[str, Any] | None, base: RetryPolicy) -> RetryPolicy:
    if r is None:
        return base
    attempts = r.get("attempts", base.attempts)
    b = r.get("backoff")
    return RetryPolicy(attempts, base.backoff if b is None else _build_backoff(b),
                       r.get("backoff_from", base.backoff_from))


def _build_backoff(b: Any) -> Backoff:
    """A backoff as the file gives it: a list, an ISO-8601 cycle, fixed or exponential."""
    if isinstance(b, list):
        backoff = ListBackoff(tuple(b))
    elif isinstance(b, tuple):
        backoff = CycleBackoff(*b)
    elif "fixed" in b:
        backoff = FixedBackoff(b["fixed"])
    else:
        e = b["exponential"]
        backoff = ExponentialBackoff(e["base"], e["factor"],
                                     e["cap"] if e["cap"] is not None else float("inf"),
                                     e["jitter"], e["offset"])
    return backoff


def _build_executor(settings: dict[str, Any], base: ExecutorConfig) -> ExecutorConfig:
    fields = {k: val for k, val in settings.items() if k not in ("retry", "name", "start_at")}
    if "handles" in fields:
        fields["handles"] = tuple(fields["handles"])
    retry = _build_retry(settings.get("retry"), base.retry)
    return ExecutorConfig(**{**base.__dict__, **fields, "retry": retry})


def _build_handlers(specs: dict[str, Any], executor: ExecutorConfig) -> dict[str, Handler]:
    """The handlers by name; a handler's own ``retry`` is over the executor's."""
    handlers = {}
    for name, h in specs.items():
        outcome = h.get("outcome", "succeed")
        kw: dict[str, Any] = {}
        if isinstance(outcome, dict):
            (form, value), = outcome.items()
            kw = {"fail_first": {"fail_first": value}, "fail_rate": {"fail_rate": value},
                  "hang": {"hang_for": value}}[form]
            outcome = form
        side = h.get("side_effect", {})
        bt = h.get("boundary_timer")
        kw["boundary"] = (bt["after"], bt["interrupting"]) if bt else None
        if "fail_wait" in h:
            kw["fail_wait"] = _build_backoff(h["fail_wait"])
        kw["worker_timeout"] = h.get("worker_timeout")
        kw["fail_retries"] = h.get("fail_retries", "decrement")
        at = side.get("at", "end")
        kw["at_commit"] = at == "commit"
        at = {"start": 0.0, "end": 1.0, "commit": 1.0}.get(at, at) if isinstance(at, str) \
            else at
        if "calls" in h:
            kw["steps"] = build_steps(h["calls"], _build_dist)
        handlers[name] = Handler(
            name, _build_dist(h.get("duration")), outcome,
            error=h.get("error", "handler failed"),
            side_effect_at=at, says=side.get("say"), fenced=side.get("fencing", False),
            retry=_build_retry(h["retry"], executor.retry) if "retry" in h else None, **kw)
    return handlers


def _build_faults(v: dict[str, Any]) -> list[Fault]:
    """The faults, then the operations (both are run as faults at their instants)."""
    faults = []
    for f in v.get("faults", []):
        if "crash" in f:
            faults.append(Fault(f["at"], "crash", f["crash"], f.get("restart_after")))
        elif "pause" in f:
            faults.append(Fault(f["at"], "pause", f["pause"], f["for"]))
        elif "slow_db" in f:
            faults.append(Fault(f["at"], "slow_db", None, f["for"], factor=f["slow_db"]))
        elif "partition" in f:
            faults.append(Fault(f["at"], "partition", f["partition"], f["for"],
                                timeout=f["timeout"]))
        elif "clock" in f:
            faults.append(Fault(f["at"], "clock", f["clock"], step=f.get("step") or 0.0,
                                drift=f.get("drift")))
        else:
            faults.append(Fault(f["at"], "restart_server"))
    for o in v.get("operations", []):
        kind, = (k for k in o if k not in ("at", "retries", "error"))
        faults.append(Fault(o["at"], kind, o[kind], retries=o.get("retries"),
                            error=o.get("error")))
    return faults


def _build_expect(v: dict[str, Any], raw: dict[str, Any]) -> list[Expectation]:
    """One expectation per condition; its text is the file's own, for reports."""
    expect = []
    for path, conds in v.get("expect", {}).items():
        texts = (raw.get("expect") or {}).get(path)
        texts = texts if isinstance(texts, list) else [texts]
        for (op, value), text in zip(conds if isinstance(conds, list) else [conds], texts):
            expect.append(Expectation(path, op, value, f"{path} {str(text).strip()}"))
    return expect


def build(v: dict[str, Any], raw: dict[str, Any], source: str,
          variant: str | None = None) -> Scenario:
    """The ``Scenario`` of a validated document ``v`` (``raw`` is the file's own)."""
    merged = merge_executor(v)
    executor = _build_executor(merged, DEFAULT_EXECUTOR)
    derived = derived_settings(v)
    nodes = []
    for n in node_list(v):
        n = dict(n)
        derive(n, derived, node=True)  # a node that sets lock_time gets its own heartbeat
        nodes.append(NodeConfig(n["name"], _build_executor(n, executor), n.get("start_at")))
    handlers = _build_handlers(v["handlers"], executor)
    work = v["workload"]
    jobs = tuple(JobSpec(j["handler"], j["kind"], j.get("id"), j["at"], j["due_in"],
                         j["priority"], j.get("name"), j.get("node"), j.get("queue"),
                         j.get("record_failure")) for j in work.get("jobs", []))
    recurring = tuple(RecurringSpec(r["name"], r["handler"], r["every"], r["count"], r["mode"],
                                    r["start"], r["kind"], r["priority"])
                      for r in work.get("recurring", []))
    faults = _build_faults(v)
    expect = _build_expect(v, raw)
    streams = tuple(StreamSpec(s.get("name", f"stream-{i}"), s["handler"], s["count"],
                               per_second(s["rate"]) if "rate" in s else None,
                               s["start"], s["kind"], s["due_in"], s["priority"],
                               tuple(s.get("nodes", ())), s.get("queue"))
                    for i, s in enumerate(work.get("streams", [])))
    ticks = tuple(Tick(t["at"], tuple(t["nodes"]), t.get("note"))
                  for t in v.get("clock", {}).get("ticks", []))
    db = v.get("db", {})
    until = v["until"]
    return Scenario(
        name=v["name"], description=v["description"], seed=v["seed"], handlers=handlers,
        nodes=tuple(nodes), until=None if until == "drained" else until, horizon=v["horizon"],
        db=_build_db(db, raw),
        executor=executor, ticks=ticks, jobs=jobs, streams=streams, faults=tuple(faults),
        recurring=recurring, expect=tuple(expect), variant=variant,
        compare=tuple(v.get("report", {}).get("compare", ())),
        timeline_colour=v.get("report", {}).get("timeline_colour", "outcome"),
        services=build_services(v.get("services"), _build_dist), source=source, document=raw,
        epoch_ms=v.get("clock", {}).get("epoch", EPOCH_MS),
        warmup=v.get("warmup", 0.0), cooldown=v.get("cooldown", 0.0))


def _build_db(db: dict[str, Any], raw: dict[str, Any]) -> DbConfig:
    """The database's settings; with a profile, its figures per strategy, its machine's cores
    for a CPU model that names none, and its single-row UPDATE as the latency of every
    statement that is not a claim (unless the file gives a latency)."""
    profile = db.get("profile") or {}
    machine = profile.get("machine", {})
    timing = tuple((name, Timing(_build_dist(f["select"]), _build_dist(f["update"]),
                                 _build_dist(f["between_attempts"]),
                                 _build_dist(f["between_statements"]),
                                 _build_dist(f["commit"]) if "commit" in f else None,
                                 f.get("client_cpu", 1.0), f.get("select_per_row", 0.0),
                                 f.get("update_per_row", 0.0),
                                 _build_dist(f["update_unchanged"])
                                 if "update_unchanged" in f else None,
                                 f.get("server_tail", 0.0), f.get("server_cpu", 1.0),
                                 f.get("unchanged_cpu", f.get("server_cpu", 1.0))))
                   for name, f in sorted(profile.get("strategies", {}).items()))
    given = "latency" in (raw.get("db") or {})
    latency = db.get("latency") if given or "statement" not in profile else profile["statement"]
    cpu = db.get("cpu")
    return DbConfig(db.get("dialect", "atomic"), _build_dist(latency),
                    db.get("connections") or None, db.get("isolation", "read_committed"),
                    db.get("sqlite_begin", "autocommit"), db.get("sqlite_busy", "queue"),
                    timing, None if cpu is None else cpu.get("cores", machine.get("cores")),
                    0.003 if cpu is None else cpu.get("quantum", machine.get("quantum", 0.003)),
                    0.0 if cpu is None else machine.get("handover", 0.0))
