"""The retry schedule each job followed: the delays between its failures and its next due
times, read from the trace's ``retry_scheduled`` events (``x`` is the new due time), and the
report's digest of them.

Everything here works on whole columns (a stable sort by job, each distinct delay spelled
once, one reduce per job joining its words, a groupby), with no Python step per trace
event.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..base.durations import format_duration
from ..base.trace import K, Trace

if TYPE_CHECKING:
    from .history import Histories

#: the most distinct schedules the report lists; past that it sums them up by retry
SHOWN = 5
#: the retries (1st, 2nd, ...) the report's by-retry table goes up to
SHOWN_RETRIES = 8
#: schedules are scattered (a jittered backoff's) when the most common one is followed by at
#: most one job in this many: the report gives the delays by retry alone
SCATTERED = 100


def retry_delays(trace: Trace) -> dict[int, list[float]]:
    """Each retried job's delays, in the order of its retries."""
    cols = trace.arrays()
    sel = np.flatnonzero(cols["kind"] == K["retry_scheduled"])
    if not len(sel):
        return {}
    job = cols["job"][sel]
    order = np.argsort(job, kind="stable")
    job, delay = job[order], (cols["x"][sel] - cols["time"][sel])[order]
    cuts = np.flatnonzero(job[1:] != job[:-1]) + 1
    heads = job[np.r_[0, cuts]].tolist()
    return dict(zip(heads, (part.tolist() for part in np.split(delay, cuts))))


def _spelled(delay: np.ndarray) -> np.ndarray:
    """Each delay as a schedule spells it, to the millisecond (``10s``, ``4.757s``); each
    distinct value is formatted once."""
    rounded = np.where(np.isfinite(delay), np.round(delay, 3), delay)
    values, inverse = np.unique(rounded, return_inverse=True)
    words = np.array([format_duration(v) for v in values.tolist()], dtype=object)
    return words[inverse.reshape(-1)]


def _flat(lists: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    """``lists`` as two columns: each item's place in its list (from 1), and the item."""
    lengths = np.array([len(x) for x in lists], dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    place = np.arange(int(lengths.sum())) - np.repeat(starts, lengths) + 1
    delay = np.fromiter(chain.from_iterable(lists), dtype=float, count=int(lengths.sum()))
    return place, delay


def schedule_column(lists: list[list[float]]) -> list[str]:
    """Each job's schedule, ``"10s 60s 300s"``; empty for a job that was never retried."""
    lengths = np.array([len(x) for x in lists], dtype=np.int64)
    out = np.full(len(lists), "", dtype=object)
    _, delay = _flat(lists)
    if not len(delay):
        return out.tolist()
    retried = lengths > 0
    ends = np.cumsum(lengths)
    starts = (ends - lengths)[retried]
    # each word and a space, but the last of its job's: then one reduce per job joins them
    space = np.full(len(delay), " ", dtype=object)
    space[ends[retried] - 1] = ""
    out[retried] = np.add.reduceat(_spelled(delay) + space, starts)
    return out.tolist()


def schedule_texts(ids: np.ndarray, delays: dict[int, list[float]]) -> np.ndarray:
    """``schedule_column`` of the jobs ``ids`` (sorted) whose retry delays, by job, are
    ``delays``: only the retried jobs' schedules are spelled."""
    out = np.full(len(ids), "", dtype=object)
    retried = sorted(j for j, d in delays.items() if d)
    if retried:
        pos = np.searchsorted(ids, retried)
        out[pos] = schedule_column([delays[j] for j in retried])
    return out


def digest(hist: Histories) -> list[str]:
    """The report's lines on a run's retry schedules (none when nothing was retried): the
    distinct schedules with how many jobs followed each, most common first; past ``SHOWN``
    of them, the rest counted and the delays summed up by retry."""
    lists = [d for _, d in sorted(hist.delays.items()) if d]
    if not lists:
        return []
    counts = pd.Series(schedule_column(lists)).value_counts()
    counts = counts.rename_axis("schedule").reset_index(name="jobs").sort_values(
        ["jobs", "schedule"], ascending=[False, True], kind="stable")
    rest = len(counts) - SHOWN
    jobs = len(lists)
    if rest > 0 and int(counts["jobs"].iloc[0]) * SCATTERED <= jobs:
        # a jittered backoff: the most common schedule is a handful of jobs', and a list of
        # a few of them says nothing; the delays by retry say it all
        most = int(counts["jobs"].iloc[0])
        lines = [(f"Every job's schedule is its own ({jobs:,} retried jobs" if most == 1 else
                  f"Nearly every job's schedule is its own ({len(counts):,} schedules among "
                  f"{jobs:,} retried jobs, none followed by more than {most:,}")
                 + ": a jittered backoff). By retry:", ""]
    else:
        lines = ["| jobs | retry delays |", "|---:|---|"]
        lines += [f"| {n:,} | {s} |" for s, n in counts.head(SHOWN).itertuples(index=False)]
        if rest <= 0:
            return lines
        lines += ["", f"… and {rest:,} more schedule{'s' if rest > 1 else ''} "
                  f"({int(counts['jobs'].iloc[SHOWN:].sum()):,} jobs). By retry:", ""]
    place, delay = _flat(lists)
    stats = pd.DataFrame({"retry": place, "delay": delay})
    stats = stats[stats["retry"] <= SHOWN_RETRIES].groupby("retry")["delay"].agg(
        ["size", "min", "mean", "max"])
    lines += ["| retry | jobs | least | mean | most |", "|---:|---:|---:|---:|---:|"]
    for k, n, lo, mean, hi in stats.itertuples():
        lo_, mean_, hi_ = _spelled(np.array([lo, mean, hi]))
        lines.append(f"| {k} | {n:,} | {lo_} | {mean_} | {hi_} |")
    deeper = int((place > SHOWN_RETRIES).sum())
    if deeper:
        lines += ["", f"And {deeper:,} retries after the {SHOWN_RETRIES}th."]
    return lines
