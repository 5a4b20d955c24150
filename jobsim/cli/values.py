"""The value types of the flags: seeds, counts with their bounds, event budgets and memory
sizes. Each parses one flag's text or raises ``argparse.ArgumentTypeError`` saying what it
expected."""

from __future__ import annotations

import argparse


def _path(text: str) -> str:
    """A file or folder name (``--out``, ``--timings``): an empty one was taken as none given
    (``--out ""`` wrote to the default folder, ``--timings ""`` wrote nothing)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a file or folder name (got {text!r})")
    return text


def _events(text: str) -> float:
    from ..sim.cost import MAX_EVENTS

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (1 <= value <= MAX_EVENTS):  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a number of events from 1 to "
                                         f"{MAX_EVENTS:.0e}, like 5e7 (got {text!r})")
    return value


def _size(text: str) -> float:
    import re

    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]?)[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a size like 512MB or 8GB (got {text!r})")
    value = float(m.group(1)) * 1024 ** " KMGT".index((m.group(2) or " ").upper())
    if not 1024 ** 2 <= value <= 1024 ** 5:
        raise argparse.ArgumentTypeError(f"expected a size from 1MB to 1PB (got {text!r})")
    return value


def _bounded(hi: int):
    def parse(text: str) -> int:
        value = _positive(text)
        if value > hi:
            raise argparse.ArgumentTypeError(f"expected at most {hi:,} (got {text!r})")
        return value

    return parse


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer (got {text!r})")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer (got {text!r})")
    return value


def _at_least(lo: int, what: str = ""):
    """An integer of at least ``lo`` (``what``: its words, else "an integer of at least
    lo"), refused alike for a smaller one or a word."""
    what = what or f"an integer of at least {lo}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = lo - 1
        if value < lo:
            raise argparse.ArgumentTypeError(f"expected {what} (got {text!r})")
        return value

    return parse


def _bench_cases(text: str) -> tuple[str, ...]:
    from ..tools.bench_suite import KEYS

    cases = tuple(c.strip() for c in text.split(",") if c.strip())
    unknown = [c for c in cases if c not in KEYS]
    if unknown or not cases:
        import difflib

        near = [m for c in unknown for m in difflib.get_close_matches(c, KEYS, 1)]
        hint = f"; did you mean {', '.join(repr(m) for m in near)}?" if near else ""
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(KEYS)}, separated by "
                                         f"commas (got {text!r}){hint}")
    return cases


_at_least_two = _at_least(2)


_positive = _at_least(1, "a positive integer")


def _window(text: str) -> tuple[float, str]:
    """A warm-up or cool-down (``--warmup 5m``): its seconds and its text as given."""
    from ..base.durations import EXPECTED, parse_duration
    from ..format.window_format import WARMUP

    try:
        seconds = parse_duration(text)
    except ValueError:
        said = "a duration that is not negative" if text.strip().startswith("-") else EXPECTED
        raise argparse.ArgumentTypeError(f"expected {said} (got {text!r})") from None
    if seconds > WARMUP.hi:
        raise argparse.ArgumentTypeError(f"expected a duration of at most {WARMUP.hi:g}s "
                                         f"(got {text!r})")
    return seconds, text.strip()
