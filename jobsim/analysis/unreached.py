"""What a scenario scheduled that its run never reached: a fault, an operation, a service's
outage or brown-out set after the instant the run ended. A run until drained ends when its
last job does, whatever the file scheduled later; the crash at 12 minutes of a run that
drained at 7 does not happen, and a reader who does not see that believes it was tested.
"""

from __future__ import annotations

from typing import Any

from ..base.durations import format_duration


def unreached(scenario: Any, end: float) -> list[str]:
    """Each scheduled thing after ``end``, by its place in the file and in words
    ("faults[1] (crash node-3 at 12m)"), in the file's order."""
    out = []
    for i, f in enumerate(scenario.faults):
        if f.at > end:
            what = f"{f.kind} {f.node}" if f.node else f.kind
            out.append(f"faults[{i}] ({what} at {format_duration(f.at)})")
    for name, spec in scenario.services.items():
        for key, word in (("outages", "outage"), ("brownouts", "brown-out")):
            for i, item in enumerate(getattr(spec, key)):
                if item.at > end:
                    out.append(f"services.{name}.{key}[{i}] ({word} at "
                               f"{format_duration(item.at)})")
    return out


def unreached_note(scenario: Any, end: float, drained: bool) -> str | None:
    """One sentence naming what was scheduled after the run's end, or None."""
    missed = unreached(scenario, end)
    if not missed:
        return None
    how = "drained" if drained else "ended"
    return (f"{_joined(missed)} never happened: the run {how} at {format_duration(end)}, "
            f"before {'them' if len(missed) > 1 else 'it'}")


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
