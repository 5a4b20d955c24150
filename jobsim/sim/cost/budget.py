"""The budget a run must fit in, the estimate it is held to, and the refusal of a run beyond it.

An ``Estimate`` is the events and memory a run will cost, with what drives them; ``check``
refuses a run whose estimate is beyond its ``Budget`` (``DEFAULT_EVENTS`` events,
``DEFAULT_MEMORY`` bytes; the command line's ``--budget`` and ``--memory-budget`` raise
them) with the estimate, the settings that drive it, and how to raise it. The figures are
written for people: "12.3 million", "1.5 GB", "4.0 min".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: the default budget: about a minute or two of simulation on a laptop
DEFAULT_EVENTS = 20_000_000
DEFAULT_MEMORY = 4 * 1024 ** 3
#: a sweep's or a hunt's cache bound unless ``--cache-limit`` says otherwise (here, not in
#: ``tools.sweep.disk``, so that the command line's parser reads it without the sweep)
DEFAULT_CACHE_LIMIT = 1024 ** 3
#: the largest budget the command line takes
MAX_EVENTS = 10 ** 12
MAX_MEMORY = 1024 ** 5


class BudgetError(Exception):
    """A run (or a sweep) would cost more than its budget: the message says how much, why,
    and how to raise the budget."""


@dataclass(frozen=True)
class Budget:
    events: float = DEFAULT_EVENTS
    memory: float = DEFAULT_MEMORY


@dataclass
class Estimate:
    """The estimated events and memory of one run, with what drives them."""

    events: float
    memory_bytes: float
    #: (what, events) for each part, largest first
    parts: list[tuple[str, float]] = field(default_factory=list)
    jobs: float = 0.0
    executions: float = 0.0
    span: float = 0.0
    #: the raw counts behind the parts (executions, jobs, polls, periodic ticks)
    counts: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        return (f"about {_count(self.events)} events and {_bytes(self.memory_bytes)} of "
                f"memory ({_counted(self.jobs, 'job')}, "
                f"{_counted(self.executions, 'execution')} over {_seconds(self.span)} of "
                f"simulated time)")

    def drivers(self, n: int = 3) -> list[str]:
        total = max(self.events, 1.0)
        if not math.isfinite(total):
            return [what for what, ev in self.parts[:n] if not math.isfinite(ev)]
        return [f"{what}: {_count(ev)} events ({ev / total:.0%})"
                for what, ev in self.parts[:n] if ev >= 0.01 * total]

    def over(self, budget: Budget) -> str | None:
        """Why this estimate is beyond ``budget``, or None."""
        if self.events > budget.events:
            return (f"estimated {_count(self.events)} events, beyond the budget of "
                    f"{_count(budget.events)}")
        if self.memory_bytes > budget.memory:
            return (f"estimated {_bytes(self.memory_bytes)} of memory, beyond the budget of "
                    f"{_bytes(budget.memory)}")
        return None


def check(estimate: Estimate, budget: Budget, what: str) -> None:
    """Raise BudgetError when ``estimate`` is beyond ``budget``; ``what`` names the run."""
    why = estimate.over(budget)
    if why is None:
        return
    if not math.isfinite(estimate.events):
        raise BudgetError("\n".join(
            [f"{what}: the run would never end: "
             + "; ".join(estimate.drivers() or ["unboundedly many events"]) + ".",
             "  fix: let time pass between the runs (a run time, a fail_wait or a backoff), "
             "or let the jobs end (fail_retries: decrement, a handler that succeeds)"]))
    lines = [f"{what}: {why}.", f"  estimate: {estimate.describe()}"]
    drivers = estimate.drivers()
    if drivers:
        lines.append("  driven by: " + "; ".join(drivers))
    need_events = max(budget.events, estimate.events * 1.1)
    need_mem = max(budget.memory, estimate.memory_bytes * 1.1)
    if need_events > MAX_EVENTS or need_mem > MAX_MEMORY:
        lines.append(f"  that is beyond what jobsim runs at all ({MAX_EVENTS:.0e} events, "
                     f"{_bytes(MAX_MEMORY)}): change the settings above (fewer jobs, "
                     "attempts or nodes, a longer interval, a shorter run)")
        raise BudgetError("\n".join(lines))
    lines.append("  if this is what you mean, raise the budget: --budget "
                 f"{events_flag(need_events)}"
                 + (f" --memory-budget {_bytes(need_mem).replace(' ', '')}"
                    if estimate.memory_bytes > budget.memory else ""))
    raise BudgetError("\n".join(lines))


def events_flag(x: float) -> str:
    """A ``--budget`` of at least ``x`` events, as a user types it: rounded up (never below
    what is needed) to two significant digits, 540000 or 2.4e9."""
    exp = int(math.floor(math.log10(max(x, 1.0)))) - 1
    value = math.ceil(x / 10.0 ** exp - 1e-9) * 10 ** exp if exp > 0 else math.ceil(x)
    if value < 1e7:
        return f"{int(value)}"
    mantissa, power = f"{value:.1e}".split("e")
    return f"{float(mantissa):g}e{int(power)}"


def _counted(x: float, one: str) -> str:
    """``x`` things, "1 job" or "3 jobs"."""
    n = _count(x)
    return f"{n} {one}" if n == "1" else f"{n} {one}s"


def _count(x: float) -> str:
    if not math.isfinite(x):
        return "unboundedly many"
    if x >= 1e12:
        return f"{x:.1e}"
    for unit, size in (("billion", 1e9), ("million", 1e6)):
        if x >= size:
            return f"{x / size:,.1f} {unit}"
    return f"{x:,.0f}"


def _bytes(x: float) -> str:
    if not math.isfinite(x):
        return "unbounded"
    if x > 1024 ** 5:
        return f"{x:.1e} bytes"
    if x == 1024 ** 5:
        return "1 PB"
    for unit, size in (("TB", 1024 ** 4), ("GB", 1024 ** 3), ("MB", 1024 ** 2)):
        if x >= size:
            return f"{x / size:,.1f} {unit}"
    return f"{x / 1024:,.0f} kB"


def _seconds(s: float) -> str:
    if not math.isfinite(s):
        return "forever"
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= size:
            return f"{s / size:,.1f} {unit}"
    return f"{s:,.3g} s"
