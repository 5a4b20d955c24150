"""The fuzz generator's second half: what a drawn scenario runs and does to the run —
handlers, services, the workload, faults, operations, expectations and variants — and the
small helpers both halves draw with (``fuzzgen`` is the first half and the entry point).

Every choice a draw can make is a module-level tuple or a small function, so that a test can
take one away (``monkeypatch``) and see the schema-coverage check name what went missing.
Everything is drawn from the ``random.Random`` it is given, never from the global one, and
nothing iterates a set: the same seed gives the same dict.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

# --- helpers ----------------------------------------------------------------------------------


def p(r: random.Random, prob: float) -> bool:
    return r.random() < prob


def some(r: random.Random, items: list | tuple, lo: int = 0, hi: int | None = None) -> list:
    """A random non-repeating selection (in the items' own order) of lo..hi of ``items``."""
    hi = len(items) if hi is None else min(hi, len(items))
    k = r.randint(min(lo, hi), hi)
    keep = sorted(r.sample(range(len(items)), k))
    return [items[i] for i in keep]


def dur(seconds: float, r: random.Random) -> str:
    """``seconds`` as a duration string in one of the forms a file may use."""
    if seconds == 0:
        return r.choice(["0s", "0ms", "PT0S"]) if p(r, 0.3) else "0s"
    form = r.random()
    if seconds < 1 or form < 0.15:
        return f"{seconds * 1000:.12g}ms"
    if form < 0.25:
        return f"PT{seconds:g}S"
    if seconds % 60 == 0 and form < 0.5:
        return f"{seconds / 60:g}" + r.choice(["m", "min"])
    return f"{seconds:g}s"


def dist(r: random.Random, scale: float) -> Any:
    """A duration distribution around ``scale`` seconds, in every form the format has."""
    form = r.choice(DIST_FORMS)
    if form == "plain":
        return dur(round(scale * r.choice([0.0, 0.5, 1.0, 2.0]), 3), r)
    if form == "constant":
        return {"constant": dur(scale, r)}
    if form == "uniform":
        return {"uniform": {"low": dur(round(scale / 2, 3), r), "high": dur(scale * 2, r)}}
    if form == "exponential":
        return {"exponential": {"mean": dur(scale, r)}}
    return {"lognormal": {"median": dur(scale, r), "p99": dur(scale * 4, r)}}


DIST_FORMS = ("plain", "constant", "uniform", "exponential", "lognormal")
JITTERS = ("full", "equal", "decorrelated")
FAIL_WAIT_JITTERS = ("full", "equal")  # decorrelated is refused there (a worker keeps no state)


def backoff(r: random.Random, fail_wait: bool = False) -> Any:
    """A retry backoff (or, ``fail_wait``, a worker's wait before failing: no ISO cycle, no
    decorrelated jitter), each form the format has."""
    form = r.choice(("list", "fixed", "exponential") + (() if fail_wait else ("cycle",)))
    if form == "list":
        return [dur(r.choice([0, 0.5, 1, 2, 5]), r) for _ in range(r.randint(1, 3))]
    if form == "fixed":
        return {"fixed": dur(r.choice([0, 1, 2, 5]), r)}
    if form == "cycle":
        return f"R{r.randint(1, 4)}/PT{r.choice([1, 2, 5])}S"
    e: dict[str, Any] = {"base": dur(r.choice([0.2, 1, 2]), r)}
    if p(r, 0.6):
        e["factor"] = r.choice([1, 1.5, 2, 3])
    if p(r, 0.5):
        e["cap"] = r.choice(["none", None]) if p(r, 0.3) else dur(r.choice([5, 10, 30]), r)
    if p(r, 0.4):
        e["offset"] = dur(r.choice([0, 1, 3]), r)
    if p(r, 0.7):
        forms = FAIL_WAIT_JITTERS if fail_wait else JITTERS
        e["jitter"] = r.choice([0.0, 0.1, 0.5, 1]) if p(r, 0.3) else r.choice(forms)
    return {"exponential": e}


def retry(r: random.Random) -> dict:
    out: dict[str, Any] = {}
    if p(r, 0.8):
        out["attempts"] = r.randint(1, 5)
    if p(r, 0.8):
        out["backoff"] = backoff(r)
    if p(r, 0.3):
        out["backoff_from"] = r.choice(("failure", "due"))
    return out


@dataclass
class Ctx:
    """What the draw has decided so far, for the parts drawn after it."""

    r: random.Random
    until: float | None = None        # seconds, None: drained
    broker: bool = False              # every node activates through a broker
    nodes: list[str] = field(default_factory=list)
    named_nodes: bool = False         # nodes given as a list of names
    handlers: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)       # named jobs created at 0s
    with_id: list[str] = field(default_factory=list)    # … whose submit may be ignored
    late_jobs: list[str] = field(default_factory=list)  # named jobs created later
    schedules: list[str] = field(default_factory=list)
    idempotent: bool = False
    fetch: bool = False               # count_attempt: fetch
    timer_table: bool = False
    boundary: bool = False            # a handler has a boundary timer
    total: int = 0                    # jobs the workload creates


