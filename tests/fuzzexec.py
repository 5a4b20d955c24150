"""The fuzz generator's executor half: the database (dialect, latency, connections,
isolation, SQLite's transactions, the CPU model, an inline measured profile), the policy
preset and the executor's settings over it, the nodes with their own overrides, and the fake
clock's ticks. A claim strategy is drawn only where the database has it, long polling only
with a broker, ``count_attempt: fetch`` only with ``lock_expiry: reset``: the format refuses
the rest, and a refused draw is a generator bug (``tests/test_fuzz.py`` holds the share).

Times are scaled down from the presets' (an hour's lock, a 60-minute rescue) so that locks
expire, resets run and heartbeats matter within the minutes a fuzz run lasts.
"""

from __future__ import annotations

import random
from typing import Any

from jobsim.executor.policies import PRESETS
from jobsim.format.profile import PROFILE_STRATEGIES

from fuzzwork import Ctx, dist, dur, p, retry, some

POLICIES = (None, "lesson", "flowable", "failsafe", "failsafe_v3", "zeebe_like", "zeebe",
            "skip_locked", "db_scheduler")
DIALECTS = ("atomic", "postgres", "sqlite")
SQL_STRATEGIES = ("guarded_update", "unguarded_update", "read_then_write", "optimistic",
                  "optimistic_batch", "skip_locked")
ISOLATIONS = ("read_committed", "repeatable_read", "serializable")
SQLITE_BEGINS = ("autocommit", "deferred", "immediate")
SQLITE_BUSY = ("queue", "sleep")
WAKEUPS = ("poll", "notify", "ticks", "long_poll")
SCOPES = ("running", "held")
GUARDS = ("none", "owner")
EXHAUSTED = ("dead_letter", "incident", "failed")
QUEUE_FULL = ("queue", "unacquire")
CLAIM_WHEN = ("room", "empty")
ORDERS = ("id", "created", "due", "priority", "aging")
AGING_FROM = ("due", "created")
LOCK_EXPIRY = ("claim", "reset", "never")
COUNT_ATTEMPT = ("failure", "fetch")


def dialects(policy: str | None) -> tuple[str, ...]:
    """The databases a preset's strategy runs on: a broker is no SQL (atomic only); SKIP
    LOCKED is not SQLite's."""
    acq = PRESETS.get(policy or "", {}).get("acquisition", "guarded_update")
    if acq == "broker":
        return ("atomic",)
    return ("atomic", "postgres") if acq == "skip_locked" else DIALECTS


def strategies(dialect: str, broker: bool) -> tuple[str, ...]:
    """The claim strategies ``dialect`` has: SQL ones, or the broker (atomic only). A broker
    and SQL claims on one table in one cluster is no system jobsim models, so a drawn
    cluster is one or the other."""
    if broker:
        return ("broker",)
    return tuple(s for s in SQL_STRATEGIES if not (s == "skip_locked" and dialect == "sqlite"))


def _opt(r: random.Random, ex: dict, key: str, prob: float, value: Any) -> None:
    """Set ``key`` with probability ``prob`` (``value`` is drawn either way, so that one
    key's presence does not shift every later draw's stream: the draws stay comparable)."""
    if p(r, prob):
        ex[key] = value


