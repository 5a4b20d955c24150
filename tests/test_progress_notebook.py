"""Progress through the Python API, as a notebook draws it: ``run``, ``analyse`` and
``write`` with ``progress=True`` each draw a tqdm widget, left in the cell in its last state;
the text a saved notebook keeps beside each widget, which whoever reads it without the
widgets sees (GitHub, nbconvert), is that last state too. Before: the widgets were hidden
once closed, their labels stood as drawn up to 0.1 s before the end ("98%" beside a full
bar, a time short of the run's end), the saved text read "0%" for a finished run, and
``analyse`` and ``write`` said nothing."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "retry_storm.yaml"
WIDGET = "application/vnd.jupyter.widget-view+json"


def test_a_saved_notebook_keeps_each_widgets_last_state(tmp_path):
    pytest.importorskip("ipywidgets")
    pytest.importorskip("ipykernel")
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")

    out = tmp_path / "report"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code) for code in (
        "import os\nos.environ.pop('JOBSIM_PROGRESS', None)\nimport jobsim",
        f"res = jobsim.run({str(SCENARIO)!r}, progress=True)\n"
        "print(f'{res.end_time:,.0f} {len(res.trace):,}')",
        "a = jobsim.analyse(res, progress=True)",
        f"path = jobsim.write(a, {str(out)!r}, progress=True)")]
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()

    outputs = [o for cell in nb.cells for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"], outputs
    # nothing on the cell's stderr (a red box): the widgets say it all
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"], outputs
    end, events = next(o.text for o in outputs if o.output_type == "stream").split()
    shown = [o.data["text/plain"] for o in outputs if WIDGET in o.get("data", {})]
    assert len(shown) == 3, shown
    ran, analysed, written = shown
    assert ran.startswith("retry_storm: 100%|") and f"t={end}s]" in ran, (ran, end)
    assert analysed.startswith(f"retry_storm: analysing the trace ({events} events) ["), analysed
    files = len(json.loads((out / ".jobsim-manifest.json").read_text())["files"])
    said = f"report: {files} files written to {out} in "
    # ipywidgets cuts a widget's text past 110 characters (…): a long path is cut there
    assert written.startswith(said[:110]), written
    assert len(written) > 110 or written.endswith(" s"), written  # the time once: no [00:01]

    # the widgets' own state, as saved: the run's bar full and its label saying so, the
    # report's whole last words
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    labels = [m["state"].get("value") for m in state.values() if m["model_name"] == "HTMLModel"]
    bars = [m["state"] for m in state.values() if m["model_name"].endswith("ProgressModel")]
    assert any(v == 100 and b.get("max") == 100 for b in bars for v in [b.get("value")]), bars
    assert "retry_storm:\u2007100%" in labels, labels
    assert any((label or "").replace("\u2007", " ").startswith(said) and
               (label or "").endswith("\u2007s") for label in labels), labels


def test_the_api_says_what_it_analyses_and_writes_in_a_log(monkeypatch, tmp_path):
    """Off a notebook, the same calls draw as ``jobsim run`` does: in a log, a line as each
    step begins and then how many files were written; nothing when not asked."""
    import jobsim

    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    res = jobsim.run(ROOT / "scenarios" / "lesson.yaml")
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    a = jobsim.analyse(res, progress=True)
    jobsim.write(a, tmp_path / "report", progress=True)
    lines = log.getvalue().splitlines()
    files = len(json.loads((tmp_path / "report" / ".jobsim-manifest.json").read_text())["files"])
    assert lines[0] == f"lesson: analysing the trace ({len(res.trace):,} events)", lines
    assert "report: report.md" in lines, lines
    assert lines[-1].startswith(f"report: {files} files written to {tmp_path / 'report'} in "), \
        lines
    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    jobsim.write(jobsim.analyse(res), tmp_path / "again")
    assert quiet.getvalue() == ""


def _in_a_notebook(monkeypatch):
    """tqdm's widgets drawn as in a notebook (outside a kernel ``display`` prints them)."""
    pytest.importorskip("ipywidgets")
    from jobsim.base import progress

    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "_in_notebook", lambda: True)
    return progress


def test_a_widget_shows_what_is_simulated_at_once(monkeypatch):
    """A stage (what the run simulates) was set without drawing: the widget showed it only
    at its next update, if any came."""
    progress = _in_a_notebook(monkeypatch)
    bar = progress.Bar(100, "run", unit="%")
    assert progress._is_widget(bar.bar)
    bar.stage("simulating 3 jobs")
    _, _, right = bar.bar.container.children
    assert "simulating\u20073\u2007jobs" in right.value, right.value
    bar.close()


def test_a_failed_write_leaves_its_widget_red(monkeypatch, tmp_path):
    """With no total, tqdm closes a widget as done (green) whatever happened: a report that
    failed half-way was left in its cell looking written."""
    progress = _in_a_notebook(monkeypatch)
    from jobsim.output import runs

    made = []

    class Kept(progress.Steps):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self.bar)

    def broken(*args):  # report.write's arguments: its steps the last
        args[-1].step("report.md")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(runs, "Steps", Kept)
    monkeypatch.setattr(runs, "write", broken)
    with pytest.raises(RuntimeError):
        runs.write_report([], tmp_path / "out", progress=True)
    (bar,) = made
    assert bar.container.children[1].bar_style == "danger"
    steps = progress.Steps("report")  # and one that ended well: done
    widget = steps.bar
    steps.step("report.md")
    steps.close("3 files written")
    assert widget.container.children[1].bar_style == "success"
    assert widget.container.children[2].value == "report:\u20073\u2007files\u2007written"
