"""The committed notebooks read well where they are browsed: executed top to bottom in order,
no error in them, no path of the machine that ran them, each opening with what the reader
will learn and closing with "check yourself" cells that assert. (Running them is nbmake's
part of the suite: ``--nbmake`` collects ``notebooks/*.ipynb``.)"""

import json
import re
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
EXPECTED = ["01_the_executor_loop.ipynb", "02_one_guarded_update.ipynb",
            "03_crashes_and_lock_expiry.ipynb", "04_priority_and_the_challenge.ipynb",
            "05_latency.ipynb", "06_executors_side_by_side.ipynb", "07_retry_storms.ipynb",
            "08_at_least_once.ipynb"]
#: what an absolute path of a developer's machine looks like in a notebook: this checkout,
#: the home and temporary folders of whoever runs the tests, and the usual roots
MACHINE_PATH = re.compile("|".join(
    [re.escape(str(ROOT)), re.escape(str(Path.home())) + "/", re.escape(tempfile.gettempdir())
     + "/"] + [r"/home/", r"/Users/", r"/private/var/", r"[A-Z]:\\\\"]))


def _cells(name):
    return json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["cells"]


def _text(x):
    return "".join(x) if isinstance(x, list) else str(x)


def test_the_notebooks_are_there():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_committed_with_outputs_in_order_and_no_error(name):
    code = [c for c in _cells(name) if c["cell_type"] == "code"]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), f"{name}: execution counts {counts}"
    for c in code:
        for out in c.get("outputs", []):
            assert out["output_type"] != "error", f"{name}: an error output"
            if out["output_type"] == "stream":
                assert "Traceback" not in _text(out.get("text", ""))


@pytest.mark.parametrize("name", EXPECTED)
def test_no_path_of_this_machine(name):
    for c in _cells(name):
        texts = [_text(c.get("source", ""))]
        for out in c.get("outputs", []):
            texts.append(_text(out.get("text", "")))
            for kind, value in out.get("data", {}).items():
                if kind.startswith("text"):
                    texts.append(_text(value))
        for t in texts:
            m = MACHINE_PATH.search(t)
            assert m is None, f"{name}: {m.group(0)!r} in {t[max(0, m.start() - 60):m.end() + 60]!r}"


@pytest.mark.parametrize("name", EXPECTED)
def test_opens_with_what_you_will_learn_and_checks_yourself(name):
    cells = _cells(name)
    assert cells[0]["cell_type"] == "markdown"
    assert "you will learn" in _text(cells[0]["source"]).lower()
    checks, seen_heading = 0, False
    for c in cells:
        src = _text(c["source"])
        if c["cell_type"] == "markdown" and "check yourself" in src.lower():
            seen_heading = True
        elif c["cell_type"] == "code" and seen_heading and re.search(r"^\s*assert ", src, re.M):
            checks += 1
    assert checks >= 2, f"{name}: {checks} asserting cells after a 'Check yourself' heading"


def test_the_readme_links_every_notebook():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in EXPECTED:
        assert f"notebooks/{name}" in readme


# ---- the lesson: every notebook links it early, and quotes only what it says ----------------

LESSON = ROOT / "docs" / "lesson.md"
#: a markdown link's text and target
LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")
#: text in straight or curly double quotes, within one paragraph
QUOTED = re.compile(r'[“"]([^"“”]+?)[”"]')


def _normalised(text):
    """For comparing a quote with the lesson: links by their text, no emphasis or code marks,
    straight quotes, one space for any run of whitespace."""
    text = LINK.sub(r"\1", text)
    text = text.replace("“", '"').replace("”", '"').replace("’", "'").replace("‘", "'")
    text = re.sub(r"[*_`]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def lesson_quotes(markdown):
    """The quotes of the lesson in a markdown cell, by the notebooks' convention:

    - a blockquote (every line of a paragraph starts with ``>``) whose paragraph before it
      names the lesson ("The lesson's first check-yourself question (Q1):");
    - text in double quotes ("…" or “…”) in a sentence that names the lesson ('what the
      lesson calls "the cluster's correctness"').

    Fenced code and `code spans` are left out; a quote is compared without its links."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    quotes, before = [], ""
    for para in re.split(r"\n\s*\n", text):
        lines = para.strip().splitlines()
        if lines and all(line.startswith(">") for line in lines):
            if re.search(r"\blesson", before, re.I):
                quotes.append("\n".join(line[1:] for line in lines))
            continue
        before = para
        plain = re.sub(r"`[^`]*`", "", LINK.sub(r"\1", para))
        for sentence in re.split(r"(?<=[.!?:;])\s+(?=[A-Z(*])", plain):
            if re.search(r"\blesson", sentence, re.I):
                quotes += QUOTED.findall(sentence)
    return quotes


def test_a_lesson_quote_is_recognised():
    md = ('The lesson calls this "the cluster\'s correctness". A "word" elsewhere.\n\n'
          'The lesson\'s question:\n\n> Why?\n>\n> - **A)** [no](x.md)\n\nNot "this" one.')
    assert lesson_quotes(md) == ["the cluster's correctness", " Why?\n\n - **A)** [no](x.md)"]
    assert _normalised(lesson_quotes(md)[1]) == "Why? - A) no"


@pytest.mark.parametrize("name", EXPECTED)
def test_every_lesson_quote_is_in_the_lesson(name):
    lesson = _normalised(LESSON.read_text(encoding="utf-8"))
    for c in _cells(name):
        if c["cell_type"] == "markdown":
            for quote in lesson_quotes(_text(c["source"])):
                assert _normalised(quote) in lesson, f"{name}: not in docs/lesson.md: {quote!r}"


@pytest.mark.parametrize("name", EXPECTED)
def test_links_the_lesson_in_its_opening(name):
    first = _text(_cells(name)[0]["source"])
    assert "](../docs/lesson.md" in first, f"{name}: its first cell does not link docs/lesson.md"


# ---- every notebook at other seeds (slow) ----------------------------------------------------

#: a shift of every seed a notebook uses (``jobsim.seed``) that the slow tier always runs
OTHER_SEED = 500


def _run_notebooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "tools" / "run_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("which", ["fixed", "fresh"])
@pytest.mark.parametrize("name", EXPECTED)
def test_runs_at_other_seeds(name, which, fresh_seed, monkeypatch):
    """Each notebook, small (JOBSIM_FAST=1), at its seeds moved by OTHER_SEED and by a shift
    drawn afresh each session (from ``fresh_seed``: replayed with the JOBSIM_TEST_SEED the
    header prints): every assertion of its text must hold at seeds it was not written at."""
    monkeypatch.setenv("JOBSIM_FAST", "1")
    shift = OTHER_SEED if which == "fixed" else 1000 + fresh_seed % 1_000_000
    print(f"{name}: JOBSIM_SEED={shift} (python tools/run_notebooks.py --check --seed {shift} "
          f"{name}, with JOBSIM_FAST=1)")
    _, failure = _run_notebooks().execute(NOTEBOOKS / name, shift, write=False)
    assert failure is None, f"{name} at JOBSIM_SEED={shift} (fast): {failure}"
