"""Random scenarios over the whole scenario format, in combination: ``scenario(r)`` draws one
as a plain dict (what a YAML file parses to), which ``jobsim.format.scenario.from_dict`` and
``variants_of`` validate and build. The format's own validation is the judge of a draw: one
it refuses is a bug of this generator (tests/test_fuzz.py holds the share of valid draws).

The parts: ``fuzzexec`` (the database, the policy, the executor, the nodes, the clock),
``fuzzwork`` (handlers, services, the workload, and the helpers), and here the rest —
faults, operations, expectations, variants, the sections that only validate (sweep, hunt,
report), the statistics' window — and the whole. ``fuzzjudge`` runs a draw and says what in its result is
legitimate.

Runs are small: tens to a few hundred jobs, minutes of simulated time, a horizon of an hour
at most, so thousands run in minutes. One seed gives one dict (``random.Random(seed)``, no
set iteration), on any machine and under any PYTHONHASHSEED.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import fuzzexec
import fuzzwork
from fuzzwork import Ctx, dist, dur, p, some

FAULTS = ("crash", "pause", "slow_db", "partition", "clock", "restart_server")
TIMELINE_COLOURS = ("outcome", "priority", "handler")  # report.timeline_colour
OPERATIONS = ("retry", "cancel", "move", "suspend", "activate", "fail")  # fail: a broker's
HUNT_KINDS = FAULTS


def fault(r: random.Random, c: Ctx) -> dict:
    # restart_server only with a broker: without one the format still accepts it (a known
    # bug, being fixed on main), and it restores nothing
    kind = r.choice(FAULTS if c.broker else FAULTS[:-1])
    at = dur(r.choice([0, 1, 5, 20, 60, 120]), r)
    node = r.choice(c.nodes)
    if kind == "crash":
        f: dict[str, Any] = {"at": at, "crash": node}
        if p(r, 0.6):
            f["restart_after"] = dur(r.choice([1, 10, 60]), r)
        return f
    length = dur(r.choice([1, 5, 30, 90]), r)
    if kind == "pause":
        return {"at": at, "pause": node, "for": length}
    if kind == "slow_db":
        return {"at": at, "slow_db": r.choice([0, 0.5, 2, 10, 50]), "for": length}
    if kind == "partition":
        f = {"at": at, "partition": node, "for": length}
        if p(r, 0.7):
            f["timeout"] = dur(r.choice([0.5, 1, 5]), r)
        return f
    if kind == "clock":  # a step ahead or behind, a new drift, or both
        f = {"at": at, "clock": node}
        form = r.choice(["step", "drift", "both"])
        if form != "drift":
            f["step"] = fuzzexec.signed(r.choice([1, 10, 30, 120]), r)
        if form != "step":
            f["drift"] = r.choice([-0.05, 0.0, 1e-3, 0.1])
        return f
    return {"at": at, "restart_server": True}


def operations(r: random.Random, c: Ctx) -> list[dict]:
    """An operator's actions on named jobs, schedules (their latest job) and ``all``; a
    suspension is mostly followed by an activation (one that is not strands its jobs, and
    liveness says so: legitimate, see fuzzjudge)."""
    names = c.jobs + c.late_jobs + c.schedules + ["all"]
    out = []
    for _ in range(r.randint(1, 3)):
        kind = r.choice(OPERATIONS if c.broker else OPERATIONS[:-1])
        at = r.choice([0, 2, 10, 30, 90, 180])
        op: dict[str, Any] = {"at": dur(at, r), kind: r.choice(names)}
        if kind == "move" and p(r, 0.5):
            op["retries"] = r.randint(1, 3)
        if kind == "fail":  # retries as sent: above 0 waits again, else an incident
            if p(r, 0.7):
                op["retries"] = r.randint(-1, 3)
            if p(r, 0.5):
                op["error"] = "failed by a script"
        out.append(op)
        if kind == "suspend" and p(r, 0.7):
            out.append({"at": dur(at + r.choice([1, 20, 60]), r), "activate": op[kind]})
    return out


def expectations(r: random.Random, c: Ctx) -> dict:
    """A few expectations that hold on any run (a failing one is a finding): nothing lost,
    no unexplained duplicate, at most the jobs the workload makes."""
    pool: list[tuple[str, Any]] = [
        ("jobs.lost", "== 0"), ("invariants.no_job_lost", "== 0"),
        ("duplicate_executions.by_cause.unexplained", "== 0"),
        ("duplicate_side_effects.by_cause.unexplained", "== 0"),
        ("invariants.done_means_ran", "== 0"), ("executions", [">= 0", "< 1e9"]),
        ("completions.done", ">= 0"), ("acquisition.lost_races", ">= 0"),
        ("drained", "!= maybe"), ("latency.start_delay.n", ">= 0")]
    if c.until is not None:  # a drained run of no length that did its jobs has no rate
        pool.append(("throughput_per_s", ">= 0"))
    if not (c.timer_table and c.boundary):  # boundary timers' timer jobs are jobs too
        pool.append(("jobs.created", f"<= {c.total}"))
    if c.timer_table and c.boundary:
        pool.append(("boundary_timers.timer_jobs", ">= 0"))
    # a named job created at 0s has figures (under idempotent_submit only one without an
    # id: a submit the table ignores makes no job, and named.<it> is no figure)
    pool += [(f"named.{j}.executions", ">= 0") for j in c.jobs if j not in c.with_id]
    return dict(some(r, pool, 1, 3))


def variants(r: random.Random, c: Ctx, doc: dict) -> dict:
    """One or two variants, each setting values that keep the scenario valid, with its own
    description and expectations; every variant is run."""
    out = {}
    for i in range(r.randint(1, 2)):
        sets: dict[str, Any] = dict(some(r, [
            ("seed", r.randint(0, 999)), ("executor.threads", r.randint(1, 4)),
            ("executor.batch_size", r.randint(1, 8)),
            ("executor.poll_interval", dur(r.choice([0.5, 1, 3]), r)),
            ("executor.complete_guard", r.choice(["none", "owner"])),
            ("executor.heartbeat", r.choice(["none", dur(2, r)])),
            ("faults", []), ("db.latency", dist(r, 0.002)),
            ("until", dur(r.choice([60, 300]), r)),
            (f"handlers.{c.handlers[0]}.retry", {"attempts": r.randint(1, 3)})], 1, 3))
        var: dict[str, Any] = {"set": sets}
        if p(r, 0.4):
            var["description"] = f"variant {i}"
        if p(r, 0.4):
            var["expect"] = expectations(r, c)
        out[f"v{i}"] = var
    return out


FIGURES = ("jobs.done", "executions", "latency.start_delay.mean", "duplicate_executions.total",
           "double_acquisitions")


def sweep(r: random.Random) -> dict:
    out: dict[str, Any] = {}
    if p(r, 0.8):
        out["grid"] = {"executor.threads": [1, 2, 4], "nodes": [1, 2]}
    if p(r, 0.6):
        out["replications"] = r.randint(1, 20)
    if p(r, 0.5):
        out["plot"] = some(r, FIGURES, 1, 2)
    if p(r, 0.5):
        out["precision"] = {"figure": r.choice(FIGURES), "within": r.choice([0.05, 0.5])}
    return out


def hunt(r: random.Random, c: Ctx) -> dict:
    out: dict[str, Any] = {}
    if p(r, 0.6):
        out["nodes"] = some(r, c.nodes, 1)
    if p(r, 0.6):
        out["faults"] = r.randint(1, 4)
    if p(r, 0.7):
        out["kinds"] = some(r, HUNT_KINDS, 1)
    if p(r, 0.5):
        out["between"] = [dur(0, r), dur(r.choice([30, 120]), r)]
    if p(r, 0.5):
        out["length"] = [dur(1, r), dur(r.choice([10, 60]), r)]
    if p(r, 0.5):
        out["slow_factor"] = [r.choice([1, 2]), r.choice([10, 100])]
    if p(r, 0.5):
        out["seeds"] = r.choice([True, False])
    return out


def scenario(r: random.Random) -> dict:
    """One random scenario over the whole format (see the module's docstring)."""
    c = Ctx(r)
    doc: dict[str, Any] = {"name": r.choice(["fuzz", "fuzz-mixed", "f.1"]),
                           "seed": r.randint(0, 10**6)}
    if p(r, 0.15):
        doc["description"] = "a fuzz draw"
    c.until = None if p(r, 0.6) else r.choice([60, 300, 600])
    doc["until"] = "drained" if c.until is None else dur(c.until, r)
    doc["horizon"] = dur(r.choice([1800, 3600]), r)
    policy = r.choice(fuzzexec.POLICIES) if p(r, 0.5) else None
    if policy:
        doc["policy"] = policy
    dialect = r.choice(fuzzexec.dialects(policy))
    c.handlers = [f"h{i + 1}" for i in range(r.randint(1, 3))]
    ex = fuzzexec.executor(r, c, policy, dialect)
    if ex:
        doc["executor"] = ex
    doc["nodes"] = fuzzexec.nodes(r, c, dialect)
    if p(r, 0.35):
        c.services = [f"svc-{k}" for k in "ab"[:r.randint(1, 2)]]
        doc["services"] = {s: fuzzwork.service(r) for s in c.services}
    doc["handlers"] = {h: fuzzwork.handler(r, c) for h in c.handlers}
    called = {st if isinstance(st, str) else st.get("service") for h in doc["handlers"].values()
              for st in h.get("calls", [])}
    for name, s in doc.get("services", {}).items():
        if s.get("fencing") and name not in called:  # the format refuses a fence that
            del s["fencing"]                          # guards nothing
    if policy == "db_scheduler":  # its retry is a million attempts: a handler's own short
        for h in doc["handlers"].values():  # backoff without attempts would keep them
            if "retry" in h:
                h["retry"].setdefault("attempts", 1 + len(h) % 5)
    doc["workload"] = fuzzwork.workload(r, c)
    database = fuzzexec.db(r, doc, dialect)
    if database or p(r, 0.1):
        doc["db"] = database
    ticks = fuzzexec.clock(r, doc, c)
    if ticks is not None:
        doc["clock"] = ticks
    if p(r, 0.1):  # the run's start instant: what a broker's deadlines count from
        doc.setdefault("clock", {})["epoch"] = r.choice(
            ["2026-01-01T00:00:00Z", "2030-06-01T12:00:00+02:00", "1999-12-31T23:59:59-05:00"])
    if p(r, 0.6):
        doc["faults"] = [fault(r, c) for _ in range(r.randint(1, 3))]
    fuzzexec.clocks(r, doc)
    if not doc["executor"]:
        del doc["executor"]
    if p(r, 0.35):
        doc["operations"] = operations(r, c)
    if p(r, 0.4):
        doc["expect"] = expectations(r, c)
    if p(r, 0.15):
        doc["variants"] = variants(r, c, doc)
    if p(r, 0.1):
        doc["sweep"] = sweep(r)
    if p(r, 0.1):
        doc["hunt"] = hunt(r, c)
    if p(r, 0.1):
        doc["report"] = {"compare": some(r, FIGURES, 0, 3)}
        if p(r, 0.5):  # small: a run over seeds runs the scenario that many times
            doc["report"]["seeds"] = r.randint(1, 3)
        if p(r, 0.5):
            doc["report"]["timeline_colour"] = r.choice(TIMELINE_COLOURS)
    # the statistics' window: small, so that it leaves part of the shortest run a draw or its
    # variants make (60s); a drained run may still end within it (an empty window: said so)
    if p(r, 0.15):
        doc["warmup"] = dur(r.choice([0, 2, 10, 30]), r)
    if p(r, 0.1):
        doc["cooldown"] = dur(r.choice([0, 1, 10, 20]), r)
    return doc


def digest(seeds: range) -> str:
    """One hash of the draws of ``seeds`` (for the check that a seed gives one scenario
    under any PYTHONHASHSEED)."""
    return hashlib.sha256("".join(json.dumps(scenario(random.Random(s)))
                                  for s in seeds).encode()).hexdigest()


def built(seed: int) -> list:
    """The scenarios (every variant) of the draw at ``seed``, the seed printed first for a
    replay; [] where the format refuses the draw (``test_fuzz`` holds how rarely)."""
    from jobsim.format.scenario import variants_of

    print("fuzz seed", seed, "(replay: tests/fuzzgen.scenario(random.Random(seed)))")
    try:
        return variants_of(scenario(random.Random(seed)), f"<fuzz {seed}>")
    except Exception:  # a draw the format refuses: nothing to run
        return []
