"""Hunts: search the fault space for a run that breaks a property, and shrink it.

``hunt(doc, prop)`` takes a configuration (a scenario's document, one variant of it, with
``--set`` values) and a property (``prop``: an invariant, or an expectation over the
summary). It runs the configuration once as it is (the **baseline**: if that already breaks
the property, no fault is needed and the hunt says so), then **searches**: it draws cases
(``space``: a seed and up to ``hunt.faults`` faults, added to the scenario's own) and runs
them, a batch at a time, until the budget of runs (or of time) is spent. Of the runs that
broke the property, the one with the fewest faults (then of the kinds ``hunt.kinds``
prefers, then the first drawn) is
**shrunk** (``shrink``): fewer faults, fewer jobs, nodes and threads, shorter and earlier
faults, a shorter horizon, each step kept only if the run still breaks the property. The
smallest case becomes a scenario file (``minimal.yaml``) that ``jobsim run`` reproduces: its
expectation is the property, so the run exits 1.

Why not Hypothesis. Its engine searches and shrinks one example at a time, in one process,
on its own byte-level representation of the draws; a hunt's runs are whole simulations
(tens of milliseconds to seconds), to be run in parallel on local workers or a Dask cluster,
and its shrinking steps have a meaning (a fault fewer, a pause earlier) that a generic
shrinker only stumbles on. Driving Hypothesis from many processes would need its internals
(``ConjectureRunner``, not a public API). So the search is plain seeded draws, and the
shrinker is the domain's: a few dozen runs, each batch in parallel, the same result on any
number of workers.

Determinism. Case ``i`` depends only on the hunt's seed and ``i``; the search runs cases in
batches of ``BATCH`` in order, and shrinking tries its candidates in a fixed order and
keeps the first that breaks, also ``BATCH`` at a time. So the same configuration, property,
budget of runs and seed give the same runs and the same minimal file, on one process, many
or a Dask cluster. A budget of time is not deterministic in what it covers (the report says
how many runs it made: give that as the budget to repeat it).

Runs are cached (the sweep's cache, one file per run under ``<out>/cache/``), so a hunt run
again, or interrupted and run again, computes only the runs it has not made.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...base import outdir
from ...base.errors import Problem, ScenarioError
from ...sim.cost.budget import _bytes
from ..sweep import (DEFAULT_CACHE_LIMIT, MAX_WORKERS, _execute, _run_packed,
                     check_dask_address, connect_dask)
from ..sweep.cache import _Cache, _doc_hash, task_key
from .plan import plan_runs
from .prop import Property, parse
from .shrink import anchored, candidates, overrides, shape_of
from .space import Bounds, bounds, draw, kind_of
from .space import base_kind as f_kind

__all__ = ["BATCH", "HuntResult", "MAX_HUNT_RUNS", "MAX_SHRINK_RUNS", "Property", "KIND",
           "configuration", "hunt", "parse"]

#: the runs made at a time (fixed: the runs made must not depend on the workers)
BATCH = 32
#: the most runs a search may make; the most runs shrinking may make
MAX_HUNT_RUNS = 1_000_000
MAX_SHRINK_RUNS = 1_000
#: the hunt folder's kind (``outdir``)
KIND = "hunt"


@dataclass
class HuntResult:
    """What a hunt did and found. ``records``: one dict per run (``phase`` baseline, search
    or shrink); ``original`` and ``minimal``: the case that broke the property first, and
    shrunk (None if nothing broke it); ``minimal_doc``: the minimal scenario's document."""

    prop: Property
    bounds: Bounds
    name: str
    hunt_seed: int
    records: list[dict[str, Any]] = field(default_factory=list)
    original: dict[str, Any] | None = None
    minimal: dict[str, Any] | None = None
    minimal_doc: dict[str, Any] | None = None
    original_doc: dict[str, Any] | None = None
    computed: int = 0
    cached: int = 0
    baseline_broken: bool = False
    budget_note: str = ""
    shrink_capped: bool = False
    folder: Path | None = None
    analysis: Any = None  # the minimal run's analysis
    #: the finding is a crash (the model raised), not a break of the property; the minimal
    #: run's traceback, its last lines
    crash: bool = False
    traceback: str = ""
    #: what bounded the search beyond the budget asked for (``plan``)
    budget_lines: list[str] = field(default_factory=list)

    @property
    def searched(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["phase"] == "search"]


