"""What the view draws, worked out from a trace: the executions with their outcome, the
nodes' spans and instants, the lock expiries, the table depth, and the jobs' stories.

The notions are the report's own, drawn from the same code as the static figures
(``plotdata``, which needs no matplotlib): an execution is the timeline's (``exec_start``
paired with ``exec_end``, a run without an end ending at its node's next crash); a
duplicate is an execution ``history`` counts as one (its ``exec_start``); a rejected
completion is a ``completed`` event that deleted nothing while the row was
another's (``a=0``, ``b≠0``: what ``history`` counts as ``completions_rejected``); a lock
holds until its ``lock_until`` unless the job's next lock event comes first (the depth
plot's ``lock_series``): when none does, the lock expired there. The table depth is the
depth plot's series.

Everything is keyed by names, never by the trace's codes (nodes sorted by name, handlers
and outcomes too), so a trace read back from trace.csv gives the same view as the run's
own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...analysis.stories import Histories
from ...base.printable import printable
from ..columns import plot_frame
from ..plotdata import (evenly_spaced, gone_rows, lock_series, node_names, node_spans,
                        node_strings, pair_executions, step_series, table_steps, thin)
from .events import acquisitions, effects, instants, looked_up, service_tables
from .note import lock_note, takeovers

#: the outcome of an execution: its colour's index, its legend (in precedence order: an
#: execution that is two of these is drawn as the later one)
CATEGORIES = (
    ("done", "done"),
    ("failed", "failed (will retry)"),
    ("dead", "failed into the dead-letter table"),
    ("open", "no end (hung, or still running)"),
    ("duplicate", "duplicate (the job ran in another execution too)"),
    ("rejected", "completion rejected (a zombie's: the row was another's)"),
    ("crash", "cut short by a crash"),
)
CODE = {key: i for i, (key, _) in enumerate(CATEGORIES)}

#: the view's step series of the table depth are thinned above this many points, to this
#: many time bins (the page stays small; the PNG keeps its own, finer, thinning)
THIN_ABOVE, THIN_BINS = 20_000, 4096

#: the lanes between two nodes' rows, left empty
GAP = 0.8
#: at most this many executions are drawn (an evenly spaced subset in start order beyond,
#: as the PNG timeline does, with the stories of their jobs only): the page of a
#: million-job run stays a page a browser opens
MAX_EXECUTIONS = 250_000


@dataclass
class RunData:
    """One run's view: numpy columns by table (``executions``, ``spans``, ``marks``,
    ``depth``, ``jobs``, ``claims``, ``retries``, ``instants``, ``acquisitions``,
    ``effects``), the name tables the codes index, the
    lanes, and the counts."""

    name: str
    title: str
    t0: float
    t_end: float
    nodes: list[str]
    lanes: dict[str, tuple[float, int]]  # node → (its first lane's y, its lanes)
    tables: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    #: each downstream service's tables (``events.service_tables``), its names in
    #: ``names["services"]``
    services: list[dict[str, dict[str, np.ndarray]]] = field(default_factory=list)
    #: the related counts in words (``note.lock_note``)
    note: str = ""


def _printable_nodes(tdf: pd.DataFrame) -> pd.DataFrame:
    """The frame with its node names as the files spell them (``base.printable``), so that
    a run's page and the page ``jobsim view`` builds from its folder are the same."""
    node = tdf["node"]
    if isinstance(node.dtype, pd.CategoricalDtype):
        shown = [printable(str(c)) for c in node.cat.categories]
        if shown != [str(c) for c in node.cat.categories] and len(set(shown)) == len(shown):
            return tdf.assign(node=node.cat.rename_categories(shown))
        return tdf
    return tdf.assign(node=node.map(lambda n: printable(n) if isinstance(n, str) else n))


