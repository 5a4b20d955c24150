"""The property a hunt tries to break: an invariant by name (``exclusive_locks``,
``liveness`` …) or an expectation over the summary (``duplicate_executions == 0``,
``latency.start_delay.max <= 30s``, ``named.payment.executions == 1``), judged on one run's
row of figures (the flattened summary, as a sweep records it).

A figure that is a group of counts (``duplicate_executions``) stands for its ``total``.
"""

from __future__ import annotations

import difflib

import re
from dataclasses import dataclass
from typing import Any

from ...analysis.checks import INVARIANTS
from ...base.errors import Problem, ScenarioError
from ...executor.config import Expectation

_EXPR = re.compile(r"^\s*(?P<path>[A-Za-z_][\w.-]*)\s*(?P<op>==|!=|<=|>=|<|>)\s*(?P<value>.+?)\s*$")


#: the invariants a run breaks for good once it breaks them
_SAFETY = ("exclusive_locks", "duplicates_explained", "done_means_ran", "terminal_once",
           "retries_follow_policy")
#: the summary's counts that only grow as a run goes on
_GROWING = ("duplicate_executions", "duplicate_side_effects", "double_acquisitions",
            "completions.rejected_by_guard", "completions.row_gone")


@dataclass(frozen=True)
class Property:
    """What must hold in every run: ``invariant`` (a name of ``INVARIANTS``), or
    ``expectation`` (its figure resolved against a run's row)."""

    text: str
    invariant: str | None = None
    expectation: Expectation | None = None

    @property
    def figure(self) -> str:
        """The row's column the property reads."""
        if self.invariant is not None:
            return f"invariants.{self.invariant}"
        assert self.expectation is not None
        return self.expectation.path

    def expect(self) -> dict[str, str]:
        """The property as a scenario's ``expect:`` entry (a run that breaks it exits 1); an
        invariant needs none: its violation fails a run by itself."""
        if self.expectation is None:
            return {}
        e = self.expectation
        return {e.path: e.text[len(e.path):].strip()}

    @property
    def grows(self) -> bool:
        """Whether a run that breaks the property by some instant breaks it in any run that
        goes on from there: a safety invariant, or an upper bound on a count that only grows
        (duplicates, double acquisitions). Only then may shrinking cut the horizon short: a
        liveness property cut short breaks where the real run recovers later."""
        if self.invariant is not None:
            return self.invariant in _SAFETY
        e = self.expectation
        assert e is not None
        return e.path.startswith(_GROWING) and e.op in ("==", "<=", "<") and \
            isinstance(e.value, (int, float)) and not isinstance(e.value, bool)

    def value(self, row: dict[str, Any]) -> Any:
        return row.get(self.figure)

    def broken(self, row: dict[str, Any]) -> bool:
        """Whether the run broke the property (a run that did not run breaks nothing)."""
        if not row.get("ok") or self.figure not in row:
            return False  # a run without the figure (its named job shrunk away) breaks nothing
        v = self.value(row)
        if self.invariant is not None:
            return bool(v)
        assert self.expectation is not None
        return not self.expectation.holds(v)

    def resolved(self, row: dict[str, Any], where: str) -> "Property":
        """The property with its figure checked against a run's row (a group of counts
        stands for its ``total``); ``ScenarioError`` naming ``--break`` if the summary has no
        such figure."""
        if self.expectation is None or self.expectation.path in row:
            return self
        e = self.expectation
        total = f"{e.path}.total"
        if total in row:
            text = f"{total} {e.text[len(e.path):].strip()}"
            return Property(self.text, None, Expectation(total, e.op, e.value, text))
        raise ScenarioError([Problem("--break", "a figure of the summary", repr(e.path),
                                     _nearest(e.path, [k for k in row if k != "ok"]))], where)


def _nearest(path: str, figures: list[str]) -> str:
    """The figures of a run's row nearest ``path``, most alike first: "did you mean" the
    closest, or some of those under its first key, or where to look."""
    close = difflib.get_close_matches(path, figures, n=3, cutoff=0.75)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    head = path.split(".")[0]
    heads = sorted({k.split(".")[0] for k in figures})
    near = difflib.get_close_matches(head, heads, n=1, cutoff=0.6)
    under = sorted(k for k in figures if k.split(".")[0] == (near[0] if near else head))
    if under:
        return "e.g. " + ", ".join(under[:6]) + (f" ({len(under) - 6} more)"
                                                 if len(under) > 6 else "")
    return "see summary.json of a run"


def parse(text: str, where: str = "the command line") -> Property:
    """``--break``'s value as a property; ``ScenarioError`` if it is neither an invariant's
    name nor ``FIGURE OP VALUE``."""
    from ...format.fileformat import parse_condition

    name = text.strip()
    if name in INVARIANTS:
        return Property(name, invariant=name)
    if name.startswith("invariants.") and name.split(".", 1)[1] in INVARIANTS:
        return Property(name, invariant=name.split(".", 1)[1])
    m = _EXPR.match(text)
    if m is None:
        raise ScenarioError([Problem(
            "--break", "an invariant (" + ", ".join(INVARIANTS) + ") or FIGURE OP VALUE, "
            "e.g. 'duplicate_executions == 0' or 'latency.start_delay.max <= 30s'",
            repr(text))], where)
    cond = f"{m['op']} {m['value']}"
    parsed = parse_condition(cond)
    if parsed is None:
        raise ScenarioError([Problem("--break", "a comparison like '== 0' or '<= 30s'",
                                     repr(cond))], where)
    op, value = parsed
    return Property(text.strip(), expectation=Expectation(m["path"], op, value,
                                                          f"{m['path']} {cond}"))
