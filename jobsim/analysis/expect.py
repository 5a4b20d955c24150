"""Expectations: what a teaching scenario asserts about its own run.

A scenario's ``expect:`` maps figures of the summary (dotted paths such as ``jobs.lost`` or
``named.urgent.start_delay``) to comparisons (``== 0``, ``<= 31s``). Each is checked against
the summary of the run; one that does not hold — or names a figure the summary lacks — fails
the run (exit 1), so a scenario fails as soon as the lesson it teaches stops being true.

An expectation ``invariants.<name>`` makes that invariant's violations expected: shown in the
summary ("as this scenario expects"), not failing the run. Two kinds of expectation also say
that some jobs are meant to stay unfinished, and the ``liveness`` check leaves those jobs
alone (``declared``): ``named.<job>.outcome: "== pending"``, and a
``crash_recovery.unrecovered`` expectation that 0 would fail (jobs a crashed node held,
never taken again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..executor.config import Expectation

NO_FIGURE = object()  # what ``figure`` returns for a path the summary lacks
#: a comparison with a duration in it (``<= 31s``, ``> 2m``): its figure is in seconds
_DURATION = re.compile(r"[<>=!]=?\s*-?[\d.]+(e-?\d+)?\s*(ms|s|m|h|d)\s*$")
#: the summary's figures in seconds, by the words of their path
_SECONDS = ("latency.", "start_delay", "end_to_end", "end_time", "crash_recovery.delay",
            "seconds", "idle_wait")


def seconds_figure(path: str) -> bool:
    """Whether the summary's figure at ``path`` is a time, in seconds, by its words."""
    return any(w in path for w in _SECONDS)


def in_seconds(e: Expectation) -> bool:
    """Whether the figure ``e`` compares is a time (seconds): its value was written as a
    duration, or its path names a time."""
    return bool(_DURATION.search(e.text)) or seconds_figure(e.path)


@dataclass(frozen=True)
class Verdict:
    expectation: Expectation
    actual: Any
    ok: bool
    #: why a figure the summary can have is not in this run (``absent``)
    why: str = ""

    def format(self) -> str:
        if self.actual is NO_FIGURE:
            shown = f"no figure in this run: {self.why}" if self.why else "no such figure"
        elif self.actual is None:
            shown = "none: undefined in this run (a percentile of no jobs, a rate over no time)"
        elif isinstance(self.actual, (int, float)) and not isinstance(self.actual, bool) \
                and in_seconds(self.expectation):
            shown = f"{self.actual:.6g} s"
        elif isinstance(self.actual, float):
            shown = f"{self.actual:.6g}"
        else:
            shown = repr(self.actual)
        mark = "ok  " if self.ok else "FAIL"
        return f"{mark} {self.expectation.text}  (actual: {shown})"


def figure(summary: dict[str, Any], path: str) -> Any:
    """The value at a dotted path of the summary, or a sentinel when there is none."""
    cur: Any = summary
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return NO_FIGURE
    return cur


def evaluate(expectations: tuple[Expectation, ...], summary: dict[str, Any]) -> list[Verdict]:
    out = []
    for e in expectations:
        actual = figure(summary, e.path)
        ok = actual is not NO_FIGURE and e.holds(actual)
        out.append(Verdict(e, actual, ok,
                           absent(summary, e.path) if actual is NO_FIGURE else ""))
    return out


def absent(summary: dict[str, Any], path: str) -> str:
    """Why the summary has no figure at ``path`` where its parent is there: a distribution
    of nothing (its ``n`` is 0: a crash that stranded no job has no delay to take up);
    "" where the parent is missing too."""
    head, _, last = path.rpartition(".")
    parent = figure(summary, head) if head else NO_FIGURE
    if not isinstance(parent, dict) or parent.get("n") != 0:
        return ""
    if head == "crash_recovery.delay":
        return "the crash stranded no job, so there is no delay to take one up"
    return f"{head} is over no value ({head}.n is 0), so it has no {last}"


def declared(expectations: tuple[Expectation, ...]) -> tuple[set[str], bool]:
    """What a scenario's own expectations say it expects to stay unfinished (the liveness
    check leaves these alone): the job names it expects still pending at the end
    (``named.<job>.outcome: "== pending"``), and whether it expects jobs a crashed node held
    never to be taken again (a ``crash_recovery.unrecovered`` expectation that 0 fails)."""
    names = {e.path.split(".")[1] for e in expectations
             if e.path.startswith("named.") and e.path.endswith(".outcome")
             and e.path.count(".") == 2 and e.op == "==" and e.value == "pending"}
    unrecovered = any(e.path == "crash_recovery.unrecovered" and not e.holds(0)
                      for e in expectations)
    return names, unrecovered