def run_data(trace, hist: Histories, summary: dict, variant: str | None) -> RunData:
    """The view of one run: its trace, its stories (``history.histories``), its summary
    (for the scenario's name and seed) and its variant's name (None without variants)."""
    tdf = _printable_nodes(plot_frame(trace))
    times = tdf["time"].to_numpy(dtype=float)
    finite = times[np.isfinite(times)]
    t0, t_end = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    node_all = node_strings(tdf["node"])
    names = node_names(tdf["node"])
    ex = _classified(tdf, node_all, t_end, hist)
    ex_all = ex[["node", "job", "attempt", "thread"]]
    cats_all = ex["cat"].to_numpy()
    ex = evenly_spaced(ex, MAX_EXECUTIONS).reset_index(drop=True)
    lanes, y = _lanes(names, ex)
    title = f"{summary.get('scenario', '?')} · seed {summary.get('seed', '?')}"
    if variant is not None:
        title += f" · variant {variant}"
    data = RunData(variant or str(summary.get("scenario", "run")), title, t0, t_end, names,
                   lanes)
    node_code = {n: i for i, n in enumerate(names)}
    codes = looked_up(ex["node"], node_code, -1, np.int16)
    order = np.lexsort((ex["start"].to_numpy(), ex["job"].to_numpy()))  # by job, then start
    data.tables["executions"] = {
        "start": ex["start"].to_numpy(float)[order], "end": ex["end"].to_numpy(float)[order],
        "y": y[order], "cat": ex["cat"].to_numpy(np.int8)[order],
        "hue": ex["cat"].to_numpy(np.int8)[order],
        "job": ex["job"].to_numpy(np.int64)[order],
        "attempt": ex["attempt"].to_numpy(np.int32)[order], "node": codes[order],
        "thread": ex["thread"].to_numpy(np.int16)[order]}
    data.tables["instants"] = instants(data.tables["executions"], order)
    expired = _expiries(tdf, node_all, t_end)  # (the marks' and the lock note's)
    data.tables["spans"], data.tables["marks"] = _spans_and_marks(tdf, node_all, node_code,
                                                                  lanes, t_end, expired)
    data.tables["acquisitions"], acq_counts = acquisitions(tdf, node_all, node_code, lanes)
    data.tables["effects"], effect_counts, eff = effects(tdf, node_all, node_code, ex_all,
                                                         lanes, hist, data.tables["executions"])
    data.tables["executions"]["eff"] = eff
    data.names["services"], data.services = service_tables(trace, t_end)
    data.note = lock_note(takeovers(tdf, node_all, expired), summary)
    data.tables["depth"] = _depth(tdf, t0, t_end)
    _stories(data, tdf, node_all, node_code, hist,
             None if len(ex) == len(cats_all) else np.unique(ex["job"].to_numpy()))
    data.names["nodes"] = names
    data.names["categories"] = [label for _, label in CATEGORIES]
    marks = data.tables["marks"]["kind"]
    data.counts = {"executions": len(cats_all), "drawn": len(ex), "jobs": len(hist.table),
                   **{k: int((cats_all == i).sum()) for k, i in CODE.items()},
                   "crashes": int((marks == 0).sum()), "lock_expiries": int((marks == 2).sum()),
                   "pauses": int((data.tables["spans"]["kind"] == 1).sum()),
                   "partitions": int((data.tables["spans"]["kind"] == 2).sum()),
                   "instants": len(data.tables["instants"]["row"]),
                   **acq_counts, **effect_counts}
    return data


