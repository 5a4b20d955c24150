"""A small declarative kit for validating the scenario format and exporting its JSON Schema.

A ``Field`` checks one value at a dotted path, appends a ``Problem`` (path, expected, got)
for everything wrong — it never stops at the first — and returns the value normalised
(durations become seconds). ``Obj`` refuses unknown keys with a "did you mean", fills
defaults, and reports missing required keys. Every field can describe itself as JSON Schema.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from typing import Any

from ..base.durations import EXPECTED as DURATION_EXPECTED
from ..base.durations import duration_hint, format_duration, parse_cycle, parse_duration
from ..base.errors import Problem

MISSING: Any = object()


def show(value: Any) -> str:
    """A short, faithful rendering of a bad value for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def suggest(word: str, choices: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Field:
    default: Any = MISSING
    #: a default shown in the schema only (an executor setting's comes from its preset first)
    shown: Any = MISSING
    doc: str = ""

    def check(self, value: Any, path: str, problems: list[Problem]) -> Any:
        raise NotImplementedError

    def schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def _described(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.doc:
            schema["description"] = self.doc
        if self.shown is not MISSING:
            schema["default"] = self.shown
        elif self.default is not MISSING and self.default is not None:
            schema["default"] = self._file_form(self.default)
        return schema

    def _file_form(self, value: Any) -> Any:
        """``value`` as a file writes it (a duration with its unit)."""
        return value


class Str(Field):
    def __init__(self, default: Any = MISSING, doc: str = "", max_len: int = 2000,
                 nonempty: bool = True):
        self.default, self.doc, self.max_len, self.nonempty = default, doc, max_len, nonempty

    def check(self, value, path, problems):
        if not isinstance(value, str) or (self.nonempty and not value.strip()):
            problems.append(Problem(path, "a non-empty string", show(value)))
            return MISSING
        if len(value) > self.max_len:
            problems.append(Problem(path, f"at most {self.max_len} characters",
                                    f"{len(value)} characters"))
            return MISSING
        return value

    def schema(self):
        return self._described({"type": "string", "maxLength": self.max_len})


class Name(Str):
    """A name that is also a folder name: letters, digits, ``.``, ``_`` and ``-``, starting
    with a letter or digit (so never ``.``, ``..``, a path or an empty string)."""

    PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"

    def check(self, value, path, problems):
        import re

        if not isinstance(value, str) or not re.fullmatch(self.PATTERN.strip("^$"), value):
            problems.append(Problem(path, "a name of letters, digits, '.', '_' and '-' "
                                    "starting with a letter or digit (it names a folder)",
                                    show(value)))
            return MISSING
        return value

    def schema(self):
        return self._described({"type": "string", "pattern": self.PATTERN})


class Int(Field):
    def __init__(self, default: Any = MISSING, doc: str = "", lo: int = 0,
                 hi: int = 10_000_000):
        self.default, self.doc, self.lo, self.hi = default, doc, lo, hi

    def check(self, value, path, problems):
        if isinstance(value, bool) or not isinstance(value, int) or not (
                self.lo <= value <= self.hi):
            problems.append(Problem(path, f"an integer from {self.lo:,} to {self.hi:,}",
                                    show(value)))
            return MISSING
        return value

    def schema(self):
        return self._described({"type": "integer", "minimum": self.lo, "maximum": self.hi})


class Num(Field):
    def __init__(self, default: Any = MISSING, doc: str = "", lo: float = 0.0,
                 hi: float = 1e12):
        self.default, self.doc, self.lo, self.hi = default, doc, lo, hi

    def check(self, value, path, problems):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and self.lo <= value <= self.hi):
            problems.append(Problem(path, f"a number from {self.lo:g} to {self.hi:g}",
                                    show(value)))
            return MISSING
        return float(value)

    def schema(self):
        return self._described({"type": "number", "minimum": self.lo, "maximum": self.hi})


class NumOrName(Field):
    """A number from ``lo`` to ``hi``, or one of the names ``choices`` (kept as the name)."""

    def __init__(self, choices: tuple[str, ...], default: Any = MISSING, doc: str = "",
                 lo: float = 0.0, hi: float = 1.0, expected: str = ""):
        self.choices, self.default, self.doc, self.lo, self.hi = choices, default, doc, lo, hi
        self.expected = expected or (f"a number from {lo:g} to {hi:g} or one of "
                                     + ", ".join(choices))

    def check(self, value, path, problems):
        if isinstance(value, str) and value in self.choices:
            return value
        if not isinstance(value, bool) and isinstance(value, (int, float)) and (
                math.isfinite(value) and self.lo <= value <= self.hi):
            return float(value)
        hint = suggest(value, self.choices) if isinstance(value, str) else ""
        problems.append(Problem(path, self.expected, show(value), hint))
        return MISSING

    def schema(self):
        return self._described({"anyOf": [
            {"type": "number", "minimum": self.lo, "maximum": self.hi},
            {"enum": list(self.choices)}]})


class Dur(Field):
    """A duration with a unit; ``none_ok`` also accepts ``none`` (→ ``None``)."""

    def __init__(self, default: Any = MISSING, doc: str = "", lo: float = 0.0,
                 hi: float = 366 * 86400.0, positive: bool = False, none_ok: bool = False):
        self.default, self.doc, self.lo, self.hi = default, doc, lo, hi
        self.positive, self.none_ok = positive, none_ok

    def check(self, value, path, problems):
        if self.none_ok and value in (None, "none"):
            return None
        try:
            seconds = parse_duration(value)
        except ValueError:
            if isinstance(value, str) and value.strip().startswith("-"):
                expected = "a duration that is not negative"
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                expected = "a duration with a unit (a bare number is ambiguous), like 30s"
            else:
                expected = DURATION_EXPECTED + (" or none" if self.none_ok else "")
            problems.append(Problem(path, expected, show(value), duration_hint(value)))
            return MISSING
        if (self.positive and seconds <= 0) or not (self.lo <= seconds <= self.hi):
            low = "more than 0s" if self.positive else f"at least {format_duration(self.lo)}"
            problems.append(Problem(path, f"a duration {low} and at most "
                                    f"{format_duration(self.hi)}", show(value)))
            return MISSING
        return seconds

    def _file_form(self, value):
        from ..base.durations import format_duration

        return format_duration(value) if isinstance(value, (int, float)) else value

    def schema(self):
        from ..base.durations import SCHEMA_PATTERN

        s: dict[str, Any] = {"type": "string", "pattern": SCHEMA_PATTERN}
        if self.none_ok:
            s = {"anyOf": [s, {"const": "none"}, {"type": "null"}]}
        return self._described(s)


class Epoch(Field):
    """A wall-clock instant with its zone (ISO 8601; YAML may have read it as a datetime
    already), as Unix epoch milliseconds."""

    EXPECTED = "an ISO-8601 time with its zone, like 2026-01-01T00:00:00Z"

    def __init__(self, default: Any = MISSING, doc: str = ""):
        self.default, self.doc = default, doc

    def check(self, value, path, problems):
        import datetime as dt

        when = value
        if isinstance(value, str):
            try:
                when = dt.datetime.fromisoformat(value.strip())
            except ValueError:
                when = None
        if not isinstance(when, dt.datetime) or when.tzinfo is None:
            problems.append(Problem(path, self.EXPECTED + (" (this one has no zone)" if
                                    isinstance(when, dt.datetime) else ""), show(value)))
            return MISSING
        return round(when.timestamp() * 1000)

    def schema(self):
        return self._described({"type": "string", "format": "date-time"})


class Enum(Field):
    def __init__(self, choices: tuple[str, ...], default: Any = MISSING, doc: str = ""):
        self.choices, self.default, self.doc = choices, default, doc

    def check(self, value, path, problems):
        if value not in self.choices or not isinstance(value, str):
            problems.append(Problem(path, "one of " + ", ".join(self.choices), show(value),
                                    suggest(value, self.choices)))
            return MISSING
        return value

    def schema(self):
        return self._described({"enum": list(self.choices)})


class Const(Field):
    """A value passed through unchanged when ``accept`` says it is fine."""

    def __init__(self, accept: Callable[[Any], bool], expected: str, schema: dict,
                 default: Any = MISSING, doc: str = "",
                 hint: Callable[[Any], str] | None = None):
        self.accept, self.expected, self._schema = accept, expected, schema
        self.default, self.doc, self.hint = default, doc, hint

    def check(self, value, path, problems):
        if not self.accept(value):
            problems.append(Problem(path, self.expected, show(value),
                                    self.hint(value) if self.hint is not None else ""))
            return MISSING
        return value

    def schema(self):
        return self._described(dict(self._schema))


class ListOf(Field):
    def __init__(self, item: Field, default: Any = MISSING, doc: str = "",
                 max_len: int = 100_000, min_len: int = 0):
        self.item, self.default, self.doc = item, default, doc
        self.max_len, self.min_len = max_len, min_len

    def check(self, value, path, problems):
        if not isinstance(value, list):
            problems.append(Problem(path, "a list", show(value)))
            return MISSING
        if not (self.min_len <= len(value) <= self.max_len):
            problems.append(Problem(path, f"a list of {self.min_len} to {self.max_len:,} items",
                                    f"{len(value):,} items"))
            return MISSING
        # Bad items stay in place as MISSING, so cross checks still see the good ones.
        return [self.item.check(v, join(path, i), problems) for i, v in enumerate(value)]

    def schema(self):
        return self._described({"type": "array", "items": self.item.schema(),
                                "minItems": self.min_len, "maxItems": self.max_len})


class MapOf(Field):
    """A mapping from names to values of one field (``handlers: {name: {...}}``)."""

    def __init__(self, value: Field, default: Any = MISSING, doc: str = "",
                 max_len: int = 1000):
        self.value, self.default, self.doc, self.max_len = value, default, doc, max_len

    def check(self, value, path, problems):
        if not isinstance(value, dict):
            problems.append(Problem(path, "a mapping of names", show(value)))
            return MISSING
        if len(value) > self.max_len:
            problems.append(Problem(path, f"at most {self.max_len} entries", str(len(value))))
            return MISSING
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or not k.strip():
                problems.append(Problem(join(path, str(k)), "a non-empty name", show(k)))
                continue
            out[k] = self.value.check(v, join(path, k), problems)
        return out

    def schema(self):
        return self._described({"type": "object", "additionalProperties": self.value.schema(),
                                "maxProperties": self.max_len})


class Obj(Field):
    def __init__(self, fields: dict[str, Field], required: tuple[str, ...] = (),
                 default: Any = MISSING, doc: str = ""):
        self.fields, self.required, self.default, self.doc = fields, required, default, doc

    def check(self, value, path, problems):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            problems.append(Problem(path, "a mapping with keys " + ", ".join(self.fields),
                                    show(value)))
            return MISSING
        out: dict[str, Any] = {}
        for key in value:
            if key not in self.fields:
                problems.append(Problem(join(path, str(key)), "one of the keys "
                                        + ", ".join(self.fields), f"unknown key {key!r}",
                                        suggest(str(key), tuple(self.fields))))
        for key, field in self.fields.items():
            if key in value:
                out[key] = field.check(value[key], join(path, key), problems)
            elif key in self.required:
                problems.append(Problem(join(path, key), "a value (this key is required)",
                                        "nothing"))
                out[key] = MISSING
            elif field.default is not MISSING:
                out[key] = field.default
        return out

    def schema(self):
        return self._described({
            "type": "object", "additionalProperties": False,
            "properties": {k: f.schema() for k, f in self.fields.items()},
            "required": list(self.required)})


class Either(Field):
    """The first alternative whose ``when`` accepts the value checks it."""

    def __init__(self, options: list[tuple[Callable[[Any], bool], Field]], expected: str,
                 default: Any = MISSING, doc: str = ""):
        self.options, self.expected, self.default, self.doc = options, expected, default, doc

    def check(self, value, path, problems):
        for when, field in self.options:
            if when(value):
                return field.check(value, path, problems)
        hint = ""
        if isinstance(value, dict) and len(value) == 1:
            keys = [k for _, f in self.options if isinstance(f, Obj) for k in f.fields]
            hint = suggest(str(next(iter(value))), keys)
        problems.append(Problem(path, self.expected, show(value), hint))
        return MISSING

    def schema(self):
        return self._described({"anyOf": [f.schema() for _, f in self.options]})


class Cycle(Field):
    """An ISO-8601 repeating interval ``R5/PT10M`` → ``(repeat, seconds)``."""

    doc = "ISO-8601 repeating interval: R<count>/<duration>"

    def check(self, value, path, problems):
        try:
            repeat, every = parse_cycle(value)
        except ValueError as exc:
            problems.append(Problem(path, str(exc), show(value)))
            return MISSING
        if repeat > 1000:
            problems.append(Problem(path, "a repeat count of at most 1000", show(value)))
            return MISSING
        return (repeat, every)

    def schema(self):
        return self._described({"type": "string", "pattern": r"^R\d+/P.+$"})


def is_map_with(key: str) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, dict) and key in v