# --- handlers and services --------------------------------------------------------------------

OUTCOMES = ("succeed", "always_fail", "hang", "fail_first", "fail_rate", "hang_for")
FAIL_RETRIES = ("decrement", "unchanged", "omitted")
STEP_FORMS = ("name", "work", "call")


def outcome(r: random.Random, c: Ctx, timeout: bool) -> Any:
    form = r.choice(OUTCOMES)
    if form == "hang" and not timeout and c.until is None:
        form = "hang_for"  # a job that hangs for good, retaken at every lock expiry, would
        # run to the horizon: only where the worker's timeout or the run's end bounds it
    if form in ("succeed", "always_fail", "hang"):
        return form
    if form == "fail_first":
        return {"fail_first": r.randint(0, 3)}
    if form == "fail_rate":
        return {"fail_rate": r.choice([0.0, 0.1, 0.3, 0.7, 1.0])}
    return {"hang": dur(r.choice([1, 10, 40]), r)}


def breaker(r: random.Random) -> dict:
    return {"after": r.randint(1, 4), "open_for": dur(r.choice([1, 5, 20]), r)}


def step(r: random.Random, c: Ctx, effect_free: bool) -> Any:
    form = r.choice(STEP_FORMS) if c.services else "work"
    if form == "work":
        return {"work": dist(r, r.choice([0.01, 0.2, 1]))}
    svc = r.choice(c.services)
    if form == "name":
        return svc
    call: dict[str, Any] = {"service": svc}
    if p(r, 0.6):
        call["timeout"] = dur(r.choice([0.1, 0.5, 2]), r)
    if effect_free and p(r, 0.3):
        call["effect"] = r.choice([True, False])
    if p(r, 0.4):
        call["breaker"] = breaker(r)
    if p(r, 0.3):
        call["idempotency_key"] = r.choice(IDEMPOTENCY_KEYS)
    return call


