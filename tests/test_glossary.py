"""Every glossary term is linked where a reader first meets it.

The terms are the ``## term`` headings of ``docs/glossary.md``; each anchor is the heading's
GitHub slug (lowercase, spaces to hyphens: ``## fencing token`` → ``#fencing-token``), and
the hidden line under each heading, ``<!-- matches: fencing token, fencing -->``, lists the
words that count as a use of it (case-insensitive, whole words; a space matches any white
space, a line break too). That file is the one place the terms are kept.

The rule: in each of ``docs/*.md`` (but ``glossary.md`` itself and the generated
``trace.md``), ``README.md`` and each ``notebooks/*.ipynb`` (its markdown cells, in order),
the first use of a term in prose must lie inside the text of a markdown link to the term's
anchor: ``[fencing tokens](glossary.md#fencing-token)`` from ``docs/``,
``docs/glossary.md#…`` from the README, ``../docs/glossary.md#…`` from a notebook. Not
prose, and so skipped: headings (lines starting with ``#``), fenced code blocks, inline
``code`` spans, link targets (the ``(…)`` of a link), HTML comments and tags, and bare
URLs. Later uses need no link, and a file that never uses a term is fine.

Also: every heading has its hidden line and a slug of its own, no word belongs to two terms,
and every ``glossary.md#anchor`` link in those files (and every ``#anchor`` in the glossary)
points at a heading that exists, by a path that reaches ``docs/glossary.md``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
NOT_CHECKED = {"glossary.md", "trace.md"}  # the glossary itself; trace.md is generated
FILES = sorted([p for p in (ROOT / "docs").glob("*.md") if p.name not in NOT_CHECKED]
               + [ROOT / "README.md"] + list((ROOT / "notebooks").glob("*.ipynb")))
HIDDEN = "\x00"  # what stands in for a character that is not prose (never a word's)


@dataclass(frozen=True)
class Term:
    heading: str
    anchor: str
    patterns: tuple[str, ...]

    def regex(self) -> re.Pattern[str]:
        words = [r"\s+".join(re.escape(w) for w in p.split()) for p in self.patterns]
        return re.compile(r"(?<!\w)(?:" + "|".join(words) + r")(?!\w)", re.IGNORECASE)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def terms() -> list[Term]:
    """The glossary's terms: each ``## heading`` with the hidden line under it."""
    text = GLOSSARY.read_text(encoding="utf-8")
    found = re.findall(r"^## (.+)\n+(?:<!-- matches: (.*?) -->)?", text, re.M)
    return [Term(h.strip(), slug(h), tuple(p.strip() for p in m.split(",") if p.strip()))
            for h, m in found]


# --- prose: what a reader reads, and the links it sits in -------------------------------------

@dataclass(frozen=True)
class Link:
    start: int  # the link text's span in the file's text
    end: int
    target: str


