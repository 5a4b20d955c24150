"""The file's words for nodes' clocks: a signed offset, a drift, and the ``clock`` fault.

``nodes[].clock_offset`` (or ``executor.clock_offset`` for every node) is a duration that
may be negative (``-25s``: 25 seconds behind); ``clock_drift`` is the seconds a clock
gains per second, above −1 (a clock that stops or runs backwards is refused);
``{at, clock: NODE, step, drift}`` steps a node's clock by ``step`` at ``at`` and/or runs it
at ``drift`` from then on. ``executor.clock`` says whose clock the claims use.
"""

from __future__ import annotations

import math
from typing import Any

from ..base.durations import parse_duration
from ..base.errors import Problem
from .spec import Dur, Field, Obj, Str, show

#: a drift of a year's worth of seconds per second is a typo, not a clock
DRIFT_HI = 1.0
#: an offset beyond a year is a typo too
OFFSET_HI = 366 * 86400.0


class SignedDur(Field):
    """A duration with a unit that may be negative (``-25s``)."""

    def __init__(self, default: Any = 0.0, doc: str = "", hi: float = OFFSET_HI):
        self.default, self.doc, self.hi = default, doc, hi

    def check(self, value, path, problems):
        text = value.strip() if isinstance(value, str) else value
        sign = -1.0 if isinstance(text, str) and text.startswith("-") else 1.0
        try:
            seconds = sign * parse_duration(text[1:] if sign < 0 else text)
        except (ValueError, TypeError):
            problems.append(Problem(path, "a duration with a unit, ahead (30s) or behind "
                                          "(-30s)", show(value)))
            return None
        if not abs(seconds) <= self.hi:
            problems.append(Problem(path, f"a duration from -{self.hi:g}s to {self.hi:g}s",
                                    show(value)))
            return None
        return seconds

    def _file_form(self, value):
        from ..base.durations import format_duration

        if isinstance(value, (int, float)):
            return ("-" if value < 0 else "") + format_duration(abs(value))
        return value

    def schema(self):
        from ..base.durations import SIGNED_SCHEMA_PATTERN

        return self._described({"type": "string", "pattern": SIGNED_SCHEMA_PATTERN})


class Drift(Field):
    """Seconds a clock gains per second: above −1 (−1 stops it, below runs it backwards)."""

    def __init__(self, default: Any = 0.0, doc: str = ""):
        self.default, self.doc = default, doc

    def check(self, value, path, problems):
        ok = not isinstance(value, bool) and isinstance(value, (int, float)) and \
            math.isfinite(value)
        if ok and -1.0 < value <= DRIFT_HI:
            return float(value)
        if ok and value <= -1.0:
            expected = (f"a drift above -1 and at most {DRIFT_HI:g} (seconds gained per "
                        "second): at -1 the clock stops, below it runs backwards")
        else:
            expected = (f"a number above -1 and at most {DRIFT_HI:g}: seconds the clock "
                        "gains per second (0.001 = 1 ms a second; negative: it loses)")
        problems.append(Problem(path, expected, show(value)))
        return None

    def schema(self):
        return self._described({"type": "number", "exclusiveMinimum": -1.0,
                                "maximum": DRIFT_HI})


OFFSET = SignedDur(doc="how far the node's clock is ahead of true time at the start "
                       "(-25s: behind); used where executor.clock is node")
DRIFT = Drift(doc="seconds the node's clock gains per second (negative: loses); used where "
                  "executor.clock is node")

CLOCK_FAULT = Obj({"at": Dur(), "clock": Str(doc="the node whose clock changes"),
                   "step": SignedDur(doc="the clock jumps by this much at `at` (an NTP "
                                         "step, a VM restored from a snapshot)"),
                   "drift": Drift(None, doc="the clock runs at this drift from `at` on")},
                  ("at", "clock"))


def clock_checks(v: dict[str, Any], nodes: list[dict[str, Any]], ex: dict[str, Any],
                 seen: set[str], known: list[str], problems: list[Problem]) -> None:
    """A clock fault names a node and changes something; nodes' own clocks need claims that
    read them: not a broker's (the server activates on its own clock) nor a long poll's
    (the server answers a held request when a row falls due by its clock)."""
    from .spec import suggest

    faults = [f if isinstance(f, dict) else {} for f in
              (v.get("faults") if isinstance(v.get("faults"), list) else [])]
    for i, f in enumerate(faults):
        if "clock" not in f:
            continue
        name = f.get("clock")
        if isinstance(name, str) and name not in seen:
            problems.append(Problem(f"faults[{i}].clock", "the name of a node", show(name),
                                    suggest(name, known)))
        if not f.get("step") and f.get("drift") is None:
            problems.append(Problem(f"faults[{i}]", "a step, a drift or both (a clock fault "
                                    "that changes nothing)", "neither"))
    if ex.get("clock", "node") != "node":
        return
    skewed = [i for i, n in enumerate(nodes) if n.get("clock_offset", ex.get("clock_offset"))
              or n.get("clock_drift", ex.get("clock_drift"))]
    if not skewed and not any("clock" in f for f in faults):
        return
    for i, n in enumerate(nodes):
        strategy = n.get("acquisition", ex.get("acquisition"))
        wakeup = n.get("wakeup", ex.get("wakeup"))
        if strategy == "broker" or wakeup == "long_poll":
            what = "acquisition: broker" if strategy == "broker" else "wakeup: long_poll"
            problems.append(Problem("executor.clock", "database where a node's clock may be "
                                    "off and a server decides (the server activates jobs and "
                                    "answers held requests on its own clock)",
                                    f"node (the default) with nodes[{i}] on {what}"))
            return