def handler(r: random.Random, c: Ctx) -> dict:
    h: dict[str, Any] = {}
    timeout = p(r, 0.25)
    if timeout:
        h["worker_timeout"] = dur(r.choice([0.5, 2, 10]), r)
    if c.services and p(r, 0.4):
        steps = []
        for _ in range(r.randint(1, 4)):
            steps.append(step(r, c, not any(isinstance(s, dict) and s.get("effect") is True
                                            for s in steps)))
        h["calls"] = steps
        if p(r, 0.3):
            h["side_effect"] = {"say": "called"}
    else:
        if p(r, 0.8):
            h["duration"] = dist(r, r.choice([0.05, 0.5, 2, 10]))
        if p(r, 0.8):
            h["outcome"] = outcome(r, c, timeout)
        if p(r, 0.4):
            h["error"] = r.choice(["boom", "bureau 502 (attempt {attempt})"])
        if p(r, 0.4):
            side: dict[str, Any] = {}
            if p(r, 0.8):
                side["at"] = r.choice(["start", "end", "commit", 0.0, 0.5, 1])
            if p(r, 0.5):
                side["say"] = "effect"
            if p(r, 0.3):
                side["fencing"] = r.choice([True, False])
            h["side_effect"] = side
    if p(r, 0.4):
        h["retry"] = retry(r)
    if p(r, 0.15):
        c.boundary = True
        bt: dict[str, Any] = {"after": dur(r.choice([1, 5, 30, 120]), r)}
        if p(r, 0.7):
            bt["interrupting"] = r.choice([True, False])
        h["boundary_timer"] = bt
    if p(r, 0.2):
        h["fail_wait"] = backoff(r, fail_wait=True)
    if c.broker and p(r, 0.4):
        # a worker's own count beside attempts counted at fetch is refused by the format
        h["fail_retries"] = "decrement" if c.fetch else r.choice(FAIL_RETRIES)
        if h["fail_retries"] == "unchanged" and c.until is None:
            h["fail_retries"] = "omitted"
        if h["fail_retries"] == "unchanged":
            # a failing job handed back with its retries unchanged runs again for good: at
            # one instant when nothing takes time (the guard's to stop, and a lint warns).
            # Here it waits a second or more between runs, and the run has an end
            h["retry"] = {**h.get("retry", {}), "backoff": r.choice(
                [["1s", "2s"], {"fixed": "3s"}, "R3/PT2S",
                 {"exponential": {"base": "1s", "cap": "10s"}}])}
    return h


WHEN_FULL = ("queue", "refuse")
ABANDONED = ("finish", "drop_queued")
IDEMPOTENCY_KEYS = ("job", "attempt")
OVER = ("refuse", "wait")
OUTAGE_FAILS = ("fast", "timeout")


def _windows(r: random.Random, n: int) -> list[tuple[float, float]]:
    """``n`` windows that neither overlap nor touch: (at, for) in seconds."""
    out, t = [], 0.0
    for _ in range(n):
        t += r.choice([0, 5, 30, 60])
        length = r.choice([2, 10, 60])
        out.append((t, length))
        t += length + 1
    return out


def service(r: random.Random) -> dict:
    s: dict[str, Any] = {}
    if p(r, 0.8):
        s["latency"] = dist(r, r.choice([0.005, 0.05, 0.3]))
    if p(r, 0.4):
        s["capacity"] = r.randint(1, 10)
        if p(r, 0.7):
            s["when_full"] = r.choice(WHEN_FULL)
    if p(r, 0.3):
        rl: dict[str, Any] = {"rate": r.choice(["5/s", "100/m", 2.5, 20])}
        if p(r, 0.6):
            rl["burst"] = r.randint(1, 10)
        if p(r, 0.7):
            rl["over"] = r.choice(OVER)
        s["rate_limit"] = rl
    if p(r, 0.3):
        s["error"] = "svc 503"
    if p(r, 0.3):
        s["abandoned"] = r.choice(ABANDONED)
    if p(r, 0.2):
        s["idempotency_window"] = dur(r.choice([1, 30, 3600]), r)
    if p(r, 0.25):  # (scenario() drops it from a service no handler calls: refused there)
        s["fencing"] = r.choice([True, False])
    if p(r, 0.5):
        s["outages"] = []
        for at, length in _windows(r, r.randint(1, 2)):
            o: dict[str, Any] = {"at": dur(at, r), "for": dur(length, r)}
            if p(r, 0.7):
                o["fail"] = r.choice(OUTAGE_FAILS)
            s["outages"].append(o)
        if p(r, 0.4):
            s["recovery"] = {"below": r.choice(["2/s", "30/m", 1.5])}
            if p(r, 0.6):
                s["recovery"]["over"] = dur(r.choice([2, 10]), r)
    if p(r, 0.3):
        s["brownouts"] = []
        for at, length in _windows(r, r.randint(1, 2)):
            b: dict[str, Any] = {"at": dur(at, r), "for": dur(length, r)}
            if p(r, 0.7):
                b["latency_factor"] = r.choice([1, 3, 10])
            if p(r, 0.7):
                b["error_share"] = r.choice([0.0, 0.2, 0.9])
            s["brownouts"].append(b)
    return s


