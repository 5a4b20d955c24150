"""The jobs' stories as one table: a column per figure, a row per job, in id order.

Most jobs of a big run have a plain story — created, then rounds of locked → started →
ended → completed, retried or dead-lettered by the node that started them, none of it while
a node crashed, at most one side effect — whose figures are sums and firsts over their own
events, worked out here on whole columns (``plain_jobs``, ``plain_table``). The few others
(a double acquisition, an expired lock, a crash in flight, an operator's move, ...) are told
event by event by ``history``; their rows replace the plain ones (``merged``).

``Histories.jobs`` gives a job's ``JobStory`` by id, built from its row when asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from ..base.trace import KIND_NAMES as KINDS_TABLE, K

#: a job's kind by ``job_created``'s ``a``: a boundary timer's timer job is a timer row of
#: its own (Flowable: it fires its task's boundary event when it runs)
KINDS_OF_JOB = ("async", "timer", "boundary_timer")


@dataclass
class JobStory:
    id: int
    name: str = ""
    kind: str = "async"
    handler: str = ""
    priority: int = 0
    created: float = float("nan")
    due: float = float("nan")
    created_seq: int = -1
    first_start: float = float("nan")
    end: float = float("nan")
    outcome: str = "lost"
    executions: int = 0
    failures: int = 0
    side_effects: int = 0
    duplicate_executions: int = 0
    duplicate_side_effects: int = 0
    double_acquisitions: int = 0
    nodes: list[str] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    pending_reason: str = ""
    #: the server's deadline of the job's last activation (a broker: activation + the job
    #: timeout), in Unix epoch ms as the server gives it (``clock.epoch`` is t = 0),
    #: informational where nothing expires; nan: never activated by a broker
    deadline: float = float("nan")
    #: the delay of each of its retries, in order: its new due time less its failure's time
    retry_delays: list[float] = field(default_factory=list)


#: the table's columns: a story's fields but its lists (``nodes`` joined by ``;``; causes
#: and retry delays are kept by job beside it)
COLUMNS = tuple(f.name for f in fields(JobStory) if f.name not in ("causes", "retry_delays"))
_DEFAULTS = {f.name: f.default for f in fields(JobStory) if f.name in COLUMNS}


@dataclass
class Duplicate:
    seq: int
    time: float
    job: int
    node: str
    what: str  # "execution" or "side_effect"
    cause: str
    evidence: list[int]


class Stories(Mapping):
    """The table's rows as ``JobStory`` objects, by job id (built when asked for)."""

    def __init__(self, hist: "Histories") -> None:
        self._h = hist

    def __getitem__(self, j: int) -> JobStory:
        t = self._h.table
        ids = t["id"].to_numpy()
        i = int(np.searchsorted(ids, j))
        if i >= len(ids) or ids[i] != j:
            raise KeyError(j)
        row = {c: t[c].iat[i] for c in COLUMNS}
        row = {c: (v.item() if isinstance(v, np.generic) else v) for c, v in row.items()}
        row["nodes"] = row["nodes"].split(";") if row["nodes"] else []
        return JobStory(**row, causes=list(self._h.causes.get(j, [])),
                        retry_delays=list(self._h.delays.get(j, [])))

    def __iter__(self) -> Iterator[int]:
        return iter(self._h.table["id"].tolist())

    def __len__(self) -> int:
        return len(self._h.table)


@dataclass
class Histories:
    #: one row per job, in id order: the columns of ``COLUMNS``
    table: pd.DataFrame
    duplicates: list[Duplicate]
    double_acquisitions: list[tuple[int, int, int]]  # (job, seq of the live lock, seq of the overwrite)
    #: jobs a crashed node held under a valid lock, and how long each waited after the crash
    #: until some node acquired it again
    stranded: int = 0
    recoveries: list[float] = field(default_factory=list)
    completions_rejected: int = 0  # refused by the owner guard
    completions_row_gone: int = 0  # found no row to delete
    #: writes to a job after it was done or dead-lettered: (job, terminal seq, seq)
    after_terminal: list[tuple[int, int, int]] = field(default_factory=list)
    #: stranded jobs still waiting in the table at the end, never acquired again
    unrecovered: int = 0
    #: each crash that stranded jobs: (node, instant, jobs it stranded), in order
    stranded_by_crash: list[tuple[str, float, int]] = field(default_factory=list)
    #: the causes of each job's duplicate executions (jobs that had any)
    causes: dict[int, list[str]] = field(default_factory=dict)
    #: each retried job's retry delays, in order
    delays: dict[int, list[float]] = field(default_factory=dict)

    @property
    def jobs(self) -> Stories:
        return Stories(self)

    @property
    def duplicate_starts(self) -> np.ndarray:
        """The ``seq`` of each duplicate execution's ``exec_start``, sorted: what the
        timeline rings and the page colours as a duplicate."""
        return np.array(sorted({d.seq for d in self.duplicates if d.what == "execution"}),
                        np.int64)


