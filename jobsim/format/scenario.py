"""Scenario files: YAML → a validated, frozen ``Scenario``.

The file is read with a safe loader after a walk that refuses duplicate keys; nothing in it is
executed. Every value is checked against the format below and every problem is reported at
once as ``file: dotted.path: expected … (got …)``, with "did you mean" for near misses and
for references to undefined nodes or handlers. Sizes are bounded, so a typo cannot exhaust
memory. ``schema()`` is the format as JSON Schema, for editors.
"""

from __future__ import annotations

import copy
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from ..base import dists
from ..executor.config import (DbConfig, ExecutorConfig, Expectation, Fault, JobSpec, NodeConfig,
                     RecurringSpec, Scenario, StreamSpec, Tick)
from ..base.errors import Problem, ScenarioError
from .fileformat import FORMAT, MAX_JOBS, _rate, figure_problem, schema
from ..executor.handlers import Handler
from ..executor.policies import PRESETS
from ..executor.retry import CycleBackoff, ExponentialBackoff, FixedBackoff, ListBackoff, RetryPolicy
from .spec import MISSING, Name, join, show, suggest

_DEFAULT_EXECUTOR = ExecutorConfig()


MAX_FILE_BYTES = 4 * 1024 ** 2  # a scenario file is a page or two; 4 MB is far beyond any
MAX_NODES = 200_000  # YAML nodes after alias expansion: refuses "billion laughs" documents


class _TooBig(Exception):
    pass


def _key_problems(node: yaml.Node, path: str, problems: list[Problem],
                  budget: list[int]) -> None:
    """Walk the composed YAML: duplicate keys, keys that are not plain scalars, and a node
    budget (aliases expanded) so that a document cannot explode."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            mark = key_node.start_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}"
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(Problem(path or "(top level)", "plain keys (names)",
                                        f"a {key_node.id} used as a key at {where}"))
                continue
            key = key_node.value
            if key in seen:
                problems.append(Problem(join(path, key), "each key once in its mapping",
                                        f"duplicate key {key!r} at {where}"))
            seen.add(key)
            _key_problems(value_node, join(path, key), problems, budget)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _key_problems(item, join(path, i), problems, budget)
    elif node.tag == "tag:yaml.org,2002:int" and len(node.value) > 30:
        problems.append(Problem(path or "(top level)", "an integer of at most 30 digits",
                                show(node.value)))


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read(path: str | Path) -> Any:
    """Read a scenario file into a plain document (checked as YAML, not yet as a scenario)."""
    path = Path(path)
    source = str(path)
    try:
        # O_NONBLOCK: a FIFO with no writer must not hang the open; then only a regular file
        # of at most MAX_FILE_BYTES is read (not /dev/zero, not a pipe, not a socket)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ScenarioError([Problem("", "an existing scenario file", "no such file")],
                            source) from None
    except IsADirectoryError:
        raise ScenarioError([Problem("", "a scenario file", "a directory")], source) from None
    except OSError as exc:
        raise ScenarioError([Problem("", "a readable scenario file", exc.strerror or str(exc))],
                            source) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ScenarioError([Problem("", "a scenario file", "a directory")], source)
        if not stat.S_ISREG(st.st_mode):
            raise ScenarioError([Problem("", "a regular file", _file_kind(st.st_mode))], source)
        if st.st_size > MAX_FILE_BYTES:
            raise ScenarioError([Problem("", f"a scenario file of at most "
                                         f"{MAX_FILE_BYTES // 1024 ** 2} MB",
                                         f"{st.st_size:,} bytes")], source)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ScenarioError([Problem("", f"a scenario file of at most "
                                         f"{MAX_FILE_BYTES // 1024 ** 2} MB", "more")], source)
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError([Problem("", "a readable UTF-8 text file", str(exc))],
                            source) from None
    except OSError as exc:
        raise ScenarioError([Problem("", "a readable scenario file", exc.strerror or str(exc))],
                            source) from None
    finally:
        os.close(fd)
    return parse(text, source)


def parse(text: str, source: str = "<scenario>") -> Any:
    """YAML text → document, with duplicate keys, odd keys and alias bombs refused."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        problems: list[Problem] = []
        if root is not None:
            try:
                _key_problems(root, "", problems, [MAX_NODES])
            except _TooBig:
                raise ScenarioError([Problem("", f"a document of at most {MAX_NODES:,} values "
                                             "(aliases expanded)", "more: an alias bomb?")],
                                    source) from None
        if problems:
            raise ScenarioError(problems, source)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError([Problem(where, "valid YAML", str(problem))], source) from None
    except RecursionError:
        raise ScenarioError([Problem("", "a document nested a few levels deep",
                                     "nesting too deep to read (brackets or indentation "
                                     "hundreds of levels deep)")], source) from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of thousands of digits
        raise ScenarioError([Problem("", "values of a sensible size", str(exc)[:120])],
                            source) from None