def configuration(doc: dict[str, Any], variant: str | None, sets: list[str],
                  source: str) -> dict[str, Any]:
    """The document the hunt runs: the scenario with ``variant``'s values and ``sets``
    applied, without its variants, expectations, sweep and hunt sections."""
    from ...format import scenario as scenario_mod

    if variant is not None:
        d = scenario_mod.chosen_variant(doc, variant, source)
    else:
        d = copy.deepcopy(doc)
        d.pop("variants", None)
    problems: list[Problem] = []
    scenario_mod.apply_sets(d, sets, source, problems)  # a file's limits, as from_dict's
    if problems:
        raise ScenarioError(problems, source)
    for key in ("expect", "sweep", "hunt", "report"):
        d.pop(key, None)
    if variant is not None:
        d["name"] = f"{d['name']}_{variant}"
    return d


class _Runner:
    """Runs cases (a batch at a time, through the sweep's cache and workers) and records
    each run."""

    def __init__(self, doc: dict[str, Any], source: str, prop: Property, cache: _Cache,
                 workers: int, client: Any, result: HuntResult,
                 progress: Callable[[str, int, int], None] | None):
        self.doc, self.source, self.prop, self.cache = doc, source, prop, cache
        self.workers, self.client, self.result = workers, client, result
        self.progress = progress
        self.doc_hash = _doc_hash(doc)
        self.memo: dict[str, dict[str, Any]] = {}
        #: what shrinking keeps: a run that breaks the property, or (a crash) one that crashes
        self.hit: Callable[[dict[str, Any]], bool] = prop.broken

    def baseline(self, zero: dict[str, Any], row: dict[str, Any], cached: bool) -> None:
        """The configuration's own run, made before the folder was (``_baseline``):
        recorded, and cached now that there is a cache."""
        ov = overrides(zero, self.doc)
        key = task_key(self.doc_hash, ov, zero["seed"])
        self.memo[key] = row
        if cached:
            self.result.cached += 1
        else:
            self.result.computed += 1
            if row.get("ok"):
                self.cache.put(key, ov, zero["seed"], row)
        self.result.records.append(_record("baseline", 0, zero, row, self.prop))
        if self.progress is not None:
            self.progress("baseline", 1, 1)

    def rows(self, cases: list[dict[str, Any]], phase: str, first: int,
             total: int) -> list[dict[str, Any]]:
        tasks, keys = [], []
        for c in cases:
            ov = overrides(c, self.doc)
            key = task_key(self.doc_hash, ov, c["seed"])
            keys.append(key)
            if key not in self.memo:
                tasks.append((key, (self.doc, self.source, ov, c["seed"])))
        tasks = list(dict(tasks).items())
        progress = None
        if self.progress is not None:
            progress = (lambda done, _n: self.progress(phase, first + done, total))
        got, ran = _execute(tasks, self.cache, self.workers, self.client, progress,
                            stop_when_full=False)  # a full cache ends the search, not runs
        self.result.computed += ran
        self.result.cached += len(got) - ran
        self.memo.update(got)
        out = []
        for i, (c, key) in enumerate(zip(cases, keys)):
            row = self.memo[key]
            out.append(row)
            self.result.records.append(_record(phase, first + i, c, row, self.prop))
        return out


def _record(phase: str, index: int, case: dict[str, Any], row: dict[str, Any],
            prop: Property) -> dict[str, Any]:
    return {"phase": phase, "index": index, "seed": case["seed"],
            "faults": json.dumps(case["faults"], sort_keys=True),
            "kinds": ", ".join(kind_of(f) for f in case["faults"]),
            "jobs": row.get("jobs.created"), "ok": bool(row.get("ok")),
            "broken": prop.broken(row), "value": prop.value(row),
            "crashed": bool(row.get("crashed")), "error": row.get("error")}


