"""The fault space a hunt draws from, and one drawn case.

A **case** is what one run of a hunt adds to, or takes from, the configuration: its seed,
the faults it adds (the scenario's own faults always stay), and — once shrinking has made
them smaller — the streams' job counts, the named jobs kept, the nodes, the threads and the
horizon. It is plain data (JSON), so a run is named, cached and sent to a worker by it.

The **bounds** come from the scenario's ``hunt:`` section, every key optional::

    hunt:
      nodes: [node-1, node-2]   # the nodes faults may hit (default: every node)
      faults: 3                 # at most this many faults in one run (default 3, at least 1)
      kinds: [pause, crash]     # default: pause, crash, partition, slow_db (and
                                # restart_server for the Zeebe-like server); clock (a
                                # node's clock stepped ahead or behind by a window's
                                # length) when asked for; the order is the preference
                                # among runs that break the property
      between: [0s, 10m]        # when a fault starts (default: from 0 to the end of the
                                # configuration's run without added faults)
      length: [1s, 2m]          # how long a window lasts (default: 1 s to twice the lock
                                # time, at least 1 minute)
      slow_factor: [2, 50]      # slow_db's latency multiplier (default 2 to 50)
      seeds: true               # draw each run's seed (default); false: the file's seed

A crash restarts the node after a drawn length in half the cases and never in the other
half — but never every node for ever, counting the scenario's own crashes: a hunt that
kills the whole cluster finds nothing worth knowing (the last such crash is given a
restart).

Case ``i`` of a hunt is drawn from a NumPy generator seeded by ``(hunt seed, i)`` alone, so
the cases do not depend on how many workers draw them, or in which order they finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...base.errors import Problem, ScenarioError
from ...base.durations import parse_duration

#: the faults a hunt can add
KINDS = ("crash", "pause", "slow_db", "partition", "restart_server", "clock")
#: the default kinds (restart_server only where the policy has a server)
DEFAULT_KINDS = ("pause", "crash", "partition", "slow_db")
#: the most faults one case may add
MAX_FAULTS = 20


@dataclass(frozen=True)
class Bounds:
    cluster: tuple[str, ...]  # every node of the configuration
    nodes: tuple[str, ...]  # the nodes faults may hit
    faults: int
    kinds: tuple[str, ...]
    between: tuple[float, float]
    length: tuple[float, float]
    slow_factor: tuple[float, float]
    seeds: bool
    gone: frozenset[str] = frozenset()  # nodes the scenario's own faults crash for ever


def seconds(x: float) -> str:
    """A time as the file writes it: ``12.345s``, ``30s`` (to the millisecond)."""
    ms = int(round(x * 1000))
    if ms % 1000 == 0:
        return f"{ms // 1000}s"
    return f"{ms / 1000:.3f}".rstrip("0") + "s"


def _pair(spec: dict, key: str, default: tuple[float, float], problems: list[Problem],
          duration: bool = True) -> tuple[float, float]:
    if key not in spec:
        return default
    v = spec[key]
    try:
        if not isinstance(v, list) or len(v) != 2:
            raise ValueError
        lo, hi = ((parse_duration(x) if duration else float(x)) for x in v)
        if not 0 <= lo <= hi:
            raise ValueError
        return lo, hi
    except (ValueError, TypeError):
        problems.append(Problem(f"hunt.{key}", "[LOW, HIGH] with 0 <= LOW <= HIGH" +
                                (", durations like [0s, 10m]" if duration else ""), repr(v)))
        return default


def bounds(spec: dict[str, Any], node_names: tuple[str, ...], lock_time: float | None,
           end: float, server: bool, kinds: tuple[str, ...] | None,
           source: str, own: list[dict[str, Any]] = ()) -> Bounds:
    """The bounds of a hunt from the ``hunt:`` section (``spec``) and ``--faults``
    (``kinds``), checked all at once."""
    problems: list[Problem] = []
    nodes = spec.get("nodes", list(node_names))
    if not isinstance(nodes, list) or not nodes or any(n not in node_names for n in nodes):
        problems.append(Problem("hunt.nodes", "a list of the scenario's nodes: " +
                                ", ".join(node_names), repr(nodes)))
        nodes = list(node_names)
    count = spec.get("faults", 3)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_FAULTS:
        problems.append(Problem("hunt.faults", f"a whole number from 1 to {MAX_FAULTS}",
                                repr(count)))
        count = 3
    # a server activates on its own clock: a node's clock changes nothing there (and the
    # format refuses node clocks that may be off beside one)
    available = tuple(k for k in KINDS if k != "clock") if server else DEFAULT_KINDS + ("clock",)
    given = kinds if kinds is not None else tuple(spec.get("kinds", DEFAULT_KINDS +
                                                           (("restart_server",) if server
                                                            else ())))
    where = "--faults" if kinds is not None else "hunt.kinds"
    bad = [k for k in given if k not in available]
    if bad or not given:
        problems.append(Problem(where, "some of " + ", ".join(available) +
                                (" (clock: the server activates on its own clock)" if server
                                 else " (restart_server: only the Zeebe-like server has one)"),
                                ", ".join(map(str, given)) or "none"))
        given = DEFAULT_KINDS
    longest = max(60.0, 2 * lock_time) if lock_time else 60.0
    between = _pair(spec, "between", (0.0, max(end, 1.0)), problems)
    length = _pair(spec, "length", (1.0, longest), problems)
    if length[1] <= 0:
        problems.append(Problem("hunt.length", "a longest length above 0", repr(length)))
    factor = _pair(spec, "slow_factor", (2.0, 50.0), problems, duration=False)
    seeds = spec.get("seeds", True)
    if not isinstance(seeds, bool):
        problems.append(Problem("hunt.seeds", "true or false", repr(seeds)))
        seeds = True
    if problems:
        raise ScenarioError(problems, source)
    gone = frozenset(f["crash"] for f in own if "crash" in f and "restart_after" not in f)
    return Bounds(tuple(node_names), tuple(nodes), count, tuple(dict.fromkeys(given)),
                  between, length, factor, seeds, gone)


def draw(b: Bounds, hunt_seed: int, i: int, file_seed: int) -> dict[str, Any]:
    """Case ``i`` of the hunt seeded ``hunt_seed``: a seed and one to ``b.faults`` faults."""
    rng = np.random.default_rng([hunt_seed, i])
    seed = int(rng.integers(0, 2**31 - 1)) if b.seeds else file_seed
    n = int(rng.integers(1, b.faults + 1))
    faults: list[dict[str, Any]] = []

    def length() -> float:
        return max(0.001, round(float(rng.uniform(*b.length)), 3))

    for _ in range(n):
        kind = b.kinds[int(rng.integers(len(b.kinds)))]
        at = round(float(rng.uniform(*b.between)), 3)
        node = b.nodes[int(rng.integers(len(b.nodes)))]
        if kind == "crash":
            f: dict[str, Any] = {"at": at, "crash": node}
            if rng.random() < 0.5:
                f["restart_after"] = length()
        elif kind == "pause":
            f = {"at": at, "pause": node, "for": length()}
        elif kind == "slow_db":
            f = {"at": at, "slow_db": round(float(rng.uniform(*b.slow_factor)), 2),
                 "for": length()}
        elif kind == "partition":
            f = {"at": at, "partition": node, "for": length()}
        elif kind == "clock":  # a step as long as a window, ahead or behind
            f = {"at": at, "clock": node, "step": length() * (1 if rng.random() < 0.5 else -1)}
        else:
            f = {"at": at, "restart_server": True}
        faults.append(f)
    for_ever = {f["crash"] for f in faults if "crash" in f and "restart_after" not in f}
    if for_ever | b.gone >= set(b.cluster) and for_ever - b.gone:
        last = max(k for k, f in enumerate(faults) if "crash" in f and
                   "restart_after" not in f and f["crash"] not in b.gone)
        spared = faults[last]["crash"]  # every crash of this node for ever gets a restart
        for f in faults:
            if f.get("crash") == spared and "restart_after" not in f:
                f["restart_after"] = length()
    return {"seed": seed, "faults": faults}


def kind_of(fault: dict[str, Any]) -> str:
    """A case fault's kind (a crash without restart is told apart)."""
    for k in KINDS:
        if k in fault:
            return "crash (no restart)" if k == "crash" and "restart_after" not in fault else k
    return "?"


def as_file(fault: dict[str, Any]) -> dict[str, Any]:
    """A case fault as the scenario file writes it (times with units)."""
    return {k: (seconds(v) if k in ("at", "for", "restart_after", "step") else v)
            for k, v in fault.items()}


def base_kind(fault: dict[str, Any]) -> str:
    """A case fault's kind as ``hunt.kinds`` names it."""
    return next((k for k in KINDS if k in fault), "?")
