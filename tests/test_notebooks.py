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