def hunt(doc: dict[str, Any], prop: Property | str, *, source: str = "<scenario>",
         runs: int | None = 200, seconds: float | None = None, seed: int | None = None,
         kinds: tuple[str, ...] | None = None, workers: int = 1, dask: str | None = None,
         out: str | Path | None = None, hunt_spec: dict[str, Any] | None = None,
         progress: Callable[[str, int, int], None] | None = None,
         command: str = "", cache_limit: float = DEFAULT_CACHE_LIMIT,
         say: Callable[[str], None] | None = None) -> HuntResult:
    """Hunt the configuration ``doc`` (see ``configuration``) for runs that break ``prop``;
    shrink the first; write the hunt folder under ``out`` if given (``report``).
    ``runs``/``seconds``: the search's budget (either or both; at least one), capped at what
    the cost estimate and the cache's room allow (``plan``; ``say(line)`` is told why);
    ``hunt_spec``: the scenario's ``hunt:`` section; ``progress(phase, done, total)``;
    ``command``: the command line, said in the files. A run in which the model raises is a
    finding of its own (``HuntResult.crash``), shrunk like a break of the property.

    Everything is checked before anything is written — the flags, the configuration, its
    cost and the disk, the folder, the property against the configuration's own run (the
    baseline, run here or taken from an earlier hunt's cache) and the ``hunt:`` bounds."""
    from ...format.scenario import from_dict
    from .report import minimal_doc, verify, write

    if isinstance(prop, str):
        prop = parse(prop)
    if runs is None and seconds is None:
        raise ValueError("a hunt needs a budget: runs, seconds or both")
    if runs is not None and not 1 <= runs <= MAX_HUNT_RUNS:
        raise ScenarioError([Problem("--budget", f"from 1 to {MAX_HUNT_RUNS:,} runs",
                                     f"{runs:,}")], "the command line")
    if workers > MAX_WORKERS or workers < 1:
        raise ScenarioError([Problem("--workers", f"1 to {MAX_WORKERS} worker processes",
                                     str(workers))], "the command line")
    if dask is not None:
        check_dask_address(dask, source)
    base = from_dict(doc, source)  # every problem of the configuration, before any run
    if out is not None:
        outdir.check(out, KIND)
    cap, lines = plan_runs(base, runs, seconds, MAX_HUNT_RUNS, MAX_SHRINK_RUNS, cache_limit,
                           out, source)
    names = tuple(n.name for n in base.nodes)
    hunt_seed = base.seed if seed is None else seed
    zero = {"seed": base.seed, "faults": []}
    row0, cached0 = _baseline(doc, source, zero, out)
    if not row0.get("ok") and not row0.get("crashed"):
        raise ScenarioError([Problem("(the configuration)", "a run that completes",
                                     str(row0.get("error")))], source)
    if row0.get("ok"):
        prop = prop.resolved(row0, source)
    ex = base.executor
    b = bounds(hunt_spec or {}, names, None if ex.lock_expiry == "never" else ex.lock_time,
               float(row0.get("end_time") or 0.0),
               all(n.executor.acquisition == "broker" for n in base.nodes), kinds,
               source, list(doc.get("faults") or []))
    for line in lines:
        if say is not None:
            say(line)
    with ExitStack() as stack:
        client = stack.enter_context(connect_dask(dask)) if dask is not None else None
        folder = outdir.Folder(out, KIND, dirs=("cache",)) if out is not None else None
        cache = _Cache(folder.path / "cache" if folder is not None else None, _doc_hash(doc),
                       limit=cache_limit)
        result = HuntResult(prop, b, str(doc["name"]), hunt_seed, budget_lines=lines)
        runner = _Runner(doc, source, prop, cache, workers, client, result, progress)
        runner.baseline(zero, row0, cached0)
        found, found_row = _search(runner, b, hunt_seed, base.seed, cap, seconds, zero, row0)
        if found is not None:
            result.original = found
            if found_row.get("crashed"):
                result.crash, runner.hit = True, _crashed
            result.minimal = _shrink(runner, found, found_row, shape_of(
                doc, base.executor.threads), result)
            result.original_doc = minimal_doc(doc, source, found, prop, result, "original")
            result.minimal_doc = minimal_doc(doc, source, result.minimal, prop, result,
                                             "minimal")
            result.analysis, result.traceback = verify(result.minimal_doc, source, prop,
                                                       result.crash)
        if folder is not None:
            result.folder = folder.path
            write(folder, result, doc, source, command or f"jobsim hunt {source} "
                  f"--break '{prop.text}'")
    return result


def _crashed(row: dict[str, Any]) -> bool:
    return bool(row.get("crashed"))


