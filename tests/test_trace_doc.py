"""docs/trace.md, the page of trace.csv, is the one ``jobsim.output.trace_doc`` renders from
the code: one section per kind of ``KINDS``, in its order, and no word of a kind's meaning
left out."""

import re
from collections import Counter
from pathlib import Path

from jobsim.base.trace import COLUMNS, KINDS
from jobsim.output import trace_doc

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "trace.md"
REGENERATE = "regenerate it: `python -m jobsim.output.trace_doc` (from the checkout's root)"


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^### (\S+)\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_page_is_the_rendered_one():
    assert PAGE.read_text(encoding="utf-8") == trace_doc.render(), \
        f"docs/trace.md is not what the code renders (KINDS or trace_doc changed): {REGENERATE}"


def test_every_kind_has_its_heading_in_order():
    headings = re.findall(r"^### (\S+)$", PAGE.read_text(encoding="utf-8"), re.M)
    assert headings == list(KINDS), f"docs/trace.md's kinds differ from KINDS: {REGENERATE}"


def test_every_column_of_the_csv_is_described():
    page = PAGE.read_text(encoding="utf-8")
    for col in ("seq", *COLUMNS):
        assert f"| `{col}` |" in page.split("## The kinds")[0], col


def test_no_word_of_a_meaning_is_lost():
    sections = _sections(trace_doc.render())
    for kind, meaning in KINDS.items():
        missing = Counter(re.findall(r"\w+", meaning.lower())) - \
            Counter(re.findall(r"\w+", sections[kind].lower()))
        assert not missing, f"{kind}: the page leaves out {sorted(missing)}"


def test_a_meaning_becomes_a_table_only_where_it_reads_as_items():
    lead, rows, after = trace_doc.parse("the fake clock ticks; text=note")
    assert (lead, rows, after) == ("the fake clock ticks", [("text", "note")], "")
    # a column's values named one after another are one row
    _, rows, _ = trace_doc.parse("a=rows deleted; b=1 held (if a=1, or a=0), b=0 otherwise")
    assert rows == [("a", "rows deleted"), ("b", "b=1 held (if a=1, or a=0), b=0 otherwise")]
    # a bare column, and a last clause about the whole event
    assert trace_doc.parse("attempt, a=token; the run ends") == \
        ("", [("attempt", ""), ("a", "token")], "the run ends")
    # a column named again after another, an item inside an item, a cut sentence: prose
    assert trace_doc.parse("a=1 up, b=2; a=3") is None
    assert trace_doc.parse("health: a=0 up; down: b=1 held") is None
    assert trace_doc.parse("cancelled; or, a=its task") is None
    assert trace_doc.parse("no column here") is None
    assert "### side_effect\n\nA side effect" in trace_doc.render()


def test_the_module_writes_the_page(tmp_path):
    out = tmp_path / "trace.md"
    trace_doc.main([str(out)])
    assert out.read_text(encoding="utf-8") == trace_doc.render()