def load(path: str | Path, seed: int | None = None,
         sets: list[str] | tuple[str, ...] = ()) -> Scenario:
    """Read and validate a scenario file (its base run; ``load_variants`` gives them all)."""
    return from_dict(read(path), str(path), seed, sets)


def load_variants(path: str | Path, seed: int | None = None,
                  sets: list[str] | tuple[str, ...] = ()) -> list[Scenario]:
    """The runs a file asks for: one per variant, or the base run alone."""
    return variants_of(read(path), str(path), seed, sets)


def loads(text: str, source: str = "<scenario>", seed: int | None = None) -> Scenario:
    """Validate a scenario given as YAML text."""
    return from_dict(parse(text, source), source, seed)


def from_dict(doc: Any, source: str = "<scenario>", seed: int | None = None,
              sets: list[str] | tuple[str, ...] = ()) -> Scenario:
    """Validate a scenario given as a parsed document; ``seed`` overrides the file's and each
    of ``sets`` (``"dotted.path=value"``) overrides one value."""
    return variants_of(doc, source, seed, sets, base_only=True)[0]


def variants_of(doc: Any, source: str = "<scenario>", seed: int | None = None,
                sets: list[str] | tuple[str, ...] = (), base_only: bool = False
                ) -> list[Scenario]:
    """The base run, and one run per variant (its ``set`` applied, its ``expect`` added)."""
    if not isinstance(doc, dict):
        raise ScenarioError([Problem("", "a mapping of scenario keys", show(doc))], source)
    doc = copy.deepcopy(doc)
    problems: list[Problem] = []
    for item in sets:
        path, sep, text = item.partition("=")
        if not sep or not path.strip():
            problems.append(Problem(f"--set {item}", "dotted.path=value", show(item)))
            continue
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            value = text
        set_path(doc, path.strip(), value, f"--set {path.strip()}", problems)
    if seed is not None:
        doc["seed"] = seed
    if problems:
        raise ScenarioError(problems, source)
    base = _validated(doc, source, None)
    variants = doc.get("variants") or {}
    if base_only or not variants:
        return [base]
    out = []
    for name, var in variants.items():
        var = var if isinstance(var, dict) else {}
        vdoc = copy.deepcopy(doc)
        vdoc.pop("variants", None)
        p: list[Problem] = []
        for path, value in (var.get("set") or {}).items():
            set_path(vdoc, path, value, f"variants.{name}.set.{path}", p)
        if p:
            raise ScenarioError(p, source)
        vexpect = dict(doc.get("expect") or {})
        vexpect.update(var.get("expect") or {})
        vdoc["expect"] = vexpect
        try:
            sc = _validated(vdoc, source, name)
        except ScenarioError as exc:
            raise ScenarioError([Problem(f"variants.{name} → {p.path}", p.expected, p.got,
                                         p.hint) for p in exc.problems], source) from None
        out.append(sc)
    return out


def _validated(doc: dict[str, Any], source: str, variant: str | None) -> Scenario:
    problems: list[Problem] = []
    v = FORMAT.check(doc, "", problems)
    if isinstance(v, dict):
        _cross_checks(v, problems)
    if problems:
        raise ScenarioError(problems, source)
    return _build(v, doc, source, variant)