def node_settings(r: random.Random, c: Ctx, dialect: str, prob: float) -> dict:
    """The settings a node may set for itself (each with probability ``prob``), scaled for
    runs of minutes."""
    ex: dict[str, Any] = {}
    _opt(r, ex, "acquisition", prob, r.choice(strategies(dialect, c.broker)))
    wakeups = WAKEUPS if c.broker else WAKEUPS[:3]
    _opt(r, ex, "wakeup", prob, r.choice(wakeups) if p(r, 0.8) else "ticks")
    _opt(r, ex, "poll_interval", prob, dur(r.choice([0.2, 0.5, 1, 2, 5]), r))
    _opt(r, ex, "long_poll_timeout", prob, dur(r.choice([1, 5, 10]), r))
    _opt(r, ex, "poll_jitter", prob, r.choice([0.0, 0.1, 0.5, 0.9]))
    _opt(r, ex, "initial_delay", prob, dur(r.choice([0, 1, 5]), r))
    _opt(r, ex, "batch_size", prob, r.randint(1, 12))
    _opt(r, ex, "queue_size", prob, r.choice([0, 0, 1, 5, 20]))
    _opt(r, ex, "threads", prob, r.randint(1, 6))
    _opt(r, ex, "lock_time", prob, dur(r.choice([3, 10, 30, 120]), r))
    _opt(r, ex, "heartbeat", prob, r.choice(["none", None, dur(r.choice([1, 4, 20]), r),
                                             dur(2, r)]))
    _opt(r, ex, "heartbeat_scope", prob, r.choice(SCOPES))
    _opt(r, ex, "queue_full_wait", prob, dur(r.choice([0.5, 2, 5]), r))
    _opt(r, ex, "complete_guard", prob, r.choice(GUARDS))
    _opt(r, ex, "exhausted", prob, r.choice(EXHAUSTED))
    _opt(r, ex, "hint", prob, r.choice([True, False]))
    _opt(r, ex, "on_queue_full", prob, r.choice(QUEUE_FULL))
    _opt(r, ex, "claim_when", prob, r.choice(CLAIM_WHEN))
    _opt(r, ex, "error_wait", prob, dur(r.choice([0, 0.1, 1]), r))
    _opt(r, ex, "reset_interval", prob, r.choice(["none", dur(r.choice([1, 5, 20]), r)]))
    _opt(r, ex, "reset_page", prob, r.randint(1, 10))
    _opt(r, ex, "stager_interval", prob, r.choice(["none", dur(r.choice([0.5, 1, 5]), r)]))
    _opt(r, ex, "global_lock", prob / 2, r.choice([True, False]))
    _opt(r, ex, "global_lock_wait", prob, dur(r.choice([1, 10, 60]), r))
    _opt(r, ex, "global_lock_poll", prob, dur(r.choice([0.1, 0.5, 2]), r))
    _opt(r, ex, "global_lock_force", prob, dur(r.choice([5, 30, 120]), r))
    # a clock ahead or behind, or gaining or losing (scenario() keeps them off a server's nodes
    # unless the claims read the database's clock)
    _opt(r, ex, "clock_offset", prob / 2, signed(r.choice([0.5, 5, 25, 90]), r))
    _opt(r, ex, "clock_drift", prob / 3, r.choice([-0.01, -1e-4, 0.0, 1e-4, 0.01, 0.2]))
    return ex


def signed(seconds: float, r: random.Random) -> str:
    """A duration ahead or behind (``-`` before it)."""
    return ("-" if p(r, 0.5) else "") + dur(seconds, r)


def clocks(r: random.Random, doc: dict) -> None:
    """Whose clock the claims read; the database's wherever a node's clock may be off and a
    server decides (a broker, a long poll), which the format requires."""
    ex = doc.setdefault("executor", {})
    preset = PRESETS.get(doc.get("policy", ""), {})
    _opt(r, ex, "clock", 0.2, r.choice(["node", "database"]))
    if ex.get("clock", preset.get("clock", "node")) != "node":
        return
    listed = doc["nodes"] if isinstance(doc["nodes"], list) else []
    skew = any(x.get("clock_offset") or x.get("clock_drift") for x in [ex] + listed) or \
        any("clock" in f for f in doc.get("faults", []))
    served = ex.get("acquisition", preset.get("acquisition")) == "broker" or "long_poll" in wakeups(doc).values() or \
        any(n.get("acquisition") == "broker" for n in listed)
    if skew and served:
        ex["clock"] = "database"


