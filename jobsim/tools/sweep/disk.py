"""The disk a sweep's or a hunt's runs take: each run's cache entry (and its row in the
tables), estimated from the scenario before any run, against the cache's bound
(``--cache-limit``, ``DEFAULT_CACHE_LIMIT``) and the free space of the disk the folder is on.

A cache entry is the run's row of figures: about a hundred for any run, fourteen more per
node, six per named job and twenty per downstream service, some forty bytes each with its
name, in files of whole disk blocks. Measured on the shipped scenarios: 4.2 kB (lesson, 2
nodes) to 8.1 kB (retry_storm, 8 nodes and a service); the estimate is 4.3 kB and 8.2 kB,
each rounded up to whole 4 kB blocks, and a row of runs.csv on top.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

from ...base.errors import Problem, ScenarioError
from ...sim.cost.budget import DEFAULT_CACHE_LIMIT, _bytes  # noqa: F401 - the sweep's

#: a file takes whole blocks of the disk
BLOCK = 4096
#: the space left free besides the cache: the tables, plots and reports written at the end
RESERVE = 64 * 1024 ** 2


def entry_bytes(sc: Any) -> int:
    """The disk one run of ``sc`` takes: its cache entry in whole blocks, and its row of
    the runs table."""
    named = sum(1 for j in sc.jobs if getattr(j, "name", None)) + len(sc.recurring) + \
        len(sc.streams)
    figures = 100 + 14 * len(sc.nodes) + 6 * named + 22 * len(sc.services)
    entry = figures * 40 + 600
    return math.ceil(entry / BLOCK) * BLOCK + figures * 12


def free_bytes(path: str | Path) -> int:
    """The free space of the disk ``path`` is (or would be) on: its nearest existing
    folder's."""
    p = Path(path).absolute()
    while not p.exists() and p.parent != p:
        p = p.parent
    return shutil.disk_usage(p).free


def check_room(need: float, runs: int, limit: float, out: str | Path, source: str,
               what: str, fewer: str) -> None:
    """Refuse (``ScenarioError``, before anything is made) ``runs`` runs whose cache, about
    ``need`` bytes, would pass ``limit`` or not fit on the disk with ``RESERVE`` to spare;
    ``what`` names them (``"the sweep"``), ``fewer`` says how to ask for fewer."""
    per_run = need / max(runs, 1)
    if need > limit:
        raise ScenarioError([Problem(
            "--cache-limit", f"a cache within its limit of {_bytes(limit)}",
            f"{what} would cache about {_bytes(need)} ({runs:,} runs × about "
            f"{_bytes(per_run)})", f"raise --cache-limit to {_size_flag(need * 1.1)}, or "
            f"{fewer}")], source)
    free = free_bytes(out)
    if need + RESERVE > free:
        raise ScenarioError([Problem(
            "--out", f"room for the cache on the disk of {out}: about {_bytes(need)} "
            f"({runs:,} runs × about {_bytes(per_run)}) and {_bytes(RESERVE)} to spare",
            f"{_bytes(free)} free", f"free some space, choose another --out, or {fewer}")],
            source)


def runs_that_fit(limit: float, out: str | Path, per_run: int) -> tuple[int, str]:
    """The most runs whose cache fits both its limit and the disk (with ``RESERVE`` to
    spare), and which of the two binds, with its figures."""
    free = max(0, free_bytes(out) - RESERVE)
    if limit <= free:
        return int(limit // per_run), f"the cache's limit of {_bytes(limit)} (--cache-limit)"
    return int(free // per_run), (f"the {_bytes(free + RESERVE)} free on the disk of {out} "
                                  f"(less {_bytes(RESERVE)} to spare)")


def _size_flag(x: float) -> str:
    for unit, size in (("TB", 1024 ** 4), ("GB", 1024 ** 3)):
        if x >= size:
            return f"{math.ceil(x / size * 10) / 10:g}{unit}"
    return f"{math.ceil(x / 1024 ** 2)}MB"
