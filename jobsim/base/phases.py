"""Where a command's time goes: wall and CPU seconds per phase, and the peak memory.

``Phases`` sums each named phase's wall-clock (``perf_counter``) and CPU (``process_time``)
seconds over the ``with phases.of(name):`` blocks; what no block covered is ``other``.
``figures()`` gives the JSON-ready figures with the process's peak resident memory, overall
and as it stood at the end of each phase (where it rose). None of
it ever reaches a report: wall-clock figures would make the outputs differ run to run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

#: the phases of ``jobsim run``, in order (``seeds``: the runs over the other seeds, with
#: their worker processes' CPU; ``page``: view.html); ``other`` is the rest (the report's
#: text, the printed story and summary, loading the scenario); a command that is its process
#: also has ``start``, before all of them (the interpreter and the imports)
PHASES = ("simulate", "analysis", "seeds", "csv", "plots", "page", "other")
#: marks a timings file as jobsim's: only such a file is ever replaced
MARK = "jobsim_timings"


def peak_mb() -> float | None:
    """The peak resident memory in MB of this process or of a child it waited for (the
    page's, the plots', the CSV files'), whichever is higher (None where the platform does
    not say): not their sum while they ran side by side."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


class Phases:
    """Wall and CPU seconds per phase, from its creation to ``figures()``; or, given the
    ``perf_counter`` its command began at (``since``: for a command that is its process,
    ``base.STARTED``, jobsim's import), from then, the phase ``start`` being all before the
    creation (the imports, the arguments) and the CPU counted from the process's start."""

    def __init__(self, since: float | None = None) -> None:
        self._t0, self._c0 = time.perf_counter(), time.process_time()
        self._start: tuple[float, float] | None = None
        if since is not None:
            self._start = (self._t0 - since, self._c0)
            self._t0, self._c0 = since, 0.0
        self._wall = dict.fromkeys(PHASES[:-1], 0.0)
        self._cpu = dict.fromkeys(PHASES[:-1], 0.0)
        #: the process's peak memory when the phase last ended: where the peak was reached
        self._peak: dict[str, float | None] = {}
        self._open = False
        self._elsewhere = 0.0

    @contextmanager
    def of(self, name: str) -> Iterator[None]:
        if self._open:  # nested: the outer phase has it already
            yield
            return
        self._open = True
        t, c = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self._wall[name] = self._wall.get(name, 0.0) + time.perf_counter() - t
            self._cpu[name] = self._cpu.get(name, 0.0) + time.process_time() - c
            self._peak[name] = peak_mb()
            self._open = False

    def add(self, name: str, wall: float, cpu: float) -> None:
        """Seconds spent on phase ``name`` elsewhere: ``cpu`` in a child process (the
        page's), ``wall`` this process's wait for it."""
        self._wall[name] = self._wall.get(name, 0.0) + wall
        self._cpu[name] = self._cpu.get(name, 0.0) + cpu
        self._elsewhere += cpu  # the command's CPU: this process's and its children's
        self._peak[name] = peak_mb()

    def figures(self) -> dict[str, Any]:
        wall = time.perf_counter() - self._t0
        cpu = time.process_time() - self._c0 + self._elsewhere
        phases = {n: {"wall_s": round(self._wall[n], 6), "cpu_s": round(self._cpu[n], 6),
                      "peak_rss_mb_at_end": _mb(self._peak.get(n))} for n in self._wall}
        if self._start is not None:
            phases["start"] = {"wall_s": round(self._start[0], 6),
                               "cpu_s": round(self._start[1], 6)}
        done_wall = sum(p["wall_s"] for p in phases.values())
        done_cpu = sum(p["cpu_s"] for p in phases.values())
        phases["other"] = {"wall_s": round(max(0.0, wall - done_wall), 6),
                           "cpu_s": round(max(0.0, cpu - done_cpu), 6)}
        return {MARK: 1, "phases": phases, "wall_s": round(wall, 6), "cpu_s": round(cpu, 6),
                "simulate_share": round(self._wall["simulate"] / wall, 6) if wall > 0 else None,
                "peak_rss_mb": _mb(peak_mb())}


def children_cpu() -> float:
    """The CPU seconds of this process's children that ended and were waited for (a pool's
    workers once it is shut down); 0 where the platform does not say."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _mb(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def phase(phases: Phases | None, name: str) -> Any:
    """``phases.of(name)``, or nothing to time when ``phases`` is None."""
    return phases.of(name) if phases is not None else nullcontext()


class TimingsError(Exception):
    """The timings file cannot be written where asked."""


def check_file(path: Path) -> None:
    """Raise TimingsError unless ``path`` may receive timings: its folder exists, and it is
    new or a timings file jobsim wrote (never a user's file)."""
    if path.is_dir():
        raise TimingsError(f"--timings {path}: is a folder, not a file")
    if not path.parent.is_dir():
        raise TimingsError(f"--timings {path}: the folder {path.parent} does not exist")
    if path.exists():
        try:
            ours = json.loads(path.read_text(encoding="utf-8")).get(MARK) == 1
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise TimingsError(f"--timings {path}: the file exists and jobsim did not write "
                               "it; refusing to overwrite it")


def write_file(path: Path, figures: dict[str, Any]) -> None:
    """Write ``figures`` as ``path`` (by a temporary file and a rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:  # stopped half-way (Ctrl-C, SIGTERM): no temporary file left beside it
        tmp.write_text(json.dumps(figures, sort_keys=True, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
