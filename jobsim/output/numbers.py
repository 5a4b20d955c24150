"""How "What the run shows" writes a time, a share, a count of threads and a sentence's
first word (its sentences' modules share them)."""

from __future__ import annotations


def seconds(x: float) -> str:
    """A time as "What the run shows" writes one: ``0 s``, ``142 ms``, ``4.29 s``, ``643 s``."""
    if x == 0:
        return "0 s"
    if x < 1 and float(f"{x * 1000:.3g}") < 1000:  # (0.9996 s is "1 s", not "1e+03 ms")
        return f"{x * 1000:.3g} ms"
    return f"{x:,.3g} s" if x < 100 else f"{x:,.0f} s"


def pct(x: float) -> str:
    """A share as a whole percentage: ``42 %``."""
    return f"{100 * x:.0f} %"


def threads(n: int) -> str:
    """``1 thread``, ``4 threads``."""
    return f"{n} thread{'' if n == 1 else 's'}"


def first_up(words: str) -> str:
    """``words`` to begin a sentence: only the first letter raised, so that a node's or a
    service's name keeps its case."""
    return words[:1].upper() + words[1:]
