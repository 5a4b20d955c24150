"""docs/trace.md, the page that documents trace.csv, rendered from the code.

The columns come from ``base.trace.COLUMNS`` and each kind's section from its meaning in
``base.trace.KINDS``: a meaning that reads as ``col=…`` items (after a lead, and with a
column's values in a row, as ``b=1 …, b=2 …``) becomes a table of its columns; any other is
shown as written. Either way every word of the meaning is on the page.

``python -m jobsim.output.trace_doc`` rewrites ``docs/trace.md`` (run it from the checkout's
root; a path as its argument writes there instead); ``tests/test_trace_doc.py`` compares.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..base.trace import COLUMNS, KINDS

#: the columns a meaning may name as ``col=…`` (or bare: ``attempt``)
_NAMES = "|".join(sorted(COLUMNS, key=len, reverse=True))
#: where a meaning's next item starts: a separator, then a column's name and ``=`` (or a
#: bare name that ends its item)
_ITEM = re.compile(rf"(; |, |: )(?=(?:{_NAMES})(?:=|(?=[,;])|$))")
_ASSIGN = re.compile(rf"({_NAMES})=(.*)", re.S)

#: what each column of trace.csv holds: ``seq`` (the row number ``columns.trace_columns``
#: writes first), then the trace's ``COLUMNS``
COLUMN_WORDS = {
    "seq": "the event's sequence number, from 0: the row's place in the trace",
    "time": "when it happened: simulated seconds from the run's start, in true time",
    "kind": "what happened: one of the kinds below",
    "node": "the node's name; empty for an event of no node (-1 in the trace)",
    "job": "the job's id; -1 for an event of no one job (an acquisition, a tick)",
    "attempt": "an integer: on an event of one execution of a job, that execution's number "
               "(1 for its first), whether the kind names it or not; else as the kind says",
    "a": "an integer; what it means depends on the kind",
    "b": "an integer; what it means depends on the kind",
    "c": "an integer; what it means depends on the kind",
    "x": "a number (seconds, mostly); empty where the kind sets none; `inf` for no end",
    "text": "a text; empty for none",
}

INTRO = """\
<!-- generated from jobsim/base/trace.py (KINDS) by jobsim/output/trace_doc.py; do not edit:
     regenerate with `python -m jobsim.output.trace_doc` (from the checkout's root) -->

# trace.csv: the events of a run

Every run writes `trace.csv` into its report folder (`reports/<name>/trace.csv`, or one per
variant in the variant's folder): one row per event of the run, the same events the
summary, the invariant checks, the narrative and the plots are computed from, and the ones
`summary.json`'s `trace_sha256` hashes. `jobsim view` reads it back. Its columns:

| column | what it holds |
|---|---|
"""

OUTRO = """
Rows are in the order the events happened: events at the same simulated time keep that
order, so `seq`, not `time`, orders them. Any other column that a kind does not name below
holds 0 (`x` and `text`: empty). Where a meaning says *a text code*, the integer is the code
of a text of the run, which `trace.csv` does not list (a job's name is the `name` column of
`jobs.csv`). Numbers are written as Python writes them (`0.0`, `1e-05`, `inf`), and a text
is quoted only when it holds a comma, a quote or a line break, its control characters
escaped.

## The kinds

Each kind, in the order of the trace's table of kinds, with what its columns mean.
"""


def header() -> str:
    """The page up to the kinds: what trace.csv is, and its columns."""
    assert list(COLUMN_WORDS) == ["seq", *COLUMNS], "COLUMN_WORDS must follow the trace's"
    rows = "".join(f"| `{c}` | {w} |\n" for c, w in COLUMN_WORDS.items())
    return INTRO + rows + OUTRO


def _split(meaning: str) -> tuple[list[str], list[str]]:
    """The meaning's pieces, cut where an item starts outside parentheses, and the
    separators between them (``seps[i]`` comes before ``pieces[i + 1]``)."""
    pieces, seps, at = [], [], 0
    for m in _ITEM.finditer(meaning):
        before = meaning[:m.start()]
        if before.count("(") == before.count(")"):
            pieces.append(meaning[at:m.start()])
            seps.append(m.group(1))
            at = m.end()
    return pieces + [meaning[at:]], seps


def _clause(text: str) -> int:
    """Where a clause of its own (``; `` outside parentheses) starts in ``text``, or -1."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith("; ", i):
            return i
    return -1


def parse(meaning: str) -> tuple[str, list[tuple[str, str]], str] | None:
    """A meaning as its lead, its ``(column, what it holds)`` rows and what it says after
    them (a last clause about the whole event), or None when it does not read as items. A
    column named several times in a row is one row, its values as written (``b=1 …, b=2 …``);
    ``attempt`` alone is the execution's number."""
    pieces, seps = _split(meaning)
    tail = _clause(pieces[-1])
    after = pieces[-1][tail + 2:] if tail >= 0 else ""
    if tail >= 0:
        pieces[-1] = pieces[-1][:tail]
    first = next((i for i, p in enumerate(pieces) if _is_item(p)), None)
    if first is None:
        return None
    lead = "".join(p + s for p, s in zip(pieces[:first], seps))[:-len(seps[first - 1])] \
        if first else ""
    if re.search(r"\b(or|and)$", lead):
        return None  # a sentence cut at a column's name, not a lead
    rows: list[tuple[str, str]] = []
    for i in range(first, len(pieces)):
        sep = seps[i - 1] if i > first else ""
        if not _is_item(pieces[i]) or sep == ": " or _clause(pieces[i]) >= 0:
            return None
        m = _ASSIGN.fullmatch(pieces[i])
        col, said = (m.group(1), m.group(2)) if m else (pieces[i], "")
        if rows and rows[-1][0] == col:  # its values one after another: each says col=
            held = rows[-1][1] if rows[-1][1].startswith(f"{col}=") else f"{col}={rows[-1][1]}"
            rows[-1] = (col, held + sep + pieces[i])
        elif any(c == col for c, _ in rows):
            return None
        else:
            rows.append((col, said))
    return lead, rows, after


def _is_item(text: str) -> bool:
    return bool(_ASSIGN.fullmatch(text)) or text in COLUMNS


def _sentence(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")) if text else ""


def section(kind: str, meaning: str) -> str:
    """One kind's section: its heading, then its meaning as a table or as written."""
    out = [f"### {kind}", ""]
    if not meaning:
        return "\n".join(out + ["No column beyond `time`, `kind` and `node`.", ""])
    parsed = parse(meaning)
    if parsed is None:
        return "\n".join(out + [_sentence(meaning), ""])
    lead, rows, after = parsed
    if lead:
        out += [_sentence(lead), ""]
    out += ["| column | meaning |", "|---|---|"]
    for col, said in rows:
        said = said or "the execution number of the job (as at `exec_start`)"
        out.append(f"| `{col}` | {said.replace('|', chr(92) + '|')} |")
    if after:
        out += ["", _sentence(after)]
    return "\n".join(out + [""])


def render() -> str:
    """The whole page."""
    return header() + "\n" + "\n".join(section(k, m) for k, m in KINDS.items())


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else Path("docs") / "trace.md"
    path.write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
