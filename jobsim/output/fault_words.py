"""The fault windows of a run (``summary["effects"]["faults"]``, ``analysis.fault_windows``)
told in sentences for "What the run shows", before the other effects: what each window
was and what the jobs due in it paid against those due before it."""

from __future__ import annotations

from typing import Any

from ..analysis.fault_windows import paid
from .numbers import first_up as _first_up, pct as _pct, seconds as _s


#: fault windows told in words at most; the others are in summary.json
TOLD_WINDOWS = 3


def fault_sentences(faults: dict[str, Any] | None, end: float | None) -> list[str]:
    """Each fault window (``analysis/fault_windows.py``, the first ``TOLD_WINDOWS``): what
    it was and what the jobs due in it paid against those due before it (or outside every
    window): a slow database or a partition in their start delay, a service's outage or
    brown-out in its calls that failed and the time from due to done of the jobs that call
    it."""
    if not faults:
        return []
    windows = [w for w in faults["windows"].values() if _costly(w)]
    out = [_window(w, end) + _overlapped(w, faults["windows"], end)
           for w in windows[:TOLD_WINDOWS]]
    kept, counted = max(0, len(windows) - TOLD_WINDOWS), faults.get("more", 0)
    if kept + counted:
        out.append(f"{kept + counted:,} more fault window{'s' if kept + counted != 1 else ''}: "
                   + ", ".join(([f"{kept:,} in summary.json (effects.faults)"] if kept else [])
                               + ([f"{counted:,} beyond those counted only"] if counted
                                  else [])) + ".")
    return out


def _named(w: dict[str, Any]) -> str:
    """A window by what it was: "the database's slow window", "node-2's down time"."""
    if w["kind"] == "slow_db":
        return "the database's slow window"
    return f"{w['what']}'s " + {"partition": "partition", "down": "down time", "pause": "pause",
                                "outage": "outage", "brownout": "brown-out"}[w["kind"]]


def _overlapped(w: dict[str, Any], windows: dict[str, dict[str, Any]],
                end: float | None) -> str:
    """The other windows that jobs due in ``w`` were due in too (a slow database and a crash
    in it, two services down at once): they paid for both, which neither window's figures
    set apart. Said where one job or more was due in both."""
    both = [(windows[k], n) for k, n in (w.get("overlaps") or {}).items() if k in windows]
    out = ""
    for o, n in both[:2]:
        until = "the run's end" if end is not None and o["to"] >= end else _s(o["to"])
        jobs = "1 job" if n == 1 else f"{n:,} of the jobs"
        out += (f" {_first_up(jobs)} due in {_named(w)} {'was' if n == 1 else 'were'} due in "
                f"{_named(o)} too (t={_s(o['from'])} to {until}), and paid for both.")
    if len(both) > 2:
        out += f" Others were due in {len(both) - 2:,} more windows too."
    return out


def _costly(w: dict[str, Any]) -> bool:
    """Whether a window is worth a sentence: every one but a node's downtime, which is told
    where the jobs due in it started later than those due before it, by half again and a
    second (the others' nodes may have had the threads to spare)."""
    if w["kind"] not in ("down", "pause"):
        return True
    return w["jobs"] > 0 and paid(w.get("start_delay_mean"), w.get("baseline_start_delay_mean"))


def _slower(w: dict[str, Any]) -> str:
    """How a slow database's latency stood in a window: "50 times slower", "up to 100
    times slower" (its factor changed in it), "5 times faster"."""
    hi, lo = w["factor"], w.get("factor_min", w["factor"])
    if lo < 1 <= hi or (lo < 1 and lo != hi):
        return f"at {lo:g} to {hi:g} times its latency"
    if hi < 1:
        return f"{1 / hi:.3g} times faster"
    return f"{'up to ' if lo != hi else ''}{hi:g} times slower"


