"""The fault windows of a run (``summary["effects"]["faults"]``, ``analysis.fault_windows``)
told in sentences for "What the run shows", before the other effects: what each window
was and what the jobs due in it paid against those due before it."""

from __future__ import annotations

from typing import Any

from .numbers import pct as _pct, seconds as _s


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
    every = list(faults["windows"].values())
    windows = [w for w in every if _costly(w)]
    out = [_window(w, end) + _overlapped(w, every, end) for w in windows[:TOLD_WINDOWS]]
    kept, counted = max(0, len(windows) - TOLD_WINDOWS), faults.get("more", 0)
    if kept + counted:
        out.append(f"{kept + counted:,} more fault window{'s' if kept + counted != 1 else ''}: "
                   + ", ".join(([f"{kept:,} in summary.json (effects.faults)"] if kept else [])
                               + ([f"{counted:,} beyond those counted only"] if counted
                                  else [])) + ".")
    return out


#: the windows whose cost is read in the start delays of the jobs due in them
DELAYING = ("slow_db", "partition", "down")


def _named(w: dict[str, Any]) -> str:
    return {"slow_db": "the database's slow window", "partition": f"{w['what']}'s partition",
            "down": f"{w['what']}'s down time"}[w["kind"]]


def _overlapped(w: dict[str, Any], every: list[dict[str, Any]], end: float | None) -> str:
    """Where another window that delays starts overlaps ``w`` (a slow database and a
    crash in it): the jobs due in both paid for both, which neither figure sets apart."""
    if w["kind"] not in DELAYING or not w["jobs"]:
        return ""
    others = [o for o in every if o is not w and o["kind"] in DELAYING and
              o["from"] < w["to"] and w["from"] < o["to"]]
    if not others:
        return ""

    def span(o: dict[str, Any]) -> str:
        until = "the run's end" if end is not None and o["to"] >= end else f"{_s(o['to'])}"
        return f"{_named(o)} (t={_s(o['from'])} to {until})"
    return (f" It overlapped {' and '.join(span(o) for o in others[:2])}"
            + (f" and {len(others) - 2:,} more" if len(others) > 2 else "")
            + ": the jobs due in both paid for both.")


def _costly(w: dict[str, Any]) -> bool:
    """Whether a window is worth a sentence: every one but a node's downtime, which is told
    where the jobs due in it started later than those due before it, by half again and a
    second (the others' nodes may have had the threads to spare)."""
    if w["kind"] != "down":
        return True
    mean, base = w.get("start_delay_mean"), w.get("baseline_start_delay_mean")
    return w["jobs"] > 0 and (mean is None or base is None or (
        mean >= 1.5 * base and mean >= base + 1.0))


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
    if w["kind"] in ("slow_db", "partition", "down"):
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
    failed = (f"{n:,} call{'s' if n != 1 else ''} made to it then failed"
              + (f", after a mean {_s(took)} each (the time {'they' if n != 1 else 'it'} "
                 f"held {'their threads' if n != 1 else 'its thread'})" if took and n else ""))
    if not w["jobs"]:
        return what + f": {failed}, and no job that calls it fell due in it."
    jobs = f"{w['jobs']:,} job{'s' if w['jobs'] != 1 else ''} due then that call it"
    if not w["done"]:
        return what + f": {failed}, and none of the {jobs} was done."
    against = (f", against {_s(w['baseline_done_after_due_mean'])}{base}"
               if w["baseline_done_after_due_mean"] is not None else "")
    which = f"the {jobs} were" if w["done"] == w["jobs"] else \
        f"{w['done']:,} of the {jobs} were"
    return (what + f": {failed}, and {which} done a mean {_s(w['done_after_due_mean'])} "
            f"after they were due{against}{_gave_up(w)}.")


def _lost(w: dict[str, Any]) -> str:
    """A partition's completions that could not be written: their jobs stayed locked by the
    cut-off node until their locks expired, and were done that much later."""
    n, after = w.get("lost_completions") or 0, w.get("lost_done_after_due_mean")
    if not n:
        return ""
    if n == 1:
        done = f"; it was done {_s(after)} after it was due" if after is not None else ""
        return (f" {w['what']} ran 1 job to its end in it but could not write its "
                f"completion, so the job stayed locked until its lock ran out{done}.")
    done = f"; they were done a mean {_s(after)} after they were due" if after is not None \
        else ""
    return (f" {w['what']} ran {n:,} jobs to their end in it but could not write their "
            f"completions, so those jobs stayed locked until their locks ran out{done}.")


def _gave_up(w: dict[str, Any]) -> str:
    """The jobs due in a window whose retries ran out (dead-lettered), and when the last of
    them did: a retry policy shorter than the window gives up inside it."""
    n = w.get("dead_lettered") or 0
    if not n:
        return ""
    return (f"; {n:,} of them went to the dead-letter table, "
            f"{'the last ' if n > 1 else ''}at t={_s(w['dead_lettered_last'])}")