# --- the workload -----------------------------------------------------------------------------

KINDS = ("async", "timer")
MODES = ("fixed_rate", "fixed_delay")


def job(r: random.Random, c: Ctx, i: int) -> dict:
    j: dict[str, Any] = {"handler": r.choice(c.handlers)}
    late = p(r, 0.3)
    if p(r, 0.8):
        j["name"] = f"j{i}"
        (c.late_jobs if late else c.jobs).append(j["name"])
    if late:
        j["at"] = dur(r.choice([1, 10, 60]), r)
    elif p(r, 0.2):
        j["at"] = "0s"
    if p(r, 0.4):
        j["kind"] = r.choice(KINDS)
    if p(r, 0.3):
        j["due_in"] = dur(r.choice([0, 5, 30]), r)
    if p(r, 0.3):
        j["id"] = r.randint(1, 4) if c.idempotent else 1000 + i
        if c.idempotent and "name" in j:
            c.with_id.append(j["name"])
    if p(r, 0.3):
        j["priority"] = r.choice([-5, 0, 1, 10])
    if p(r, 0.25):
        j["node"] = r.choice(c.nodes)
    if p(r, 0.15):
        j["queue"] = r.choice(["qa", "qb"])
    if p(r, 0.1):
        j["record_failure"] = "recorded"
    return j


def stream(r: random.Random, c: Ctx, i: int) -> dict:
    s: dict[str, Any] = {"handler": r.choice(c.handlers), "count": r.randint(1, 60)}
    if p(r, 0.8):
        s["name"] = f"s{i}"
    if p(r, 0.7):
        s["rate"] = r.choice(["2/s", "10/s", "60/m", "900/h", 0.5, 5])
    if p(r, 0.3):
        s["start"] = dur(r.choice([0, 5, 30]), r)
    if p(r, 0.3):
        s["kind"] = r.choice(KINDS)
    if p(r, 0.3):
        s["due_in"] = dur(r.choice([0, 2, 20]), r)
    if p(r, 0.3):
        s["priority"] = r.choice([0, 1, 5])
    if p(r, 0.25):
        s["nodes"] = some(r, c.nodes, 1)
    if p(r, 0.1):
        s["queue"] = r.choice(["qa", "qb"])
    c.total += s["count"]
    return s


def recurring(r: random.Random, c: Ctx, i: int) -> dict:
    name = f"every{i}"
    c.schedules.append(name)
    out: dict[str, Any] = {"name": name, "handler": r.choice(c.handlers),
                           "every": dur(r.choice([2, 10, 30]), r), "count": r.randint(1, 8)}
    if p(r, 0.6):
        out["mode"] = r.choice(MODES)
    if p(r, 0.3):
        out["start"] = dur(r.choice([0, 5]), r)
    if p(r, 0.4):
        out["kind"] = r.choice(KINDS)
    if p(r, 0.3):
        out["priority"] = r.choice([0, 3])
    c.total += out["count"]
    return out


def workload(r: random.Random, c: Ctx) -> dict:
    w: dict[str, Any] = {}
    if p(r, 0.6):
        w["jobs"] = [job(r, c, i) for i in range(r.randint(1, 5))]
        c.total += len(w["jobs"])
    if p(r, 0.8) or not w:
        w["streams"] = [stream(r, c, i) for i in range(r.randint(1, 2))]
    if p(r, 0.25):
        w["recurring"] = [recurring(r, c, i) for i in range(r.randint(1, 2))]
    return w
