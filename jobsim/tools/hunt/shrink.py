"""Shrinking: from a case that breaks the property, smaller cases to try, in order.

Each pass proposes cases smaller than the current one in one respect and no larger in any
other — a fault fewer; fewer jobs; fewer nodes; fewer threads; a shorter window; an earlier
fault; a shorter horizon — the boldest first. The hunt runs them a batch at a time and keeps
the first (in this order) that still breaks the property, then starts over from the first
pass; it stops when no pass proposes a case that breaks it, or at its budget of runs. Every
step makes a case strictly smaller on a finite grid (times are kept to the millisecond), so
shrinking ends.

A number shrinks toward its floor by halving the distance (the floor itself, then halfway,
then a quarter, an eighth and a sixteenth of the way from it) and by dropping its fraction of
a second: 16 times finer each round, never more than five runs per number.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from typing import Any

from .space import seconds

#: the windows' lengths' keys, by fault kind
_LENGTH = ("for", "restart_after")
#: the keys of a fault that name the node it hits
_NODE_KEYS = ("crash", "pause", "partition", "clock")


def toward(x: float, floor: float) -> list[float]:
    """Values below ``x`` and not below ``floor`` to try for it, the boldest first (to the
    millisecond)."""
    if x <= floor:
        return []
    d = x - floor
    out = [floor] + [x - d / k for k in (2, 4, 8, 16)] + [float(math.floor(x))]
    seen: list[float] = []
    for v in out:
        v = round(v, 3)
        if floor <= v < x and v not in seen:
            seen.append(v)
    return sorted(seen)


def _with(case: dict[str, Any], **changes: Any) -> dict[str, Any]:
    c = copy.deepcopy(case)
    c.update(changes)
    return c


def fault_names(case: dict[str, Any], own: list[dict[str, Any]]) -> set[str]:
    """The nodes the faults (the case's and the scenario's own) name."""
    return {f[k] for f in list(case["faults"]) + own for k in _NODE_KEYS
            if k in f}


def candidates(case: dict[str, Any], shape: dict[str, Any], end: float | None,
               horizon: bool = True) -> Iterator[dict[str, Any]]:
    """The smaller cases to try, pass by pass. ``shape``: the configuration's streams
    (name → count), named jobs, nodes (a count, or their names) and threads, and its own
    faults; ``end``: when the current case's run ended."""
    faults = case["faults"]
    for k in range(len(faults)):  # a fault fewer
        yield _with(case, faults=faults[:k] + faults[k + 1:])
    streams = case.get("streams", shape["streams"])
    jobs = case.get("jobs", shape["jobs"])
    total = sum(streams.values()) + len(jobs)
    for name, count in streams.items():  # fewer jobs
        if total - count >= 1:
            yield _with(case, streams={n: c for n, c in streams.items() if n != name})
        for c in sorted({1, 2} | {int(math.ceil(v)) for v in toward(count, 1)}):
            if 1 <= c < count:
                yield _with(case, streams={**streams, name: c})
    for name in jobs:
        if total > 1:
            yield _with(case, jobs=[j for j in jobs if j != name])
    yield from _fewer_nodes(case, shape)
    threads = case.get("threads", shape["threads"])
    for t in sorted({int(math.ceil(v)) for v in toward(threads, 1)}):
        if 1 <= t < threads:
            yield _with(case, threads=t)
    for k, f in enumerate(faults):  # shorter windows
        for key in _LENGTH:
            if key in f:
                for v in toward(f[key], 0.001):
                    yield _with(case, faults=faults[:k] + [{**f, key: v}] + faults[k + 1:])
    for k, f in enumerate(faults):  # smaller clock steps, ahead or behind as they were
        if f.get("step"):
            sign = 1.0 if f["step"] > 0 else -1.0
            for v in toward(abs(f["step"]), 0.001):
                yield _with(case, faults=faults[:k] + [{**f, "step": sign * v}] + faults[k + 1:])
    for k, f in enumerate(faults):  # earlier faults
        for v in toward(f["at"], 0.0):
            yield _with(case, faults=faults[:k] + [{**f, "at": v}] + faults[k + 1:])
    if horizon and end is not None and math.isfinite(end):  # a shorter horizon
        until = case.get("until", math.inf)
        # past every fault window's end: a run stopped inside one leaves out what its end
        # brings (a paused node waking), which the report would tell of all the same
        floor = max([f["at"] + f.get("for", f.get("restart_after", 0.0)) for f in faults
                     if isinstance(f.get("for", f.get("restart_after")), (int, float))]
                    + [0.0])
        for v in toward(min(until, max(math.ceil(end), math.floor(floor)) + 1.0), 1.0):
            if floor < v < until:
                yield _with(case, until=v)


