"""What the downstream services saw: per service, its calls and their answers, its time in
each health state, its load over time, and the job attempts that called it in an outage.

All from the trace's ``service_call``, ``service_reply``, ``service_late`` and
``service_state`` events
(``base/trace.py``), vectorised over its columns.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..base.trace import K, Trace

from ..executor.service_spec import FENCED, LEFT_CRASH, LEFT_TIMEOUT, OUTCOMES, REPLAYED, \
    STATES


def _r(x: float) -> float:
    return round(float(x), 6)


def has_services(trace: Trace) -> bool:
    kind = trace.arrays()["kind"]
    return bool(len(kind)) and bool(np.isin(kind, (K["service_call"], K["service_state"])).any())


def _rows(trace: Trace, kind: str, name: str) -> np.ndarray:
    cols = trace.arrays()
    if name not in trace.texts:  # a service nothing called and that never changed
        return np.zeros(0, dtype=np.int64)
    code = trace.texts.index(name)
    return np.flatnonzero((cols["kind"] == K[kind]) & (cols["text"] == code))


def names(trace: Trace) -> list[str]:
    """The services the trace mentions, in the order they first appear."""
    cols = trace.arrays()
    mask = np.isin(cols["kind"], (K["service_call"], K["service_state"]))
    codes = cols["text"][mask]
    _, first = np.unique(codes, return_index=True)
    return [trace.texts[int(c)] for c in codes[np.sort(first)]]


def intervals(trace: Trace, name: str, end: float) -> dict[str, list[tuple[float, float]]]:
    """The service's spans in each state (``STATES``, and ``held``: down past its outage's
    end because of its load), up to ``end``."""
    cols = trace.arrays()
    rows = _rows(trace, "service_state", name)
    t, state, held = cols["time"][rows], cols["a"][rows], cols["b"][rows]
    out: dict[str, list[tuple[float, float]]] = {s: [] for s in (*STATES, "held")}
    marks = [(0.0, 0, 0)] + list(zip(t.tolist(), state.tolist(), held.tolist()))
    for (t0, s, h), nxt in zip(marks, marks[1:] + [(end, -1, 0)]):
        t1 = nxt[0]
        if t1 > t0:
            for key in (STATES[s], "held") if h else (STATES[s],):
                spans = out[key]
                if spans and spans[-1][1] == t0:  # down, then held down: one outage
                    spans[-1] = (spans[-1][0], t1)
                else:
                    spans.append((t0, t1))
    return out


def _inside(times: np.ndarray, spans: list[tuple[float, float]]) -> np.ndarray:
    if not spans:
        return np.zeros(len(times), dtype=bool)
    starts = np.array([s for s, _ in spans])
    ends = np.array([e for _, e in spans])
    ix = np.searchsorted(starts, times, side="right") - 1
    ok = ix >= 0
    out = np.zeros(len(times), dtype=bool)
    out[ok] = times[ok] < ends[ix[ok]]
    return out


def _open_ended(spans: list[tuple[float, float]], end: float) -> list[tuple[float, float]]:
    """A span that lasts to the run's end includes the end's instant."""
    return [(a, math.inf if b >= end else b) for a, b in spans]


def load(trace: Trace, name: str, end: float, bin_s: float = 1.0) -> pd.DataFrame:
    """Calls a second to the service: one row per bin (its start ``t``), one column per
    outcome of the calls made in it."""
    cols = trace.arrays()
    calls = _rows(trace, "service_call", name)
    replies = _rows(trace, "service_reply", name)
    outcome = np.full(len(calls), -1, dtype=np.int64)  # unanswered: -1
    number = cols["b"][calls]
    order = np.argsort(number, kind="stable")
    pos = np.searchsorted(number[order], cols["b"][replies])
    outcome[order[pos]] = cols["a"][replies]
    n = max(1, int(np.ceil(end / bin_s)))
    which = np.minimum((cols["time"][calls] // bin_s).astype(np.int64), n - 1)
    frame = {"t": np.arange(n) * bin_s}
    for code, label in enumerate(OUTCOMES):
        frame[label] = np.bincount(which[outcome == code], minlength=n) / bin_s
    frame["unanswered"] = np.bincount(which[outcome == -1], minlength=n) / bin_s
    return pd.DataFrame(frame)


def last_event(trace: Trace, end: float) -> float:
    """The instant of the last service event (the run's end when there is none)."""
    cols = trace.arrays()
    mask = np.isin(cols["kind"], (K["service_call"], K["service_reply"], K["service_state"]))
    return float(cols["time"][mask].max()) if mask.any() else end


def figures(trace: Trace, end: float, declared: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Per service (those the trace mentions, and the ``declared`` ones that it does not):
    calls, answers by outcome, waits, time in each state, load peaks, and the calls a
    worker's open circuit breaker failed without making."""
    cols = trace.arrays()
    out = {}
    for name in list(dict.fromkeys(names(trace) + list(declared))):
        calls = _rows(trace, "service_call", name)
        replies = _rows(trace, "service_reply", name)
        code = cols["a"][replies]
        spans = intervals(trace, name, end)
        ct = cols["time"][calls]
        down = _inside(ct, _open_ended(spans["down"], end))
        per_s = load(trace, name, end)
        # its load: the calls that reached it (those a rate limit turned away did not)
        total = per_s.drop(columns=["t", "rate_limited"]).sum(axis=1).to_numpy()
        # the end of its last outage, if it came back up before the run ended
        last_down = max((e for _, e in spans["down"] if e < end), default=None)
        after = per_s["t"].to_numpy() >= last_down if last_down is not None else None
        wait = cols["c"][replies] / 1e6
        took = (cols["x"][replies] - wait)[code == 0]  # the service's own time
        late = _rows(trace, "service_late", name)
        why = cols["c"][late]  # 1 timed out, 2 crashed; + 2 when it took effect
        left = np.where(why > 2, why - 2, why)
        out[name] = {
            "calls": int(len(calls)),
            "ok": int((code == 0).sum()),
            "errors": {label: int((code == i).sum()) for i, label in enumerate(OUTCOMES)
                       if 0 < i < REPLAYED},
            "replayed": int((code == REPLAYED).sum()),
            # refused for a stale fencing token (answered, or ended with its caller gone)
            "fenced": int((code == FENCED).sum() + (cols["a"][late] == FENCED).sum()),
            # ended at the service after their caller had left: timed out, or crashed
            "completed_after_timeout": int((left == LEFT_TIMEOUT).sum()),
            "completed_after_crash": int((left == LEFT_CRASH).sum()),
            # … of which took effect (the run's side effect, made though nobody heard)
            "effects_after_caller_left": int((why > 2).sum()),
            "unanswered": int(len(calls) - len(replies)),
            "calls_in_outage": int(down.sum()),
            "attempts_in_outage": int(np.unique(np.stack(
                [cols["job"][calls][down], cols["attempt"][calls][down]]), axis=1).shape[1])
                if down.any() else 0,
            "short_circuited": _count_text(cols, K["exec_end"], trace, f"{name} circuit open"),
            "waited": int((wait > 0).sum()),
            "mean_wait": _r(wait[wait > 0].mean()) if (wait > 0).any() else None,
            "mean_latency": _r(took.mean()) if len(took) else None,
            "time": {s: _r(sum(e - b for b, e in spans[s])) for s in (*STATES, "held")},
            "recovered_at": _r(last_down) if last_down is not None else None,
            "peak_calls_per_s": _r(total.max()) if len(total) else 0.0,
            "peak_after_recovery": _r(total[after].max()) if after is not None
            and after.any() else None,
        }
    return out


def _count_text(cols: dict[str, np.ndarray], kind: int, trace: Trace, text: str) -> int:
    if text not in trace.texts:
        return 0
    return int(((cols["kind"] == kind) & (cols["text"] == trace.texts.index(text))).sum())


def attempts_in_outage(trace: Trace, end: float) -> pd.Series:
    """Per job: how many of its attempts called a service while it was down."""
    cols = trace.arrays()
    jobs, attempts = [], []
    for name in names(trace):
        calls = _rows(trace, "service_call", name)
        down = _inside(cols["time"][calls],
                       _open_ended(intervals(trace, name, end)["down"], end))
        jobs.append(cols["job"][calls][down])
        attempts.append(cols["attempt"][calls][down])
    if not jobs:
        return pd.Series(dtype=np.int64)
    pairs = pd.DataFrame({"job": np.concatenate(jobs), "attempt": np.concatenate(attempts)})
    return pairs.drop_duplicates().groupby("job").size()
