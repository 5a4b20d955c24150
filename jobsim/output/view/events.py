"""The view's derived tables beside the executions: the acquisitions (each claim with its
count, each empty acquisition), the side effects (a plain one, one a service made after its
caller left, a duplicate, one a fencing token refused), the executions that took no time (a
marker each, so none hides under another), and each downstream service's load and health.

The notions are the report's: an acquisition is an ``acquire`` event (``a`` rows asked,
``b`` rows locked: a claim when ``b > 0``, an empty acquisition when ``b == 0``; the empty
polls a node only counted, ``polls_skipped``, have no instant and are only counted); a side
effect is what ``history`` counts as one (a ``side_effect`` event, or an ``exec_end`` with
``b=1``), a duplicate side effect is one ``history`` lists as such (its ``seq``), a refused
effect is an ``effect_refused`` event; a service's load and health are
``analysis.services``' ``load`` and ``intervals``, binned as the report's picture
(``service_report._bin``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...analysis import services
from ...analysis.stories import Histories
from ...base.printable import printable
from ..service_report import _bin

#: at most this many acquisitions and side effects are drawn (evenly spaced in time order
#: beyond; the claims, duplicates, late and refused effects first)
MAX_ACQUISITIONS = 100_000
MAX_EFFECTS = 100_000

#: a side effect's kind (its marker): in precedence order, a later one wins
EFFECT_KINDS = ("side effect", "side effect at a service after its caller gave up",
                "duplicate side effect (the job's effect happened before)",
                "stale side effect refused (fencing token): no effect")
#: a service's spans: down, brown-out, held down by its load past the outage's end
SERVICE_SPANS = ("down", "brown-out", "held down by its load")


def _capped(priority: np.ndarray, cap: int) -> np.ndarray:
    """The rows kept under ``cap``: every priority row first (evenly spaced if they alone
    are more), then the others evenly spaced; in their order."""
    n = len(priority)
    if n <= cap:
        return np.arange(n)
    first, rest = np.flatnonzero(priority), np.flatnonzero(~priority)
    if len(first) >= cap:
        return first[np.linspace(0, len(first) - 1, cap).round().astype(np.int64)]
    left = cap - len(first)
    kept = rest[np.unique(np.linspace(0, len(rest) - 1, left).round().astype(np.int64))]
    return np.sort(np.r_[first, kept])


def looked_up(names: Any, table: dict[Any, Any], missing: Any, dtype: Any) -> np.ndarray:
    """``table[name]`` for each of ``names`` (``missing`` where it has none, or where the
    name is None), as an array of ``dtype``: each distinct name looked up once, not once a
    row (a big run has hundreds of thousands of rows and a few nodes)."""
    codes, uniques = pd.factorize(np.asarray(names, dtype=object))
    return np.array([table.get(u, missing) for u in uniques.tolist()] + [missing],
                    dtype)[codes]


def acquisitions(tdf: pd.DataFrame, node_all: np.ndarray, node_code: dict[str, int],
                 lanes: dict[str, tuple[float, int]]) -> tuple[dict[str, np.ndarray], dict]:
    """Each acquisition (``kind`` 0 empty, 1 a claim), drawn just under its node's lanes:
    its time, node, rows asked and got, lost races; and the counts (``skipped``: the empty
    polls counted, not simulated)."""
    sel = (tdf["kind"] == "acquire").to_numpy(bool)
    node = node_all[sel]
    known = looked_up(node, dict.fromkeys(lanes, True), False, bool)
    idx = np.flatnonzero(sel)[known]
    node = node[known]
    got = tdf["b"].to_numpy()[idx]
    keep = _capped(got > 0, MAX_ACQUISITIONS)
    idx, node, got = idx[keep], node[keep], got[keep]
    y = looked_up(node, {n: y0 + k - 1 + 0.58 for n, (y0, k) in lanes.items()}, np.nan,
                  np.float32)
    table = {"time": tdf["time"].to_numpy(float)[idx], "y": y,
             "kind": (got > 0).astype(np.int8),
             "node": looked_up(node, node_code, -1, np.int16),
             "asked": tdf["a"].to_numpy()[idx].astype(np.int32),
             "got": got.astype(np.int32), "lost": tdf["c"].to_numpy()[idx].astype(np.int32)}
    skipped = (tdf["kind"] == "polls_skipped").to_numpy(bool)
    all_got = tdf["b"].to_numpy()[sel][known]
    counts = {"claims": int((all_got > 0).sum()), "empty": int((all_got == 0).sum()),
              "acquisitions_drawn": len(idx),
              "skipped_polls": int(tdf["a"].to_numpy()[skipped].sum())}
    return table, counts


def effects(tdf: pd.DataFrame, node_all: np.ndarray, node_code: dict[str, int],
            ex_all: pd.DataFrame, lanes: dict[str, tuple[float, int]], hist: Histories,
            drawn: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict, np.ndarray]:
    """Each side effect and refused effect (``kind``: ``EFFECT_KINDS``' index), drawn at the
    top of its execution's lane: time, node, job, run; the counts of each kind; and the
    drawn executions' ``eff`` column: 1 where the run's plain side effect came at its end
    (the common case, drawn from the executions' own columns: that effect is not in the
    table, so a page of many effects stays small)."""
    kind = tdf["kind"]
    a, b = tdf["a"].to_numpy(), tdf["b"].to_numpy()
    effect = (kind == "side_effect").to_numpy(bool) | ((kind == "exec_end").to_numpy(bool)
                                                       & (b == 1))
    refused = (kind == "effect_refused").to_numpy(bool)
    mid = (kind == "side_effect").to_numpy(bool)  # (else an exec_end: at its run's end)
    sel = effect | refused
    every = np.flatnonzero(sel)
    dups = np.array(sorted({d.seq for d in hist.duplicates if d.what == "side_effect"}),
                    np.int64)
    all_code = np.zeros(len(every), np.int8)
    all_code[(mid[every]) & (a[every] > 0)] = 1
    all_code[np.isin(every, dups)] = 2
    all_code[refused[every]] = 3
    node = node_all[every]
    eff = np.zeros(len(drawn["job"]), np.int8)
    at_end = np.flatnonzero((all_code == 0) & (~mid[every] & ~refused[every]))
    if len(at_end) and len(eff):
        rows = pd.DataFrame({"node": drawn["node"], "job": drawn["job"],
                             "attempt": drawn["attempt"], "row": np.arange(len(eff))}
                            ).drop_duplicates(["node", "job", "attempt"])
        found = pd.DataFrame({
            "node": looked_up(node[at_end], node_code, -2, np.int16),
            "job": tdf["job"].to_numpy()[every[at_end]],
            "attempt": tdf["attempt"].to_numpy()[every[at_end]]}).merge(
            rows, how="left", on=["node", "job", "attempt"])
        row = found["row"].to_numpy(float)
        hit = np.isfinite(row)
        eff[row[hit].astype(np.int64)] = 1
        ends = np.zeros(len(every), bool)
        ends[at_end[hit]] = True
    else:
        ends = np.zeros(len(every), bool)
    known = np.flatnonzero(np.isin(node, sorted(lanes)) & ~ends)
    keep = known[_capped(all_code[known] > 0, MAX_EFFECTS)]
    idx, node, code = every[keep], node[keep], all_code[keep]
    job = tdf["job"].to_numpy()[idx].astype(np.int64)
    attempt = tdf["attempt"].to_numpy()[idx].astype(np.int32)
    threads = ex_all.drop_duplicates(["node", "job", "attempt"])[
        ["node", "job", "attempt", "thread"]]
    found = pd.DataFrame({"node": node, "job": job, "attempt": attempt}).merge(
        threads, how="left", on=["node", "job", "attempt"])
    thread = found["thread"].fillna(0).to_numpy(float)
    y = looked_up(node, {n: y0 for n, (y0, _) in lanes.items()}, np.nan, float) + thread - 0.3
    table = {"time": tdf["time"].to_numpy(float)[idx], "y": y.astype(np.float32),
             "kind": code, "node": looked_up(node, node_code, -2, np.int16),
             "job": job, "attempt": attempt}
    counts = {"effects": int(effect.sum()), "effects_late": int((all_code == 1).sum()),
              "effects_duplicate": int((all_code == 2).sum()),
              "effects_refused": int(refused.sum()),
              "effects_drawn": len(idx) + int(eff.sum())}
    return table, counts, eff


def instants(table: dict[str, np.ndarray], seq: np.ndarray) -> dict[str, np.ndarray]:
    """The executions that took no time (start == end), each a marker: ``row`` (its row in
    ``table``, the drawn executions), its columns, and its ``y`` moved within its lane so
    that those of one lane and instant stand side by side (in the order they ran,
    ``seq``)."""
    rows = np.flatnonzero(table["end"] == table["start"])
    order = np.lexsort((seq[rows], table["start"][rows], table["y"][rows]))
    rows = rows[order]
    y, t = table["y"][rows].astype(float), table["start"][rows]
    new = np.r_[True, (y[1:] != y[:-1]) | (t[1:] != t[:-1])] if len(rows) else np.zeros(0,
                                                                                        bool)
    group = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    k = np.arange(len(rows)) - first[group] if len(rows) else np.zeros(0, np.int64)
    n = np.diff(np.r_[first, len(rows)])[group] if len(rows) else np.zeros(0, np.int64)
    step = np.where(n > 1, np.minimum(0.3, 0.7 / np.maximum(n - 1, 1)), 0.0)
    out = {c: table[c][rows] for c in ("start", "end", "cat", "hue", "job", "attempt",
                                       "node", "thread")}
    out["y"] = (y + (k - (n - 1) / 2) * step).astype(np.float32)
    out["row"] = rows.astype(np.int32)
    return out


def service_tables(trace, t_end: float) -> tuple[list[str], list[dict[str, dict]]]:
    """Each downstream service the run called (``services.names``' order): its name as the
    files spell it, its load (calls a second in each bin, all and answered ok) and its spans
    (``SERVICE_SPANS``' index)."""
    names = services.names(trace)
    out = []
    bin_s = _bin(t_end)
    for name in names:
        load = services.load(trace, name, t_end, bin_s)
        calls = load.drop(columns=["t"]).sum(axis=1).to_numpy(float)
        spans = services.intervals(trace, name, t_end)
        rows = [(k, s, e) for k, key in enumerate(("down", "brownout", "held"))
                for s, e in spans.get(key, [])]
        out.append({"load": {"t": load["t"].to_numpy(float), "calls": calls,
                             "ok": load["ok"].to_numpy(float), "bin": np.full(len(calls),
                                                                               bin_s)},
                    "spans": {"kind": np.array([r[0] for r in rows], np.int8),
                              "left": np.array([r[1] for r in rows], float),
                              "right": np.array([r[2] for r in rows], float)}})
    return [printable(n) for n in names], out
