"""Scenario files: YAML → a validated, frozen ``Scenario``.

The file is read with a safe loader after a walk that refuses duplicate keys; nothing in it is
executed. Every value is checked against the format below and every problem is reported at
once as ``file: dotted.path: expected … (got …)``, with "did you mean" for near misses and
for references to undefined nodes or handlers. Sizes are bounded, so a typo cannot exhaust
memory. ``schema()`` is the format as JSON Schema, for editors.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from . import dists
from .claims import STRATEGIES
from .config import (COMPLETE_GUARDS, WAKEUPS, DbConfig, ExecutorConfig, JobSpec, NodeConfig,
                     Scenario, StreamSpec, Tick)
from .db import DIALECTS
from .errors import Problem, ScenarioError
from .handlers import Handler
from .policies import PRESETS
from .retry import CycleBackoff, ExponentialBackoff, FixedBackoff, ListBackoff, RetryPolicy
from .spec import (MISSING, Const, Cycle, Dur, Either, Enum, Field, Int, ListOf, MapOf, Num,
                   Obj, Str, is_map_with, join, show, suggest)
from .store import ORDERS

MAX_JOBS = 10_000_000

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

_backoff = Either([
    (lambda v: isinstance(v, list), ListOf(Dur(), min_len=1, max_len=100,
                                           doc="the k-th failure waits the k-th delay; "
                                               "the last repeats")),
    (lambda v: isinstance(v, str) and v.startswith("R"), Cycle()),
    (is_map_with("fixed"), Obj({"fixed": Dur()}, ("fixed",))),
    (is_map_with("exponential"), Obj({"exponential": Obj({
        "base": Dur(positive=True), "factor": Num(2.0, lo=1.0, hi=100.0),
        "cap": Dur(None, none_ok=True), "jitter": Num(0.0, lo=0.0, hi=1.0)}, ("base",))},
        ("exponential",))),
], "a list of durations, an ISO-8601 cycle like R5/PT10M, {fixed: D} or "
   "{exponential: {base, factor, cap, jitter}}")

_retry = Obj({"attempts": Int(3, "executions in all (Flowable's RETRIES_)", lo=1, hi=1000),
              "backoff": _backoff})

_EXECUTOR = {
    "acquisition": Enum(STRATEGIES, doc="how a node claims due jobs"),
    "wakeup": Enum(WAKEUPS, doc="poll every poll_interval; notify also on insert and when a "
                                "slot frees; ticks on the fake clock"),
    "poll_interval": Dur(positive=True),
    "batch_size": Int(lo=1, hi=100_000),
    "queue_size": Int(lo=1, hi=1_000_000, doc="the node's bounded local queue"),
    "threads": Int(lo=1, hi=1024),
    "lock_time": Dur(positive=True),
    "heartbeat": Dur(none_ok=True, positive=True, doc="extend running jobs' locks this often"),
    "queue_full_wait": Dur(positive=True),
    "complete_guard": Enum(COMPLETE_GUARDS, doc="none: DELETE by id; owner: AND locked_by=me"),
    "retry": _retry,
}
_TABLE_ONLY = {
    "order": Enum(ORDERS, doc="the ORDER BY of acquisition"),
    "aging_rate": Num(lo=0.0, hi=1e6, doc="priority gained per second of age (order: aging)"),
}

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
    "error": Str("handler failed", "the error message; {attempt} is the execution number"),
    "side_effect": Obj({
        "at": Either([(lambda v: isinstance(v, str), Enum(("start", "end"))),
                      (lambda v: True, Num(lo=0.0, hi=1.0))],
                     "start, end, or a fraction of the run from 0 to 1"),
        "say": Str(doc="what the handler prints at its side effect")}),
    "retry": _retry,
})

_job = Obj({"id": Int(lo=1, hi=2**53), "kind": Enum(("async", "timer"), "async"),
            "handler": Str(), "at": Dur(0.0), "due_in": Dur(0.0),
            "priority": Int(0, lo=-1_000_000, hi=1_000_000)}, ("handler",))
_stream = Obj({"name": Str(), "handler": Str(), "count": Int(lo=1, hi=MAX_JOBS),
               "rate": Either([(lambda v: isinstance(v, str), Const(
                   lambda v: _rate(v) is not None, "a rate like 6.4/s, 30/m or 100/h",
                   {"type": "string", "pattern": r"^\d+(\.\d+)?/(s|m|h)$"})),
                   (lambda v: True, Num(lo=1e-9, hi=1e9))], "a rate like 6.4/s"),
               "start": Dur(0.0), "kind": Enum(("async", "timer"), "async"),
               "due_in": Dur(0.0), "priority": Int(0, lo=-1_000_000, hi=1_000_000)},
              ("handler", "count"))

FORMAT = Obj({
    "name": Str(doc="the scenario's name; its report folder"),
    "description": Str("", nonempty=False),
    "seed": Int(0, lo=0, hi=2**63 - 1),
    "until": Either([(lambda v: v == "drained", Const(lambda v: True, "drained",
                                                      {"const": "drained"})),
                     (lambda v: True, Dur(positive=True, hi=3650 * 86400.0))],
                    "drained or a duration", "drained"),
    "horizon": Dur(30 * 86400.0, positive=True, hi=3650 * 86400.0,
                   doc="the latest instant a drained run may reach"),
    "db": Obj({"dialect": Enum(DIALECTS, "atomic"), "latency": _dist,
               "connections": Int(0, "0 = unbounded", lo=0, hi=100_000)}),
    "policy": Enum(tuple(PRESETS), doc="a preset of executor settings"),
    "executor": Obj({**_EXECUTOR, **_TABLE_ONLY}),
    "nodes": Either([(lambda v: isinstance(v, int) and not isinstance(v, bool),
                      Int(lo=1, hi=256)),
                     (lambda v: True, ListOf(Obj({"name": Str(), "start_at": Dur(0.0),
                                                  **_EXECUTOR}, ("name",)),
                                             min_len=1, max_len=256))],
                    "a node count or a list of nodes"),
    "clock": Obj({"ticks": ListOf(Obj({"at": Dur(), "nodes": ListOf(Str(), min_len=1),
                                       "note": Str()}, ("at", "nodes")), max_len=100_000)}),
    "handlers": MapOf(_handler),
    "workload": Obj({"jobs": ListOf(_job), "streams": ListOf(_stream, max_len=1000)}),
}, required=("name", "nodes", "handlers", "workload"))

_DEFAULT_EXECUTOR = ExecutorConfig()


def schema() -> dict[str, Any]:
    """The scenario format as JSON Schema."""
    s = FORMAT.schema()
    s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    s["title"] = "jobsim scenario"
    return s


def _rate(text: str) -> float | None:
    try:
        num, unit = text.split("/")
        per = {"s": 1.0, "m": 60.0, "h": 3600.0}[unit.strip()]
        value = float(num)
    except (ValueError, KeyError):
        return None
    return value / per if value > 0 else None


def _key_problems(node: yaml.Node, path: str, problems: list[Problem]) -> None:
    """Walk the composed YAML: duplicate keys and keys that are not plain scalars."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            where = f"line {key_node.start_mark.line + 1}, column {key_node.start_mark.column + 1}"
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(Problem(path or "(top level)", "plain keys (names)",
                                        f"a {key_node.id} used as a key at {where}"))
                continue
            key = key_node.value
            if key in seen:
                problems.append(Problem(join(path, key), "each key once in its mapping",
                                        f"duplicate key {key!r} at {where}"))
            seen.add(key)
            _key_problems(value_node, join(path, key), problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _key_problems(item, join(path, i), problems)


def load(path: str | Path, seed: int | None = None) -> Scenario:
    """Read and validate a scenario file."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError([Problem("", "an existing scenario file", "no such file")],
                            source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError([Problem("", "a readable UTF-8 text file", str(exc))],
                            source) from None
    return loads(text, source, seed)


def loads(text: str, source: str = "<scenario>", seed: int | None = None) -> Scenario:
    """Validate a scenario given as YAML text."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        problems: list[Problem] = []
        if root is not None:
            _key_problems(root, "", problems)
        if problems:
            raise ScenarioError(problems, source)
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError([Problem(where, "valid YAML", str(problem))], source) from None
    return from_dict(doc, source, seed)


def from_dict(doc: Any, source: str = "<scenario>", seed: int | None = None) -> Scenario:
    """Validate a scenario given as a parsed document; ``seed`` overrides the file's."""
    if not isinstance(doc, dict):
        raise ScenarioError([Problem("", "a mapping of scenario keys", show(doc))], source)
    doc = copy.deepcopy(doc)
    if seed is not None:
        doc["seed"] = seed
    problems: list[Problem] = []
    v = FORMAT.check(doc, "", problems)
    if isinstance(v, dict):
        _cross_checks(v, problems)
    if problems:
        raise ScenarioError(problems, source)
    return _build(v, doc, source)


def _d(x: Any) -> dict[str, Any]:
    """``x`` if it is a mapping that validated, else an empty one (for cross checks that
    run beside field errors)."""
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def _merge_executor(v: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    if isinstance(v.get("policy"), str):
        preset = copy.deepcopy(PRESETS[v["policy"]])
        p: list[Problem] = []
        checked = FORMAT.fields["executor"].check(preset, "policy", p)
        assert not p, p  # presets are ours and must validate
        merged.update(checked)
    merged.update({k: x for k, x in _d(v.get("executor")).items() if x is not MISSING})
    return merged


def _node_list(v: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = v.get("nodes")
    if isinstance(nodes, int):
        return [{"name": f"node-{i + 1}"} for i in range(nodes)]
    return [_d(n) for n in _l(nodes)]


def _cross_checks(v: dict[str, Any], problems: list[Problem]) -> None:
    """References and uniqueness, checked on whatever parts of the file did validate, so
    that they are reported together with the field errors."""
    nodes = _node_list(v)
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
    ex = _merge_executor(v)
    default_wakeup = ex.get("wakeup", _DEFAULT_EXECUTOR.wakeup)
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
    if ticked and not ticks and "clock" not in v:
        problems.append(Problem("clock.ticks", "ticks for the nodes that wake by ticks "
                                f"({', '.join(sorted(ticked))})", "none"))
    handlers = tuple(k for k in _d(v.get("handlers")))
    work = _d(v.get("workload"))
    ids: set[int] = set()
    total = 0
    for group in ("jobs", "streams"):
        for i, item in enumerate(_l(work.get(group))):
            item = _d(item)
            h = item.get("handler")
            if isinstance(h, str) and "handlers" in v and h not in handlers:
                problems.append(Problem(f"workload.{group}[{i}].handler",
                                        "the name of a handler in handlers", show(h),
                                        suggest(h, handlers)))
            if group == "jobs":
                total += 1
                jid = item.get("id")
                if isinstance(jid, int):
                    if jid in ids:
                        problems.append(Problem(f"workload.jobs[{i}].id",
                                                "an id no other job has", show(jid)))
                    ids.add(jid)
            elif isinstance(item.get("count"), int):
                total += item["count"]
    if total > MAX_JOBS:
        problems.append(Problem("workload", f"at most {MAX_JOBS:,} jobs in all", f"{total:,}"))
    if total == 0 and isinstance(v.get("workload"), dict) and not any(
            _l(work.get(g)) for g in ("jobs", "streams")):
        problems.append(Problem("workload", "at least one job (jobs or streams)", "none"))
    stream_names: set[str] = set()
    for i, item in enumerate(_l(work.get("streams"))):
        name = _d(item).get("name", f"stream-{i}")
        if not isinstance(name, str):
            continue
        if name in stream_names:
            problems.append(Problem(f"workload.streams[{i}].name",
                                    "a name no other stream has", show(name)))
        stream_names.add(name)
    for name, h in _d(v.get("handlers")).items():
        u = _d(_d(_d(h).get("duration")).get("uniform"))
        if isinstance(u.get("low"), float) and isinstance(u.get("high"), float) \
                and u["low"] > u["high"]:
            problems.append(Problem(f"handlers.{name}.duration.uniform", "low <= high",
                                    f"low {u['low']:g}s, high {u['high']:g}s"))


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
    if b is None:
        backoff = base.backoff
    elif isinstance(b, list):
        backoff = ListBackoff(tuple(b))
    elif isinstance(b, tuple):
        backoff = CycleBackoff(*b)
    elif "fixed" in b:
        backoff = FixedBackoff(b["fixed"])
    else:
        e = b["exponential"]
        backoff = ExponentialBackoff(e["base"], e["factor"],
                                     e["cap"] if e["cap"] is not None else float("inf"),
                                     e["jitter"])
    return RetryPolicy(attempts, backoff)


def _build_executor(settings: dict[str, Any], base: ExecutorConfig) -> ExecutorConfig:
    fields = {k: val for k, val in settings.items() if k not in ("retry", "name", "start_at")}
    retry = _build_retry(settings.get("retry"), base.retry)
    return ExecutorConfig(**{**base.__dict__, **fields, "retry": retry})


def _build(v: dict[str, Any], raw: dict[str, Any], source: str) -> Scenario:
    executor = _build_executor(_merge_executor(v), _DEFAULT_EXECUTOR)
    nodes = tuple(NodeConfig(n["name"], _build_executor(n, executor), n.get("start_at", 0.0))
                  for n in _node_list(v))
    handlers = {}
    for name, h in v["handlers"].items():
        outcome = h.get("outcome", "succeed")
        kw: dict[str, Any] = {}
        if isinstance(outcome, dict):
            (form, value), = outcome.items()
            kw = {"fail_first": {"fail_first": value}, "fail_rate": {"fail_rate": value},
                  "hang": {"hang_for": value}}[form]
            outcome = form
        side = h.get("side_effect", {})
        at = side.get("at", "end")
        at = {"start": 0.0, "end": 1.0}.get(at, at) if isinstance(at, str) else at
        handlers[name] = Handler(
            name, _build_dist(h.get("duration")), outcome, error=h["error"],
            side_effect_at=at, says=side.get("say"),
            retry=_build_retry(h["retry"], executor.retry) if "retry" in h else None, **kw)
    work = v["workload"]
    jobs = tuple(JobSpec(j["handler"], j["kind"], j.get("id"), j["at"], j["due_in"],
                         j["priority"]) for j in work.get("jobs", []))
    streams = tuple(StreamSpec(s.get("name", f"stream-{i}"), s["handler"], s["count"],
                               (_rate(s["rate"]) if isinstance(s["rate"], str) else s["rate"])
                               if "rate" in s else None,
                               s["start"], s["kind"], s["due_in"], s["priority"])
                    for i, s in enumerate(work.get("streams", [])))
    ticks = tuple(Tick(t["at"], tuple(t["nodes"]), t.get("note"))
                  for t in v.get("clock", {}).get("ticks", []))
    db = v.get("db", {})
    until = v["until"]
    return Scenario(
        name=v["name"], description=v["description"], seed=v["seed"], handlers=handlers,
        nodes=nodes, until=None if until == "drained" else until, horizon=v["horizon"],
        db=DbConfig(db.get("dialect", "atomic"), _build_dist(db.get("latency")),
                    db.get("connections") or None),
        executor=executor, ticks=ticks, jobs=jobs, streams=streams, source=source,
        document=raw)


__all__ = ["load", "loads", "from_dict", "schema", "FORMAT", "Field", "MISSING", "join"]