def _steps(path: str) -> list[str | int] | None:
    """``a.b[2].c`` or ``a.b.2.c`` → ``["a", "b", 2, "c"]``."""
    steps: list[str | int] = []
    for part in path.replace("[", ".[").split("."):
        if not part:
            return None
        if part.startswith("["):
            if not part.endswith("]") or not part[1:-1].isdigit():
                return None
            steps.append(int(part[1:-1]))
        elif part.isdigit():
            steps.append(int(part))
        else:
            steps.append(part)
    return steps


def set_path(doc: dict[str, Any], path: str, value: Any, where: str,
             problems: list[Problem]) -> None:
    """Set ``doc``'s value at a dotted path (creating mappings on the way); a step through a
    list or into a value that is not a mapping is reported at ``where``."""
    steps = _steps(path)
    if not steps or not isinstance(steps[0], str):
        problems.append(Problem(where, "a dotted path like executor.lock_time or "
                                "nodes[1].threads", show(path)))
        return
    cur: Any = doc
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        if isinstance(step, int):
            if not isinstance(cur, list) or not 0 <= step < len(cur):
                size = f"a list of {len(cur)}" if isinstance(cur, list) else "not a list"
                problems.append(Problem(where, f"an index into a list at step {i + 1}",
                                        f"[{step}] into {size}"))
                return
            if last:
                cur[step] = value
            else:
                cur = cur[step]
            continue
        if not isinstance(cur, dict):
            problems.append(Problem(where, f"a mapping at step {i + 1} ({step!r})",
                                    show(cur)))
            return
        if last:
            cur[step] = value
        else:
            if step not in cur or cur[step] is None:
                cur[step] = {}
            cur = cur[step]


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
    for k, x in _d(v.get("executor")).items():
        if x is MISSING:
            continue
        if k == "retry" and isinstance(merged.get("retry"), dict) and isinstance(x, dict):
            merged["retry"] = {**merged["retry"], **x}  # key by key: attempts, backoff
        else:
            merged[k] = x
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
    for name in _d(v.get("variants")):
        Name().check(name, f"variants.{name}", problems)
    dialect = _d(v.get("db")).get("dialect", "atomic")
    default_strategy = ex.get("acquisition", _DEFAULT_EXECUTOR.acquisition)
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
    if ex.get("count_attempt") == "fetch" and ex.get("lock_expiry", "claim") != "reset":
        problems.append(Problem("executor.count_attempt", "lock_expiry: reset with "
                                "count_attempt: fetch (a rescue decides whether an expired job "
                                "has attempts left)",
                                f"fetch with lock_expiry {ex.get('lock_expiry', 'claim')}"))
    if ticked and not ticks and "clock" not in v:
        problems.append(Problem("clock.ticks", "ticks for the nodes that wake by ticks "
                                f"({', '.join(sorted(ticked))})", "none"))
    handlers = tuple(k for k in _d(v.get("handlers")))
    work = _d(v.get("workload"))
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
    for i, f in enumerate(_l(v.get("faults"))):
        f = _d(f)
        for key in ("crash", "pause", "partition"):
            name = f.get(key)
            if isinstance(name, str) and name not in seen:
                problems.append(Problem(f"faults[{i}].{key}", "the name of a node", show(name),
                                        suggest(name, known)))
    for i, o in enumerate(_l(v.get("operations"))):
        o = _d(o)
        for key in ("retry", "cancel", "move", "suspend", "activate"):
            name = o.get(key)
            if isinstance(name, str) and name != "all" and name not in job_names:
                problems.append(Problem(f"operations[{i}].{key}", "all, or the name of a job "
                                        "in workload.jobs", show(name),
                                        suggest(name, sorted(job_names))))
    for i, n in enumerate(nodes):
        for k, h in enumerate(_l(n.get("handles"))):
            if isinstance(h, str) and "handlers" in v and h not in handlers:
                problems.append(Problem(f"nodes[{i}].handles[{k}]", "the name of a handler",
                                        show(h), suggest(h, handlers)))
    for path in _d(v.get("expect")):
        parts = path.split(".")
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
    dists_at = [(f"handlers.{n}.duration", _d(h).get("duration"))
                for n, h in _d(v.get("handlers")).items()]
    dists_at.append(("db.latency", _d(v.get("db")).get("latency")))
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
                                     e["jitter"], e["offset"])
    return RetryPolicy(attempts, backoff)


