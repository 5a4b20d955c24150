"""Running a drawn scenario and judging it: each run (every variant) is validated, priced,
run under the cost guard and analysed, and the outcome classed — ``ok``, ``invalid`` (the
format refused the draw: a generator bug), ``refused`` (beyond the fuzz budget: a generator
bug too), ``break`` (an invariant violated that the draw's settings do not excuse),
``expect`` (an expectation that holds on any run failed), ``crash`` (an exception: its type
and last frame), ``hang`` (the guard stopped it far past its estimate, or the fuzz tool's
CPU limit), or ``known`` (a bug found and reported, not fixed yet: recognised by its
signature and counted, not reported again, until its fix lands; a fixed one is held by its
shrunk scenario in tests/test_audit_findings.py).

What a draw legitimately breaks is decided invariant by invariant in ``legitimate``, as
narrowly as the checks allow, each with why. Used by tests/test_fuzz.py and tools/fuzz.py.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jobsim.base.errors import ScenarioError
from jobsim.executor.config import Scenario
from jobsim.format.scenario import variants_of
from jobsim.output.report import analyse
from jobsim.sim.cost import Budget, BudgetError, Guard, RunStopped, check, estimate
from jobsim.sim.world import run

#: a fuzz run is small: an estimate beyond this is the generator's bug; the guard stops a
#: run at 10× its estimate or at this budget, whichever is higher (and never below 1e6) …
BUDGET = Budget(events=1_500_000, memory=2e9)
#: ... but the guard stops a fuzz run at this many events in any case (a hot loop at one
#: instant makes about 40,000 a CPU second). (1.5 million: a drained Flowable draw of four
#: nodes polling every 200 ms to its 1 h horizon was estimated at 1.1 million and ran 138,000
#: trace events in 2.4 CPU s; refused at 1 million, it failed a fixed-seed sample.)
MAX_EVENTS = 3_000_000


@dataclass
class Outcome:
    kind: str                          # ok, invalid, refused, break, expect, crash, hang, known
    detail: str = ""                   # one line: which invariant, exception, issue
    text: str = ""                     # the violations or the traceback, in full
    #: per run: its name, its events, its estimate, and whether a drained run was kept
    #: going to its horizon by work that never finishes (a known miss of the estimate)
    ratios: list[tuple[str, float, float, bool]] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return max((ev / max(est, 1.0) for _, ev, est, _ in self.ratios), default=0.0)

    @property
    def kept_alive(self) -> bool:
        """Whether the run of the largest ratio ran to its horizon undrained."""
        worst = max(self.ratios, key=lambda t: t[1] / max(t[2], 1.0), default=None)
        return bool(worst and worst[3])


# --- what a draw's settings excuse ------------------------------------------------------------

def _strategies(sc: Scenario) -> set[str]:
    return {n.executor.acquisition for n in sc.nodes}


def unsafe(sc: Scenario) -> bool:
    """A node claims with a strategy that double-acquires on this database (as the real
    ones do, tests/test_safe_unsafe.py): read_then_write (a SELECT, then an UPDATE by id that
    does not look again) on PostgreSQL at READ COMMITTED, on SQLite in autocommit and on the
    atomic model (two statements, another node's claim between them); unguarded_update on
    PostgreSQL at READ COMMITTED (EvalPlanQual re-checks only the outer WHERE). And Flowable's
    global acquire lock on some nodes only: a node holding it claims by read_then_write,
    "made safe by the lock" — against nodes that do not take the lock, it is not."""
    d = sc.db
    s = _strategies(sc)
    locks = {n.executor.global_lock for n in sc.nodes}
    if locks == {True, False}:
        return True
    if "read_then_write" in s and (d.dialect == "atomic" or (
            d.dialect == "postgres" and d.isolation == "read_committed") or (
            d.dialect == "sqlite" and d.sqlite_begin == "autocommit")):
        return True
    return "unguarded_update" in s and d.dialect == "postgres" and \
        d.isolation == "read_committed"


def legitimate(doc: dict, sc: Scenario, v: Any) -> str | None:
    """Why violation ``v`` is what this draw's settings rightly produce, or None."""
    if v.invariant == "exclusive_locks" and unsafe(sc):
        return "an unsafe claim strategy double-acquires: that is its lesson"
    if v.invariant == "exclusive_locks" and sc.clocks_differ and any(
            n.executor.global_lock for n in sc.nodes):
        # the holder's age is read on the taker's clock: one ahead by global_lock_force
        # forces a lock still held, and both claim by read_then_write "under" it (as
        # Flowable's lock row, timestamped by each node's own clock, would)
        return "a clock ahead forces the global acquire lock its holder still holds"
    if v.invariant == "liveness":
        msg = v.message
        # a crashed (or cut-off) holder's lock that nothing frees: lock_expiry never (the
        # Zeebe-like server until a restart), or reset with no reset thread; the check has
        # verified the setting before it says so
        if "the lock never frees" in msg:
            return "a lock nothing frees, held by a node that is gone"
        # an operator suspended it and none activates it: the operator stranded it
        if "suspended and no activation is scheduled" in msg and any(
                "suspend" in op for op in doc.get("operations", [])):
            return "suspended by an operator, never activated"
        # the fake clock's ticks are finite: a ticks node with work left after the last
        # tick can never claim it
        if "the clock has no tick left" in msg:
            return "the fake clock ran out of ticks"
    return None


# --- known bugs: recognised by their signature, counted, not reported again ------------------
# A bug the fuzz finds is fixed and held by its shrunk scenario (tests/test_audit_findings.py);
# one that cannot be fixed at once gets an entry here, recognised by a narrow signature, until
# its fix lands. (K1-K5, F2-F4, F6, F7 and E1 were found, fixed, and their entries removed.)

def known_violation(doc: dict, sc: Scenario, v: Any, result: Any = None) -> str | None:
    """A violation of a bug found and not fixed yet (none today: each one found is fixed
    and held by its shrunk scenario in tests/test_audit_findings.py)."""
    return None


def known_crash(doc: dict, exc: BaseException, frame: str) -> str | None:
    """A crash of a bug found and not fixed yet (none today)."""
    return None


# --- running and classing ---------------------------------------------------------------------

def innermost(exc: BaseException) -> BaseException:
    """The exception a run raised where it happened (the event loop re-raises a process's
    failure as a copy, caused by the original)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def last_frame(exc: BaseException) -> str:
    tb = traceback.extract_tb(innermost(exc).__traceback__)
    if not tb:
        return "?"
    f = tb[-1]
    parts = Path(f.filename).parts
    short = "/".join(parts[parts.index("jobsim"):]) if "jobsim" in parts else parts[-1]
    return f"{short}:{f.lineno} in {f.name}"


def judge(doc: dict) -> Outcome:
    """Validate, price, run and analyse every run of ``doc``; the outcome's class."""
    try:
        runs = variants_of(doc, "<fuzz>")
    except ScenarioError as exc:
        return Outcome("invalid", str(exc).splitlines()[0], str(exc))
    ratios: list[tuple[str, float, float, bool]] = []
    known: list[str] = []
    for sc in runs:
        name = sc.variant or "base"
        try:
            est = estimate(sc)
            check(est, BUDGET, name)
            guard = Guard(est, BUDGET, name)
            guard.max_events = min(guard.max_events, MAX_EVENTS)
            result = run(sc, guard=guard)
            ratios.append((name, float(result.events), float(est.events),
                           sc.until is None and not result.drained))
            a = analyse(result)
        except BudgetError as exc:
            return Outcome("refused", f"{name}: beyond the fuzz budget", str(exc), ratios)
        except RunStopped as exc:
            return Outcome("hang", f"{name}: stopped by the guard", str(exc), ratios)
        except Exception as exc:  # noqa: BLE001 - every exception is a finding
            frame = last_frame(exc)
            k = known_crash(doc, innermost(exc), frame)
            if k:
                known.append(k)
                continue
            inner = innermost(exc)
            return Outcome("crash", f"{type(inner).__name__} at {frame}: {inner}"[:300],
                           traceback.format_exc(), ratios)
        bad = []
        for v in a.violations:
            if legitimate(doc, sc, v):
                continue
            k = known_violation(doc, sc, v, result)
            if k:
                known.append(k)
            else:
                bad.append(v)
        if bad:
            text = "\n".join(f"  {name}: {v.invariant}: {v.message} (events {list(v.events)})"
                             for v in bad[:8])
            invariants = sorted({v.invariant for v in bad})
            return Outcome("break", f"{name}: " + ", ".join(invariants), text, ratios)
        failed = [vd for vd in a.verdicts if not vd.ok]
        if failed:
            return Outcome("expect", f"{name}: {failed[0].format()}",
                           "\n".join(f"  {name}: {vd.format()}" for vd in failed), ratios)
    if known:
        return Outcome("known", sorted(set(known))[0], "\n".join(sorted(set(known))), ratios)
    return Outcome("ok", "", "", ratios)


def as_yaml(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
