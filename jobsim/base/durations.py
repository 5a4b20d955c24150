"""Durations as a scenario writes them, and as a transcript prints them.

Every duration in a file carries a unit: ``250ms``, ``10s``, ``5m``, ``1h``, ``2d``, ``1.5s``,
or ISO-8601 ``PT10M``, ``P30D``, ``PT1H30M``. A repeating interval ``R5/PT10M`` (five
executions, ten minutes apart) is a retry cycle. Simulated time is seconds as a float.
"""

from __future__ import annotations

import math
import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_SIMPLE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|min|m|h|d)\s*$")
_ISO = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)
_CYCLE = re.compile(r"^R(\d+)/(P.+)$")
#: the JSON Schema's pattern for a duration: the strings ``parse_duration`` reads, no more
#: and no fewer (ECMA-262 syntax; "P" and "PT" alone carry no figure)
_NUM = r"\d+(?:\.\d+)?"
SCHEMA_PATTERN = (rf"^\s*(?:(?:{_NUM}|\.\d+)\s*(?:ms|s|min|m|h|d)|P(?!T?\s*$)(?:{_NUM}D)?"
                  rf"(?:T(?:{_NUM}H)?(?:{_NUM}M)?(?:{_NUM}S)?)?)\s*$")
#: the same, ahead or behind (``-25s``: a clock's offset)
SIGNED_SCHEMA_PATTERN = r"^\s*-?" + SCHEMA_PATTERN[len(r"^"):]

EXPECTED = "a duration with a unit, like 250ms, 10s, 5m, 1h, 2d or ISO-8601 PT10M"

#: units spelt out, and the unit a file writes for each
_SPELT = {"sec": "s", "secs": "s", "second": "s", "seconds": "s", "mins": "m", "minute": "m",
          "minutes": "m", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "day": "d",
          "days": "d", "msec": "ms", "msecs": "ms", "millisecond": "ms", "milliseconds": "ms"}
_WORDS = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*([A-Za-z]+)\s*$")


def duration_hint(text: object) -> str:
    """"did you mean '5s'?" for a duration whose unit is spelt out (``5sec``, ``2 hours``).

    >>> duration_hint("5sec"), duration_hint("2 hours"), duration_hint("5x")
    ("did you mean '5s'?", "did you mean '2h'?", '')
    """
    m = _WORDS.match(text) if isinstance(text, str) else None
    unit = _SPELT.get(m.group(2).lower()) if m else None
    return f"did you mean '{m.group(1)}{unit}'?" if m and unit else ""


def parse_duration(text: object) -> float:
    """Seconds in a duration string; ``ValueError`` with the expected form otherwise.

    >>> parse_duration("250ms"), parse_duration("5m"), parse_duration("PT1H30M")
    (0.25, 300.0, 5400.0)
    """
    if isinstance(text, bool) or not isinstance(text, str):
        if isinstance(text, (int, float)) and text == 0:
            return 0.0
        raise ValueError(EXPECTED)
    m = _SIMPLE.match(text)
    if m:
        return float(m.group(1)) * _UNITS[m.group(2)]
    m = _ISO.match(text.strip())
    if m and text.strip() not in ("P", "PT") and any(m.groupdict().values()):
        g = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
        return g["d"] * 86400 + g["h"] * 3600 + g["m"] * 60 + g["s"]
    raise ValueError(EXPECTED)


def parse_cycle(text: object) -> tuple[int, float]:
    """``R5/PT10M`` → ``(5, 600.0)``: repeat count and interval in seconds."""
    if isinstance(text, str):
        m = _CYCLE.match(text.strip())
        if m and int(m.group(1)) > 0:
            return int(m.group(1)), parse_duration(m.group(2))
    raise ValueError("an ISO-8601 repeating interval like R5/PT10M")


def format_duration(seconds: float) -> str:
    """The shortest honest spelling: ``10s``, ``60s``, ``1.5s``, ``250ms``, ``2h``.

    Whole seconds below an hour print as seconds (the lesson says "retry in 60s").

    >>> format_duration(10.0), format_duration(60), format_duration(0.25), format_duration(7200)
    ('10s', '60s', '250ms', '2h')
    """
    if math.isinf(seconds):
        return "forever"
    if seconds == 0:
        return "0s"
    if seconds < 1:
        ms = seconds * 1000
        return f"{ms:g}ms"
    if seconds >= 86400 and seconds % 86400 == 0:
        return f"{seconds / 86400:g}d"
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g}h"
    return f"{seconds:g}s"


def format_span(seconds: float) -> str:
    """A span that was measured or drawn rather than written in a file (a jittered retry's
    delay, how late a timer ran), to three significant figures: ``4.12s``, not
    ``4.11844s``; whole figures as ``format_duration`` spells them.

    >>> format_span(4.11844), format_span(10.0), format_span(0.0123456), format_span(3599.7)
    ('4.12s', '10s', '12.3ms', '1h')
    """
    if math.isinf(seconds) or seconds == 0:
        return format_duration(seconds)
    return format_duration(float(f"{seconds:.3g}"))