def executor(r: random.Random, c: Ctx, policy: str | None, dialect: str) -> dict:
    """The ``executor:`` section over ``policy``; sets ``c.broker``."""
    preset = PRESETS.get(policy or "", {})
    base = preset.get("acquisition", "guarded_update")
    c.broker = base == "broker" or (policy is None and dialect == "atomic" and p(r, 0.15))
    ex = node_settings(r, c, dialect, 0.3)
    if c.broker and base != "broker":
        ex["acquisition"] = "broker"
    elif not c.broker and policy and "acquisition" in ex and p(r, 0.5):
        del ex["acquisition"]  # the preset's own strategy, more often than not
    if preset.get("wakeup") == "long_poll" and not c.broker:
        ex["wakeup"] = "poll"
    if c.broker and p(r, 0.5):
        ex["wakeup"] = "long_poll"
    # the presets' hours and minutes, scaled to a run of minutes
    if policy in ("flowable", "skip_locked", "zeebe", "zeebe_like", "failsafe",
                  "failsafe_v3") and p(r, 0.7):
        ex["lock_time"] = dur(r.choice([10, 30, 120]), r)
    if policy in ("flowable", "skip_locked", "db_scheduler") and p(r, 0.7):
        ex["reset_interval"] = dur(r.choice([2, 10]), r)
    if policy == "db_scheduler" and p(r, 0.8):
        ex["heartbeat"] = dur(r.choice([2, 5]), r)  # its lock is 6 × heartbeat
    if policy in ("flowable", "db_scheduler", "failsafe", "failsafe_v3") and p(r, 0.6):
        ex["poll_interval"] = dur(r.choice([0.5, 2]), r)
    # the cluster's own settings (not a node's)
    _opt(r, ex, "order", 0.35, r.choice(ORDERS))
    if ex.get("order") == "aging" or p(r, 0.1):
        _opt(r, ex, "aging_rate", 0.8, r.choice([0.0, 0.1, 2.0]))
        _opt(r, ex, "aging_from", 0.7, r.choice(AGING_FROM))
    _opt(r, ex, "lock_expiry", 0.25, r.choice(LOCK_EXPIRY))
    _opt(r, ex, "timer_table", 0.2, r.choice([True, False]))
    _opt(r, ex, "count_attempt", 0.2, r.choice(COUNT_ATTEMPT))
    _opt(r, ex, "idempotent_submit", 0.15, r.choice([True, False]))
    _opt(r, ex, "retry", 0.5, retry(r))
    _opt(r, ex, "handles", 0.08, r.sample(c.handlers, len(c.handlers)))  # all, any order
    if policy == "db_scheduler" and "retry" in ex:  # its million attempts, not with a
        ex["retry"].setdefault("attempts", 3)  # backoff of a second
    count = ex.get("count_attempt", preset.get("count_attempt"))
    if count == "fetch":  # the format's rule: a rescue decides whether attempts are left
        ex["lock_expiry"] = "reset"
    c.fetch = count == "fetch"
    c.idempotent = bool(ex.get("idempotent_submit", preset.get("idempotent_submit")))
    c.timer_table = bool(ex.get("timer_table", preset.get("timer_table")))
    return ex


def nodes(r: random.Random, c: Ctx, dialect: str) -> int | list[dict]:
    """A count, or a list of named nodes with their own settings (``handles``, ``start_at``
    and any executor setting a node may override); sets ``c.nodes``."""
    n = r.randint(1, 4)
    if p(r, 0.45):
        c.nodes = [f"node-{i + 1}" for i in range(n)]
        return n
    c.named_nodes = True
    c.nodes = [r.choice(["n", "worker-", "node-"]) + str(i + 1) for i in range(n)]
    out = []
    for name in c.nodes:
        node: dict[str, Any] = {"name": name, **node_settings(r, c, dialect, 0.12)}
        if p(r, 0.2):
            node["start_at"] = dur(r.choice([0, 1, 10]), r)
        if p(r, 0.25):
            node["handles"] = some(r, c.handlers, 1)
        if c.broker and p(r, 0.15):
            node["wakeup"] = "long_poll"
        out.append(node)
    covered = {h for node in out for h in node.get("handles", c.handlers)}
    for h in c.handlers:  # every task has a node that runs it (else liveness rightly fails)
        if h not in covered:
            out[r.randrange(len(out))].setdefault("handles", []).append(h)
    return out


def wakeups(doc: dict) -> dict[str, str]:
    """Each node's wakeup, as the format resolves it (node, executor, preset, default)."""
    base = doc.get("executor", {}).get(
        "wakeup", PRESETS.get(doc.get("policy", ""), {}).get("wakeup", "poll"))
    listed = doc["nodes"] if isinstance(doc["nodes"], list) else [
        {"name": f"node-{i + 1}"} for i in range(doc["nodes"])]
    return {n["name"]: n.get("wakeup", base) for n in listed}