def _baseline(doc: dict[str, Any], source: str, zero: dict[str, Any],
              out: str | Path | None) -> tuple[dict[str, Any], bool]:
    """The configuration's own run, before the hunt folder is made: from the cache of an
    earlier hunt in ``out`` (read, nothing written), else run in this process. Its row,
    and whether it came from the cache."""
    ov = overrides(zero, doc)
    key = task_key(_doc_hash(doc), ov, zero["seed"])
    folder = Path(out) / "cache" if out is not None else None
    if folder is not None and folder.is_dir() and not folder.is_symlink():
        row = _Cache(folder, _doc_hash(doc)).get(key, ov, zero["seed"])
        if row is not None:
            return row, True
    return _run_packed((doc, source, ov, zero["seed"])), False


def _search(runner: _Runner, b: Bounds, hunt_seed: int, file_seed: int, cap: int,
            seconds: float | None, zero: dict[str, Any], row0: dict[str, Any]
            ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Run the search's cases (at most ``cap``); the case to shrink and its row: a run that
    crashed if any did (the model raised: a bug in jobsim, a finding of its own), else one
    that broke the property; of those, the fewest faults, then the kinds first in
    ``b.kinds`` (the preference), then the first drawn. A full cache ends the search."""
    result = runner.result
    best: dict[bool, tuple] = {}  # crashed? → (faults, kind ranks, index, case, row)
    if row0.get("crashed") or runner.prop.broken(row0):
        result.baseline_broken = not row0.get("crashed")
        best[bool(row0.get("crashed"))] = (0, [], -1, zero, row0)
    start = time.monotonic()
    i = 0
    while i < cap and not row0.get("crashed"):  # a crash without faults: no search
        if seconds is not None and time.monotonic() - start >= seconds:
            result.budget_note = (f"the budget of {seconds:g} s ran out after {i:,} runs "
                                  f"(--budget {i} repeats this search exactly)")
            break
        if runner.cache.full:
            result.budget_note = (f"the cache reached its limit of {_bytes(runner.cache.limit)}"
                                  f" (--cache-limit) after {i:,} runs: the search stopped "
                                  "there (the runs after it are not cached)")
            break
        cases = [draw(b, hunt_seed, k, file_seed) for k in range(i, min(cap, i + BATCH))]
        for k, (c, row) in enumerate(zip(cases, runner.rows(cases, "search", i, cap))):
            crashed = bool(row.get("crashed"))
            if crashed or runner.prop.broken(row):
                ranks = sorted(b.kinds.index(f_kind(f)) for f in c["faults"])
                cand = (len(c["faults"]), ranks, i + k, c, row)
                if crashed not in best or cand[:3] < best[crashed][:3]:
                    best[crashed] = cand
        i += len(cases)
    chosen = best.get(True) or best.get(False)
    return (chosen[3], chosen[4]) if chosen is not None else (None, None)


def _shrink(runner: _Runner, case: dict[str, Any], row: dict[str, Any], shape: dict[str, Any],
            result: HuntResult) -> dict[str, Any]:
    """The smallest case shrinking reaches from ``case`` (see ``shrink``)."""
    made = 0
    while True:
        todo = list(candidates(case, shape, row.get("end_time"), runner.prop.grows))
        hit, made = _first_broken(runner, todo, made, result)
        if hit is None and not result.shrink_capped:
            # stuck: once per case reached (it runs probes in this process)
            hit, made = _first_broken(runner, anchored(case, shape, runner.doc,
                                                       runner.source), made, result)
        if hit is None:
            return case
        case, row = hit


def _first_broken(runner: _Runner, todo: list[dict[str, Any]], made: int,
                  result: HuntResult) -> tuple[tuple[dict[str, Any], dict[str, Any]] | None,
                                               int]:
    """The first of ``todo`` (run ``BATCH`` at a time, in order) that breaks the property,
    with its row, or None; and the shrinking runs made so far. Stops at ``MAX_SHRINK_RUNS``
    (``result.shrink_capped``)."""
    for at in range(0, len(todo), BATCH):
        if made >= MAX_SHRINK_RUNS:
            result.shrink_capped = True
            return None, made
        batch = todo[at:at + BATCH]
        rows = runner.rows(batch, "shrink", made, made + len(todo) - at)
        made += len(batch)
        k = next((k for k, r in enumerate(rows) if runner.hit(r)), None)
        if k is not None:
            return (batch[k], rows[k]), made
    return None, made
