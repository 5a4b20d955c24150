"""The offered load against capacity (``summary["effects"]["load"]``), for ``effects.detect``.

**Load** (``load``). The work offered (the thread-seconds the jobs' executions took, a job
never run counted at its class's mean) per second of its arrival window (a class's first to
last due time; the run's, for a class that arrives at one instant), against the threads
that were up: ``offered`` is the utilisation it asks for, in
total and by priority class, the class and those above it. At 1 or more the run is
``overloaded``: the backlog grows while jobs arrive and no ordering bounds the waits, which
grow with the length of the stream. Arrivals over fewer than ``SUSTAINED`` mean runs' lengths
(or under 50 jobs), or where half the work fell due within half as long, are a ``burst``:
no rate to speak of. Below 1, a class whose worst wait
is many times the top class's, at least half of it the work of higher classes' jobs due after
its longest-waiting job that ran first (``overtaken``, in seconds of the threads up), is
``starved`` by the ordering (a wait for the polls or a queue, which any ordering has, is
not); under ``order: aging``, where a lower class waited as long as aging takes to lift it
over the top class (``aging_horizon``: the priority gap over
the aging rate), the run is ``aging_bounded`` (aging came into play); else ``stable``.

Pure functions of the jobs, their executions and the nodes' figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .saturation import rounded as _r

#: arrivals over fewer than this many mean runs' lengths are a burst, not a rate (20 had
#: called 1,000 jobs of 60 s at 1/s on 8 threads, offered 7.7, a burst, and told nothing of
#: their waits of 6,600-6,800 s); half the work within half that span is a burst too
SUSTAINED = 10.0
#: a class waiting this many times longer than the top class's worst wait is starved, when
#: at least ``OVERTAKEN`` of its longest wait is higher classes' work that overtook it
STARVED = 10.0
OVERTAKEN = 0.5


def load(jobs: pd.DataFrame, runs: tuple[np.ndarray, ...], node_figures: dict[str, Any],
         aging: float, end: float) -> dict[str, Any] | None:
    """Offered load against capacity, by priority class (see the module's docstring);
    ``aging``: the aging rate (priority a second) of ``order: aging``, else 0; ``end``: the
    run's length, over which the nodes' ``time_up`` is counted. None under 20 jobs, and
    where no job ran (no work to weigh a job by)."""
    if len(jobs) < 20 or not len(runs[0]):
        return None
    due = jobs["due"].to_numpy(dtype=float)
    window = float(due.max() - due.min())
    # the threads up on average over the run (an idle tail is up, and counted, like the rest)
    threads = sum((f.get("threads") or 0) * (f.get("time_up") or 0.0) for f in
                  node_figures.values()) / end if end > 0 else 0.0
    if window <= 0 or threads <= 0:
        return None
    ids = jobs["id"].to_numpy()
    order = np.argsort(ids, kind="stable")
    at = np.searchsorted(ids[order], runs[3])
    known = (at < len(ids)) & (ids[order][np.minimum(at, len(ids) - 1)] == runs[3])
    where = order[at[known]]
    # float even when nothing ran (numpy's bincount of nothing is integer, weights or not)
    per_job = np.bincount(where, weights=(runs[1] - runs[0])[known],
                          minlength=len(ids)).astype(float)
    per_job[np.bincount(where, minlength=len(ids)) == 0] = np.nan  # never ran
    prio = jobs["priority"].to_numpy()
    classes: dict[str, dict[str, Any]] = {}
    offered = 0.0
    ran_all = per_job[~np.isnan(per_job)]
    mean_work = float(ran_all.mean()) if len(ran_all) else 0.0
    first = jobs["first_start"].to_numpy(dtype=float)
    longest: dict[str, float] = {}  # each class's longest wait, a job never started's too
    for p in sorted(set(prio.tolist()), reverse=True):
        here = prio == p
        ran = per_job[here][~np.isnan(per_job[here])]
        mean = float(ran.mean()) if len(ran) else mean_work  # a class never run: the run's
        total = float(ran.sum()) + mean * int(np.isnan(per_job[here]).sum())
        span = float(due[here].max() - due[here].min())  # the class's own arrivals
        rho = total / (span if span > 0.1 * window else window) / threads
        offered += rho
        delay = (first - due)[here]
        ahead, longest[str(int(p))] = _overtaken(here, prio > p, due, first, per_job,
                                                 threads, end)
        classes[str(int(p))] = {"jobs": int(here.sum()), "offered": _r(rho),
                                "with_higher": _r(offered),
                                "never_started": int(np.isnan(delay).sum()),
                                "worst_wait": _r(float(np.nanmax(delay))) if
                                (~np.isnan(delay)).any() else None,
                                "overtaken": _r(ahead)}
    # a rate needs arrivals spread over many runs' length: a burst has no offered load, nor
    # has one whose later jobs stretch the window (half the work fell due within a short
    # span: a batch of 5,000 reports at 0 s and three small jobs up to 600 s had read
    # "overloaded 2.06×", 1.03× with the last of them at 1,200 s; with six 40 s jobs a
    # minute beside 91 % of the work at 0 s, 2.28× or 0.57× as they came every 30 s or 2 min)
    gap = float(jobs["priority"].max() - jobs["priority"].min())
    short = SUSTAINED * mean_work
    verdict = "burst" if len(jobs) < 50 or window < short or \
        _bulk_span(due, np.where(np.isnan(per_job), mean_work, per_job)) < short / 2 else \
        "overloaded" if offered >= 1.0 else "stable"
    if verdict == "stable" and len(classes) > 1:
        top = classes[max(classes, key=int)]
        scale = max(top["worst_wait"] or 0.0, 1e-9)
        # a class the ordering held back: its longest wait far beyond the top class's, and
        # at least half of it the work of higher classes due after it that ran first (a
        # poll interval, or a queue that any ordering would have, is not starvation)
        starved = [c for c, f in classes.items() if (f["never_started"] or (
            (f["worst_wait"] or 0.0) > STARVED * scale and (f["worst_wait"] or 0) > 1.0))
            and longest[c] > 1.0 and f["overtaken"] >= OVERTAKEN * longest[c]]
        if starved:
            verdict = "starved"
        elif aging > 0 and any((f["worst_wait"] or 0.0) >= (int(max(classes, key=int)) -
                                                           int(c)) / aging > 0
                               for c, f in classes.items()):
            verdict = "aging_bounded"  # a lower job waited long enough to overtake a higher
    return {"offered": _r(offered), "threads": _r(threads), "window": _r(window),
            "by_priority": classes, "verdict": verdict,
            "aging_horizon": _r(gap / aging) if aging > 0 and gap > 0 else None}


def _bulk_span(due: np.ndarray, work: np.ndarray) -> float:
    """The shortest span of due instants that holds half the work."""
    order = np.argsort(due, kind="stable")
    t, cum = due[order], np.cumsum(work[order])
    if not len(cum) or cum[-1] <= 0:
        return 0.0
    before = np.concatenate(([0.0], cum[:-1]))  # the work due before each job
    j = np.searchsorted(cum, before + 0.5 * cum[-1] - 1e-9 * cum[-1])
    ok = j < len(cum)
    return float((t[j[ok]] - t[ok]).min()) if ok.any() else 0.0


def _waits(here: np.ndarray, due: np.ndarray, first: np.ndarray, end: float) -> np.ndarray:
    """The waits of a class's jobs: to their first start, or to the run's end if never."""
    return np.where(np.isnan(first[here]), end, first[here]) - due[here]


def _overtaken(here: np.ndarray, higher: np.ndarray, due: np.ndarray, first: np.ndarray,
               per_job: np.ndarray, threads: float, end: float) -> tuple[float, float]:
    """A class's longest wait (a job never started waits until the run's end), and the
    seconds of it that the work of higher-priority jobs due after that job, and started
    before it, takes on the threads up: what the ordering put ahead of it."""
    waits = _waits(here, due, first, end)
    if not len(waits):
        return 0.0, 0.0
    k = int(np.argmax(waits))
    d, s = due[here][k], due[here][k] + waits[k]
    ahead = higher & (due > d) & (first < s)  # (NaN: never started, never ahead)
    return float(np.nansum(per_job[ahead])) / threads, float(waits[k])
