"""The statistics' window: a warm-up and a cool-down that the summary's statistics leave out.

``warmup`` and ``cooldown`` are top-level keys of the file (beside ``until`` and
``horizon``, the run's time), and flags of ``jobsim run`` and ``jobsim sweep``
(``--warmup 5m --cooldown 1m``, over the file's). Together they must leave part of the run:
shorter than ``until``, or than ``horizon`` for a drained run (whose end is known only after
it). What the window leaves out is said in ``analysis/window.py``; the run itself never reads
it, so its trace is the same with any window.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..base.durations import format_duration
from ..base.errors import Problem, ScenarioError
from .spec import Dur

_MAX = 3650 * 86400.0
WARMUP = Dur(0.0, hi=_MAX, doc="the first stretch of the run that the statistics leave out "
                               "(latency, throughput, the nodes' busy share and counts): "
                               "the start-up, an empty table and the nodes' first polls; "
                               "the correctness counts and the invariants keep the whole run")
COOLDOWN = Dur(0.0, hi=_MAX, doc="the last stretch of the run (before its end: until, or the "
                                 "instant it drained) that the statistics leave out")


def said(seconds: float) -> str:
    """A window's length as a reader says it: ``5 min``, ``90s``, ``2h``, ``250ms``."""
    if 60 <= seconds < 3600 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    if seconds >= 60 and seconds != int(seconds):  # an instant of the run: to the second
        return f"{seconds:,.0f} s"
    return format_duration(seconds)


def _end_words(until: Any, horizon: float) -> tuple[float, str]:
    """The longest the run may last, and how the file says it."""
    if isinstance(until, (int, float)):
        return float(until), f"until: {said(until)}"
    return horizon, f"until: drained, by its horizon: {said(horizon)}"


def window_problems(v: dict[str, Any], problems: list[Problem],
                    named: tuple[str, str] = ("warmup", "cooldown")) -> None:
    """The warm-up and cool-down must leave part of the run: added to ``problems`` if not.
    ``named``: how the message names the two (a file's keys or the command's flags)."""
    warmup, cooldown = v.get("warmup"), v.get("cooldown")
    horizon = v.get("horizon")
    if not isinstance(warmup, float) or not isinstance(cooldown, float) or \
            not isinstance(horizon, float):
        return  # a bad value of one of them was reported as such
    end, words = _end_words(v.get("until"), horizon)
    if warmup + cooldown >= end:
        path = named[0] if warmup > 0 else named[1]
        problems.append(Problem(
            path, f"a warm-up and a cool-down that together leave part of the run ({words})",
            f"{named[0]} {said(warmup)} + {named[1]} {said(cooldown)}",
            "shorten them, or lengthen the run"))


def with_window(runs: list[Any], warmup: tuple[float, str] | None,
                cooldown: tuple[float, str] | None, source: str) -> list[Any]:
    """The runs (``Scenario``\\ s) with the command line's ``--warmup`` and ``--cooldown``
    (``(seconds, text)`` each, or None: the file's) over the file's; each is told in the
    run's overrides and written into its document (its ``scenario.yaml``). Raises
    ``ScenarioError`` naming the flags if they leave no part of a run."""
    if warmup is None and cooldown is None:
        return runs
    given = tuple(f"--{k} {g[1]}" for k, g in (("warmup", warmup), ("cooldown", cooldown))
                  if g is not None)
    out, problems = [], []
    for sc in runs:
        w = sc.warmup if warmup is None else warmup[0]
        c = sc.cooldown if cooldown is None else cooldown[0]
        found: list[Problem] = []
        window_problems({"warmup": w, "cooldown": c, "horizon": sc.horizon, "until": sc.until},
                        found, ("--warmup" if warmup is not None else "warmup",
                                "--cooldown" if cooldown is not None else "cooldown"))
        problems += [dataclasses.replace(p, path=(f"variants.{sc.variant} → " if sc.variant
                                                  else "") + p.path) for p in found]
        doc = dict(sc.document)
        for key, g in (("warmup", warmup), ("cooldown", cooldown)):
            if g is not None:
                doc[key] = g[1]
        out.append(dataclasses.replace(sc, warmup=w, cooldown=c, document=doc,
                                       overrides=sc.overrides + given))
    if problems:
        raise ScenarioError(problems, source)
    return out