def _fewer_nodes(case: dict[str, Any], shape: dict[str, Any]) -> Iterator[dict[str, Any]]:
    nodes = case.get("nodes", shape["nodes"])
    named = fault_names(case, shape["own"])
    if isinstance(nodes, int):
        own = {n for n in fault_names({"faults": []}, shape["own"])}
        for n in sorted({1, nodes // 2, nodes - 1}):
            if not 1 <= n < nodes or any(_index(x) > n for x in own):
                continue
            last = f"node-{n}"  # a fault on a node taken away moves to the last one kept
            moved = [{**f, **{k: last for k in _NODE_KEYS
                              if k in f and _index(f[k]) > n}} for f in case["faults"]]
            yield _with(case, nodes=n, faults=moved)
    else:
        for name in nodes:
            if name not in named and len(nodes) > 1:
                yield _with(case, nodes=[x for x in nodes if x != name])


def _index(name: str) -> int:
    """node-3 → 3 (the nodes of ``nodes: N`` are node-1 … node-N)."""
    try:
        return int(name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return 0


def overrides(case: dict[str, Any], doc: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The case as dotted-path values over the configuration's document ``doc``."""
    from .space import as_file

    out: list[tuple[str, Any]] = [
        ("faults", list(doc.get("faults") or []) + [as_file(f) for f in case["faults"]])]
    work = doc.get("workload") or {}
    if "streams" in case:
        kept = case["streams"]
        out.append(("workload.streams", [{**s, "count": kept[_key(s, i, "stream")]}
                                         for i, s in enumerate(work.get("streams") or [])
                                         if _key(s, i, "stream") in kept]))
    if "jobs" in case:
        out.append(("workload.jobs", [j for i, j in enumerate(work.get("jobs") or [])
                                      if _key(j, i, "job") in case["jobs"]]))
    if "nodes" in case:
        n = case["nodes"]
        out.append(("nodes", n if isinstance(n, int) else
                    [d for d in doc["nodes"] if d["name"] in n]))
    if "threads" in case:
        out.append(("executor.threads", case["threads"]))
    if "until" in case:
        out.append(("until", seconds(case["until"])))
    return tuple(out)


def shape_of(doc: dict[str, Any], threads: int) -> dict[str, Any]:
    """What shrinking may make smaller in the configuration ``doc``."""
    work = doc.get("workload") or {}
    nodes = doc["nodes"]
    return {"streams": {_key(s, i, "stream"): int(s.get("count", 1))
                        for i, s in enumerate(work.get("streams") or [])},
            "jobs": [_key(j, i, "job") for i, j in enumerate(work.get("jobs") or [])],
            "nodes": nodes if isinstance(nodes, int) else [d["name"] for d in nodes],
            "threads": threads, "own": list(doc.get("faults") or [])}


def _key(item: dict[str, Any], i: int, what: str) -> str:
    """A stream's or a named job's name in a case (its place in the file if it has none)."""
    return str(item.get("name") or f"{what} {i + 1}")


def _fewest(case: dict[str, Any], shape: dict[str, Any], k: int) -> dict[str, Any]:
    """The case with only its first ``k`` jobs (the streams' first, then the named ones)."""
    streams = case.get("streams", shape["streams"])
    jobs = case.get("jobs", shape["jobs"])
    left, kept = k, {}
    for name, count in streams.items():
        if left > 0:
            kept[name] = min(count, left)
            left -= kept[name]
    small = _with(case, streams=kept)
    if jobs:
        small["jobs"] = list(jobs[:left]) if left > 0 else []
    return small


def anchored(case: dict[str, Any], shape: dict[str, Any], doc: dict[str, Any],
             source: str) -> list[dict[str, Any]]:
    """Cases of one or two jobs with a fault moved into one of their runs, for when
    shrinking is stuck because a fault hits a late job: taking jobs away removes it, and
    moving the fault earlier misses every job. The jobs' runs are read from a run of the
    smaller case without faults (a job's arrival and run do not depend on the jobs after it
    until they compete); each window fault in turn is moved a quarter into a run (at most
    half a second after its start), onto the node that ran it, as long as it is and twice as
    long."""
    from ...base.trace import K
    from ...format.scenario import from_dict
    from ...sim.world import run
    from ..sweep.grid import _point_doc

    total = sum(case.get("streams", shape["streams"]).values()) + \
        len(case.get("jobs", shape["jobs"]))
    out: list[dict[str, Any]] = []
    for k in (1, 2):
        if k >= total or not case["faults"]:
            continue
        small = _fewest(case, shape, k)
        probe = _with(small, faults=[])
        try:
            trace = run(from_dict(_point_doc(doc, source, overrides(probe, doc)), source,
                                  probe["seed"])).trace
        except Exception:  # noqa: BLE001 - a probe that cannot run proposes nothing
            continue
        cols = trace.arrays()
        kind, job, node, t = cols["kind"], cols["job"], cols["node"], cols["time"]
        ends = {(int(j), int(n)): float(x) for j, n, x in
                zip(job[kind == K["exec_end"]], node[kind == K["exec_end"]],
                    t[kind == K["exec_end"]])}
        spans = [(trace.nodes[int(n)], float(x), ends.get((int(j), int(n)), float(x) + 1.0))
                 for j, n, x in zip(job[kind == K["exec_start"]], node[kind == K["exec_start"]],
                                    t[kind == K["exec_start"]])][:4]
        for name, start, end in spans:
            for i, f in enumerate(small["faults"]):
                at = round(start + min(0.5, max(0.0, end - start) / 4), 3)
                moved = {**f, "at": at, **{key: name for key in _NODE_KEYS
                                           if key in f}}
                # shrinking may have cut a window to what the late job's timing needed:
                # also try it twice as long
                longer = {**moved, **{key: round(2 * f[key], 3) for key in _LENGTH
                                      if key in f}}
                for g in (moved, longer) if longer != moved else (moved,):
                    out.append(_with(small, faults=small["faults"][:i] + [g] +
                                     small["faults"][i + 1:]))
    return out