def _window(w: dict[str, Any], end: float | None) -> str:
    until = "the run's end" if end is not None and w["to"] >= end else f"t={_s(w['to'])}"
    span = f"from t={_s(w['from'])} to {until}"
    if w["kind"] == "slow_db":
        what = f"The database ran {_slower(w)} {span}"
    elif w["kind"] == "partition":
        what = f"{w['what']} was cut off from the database {span}"
    elif w["kind"] == "pause":
        what = f"{w['what']} was paused {span}, its threads held with it"
    elif w["kind"] == "down":
        what = f"{w['what']} was down {span}, its threads with it"
    elif w["kind"] == "outage":
        what = f"{w['what']} was down {span}"
    else:
        errors = (f", {_pct(w['error_share'])} of its calls answered with its error"
                  if w["error_share"] else "")
        what = f"{w['what']} browned out {span} (latency ×{w['factor'] or 1:g}{errors})"
    base = (f" for the {w['baseline_jobs']:,} due "
            f"{'before it' if w['baseline'] == 'before' else 'outside it'}")
    if w["kind"] in ("slow_db", "partition", "down", "pause"):
        if not w["jobs"]:
            return what + ": no job fell due in it."
        if w["start_delay_mean"] is None:
            return what + f": none of the {w['jobs']:,} jobs due then started."
        never = f", {w['never_started']:,} of them never" if w["never_started"] else ""
        against = (f", against {_s(w['baseline_start_delay_mean'])}{base}"
                   if w["baseline_start_delay_mean"] is not None else "")
        # a backlog it left: gone later than the worst start delay before it, and a second
        left = max(1.0, w["baseline_start_delay_max"] or 0.0)
        gone = (f"; the backlog it left was gone at t={_s(w['cleared_at'])}" if
                w.get("cleared_at") is not None and w["cleared_at"] > w["to"] + left else
                "; the jobs due after it waited behind the backlog it left, to the last one"
                if w.get("cleared_at") is None and w.get("jobs_after") and
                w["start_delay_mean"] > left else "")
        return (what + f": the {w['jobs']:,} jobs due then started a mean "
                f"{_s(w['start_delay_mean'])} after they were due (the latest "
                f"{_s(w['start_delay_max'])}{never}){against}{gone}.{_lost(w)}")
    n, took = w["failed_calls"], w.get("failed_call_mean")
    if not n:
        failed = "no call made to it then failed"
    elif n == 1:
        failed = "1 call made to it then failed" + (
            f", after {_s(took)} (the time it held its thread)" if took else "")
    else:
        failed = f"{n:,} calls made to it then failed" + (
            f", after a mean {_s(took)} each (the time they held their threads)" if took
            else "")
    if not w["jobs"]:
        return what + f": {failed}, and no job that calls it fell due in it."
    jobs = f"{w['jobs']:,} job{'s' if w['jobs'] != 1 else ''} due then that call it"
    if not w["done"]:
        return what + f": {failed}, and none of the {jobs} was done{_gave_up(w)}."
    against = (f", against {_s(w['baseline_done_after_due_mean'])}{base}"
               if w["baseline_done_after_due_mean"] is not None else "")
    which = f"the {jobs} were" if w["done"] == w["jobs"] else \
        f"{w['done']:,} of the {jobs} were"
    return (what + f": {failed}, and {which} done a mean {_s(w['done_after_due_mean'])} "
            f"after they were due{against}{_gave_up(w)}.")


def _lost(w: dict[str, Any]) -> str:
    """A partition's completions that could not be written: their jobs stayed locked by the
    cut-off node until their locks ran out (and were done that much later), or were still
    locked when the run ended."""
    n, done = w.get("lost_completions") or 0, w.get("lost_done") or 0
    after = w.get("lost_done_after_due_mean")
    if not n:
        return ""
    ran = (f" {w['what']} ran 1 job to its end in it but could not write its completion"
           if n == 1 else f" {w['what']} ran {n:,} jobs to their end in it but could not "
           f"write their completions")
    if done == n and after is not None:
        return ran + (f", so the job stayed locked until its lock ran out; it was done "
                      f"{_s(after)} after it was due." if n == 1 else
                      f", so those jobs stayed locked until their locks ran out; they were "
                      f"done a mean {_s(after)} after they were due.")
    if not done:
        return ran + (", and the job was still locked by it when the run ended." if n == 1
                      else ", and those jobs were still locked by it when the run ended.")
    return ran + (f"; {done:,} of them {'was' if done == 1 else 'were'} done once "
                  f"{'its lock' if done == 1 else 'their locks'} ran out, the other "
                  f"{n - done:,} still locked by it when the run ended.")


def _gave_up(w: dict[str, Any]) -> str:
    """The jobs due in a window whose retries ran out (dead-lettered), and when the last of
    them did: a retry policy shorter than the window gives up inside it."""
    n = w.get("dead_lettered") or 0
    if not n:
        return ""
    return (f"; {n:,} of them went to the dead-letter table, "
            f"{'the last ' if n > 1 else ''}at t={_s(w['dead_lettered_last'])}")