def clock(r: random.Random, doc: dict, c: Ctx) -> dict | None:
    """Ticks for the nodes that wake by ticks, every few seconds for a few minutes (a node
    that outlives the ticks with work left strands it: ``liveness`` says so, rightly)."""
    ticked = [name for name, w in wakeups(doc).items() if w == "ticks"]
    if not ticked:
        return {"ticks": []} if p(r, 0.05) else None
    step = r.choice([1, 2, 5, 10])
    span = min(c.until or 900, 900)
    ticks = []
    t = 0
    while t <= span:
        tick: dict[str, Any] = {"at": dur(t, r), "nodes": some(r, ticked, 1)}
        if p(r, 0.05):
            tick["note"] = "tick"
        ticks.append(tick)
        t += step
    return {"ticks": ticks}


def used_strategies(doc: dict) -> list[str]:
    base = doc.get("executor", {}).get(
        "acquisition", PRESETS.get(doc.get("policy", ""), {}).get("acquisition",
                                                                  "guarded_update"))
    listed = doc["nodes"] if isinstance(doc["nodes"], list) else [{}]
    return sorted({n.get("acquisition", base) for n in listed})


def _figures(r: random.Random, db: dict) -> dict:
    f: dict[str, Any] = {k: dist(r, r.choice([0.0002, 0.001]))
                         for k in ("select", "update", "between_attempts",
                                   "between_statements")}
    for k in ("commit", "update_unchanged"):
        _opt(r, f, k, 0.5, dist(r, 0.0005))
    for k in ("select_per_row", "update_per_row", "server_tail"):
        _opt(r, f, k, 0.3, dur(r.choice([0, 0.00001, 0.0001]), r))
    for k in ("unchanged_cpu", "server_cpu", "client_cpu", "cpu_wait"):
        _opt(r, f, k, 0.3, r.choice([0.0, 0.3, 1.0]))
    _opt(r, f, "attempts", 0.3, r.randint(0, 1000))
    # what it was measured under: absent, the defaults, which must then be the database's
    iso, begin = db.get("isolation", "read_committed"), db.get("sqlite_begin", "autocommit")
    _opt(r, f, "isolation", 1.0 if iso != "read_committed" else 0.3, iso)
    _opt(r, f, "begin", 1.0 if begin != "autocommit" else 0.3, begin)
    return f


def profile(r: random.Random, db: dict, used: list[str]) -> dict:
    """A measured profile inline, with figures for every strategy the nodes use."""
    machine: dict[str, Any] = {"cores": r.randint(1, 4)}
    _opt(r, machine, "quantum", 0.5, dur(r.choice([0.001, 0.003]), r))
    _opt(r, machine, "handover", 0.3, dur(r.choice([0, 0.00005]), r))
    prof: dict[str, Any] = {"dialect": db["dialect"], "machine": machine,
                            "strategies": {s: _figures(r, db) for s in used}}
    _opt(r, prof, "statement", 0.4, dist(r, 0.0003))
    if p(r, 0.3):
        prof["measured"] = {k: v for k, v in (("at", "2024-01-01"), ("jobs", 100),
                                              ("batch", 10), ("database", "fuzz"),
                                              ("warm_up", "1s")) if p(r, 0.7)}
    return prof


def db(r: random.Random, doc: dict, dialect: str) -> dict:
    out: dict[str, Any] = {"dialect": dialect} if dialect != "atomic" or p(r, 0.5) else {}
    _opt(r, out, "latency", 0.6, dist(r, r.choice([0.0005, 0.002, 0.01])))
    _opt(r, out, "connections", 0.25, r.choice([0, 1, 2, 4]))
    if dialect == "postgres":
        _opt(r, out, "isolation", 0.5, r.choice(ISOLATIONS))
    if dialect == "sqlite":
        _opt(r, out, "sqlite_begin", 0.5, r.choice(SQLITE_BEGINS))
        _opt(r, out, "sqlite_busy", 0.4, r.choice(SQLITE_BUSY))
    used = used_strategies(doc)
    profiled = dialect != "atomic" and set(used) <= set(PROFILE_STRATEGIES) and p(r, 0.3)
    if profiled:
        out["profile"] = profile(r, out, used)
        if p(r, 0.2):
            del out["dialect"]  # the profile's database is the scenario's
    if dialect != "atomic" and p(r, 0.2):
        cpu: dict[str, Any] = {}
        _opt(r, cpu, "cores", 1.0 if not profiled else 0.5, r.randint(1, 4))
        _opt(r, cpu, "quantum", 0.5, dur(r.choice([0.001, 0.003, 0.01]), r))
        out["cpu"] = cpu
    return out