def _classified(tdf: pd.DataFrame, node_all: np.ndarray, t_end: float,
                hist: Histories) -> pd.DataFrame:
    """The timeline's executions, each with its outcome category (``cat``)."""
    drawn = tdf["kind"].isin(["exec_start", "exec_end", "node_crashed"]).to_numpy(bool)
    df = tdf.loc[drawn, ["time", "kind", "job", "attempt", "a", "x"]]
    node = node_all[drawn]
    ex = pair_executions(df.assign(node=node), t_end)
    seqs = df.index.to_numpy()[(df["kind"] == "exec_start").to_numpy(bool)]
    is_dup = np.isin(seqs, hist.duplicate_starts)
    # each execution's own outcome: the first completed / retry / dead letter of its node,
    # job and attempt
    after = tdf["kind"].isin(["completed", "retry_scheduled", "dead_lettered"]).to_numpy(bool)
    # the kinds of the rows picked only: the whole column as Python strings costs 0.1 s a
    # conversion at 2 million events
    out = pd.DataFrame({"node": node_all[after], "job": tdf["job"].to_numpy()[after],
                        "attempt": tdf["attempt"].to_numpy()[after],
                        "what": tdf["kind"][after].to_numpy().astype(str),
                        "a": tdf["a"].to_numpy()[after], "b": tdf["b"].to_numpy()[after]})
    out = out.drop_duplicates(["node", "job", "attempt"], keep="first")
    m = ex[["node", "job", "attempt"]].merge(out, how="left", on=["node", "job", "attempt"])
    what = m["what"].fillna("").to_numpy(dtype=object)
    rejected = (what == "completed") & (m["a"].to_numpy() == 0) & (m["b"].fillna(0).to_numpy()
                                                                   != 0)
    crashes = (tdf["kind"] == "node_crashed").to_numpy(bool)
    crash_at = set(zip(node_all[crashes].tolist(), tdf["time"].to_numpy()[crashes].tolist()))
    status = ex["status"].to_numpy(dtype=object)
    opened = status == "open"
    cut = np.zeros(len(ex), bool)
    for i in np.flatnonzero(opened).tolist():
        cut[i] = (ex.at[i, "node"], ex.at[i, "end"]) in crash_at
    cat = np.full(len(ex), CODE["done"], np.int8)
    cat[status == "failed"] = CODE["failed"]
    cat[(status == "failed") & (what == "dead_lettered")] = CODE["dead"]
    cat[opened] = CODE["open"]
    cat[is_dup] = CODE["duplicate"]
    cat[rejected] = CODE["rejected"]
    cat[cut] = CODE["crash"]
    ex["cat"] = cat
    return ex


def _lanes(names: list[str], ex: pd.DataFrame) -> tuple[dict[str, tuple[float, int]],
                                                        np.ndarray]:
    """Each node's lanes (one per thread that ran something, at least one), top to bottom
    in name order, and each execution's lane (its y)."""
    threads = ex.groupby("node")["thread"].max().to_dict() if len(ex) else {}
    lanes: dict[str, tuple[float, int]] = {}
    y0 = 0.0
    for n in names:
        k = int(threads.get(n, 0)) + 1
        lanes[n] = (y0, k)
        y0 += k + GAP
    base = looked_up(ex["node"], {n: y0 for n, (y0, _) in lanes.items()}, np.nan, float)
    return lanes, (base + ex["thread"].to_numpy(float)).astype(np.float32)