def _build_executor(settings: dict[str, Any], base: ExecutorConfig) -> ExecutorConfig:
    fields = {k: val for k, val in settings.items() if k not in ("retry", "name", "start_at")}
    if "handles" in fields:
        fields["handles"] = tuple(fields["handles"])
    retry = _build_retry(settings.get("retry"), base.retry)
    return ExecutorConfig(**{**base.__dict__, **fields, "retry": retry})


def _build(v: dict[str, Any], raw: dict[str, Any], source: str,
           variant: str | None = None) -> Scenario:
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
        bt = h.get("boundary_timer")
        kw["boundary"] = (bt["after"], bt["interrupting"]) if bt else None
        at = side.get("at", "end")
        at = {"start": 0.0, "end": 1.0}.get(at, at) if isinstance(at, str) else at
        handlers[name] = Handler(
            name, _build_dist(h.get("duration")), outcome, error=h["error"],
            side_effect_at=at, says=side.get("say"),
            retry=_build_retry(h["retry"], executor.retry) if "retry" in h else None, **kw)
    work = v["workload"]
    jobs = tuple(JobSpec(j["handler"], j["kind"], j.get("id"), j["at"], j["due_in"],
                         j["priority"], j.get("name"), j.get("node"), j.get("queue"),
                         j.get("record_failure")) for j in work.get("jobs", []))
    recurring = tuple(RecurringSpec(r["name"], r["handler"], r["every"], r["count"], r["mode"],
                                    r["start"], r["kind"], r["priority"])
                      for r in work.get("recurring", []))
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
        else:
            faults.append(Fault(f["at"], "restart_server"))
    for o in v.get("operations", []):
        kind, = (k for k in o if k not in ("at", "retries"))
        faults.append(Fault(o["at"], kind, o[kind], retries=o.get("retries")))
    expect = []
    for path, conds in v.get("expect", {}).items():
        texts = (raw.get("expect") or {}).get(path)
        texts = texts if isinstance(texts, list) else [texts]
        for (op, value), text in zip(conds if isinstance(conds, list) else [conds], texts):
            expect.append(Expectation(path, op, value, f"{path} {str(text).strip()}"))
    streams = tuple(StreamSpec(s.get("name", f"stream-{i}"), s["handler"], s["count"],
                               (_rate(s["rate"]) if isinstance(s["rate"], str) else s["rate"])
                               if "rate" in s else None,
                               s["start"], s["kind"], s["due_in"], s["priority"],
                               tuple(s.get("nodes", ())), s.get("queue"))
                    for i, s in enumerate(work.get("streams", [])))
    ticks = tuple(Tick(t["at"], tuple(t["nodes"]), t.get("note"))
                  for t in v.get("clock", {}).get("ticks", []))
    db = v.get("db", {})
    until = v["until"]
    return Scenario(
        name=v["name"], description=v["description"], seed=v["seed"], handlers=handlers,
        nodes=nodes, until=None if until == "drained" else until, horizon=v["horizon"],
        db=DbConfig(db.get("dialect", "atomic"), _build_dist(db.get("latency")),
                    db.get("connections") or None, db.get("isolation", "read_committed"),
                    db.get("sqlite_begin", "autocommit")),
        executor=executor, ticks=ticks, jobs=jobs, streams=streams, faults=tuple(faults),
        recurring=recurring, expect=tuple(expect), variant=variant,
        compare=tuple(v.get("report", {}).get("compare", ())), source=source, document=raw)

