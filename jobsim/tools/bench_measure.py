"""How the bench suite measures: CPU seconds in a fresh child process, each figure paired with
its baseline, the median of the pairs' ratios with their spread.

- **CPU, not wall time.** A measured call runs in a child process forked for it alone, which
  reads ``time.process_time()`` around the call: what the call cost, not what the machine's
  other work added to its wall time, and nothing left over (heap, caches, a collector's
  debt) from the call before.
- **Paired.** A figure's run and its baseline's run are adjacent in time, so a slow moment
  of the machine touches both; the order alternates from pair to pair (measured first,
  then baseline first), so that neither side always runs second.
- **The median of the pairs' ratios**, with their min–max beside it: at least 3 pairs.
"""

from __future__ import annotations

import statistics
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MIN_PAIRS = 3


@dataclass(frozen=True)
class Side:
    """One side of a pair: ``fn(*args, seed)`` doing ``units`` of work (jobs, polls), timed;
    then, untimed, ``after`` of what it returned (a run's figures from its trace)."""

    label: str
    units: int
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    after: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Sample:
    """One measured call: its CPU seconds, its units of work and what it returned."""

    cpu: float
    units: int
    result: Any = None
    peak_mb: float = float("nan")

    @property
    def per_cpu_second(self) -> float:
        return self.units / max(self.cpu, 1e-9)


@dataclass
class Paired:
    """A figure's samples beside its baseline's, pair by pair, and the pairs' ratios."""

    measured: list[Sample] = field(default_factory=list)
    baseline: list[Sample] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    #: the order the runs went in: ("measured" | "baseline", pair index)
    order: list[tuple[str, int]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return float(statistics.median(self.ratios))

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.ratios), max(self.ratios)

    def median_of(self, side: str, key: Callable[[Sample], float]) -> float:
        samples = self.measured if side == "measured" else self.baseline
        return float(statistics.median(key(s) for s in samples))


def speed(m: Sample, b: Sample) -> float:
    """The measured side's units per CPU second over the baseline's (higher is faster)."""
    return m.per_cpu_second / b.per_cpu_second


def cost(m: Sample, b: Sample) -> float:
    """The measured side's CPU seconds over the baseline's (lower is cheaper)."""
    return m.cpu / max(b.cpu, 1e-9)


Measure = Callable[[Side, int], Sample]


def pairs(measured: Side, baseline: Side, n: int, ratio: Callable[[Sample, Sample], float],
          say: Callable[[str], None] = lambda line: None, measure: Measure | None = None,
          seed: int = 1) -> Paired:
    """``n`` pairs of ``measured`` beside ``baseline``; pair ``i`` runs both with seed
    ``seed + i``, the measured side first when ``i`` is even, the baseline first when odd."""
    if n < MIN_PAIRS:
        raise ValueError(f"a median with a spread needs at least {MIN_PAIRS} pairs (got {n})")
    run = measure or in_child
    out = Paired()
    for i in range(n):
        first, second = ("measured", "baseline") if i % 2 == 0 else ("baseline", "measured")
        got: dict[str, Sample] = {}
        for which in (first, second):
            got[which] = run(measured if which == "measured" else baseline, seed + i)
            out.order.append((which, i))
        m, b = got["measured"], got["baseline"]
        out.measured.append(m)
        out.baseline.append(b)
        out.ratios.append(ratio(m, b))
        say(f"  pair {i + 1}/{n} ({first} first): {measured.label} {m.cpu:.3f} s CPU, "
            f"{baseline.label} {b.cpu:.3f} s CPU; ratio {out.ratios[-1]:.3f}")
    return out


def in_child(side: Side, seed: int) -> Sample:
    """``side.fn(*side.args, seed)`` in a fresh child process: its CPU seconds there (not
    the fork's, nor ``side.after``'s)."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, side.fn, (*side.args, seed), side.after))
    child.start()
    send.close()
    try:
        ok, *rest = receive.recv()
    except EOFError:
        child.join()
        raise RuntimeError(f"the bench's child process for {side.label!r} died "
                           f"(exit code {child.exitcode}) before it reported") from None
    finally:
        receive.close()
    child.join()
    if not ok:
        raise RuntimeError(f"{side.label} failed in the bench's child process:\n{rest[0]}")
    result, cpu, peak = rest
    return Sample(cpu, side.units, result, peak)


def _child(send: Any, fn: Callable[..., Any], args: tuple[Any, ...],
           after: Callable[[Any], Any] | None) -> None:
    import resource

    try:
        t0 = time.process_time()
        result = fn(*args)
        cpu = time.process_time() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux
        if after is not None:
            result = after(result)
        send.send((True, result, cpu, peak))
    except BaseException:  # the parent reports it; the child only passes it on
        send.send((False, traceback.format_exc()))
    finally:
        send.close()