def _spans_and_marks(tdf: pd.DataFrame, node_all: np.ndarray, node_code: dict[str, int],
                     lanes: dict[str, tuple[float, int]], t_end: float,
                     expired: list[tuple[str, float, int]]
                     ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The nodes' spans (kind 0 down after a crash, 1 paused, 2 cut off by a partition)
    and instants (kind 0 crash, 1 restart, 2 a lock expired, for the job ``job``; the side
    effects are ``events.effects``')."""
    kinds = ("node_crashed", "node_restarted", "node_paused", "node_resumed", "partition")
    sel = tdf["kind"].isin(kinds).to_numpy(bool)
    df = tdf.loc[sel, ["time", "kind", "a", "x"]].copy()
    node = node_all[sel]
    kind = df["kind"].astype(str).to_numpy(dtype=object)
    kind[(kind == "partition") & (df["a"].to_numpy() == 0)] = "partition_healed"
    df["kind"] = kind
    spans = []
    for k, (begin, finish, from_x) in enumerate((
            ("node_crashed", "node_restarted", False), ("node_paused", "node_resumed", True),
            ("partition", "partition_healed", False))):
        spans += [(k, n, a, b) for n, a, b in node_spans(df, node, begin, finish, t_end, from_x)
                  if n in lanes]
    spans.sort(key=lambda s: (s[0], s[1], s[2]))

    def rows(nodes: list[str], pad: float) -> tuple[np.ndarray, np.ndarray]:
        lo = np.array([lanes[n][0] - pad for n in nodes], float)
        hi = np.array([lanes[n][0] + lanes[n][1] - 1 + pad for n in nodes], float)
        return lo, hi

    lo, hi = rows([s[1] for s in spans], 0.7)
    span_cols = {"kind": np.array([s[0] for s in spans], np.int8),
                 "node": np.array([node_code[s[1]] for s in spans], np.int16),
                 "left": np.array([s[2] for s in spans], float),
                 "right": np.array([s[3] for s in spans], float), "bottom": lo, "top": hi}
    marks = [(0 if k == "node_crashed" else 1, n, t, -1) for k, n, t in
             zip(kind.tolist(), node.tolist(), df["time"].tolist())
             if k in ("node_crashed", "node_restarted") and n in lanes]
    marks += [(2, n, t, j) for n, t, j in expired if n in lanes]
    marks.sort(key=lambda m: (m[2], m[0], m[1], m[3]))
    mid = [lanes[n][0] + (lanes[n][1] - 1) / 2 for _, n, _, _ in marks]
    top = [lanes[n][0] - 0.55 for _, n, _, _ in marks]
    mark_cols = {"kind": np.array([m[0] for m in marks], np.int8),
                 "node": np.array([node_code[m[1]] for m in marks], np.int16),
                 "time": np.array([m[2] for m in marks], float),
                 "job": np.array([m[3] for m in marks], np.int64),
                 "y": np.array([t if m[0] == 2 else c for m, c, t in zip(marks, mid, top)],
                               float)}
    return span_cols, mark_cols


def _expiries(tdf: pd.DataFrame, node_all: np.ndarray, t_end: float
              ) -> list[tuple[str, float, int]]:
    """(holder, instant, job) of each lock that expired: a ``locked`` or ``lock_extended``
    whose ``lock_until`` came before the job's next lock event (the depth plot's notion of a
    live lock, ``lock_series``), within the run."""
    holds = (tdf["kind"].isin(["locked", "lock_extended"])).to_numpy(bool)
    sel = holds | (tdf["kind"].isin(["retry_scheduled", "unlocked"]).to_numpy(bool)) | gone_rows(
        tdf)
    idx = np.flatnonzero(sel)
    job = tdf["job"].to_numpy()[idx]
    order = np.lexsort((idx, job))
    idx, job = idx[order], job[order]
    t = tdf["time"].to_numpy(float)[idx]
    x = tdf["x"].to_numpy(float)[idx]
    next_t = np.where(np.r_[job[1:] == job[:-1], False], np.r_[t[1:], np.inf], np.inf)
    hit = holds[idx] & np.isfinite(x) & (x < next_t) & (x <= t_end)
    return list(zip(node_all[idx[hit]].tolist(), x[hit].tolist(), job[hit].tolist()))


def _depth(tdf: pd.DataFrame, t0: float, t_end: float) -> dict[str, np.ndarray]:
    """The depth plot's three step series (in the table, locked, running), thinned, as one
    table: ``series`` 0, 1, 2 and each point's time and value."""
    kind = tdf["kind"]
    times = tdf["time"].to_numpy(float)
    parts = [step_series(*table_steps(tdf), t0, t_end)]
    starts, ends = (kind == "exec_start").to_numpy(bool), (kind == "exec_end").to_numpy(bool)
    crashes = (kind == "node_crashed").to_numpy(bool)
    sel = starts | ends | crashes
    step = np.where(starts[sel], 1, np.where(ends[sel], -1, -tdf["a"].to_numpy()[sel]))
    parts += [lock_series(tdf, t0, t_end), step_series(times[sel], step, t0, t_end)]
    out: dict[str, list[np.ndarray]] = {"series": [], "time": [], "value": []}
    for k, (t, v) in enumerate((parts[0], parts[1], parts[2])):
        t, v = thin(t, v, t0, t_end, above=THIN_ABOVE, bins=THIN_BINS)
        out["series"].append(np.full(len(t), k, np.int8))
        out["time"].append(np.asarray(t, float))
        out["value"].append(np.asarray(v, np.int32))
    return {k: np.concatenate(v) for k, v in out.items()}


def _sorted_codes(values: Any, spell: Any, none: str | None = None
                  ) -> tuple[np.ndarray, list[str]]:
    """Each value's code in the sorted list of the distinct spellings (``spell``), and that
    list; a value spelt ``none`` is left out of the list, its code -1. Each distinct value
    spelt once."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    spelt = [spell(u) for u in uniques.tolist()]
    names = sorted({x for x in spelt if x != none})
    at = {x: i for i, x in enumerate(names)}
    return np.array([at.get(x, -1) for x in spelt] + [-1], np.int64)[codes], names


def _stories(data: RunData, tdf: pd.DataFrame, node_all: np.ndarray,
             node_code: dict[str, int], hist: Histories, jobs: np.ndarray | None) -> None:
    """The tables a job's story is told from in the page, each sorted by job: ``jobs``
    (the stories' table: created, due, end, outcome, handler, name), ``claims`` (each
    ``locked``, ``lock_extended`` and ``unlocked``, its ``kind`` 0, 1, 2: who, when, until)
    and ``retries`` (each ``retry_scheduled``: when, the new due time). ``jobs``: only these
    (sorted; None: all)."""
    t = hist.table
    if jobs is not None:
        t = t[np.isin(t["id"].to_numpy(), jobs)]
    # names as the files spell them (``base.printable``): the same page from the folder;
    # each distinct name spelled once, not once a job
    handler, handlers = _sorted_codes(t["handler"], lambda v: printable(str(v)))
    outcome, outcomes = _sorted_codes(t["outcome"], str)
    name, labels = _sorted_codes(t["name"], lambda v: printable(str(v)) if v else "", "")
    created = t["created"].to_numpy(float)
    data.tables["jobs"] = {
        "id": t["id"].to_numpy(np.int64), "created": created,
        "due": (t["due"].to_numpy(float) - created).astype(np.float32),
        "end": (t["end"].to_numpy(float) - created).astype(np.float32),
        "outcome": outcome.astype(np.int8), "handler": handler.astype(np.int16),
        "priority": t["priority"].to_numpy(np.int32), "name": name.astype(np.int32)}
    data.names.update(handlers=handlers, outcomes=outcomes, job_names=labels)
    for table, kind in (("claims", ("locked", "lock_extended", "unlocked")),
                        ("retries", ("retry_scheduled",))):
        sel = tdf["kind"].isin(kind).to_numpy(bool)
        if jobs is not None:
            sel = sel & np.isin(tdf["job"].to_numpy(), jobs)
        job = tdf["job"].to_numpy()[sel]
        order = np.argsort(job, kind="stable")
        time = tdf["time"].to_numpy(float)[sel][order]
        data.tables[table] = {
            "job": job[order].astype(np.int64), "time": time,
            **({"kind": pd.Categorical(tdf["kind"][sel].to_numpy()[order].astype(str),
                                       kind).codes.astype(np.int8)} if len(kind) > 1 else {}),
            "node": looked_up(node_all[sel][order], node_code, -1, np.int16),
            "until": (tdf["x"].to_numpy(float)[sel][order] - time).astype(np.float32)}
