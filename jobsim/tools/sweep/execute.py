"""The sweep itself: its checks before any run, its runs (from the cache, in this process, in
local workers or on Dask), more replications where a precision asks for them, and its folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ...base import outdir
from ...base.errors import Problem, ScenarioError
from ...sim.cost import Budget
from ...sim.cost.budget import _bytes
from .cache import _Cache, _doc_hash, task_key
from .cluster import _on_dask, check_dask_address, connect_dask
from .grid import Axis, check_axes, check_points, check_size, grid_points, replication_seed
from .pool import MAX_WORKERS, _in_pool
from .report import KIND, _write
from .disk import DEFAULT_CACHE_LIMIT, check_room
from .runs import CacheFull, _run_packed
from .tables import SweepResult, _half_width_ok, _table, point_table


def _execute(tasks: list[tuple[str, tuple]], cache: _Cache, workers: int, client: Any,
             progress: Callable[[int, int], None] | None, stop_when_full: bool = True
             ) -> tuple[dict[str, dict], int]:
    """Run the tasks not in the cache; return every row by key, and how many were run. A
    cache that reaches its limit stops the runs (``CacheFull``), unless not
    ``stop_when_full``: then the runs go on, no more cached."""
    rows: dict[str, dict[str, Any]] = {}
    todo = []
    by_key = dict(tasks)
    for key, task in tasks:
        hit = cache.get(key, task[2], task[3])
        if hit is not None:
            rows[key] = hit
        else:
            todo.append((key, task))
    total, done = len(tasks), len(rows)
    if progress:
        progress(done, total)

    def finish(key: str, row: dict[str, Any]) -> None:
        nonlocal done
        rows[key] = row
        if row.get("ok"):  # a failure may be transient: it is tried again next time
            task = by_key[key]
            cache.put(key, task[2], task[3], row)
            if cache.full and stop_when_full:
                raise CacheFull(f"the cache reached its limit of {_bytes(cache.limit)} "
                                f"(--cache-limit) after {done:,} of {total:,} runs; the runs "
                                f"that finished are kept in {cache.folder}: raise "
                                "--cache-limit and run the same command again to compute "
                                "only the rest")
        done += 1
        if progress:
            progress(done, total)

    if not todo:
        return rows, 0
    if client is not None:
        _on_dask(client, todo, finish)
    elif workers <= 1 or len(todo) == 1:
        for key, task in todo:
            finish(key, _run_packed(task))
    else:
        _in_pool(todo, min(workers, len(todo)), finish)
    return rows, len(todo)


def sweep(doc: dict[str, Any], axes: list[Axis], replications: int, *,
          source: str = "<scenario>", seed: int | None = None, workers: int = 1,
          dask: str | None = None, out: str | Path | None = None,
          precision: tuple[str, float] | None = None, min_replications: int = 3,
          plot: Iterable[str] = (), progress: Callable[[int, int], None] | None = None,
          stage: Callable[[str], None] | None = None,
          budget: Budget | None = None, notes: Iterable[str] = (),
          cache_limit: float = DEFAULT_CACHE_LIMIT, sets: Iterable[str] = (),
          fresh: bool = False) -> SweepResult:
    """Run the sweep; write its tables, plots and ``sweep.md`` under ``out`` if given.

    Everything that can be refused is refused before any run, and before ``out`` is made:
    the axes, the sweep's size, the workers, the Dask address, the folder (``OutputError``)
    and every grid point's scenario. ``progress(done, total)`` follows the runs;
    ``stage(text)`` says what comes after them; ``notes`` are said in ``sweep.md`` (the
    command line's overrides; ``sets``, its ``--set`` values, are in the command that
    reproduces a run that crashed). The sweep's cache takes at most ``cache_limit`` bytes:
    a sweep whose runs would take more, or more than its disk's free space, is refused
    before any run; one whose cache fills anyway stops (``CacheFull``), keeping it. A
    ``fresh`` sweep computes every run again, reading nothing from the cache it rewrites."""
    if isinstance(replications, bool) or not isinstance(replications, int) or \
            replications < 1:
        raise ValueError(f"replications must be a positive integer (got {replications!r})")
    base_seed = int(doc.get("seed", 0)) if seed is None else seed
    axes = tuple(axes)
    check_axes(axes, source)
    check_size(axes, replications, source, precision is not None)  # before any point is made
    if workers > MAX_WORKERS:
        raise ScenarioError([Problem("--workers", f"at most {MAX_WORKERS} worker processes",
                                     f"{workers:,}")], source)
    if dask is not None:
        check_dask_address(dask, source)
    if out is not None:
        outdir.check(out, KIND)  # a folder jobsim may not write is refused now, not at the end
        if (Path(out) / "cache").is_symlink():
            raise outdir.OutputError(f"refusing to write into {Path(out) / 'cache'}: it is a "
                                     "symbolic link; choose another folder")
    combos = grid_points(axes)
    disk = check_points(doc, combos, axes, replications, source, budget)
    if out is not None:  # its cache within its limit and the disk's room, before any run
        check_room(disk, len(combos) * replications, cache_limit, out, source, "the sweep",
                   "sweep fewer points or replications")
    doc_hash = _doc_hash(doc)
    reps = {i: (min(min_replications, replications) if precision else replications)
            for i in range(len(combos))}
    computed = cached = 0
    rows_by_key: dict[str, dict[str, Any]] = {}
    with ExitStack() as stack:
        client = stack.enter_context(connect_dask(dask)) if dask is not None else None
        folder = outdir.Folder(out, KIND, dirs=("cache",)) if out is not None else None
        cache = _Cache(folder.path / "cache" if folder is not None else None, doc_hash,
                       [a.path for a in axes], cache_limit, fresh=fresh)
        while True:
            tasks = []
            meta = {}
            for i, combo in enumerate(combos):
                for r in range(reps[i]):
                    s = replication_seed(base_seed, r)
                    key = task_key(doc_hash, combo, s)
                    meta[key] = (i, r, combo)
                    if key not in rows_by_key:
                        tasks.append((key, (doc, source, combo, s)))
            got, ran = _execute(tasks, cache, workers, client, progress)
            computed += ran
            cached += len(got) - ran
            rows_by_key.update(got)
            table = _table(rows_by_key, meta, axes)
            if precision is None:
                break
            figure, fraction = precision
            more = False
            for i in range(len(combos)):
                if reps[i] < replications and not _half_width_ok(
                        table[table["point"] == i], figure, fraction):
                    reps[i] = min(replications, reps[i] * 2)
                    more = True
            if not more:
                break
    points = point_table(table, axes)
    result = SweepResult(table, points, axes, computed, cached,
                         folder.path if folder is not None else None,
                         recomputed=cache.damaged)
    if folder is not None:
        if stage:
            stage("writing tables and plots")
        _write(folder, result, list(plot), precision, str(doc.get("name", "")),
               [f"Base seed {base_seed} (each replication's seed is derived from it; the "
                "same at every grid point)."] + list(notes), source, list(sets))
    return result