# --- plain stories, on whole columns -----------------------------------------------------------

#: the states of a plain story, and for each event the state it leads to and the ones it may
#: follow: created (1), locked (2), running (3), ended well (4) or badly (5), over (6: done or
#: dead-lettered), pending at the end (7); 0 is before its creation
_STEPS = {"job_created": (1, (0,)), "locked": (2, (1,)), "exec_start": (3, (2,)),
          "side_effect": (3, (3,)), "completed": (6, (4,)), "retry_scheduled": (1, (5,)),
          "dead_lettered": (6, (5,)), "pending": (7, (1,))}
#: plain stories end created (never locked, or waiting for a retry), over, or pending
_ENDS = (1, 6, 7)


def member(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """``np.isin(values, among)`` for a sorted ``among``, by binary search: no sort of the
    two together (millions of values)."""
    if not len(among):
        return np.zeros(len(values), bool)
    at = np.searchsorted(among, values)
    np.minimum(at, len(among) - 1, out=at)
    return among[at] == values


def _allowed() -> tuple[np.ndarray, np.ndarray]:
    """By kind code (and, for exec_end, 0 ended badly / 1 well), the state an event leads
    to (-1: none plain) and the states it may follow."""
    to = np.full(len(KINDS_TABLE) + 1, -1, np.int8)
    may = np.zeros((len(KINDS_TABLE) + 1, 8), bool)
    for name, (state, after) in _STEPS.items():
        to[K[name]] = state
        may[K[name], list(after)] = True
    end_well = len(KINDS_TABLE)  # exec_end with a=1 or b=1 gets its own row
    to[K["exec_end"]], to[end_well] = 5, 4
    may[K["exec_end"], 3] = may[end_well, 3] = True
    return to, may


def plain_jobs(cols: dict[str, np.ndarray], idx: np.ndarray, discard_text: int) -> np.ndarray:
    """The ids of the jobs whose events (the rows ``idx`` of ``cols``, in event order) tell
    a plain story (see the module's docstring), sorted."""
    kind = cols["kind"][idx]
    idx = idx[(kind != K["lock_extended"]) & (cols["job"][idx] >= 0)]  # an extension: nothing
    del kind
    if not len(idx):  # no job was created before the run's end
        return np.zeros(0, np.int64)
    job = cols["job"][idx]
    order = np.argsort(job, kind="stable")
    idx, job = idx[order], job[order]
    del order
    kind, node = cols["kind"][idx], cols["node"][idx]
    a1, b1 = cols["a"][idx] == 1, cols["b"][idx] == 1
    end = kind == K["exec_end"]
    code = kind.astype(np.int16)
    code[end & (a1 | b1)] = len(KINDS_TABLE)
    to_of, may_of = _allowed()
    to = to_of[code]
    first = np.r_[True, job[1:] != job[:-1]] if len(job) else np.zeros(0, bool)
    prev = np.where(first, np.int8(0), np.r_[np.int8(0), to[:-1]])
    ok = may_of[code, np.maximum(prev, 0)] & (to >= 0) & (prev >= 0)
    del code
    ok &= ~((kind == K["completed"]) & ~a1)
    ok &= ~((kind == K["dead_lettered"]) & (cols["text"][idx] == discard_text))
    # every step of a round on the node that locked the job
    same = ~np.isin(kind, [K["job_created"], K["locked"], K["pending"]])
    ok &= ~same | first | (node == np.r_[-1, node[:-1]])
    starts = np.flatnonzero(first)  # job is sorted: each job's events are a run
    ids = job[starts]
    last = np.r_[starts[1:], len(job)] - 1
    good = np.logical_and.reduceat(ok, starts) if len(ids) else np.zeros(0, bool)
    good &= np.isin(to[last], _ENDS)
    effects = (kind == K["side_effect"]) | (end & b1)
    good &= np.add.reduceat(effects.astype(np.int64), starts) <= 1 if len(ids) else good
    # no round cut by its node's crash: none between a step of a round and the step before
    crashes = np.flatnonzero(cols["kind"] == K["node_crashed"])
    if len(crashes) and len(ids):
        span = np.int64(len(cols["kind"]) + 1)
        cut = np.sort(cols["node"][crashes].astype(np.int64) * span + crashes)
        step = np.flatnonzero(same & ~first)
        at = node[step].astype(np.int64) * span
        hit = np.searchsorted(cut, at + idx[step]) > np.searchsorted(cut, at + idx[step - 1])
        good &= np.bincount(np.searchsorted(ids, job[step[hit]]), minlength=len(ids)) == 0
    return ids[good]


def plain_table(cols: dict[str, np.ndarray], sel: np.ndarray, ids: np.ndarray,
                texts: list[str], nodes: list[str]) -> dict[str, np.ndarray]:
    """The table's columns for the jobs ``ids`` (sorted), the rows of the plain jobs filled
    from their events (the rows ``sel``, in event order), the others left at their defaults
    (see ``merged``)."""
    n = len(ids)
    kind = cols["kind"][sel]
    pos = np.searchsorted(ids, cols["job"][sel])
    if n < 2 ** 31:
        pos = pos.astype(np.int32)
    out: dict[str, np.ndarray] = {"id": ids.astype(np.int64)}
    for c in COLUMNS[1:]:
        d = _DEFAULTS[c]
        out[c] = np.full(n, d, dtype=object if isinstance(d, str) else type(d))
    text_of = np.array(list(texts) + [""], dtype=object)

    def at(k: str, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        m = kind == K[k] if mask is None else (kind == K[k]) & mask
        return pos[m], sel[m]

    p, r = at("job_created")
    out["kind"][p] = np.array(KINDS_OF_JOB, dtype=object)[cols["a"][r]]
    out["handler"][p] = text_of[cols["text"][r]]
    out["priority"][p] = cols["b"][r]
    out["created"][p], out["due"][p], out["created_seq"][p] = cols["time"][r], cols["x"][r], r
    named = cols["c"][r] >= 0
    out["name"][p[named]] = text_of[cols["c"][r][named]]
    p, r = at("exec_start")
    out["executions"] = np.bincount(p, minlength=n).astype(np.int64)
    first = np.unique(p, return_index=True)[1]
    out["first_start"][p[first]] = cols["time"][r[first]]
    out["nodes"] = _node_lists(p, cols["node"][r], n, nodes)
    ends = kind == K["exec_end"]
    good_end = cols["a"][sel] == 1
    effect_end = cols["b"][sel] == 1
    out["failures"] = np.bincount(pos[ends & ~good_end & ~effect_end], minlength=n).astype(
        np.int64)
    out["side_effects"] = (np.bincount(pos[(kind == K["side_effect"]) | (ends & effect_end)],
                                       minlength=n)).astype(np.int64)
    p, r = at("completed")
    out["outcome"][p], out["end"][p] = "done", cols["time"][r]
    p, r = at("dead_lettered")
    out["outcome"][p] = np.array(["dead_lettered", "incident", "failed"],
                                 dtype=object)[cols["a"][r]]
    out["end"][p] = cols["time"][r]
    p, r = at("pending")
    out["pending_reason"][p] = text_of[cols["text"][r]]
    out["outcome"][p] = "pending"
    p, r = at("locked", cols["c"][sel] > 0)
    last = len(p) - 1 - np.unique(p[::-1], return_index=True)[1]  # each job's last one
    out["deadline"][p[last]] = cols["c"][r[last]]
    return out


def _node_lists(pos: np.ndarray, node: np.ndarray, n: int, names: list[str]) -> np.ndarray:
    """Each job's nodes, in the order they first ran it, joined by ``;``."""
    out = np.full(n, "", dtype=object)
    if not len(pos):
        return out
    key = pos.astype(np.int64) * (len(names) + 1) + node
    _, first = np.unique(key, return_index=True)
    first.sort()  # each (job, node) at its first run, in event order
    p, nd = pos[first], node[first]
    order = np.argsort(p, kind="stable")
    p, nd = p[order], nd[order]
    name_of = np.array(names, dtype=object)
    counts = np.bincount(p, minlength=n)
    once = counts[p] == 1
    out[p[once]] = name_of[nd[once]]
    many = np.flatnonzero(counts > 1)
    if len(many):
        starts = np.searchsorted(p, many)
        for j, s in zip(many.tolist(), starts.tolist()):
            out[j] = ";".join(name_of[nd[s:s + counts[j]]].tolist())
    return out


def merged(table: dict[str, np.ndarray], told: dict[int, JobStory]) -> pd.DataFrame:
    """The table: ``table`` (``plain_table``'s columns) with the told stories' rows written
    over their defaults, in place."""
    ids = table["id"]
    for s in told.values():
        i = int(np.searchsorted(ids, s.id))
        for c in COLUMNS[1:]:
            table[c][i] = ";".join(s.nodes) if c == "nodes" else getattr(s, c)
    return pd.DataFrame(table, copy=False)