def _hide(chars: list[str], start: int, end: int) -> None:
    for i in range(start, end):
        if chars[i] != "\n":
            chars[i] = HIDDEN


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Inline code: a run of backticks to the next run of the same length, within a
    paragraph (no blank line between)."""
    spans, i = [], 0
    for m in re.finditer(r"`+", text):
        if m.start() < i:
            continue
        close = re.compile(r"(?<!`)" + m.group() + r"(?!`)")
        c = close.search(text, m.end())
        if c and not re.search(r"\n[ \t]*\n", text[m.end():c.start()]):
            spans.append((m.start(), c.end()))
            i = c.end()
    return spans


def prose(text: str) -> tuple[str, list[Link]]:
    """``text`` with every character that is not prose replaced by ``HIDDEN`` (line breaks
    kept, so positions and lines stay), and the links whose text is prose."""
    chars = list(text)
    fence, pos = "", 0
    for line in text.splitlines(keepends=True):
        m = re.match(r"\s*(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            _hide(chars, pos, pos + len(line))
        elif m:
            fence = m.group(1)
            _hide(chars, pos, pos + len(line))
        elif re.match(r" {0,3}#", line):
            _hide(chars, pos, pos + len(line))
        pos += len(line)
    for pattern in (r"<!--.*?-->", r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>", r"https?://[^\s)>\]]+"):
        for m in re.finditer(pattern, "".join(chars), re.S):
            _hide(chars, m.start(), m.end())
    for start, end in _code_spans("".join(chars)):
        _hide(chars, start, end)
    links = []
    shown = "".join(chars)
    for m in re.finditer(r"!?\[([^\[\]]*)\]\(\s*([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
                         r"(?:\s+\"[^\"]*\")?\s*\)", shown):
        links.append(Link(m.start(1), m.end(1), m.group(2)))
        _hide(chars, m.start(), m.start(1))
        _hide(chars, m.end(1), m.end())
    return "".join(chars), links


def _cells(path: Path) -> list[tuple[int, str]]:
    """A notebook's markdown cells: (the cell's number among all its cells, its text)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(i, "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for i, c in enumerate(cells) if c["cell_type"] == "markdown"]


def read(path: Path) -> str:
    """A file's text as read: a notebook's markdown cells, in order, a blank line apart."""
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    return "\n\n".join(source for _, source in _cells(path))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _where(path: Path, text: str, at: int) -> str:
    """The line of ``at`` (in a notebook: the cell, counted from 1 among all its cells, and
    the line in it), for a message."""
    if path.suffix != ".ipynb":
        return f"line {text.count(chr(10), 0, at) + 1}"
    start = 0
    for number, source in _cells(path):
        if at <= start + len(source):
            return f"cell {number + 1}, line {source.count(chr(10), 0, at - start) + 1}"
        start += len(source) + 2
    return "the end"


def _context(text: str, start: int, end: int) -> str:
    left = text[max(0, start - 60):start].replace("\n", " ")
    right = text[end:end + 60].replace("\n", " ")
    return f"…{left}»{text[start:end]}«{right}…"


# --- the tests ----------------------------------------------------------------------------

def test_every_heading_has_its_words_and_an_anchor_of_its_own():
    ts = terms()
    assert ts, "docs/glossary.md has no ## headings"
    no_words = [t.heading for t in ts if not t.patterns]
    assert not no_words, (f"docs/glossary.md: headings without a hidden line "
                          f"'<!-- matches: word, … -->' right under them: {no_words}")
    anchors = [t.anchor for t in ts]
    assert len(set(anchors)) == len(anchors), f"two headings share an anchor: {anchors}"
    owner: dict[str, str] = {}
    for t in ts:
        for p in t.patterns:
            key = " ".join(p.lower().split())
            assert key not in owner, f"'{p}' counts for both '{owner[key]}' and '{t.heading}'"
            owner[key] = t.heading
    hidden = re.findall(r"<!-- matches:", GLOSSARY.read_text(encoding="utf-8"))
    assert len(hidden) == len(ts), "a '<!-- matches: … -->' line that no heading owns"


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_first_use_of_each_term_is_a_link_to_it(path):
    text = read(path)
    shown, links = prose(text)
    base = os.path.relpath(GLOSSARY, path.parent).replace(os.sep, "/")
    bad = []
    for t in terms():
        m = t.regex().search(shown)
        if m is None:
            continue
        want = f"{base}#{t.anchor}"
        if any(k.start <= m.start() < k.end and k.target == want for k in links):
            continue
        bad.append(f"- '{t.heading}' first used at {_where(path, text, m.start())}, not linked: "
                   f"{_context(text, m.start(), m.end())}\n  link it: "
                   f"[{text[m.start():m.end()]}]({want})")
    assert not bad, f"{_rel(path)}: a term's first use must link to the glossary\n" + \
        "\n".join(bad)


@pytest.mark.parametrize("path", FILES + [GLOSSARY], ids=_rel)
def test_glossary_links_point_at_its_headings(path):
    anchors = {t.anchor for t in terms()}
    _, links = prose(read(path))
    bad = []
    for k in links:
        target, _, anchor = k.target.partition("#")
        if path == GLOSSARY and target == "" and anchor:
            target = "glossary.md"
        if not target.endswith("glossary.md") or not anchor:
            continue
        if (path.parent / target).resolve() != GLOSSARY:
            bad.append(f"- ({k.target}): the path does not reach docs/glossary.md")
        elif anchor not in anchors:
            bad.append(f"- ({k.target}): no heading has the anchor #{anchor}")
    text = read(path)
    for m in re.finditer(r"glossary\.md#([\w-]+)", text):
        if m.group(1) not in anchors and not any(m.group(1) in b for b in bad):
            bad.append(f"- glossary.md#{m.group(1)}: no heading has that anchor")
    assert not bad, (f"{_rel(path)}: links into the glossary that lead nowhere "
                     f"(anchors: {sorted(anchors)})\n" + "\n".join(bad))
