"""A run in which the model raises is a finding, never a run that "did not complete".

The crash is injected (``Node.pause`` made to raise, in this process: ``--workers 1``), so
the tests do not depend on a bug of the model: a hunt reports it as its finding (hunt.md
with the traceback's last lines, ``minimal.yaml`` that raises it again, exit 1), and a sweep
counts and names each crashed run with the command that reproduces it (exit 1).
"""

from __future__ import annotations

import shlex

import pandas as pd
import pytest
import yaml

from conftest import ROOT
from jobsim.cli import main
from jobsim.executor.node import Node
from jobsim.tools.sweep import run_one

LESSON = ROOT / "scenarios" / "lesson.yaml"
BUG = "injected: the pause fault trips over itself"


@pytest.fixture
def pause_crashes(monkeypatch):
    def pause(self, length):
        raise ValueError(BUG)

    monkeypatch.setattr(Node, "pause", pause)


def test_a_run_that_raises_is_a_crashed_row_with_its_traceback(pause_crashes):
    doc = yaml.safe_load(LESSON.read_text(encoding="utf-8"))
    doc["faults"] = [{"at": "1s", "pause": "node-A", "for": "5s"}]
    row = run_one(doc, str(LESSON), (), 7)
    assert row["ok"] is False and row["crashed"] is True
    assert row["error"] == f"ValueError: {BUG}"
    assert row["traceback"].splitlines()[-1] == f"ValueError: {BUG}"
    assert "in pause" in row["traceback"]  # where it was raised


def test_a_run_that_cannot_be_built_or_is_stopped_is_not_a_crash():
    doc = yaml.safe_load(LESSON.read_text(encoding="utf-8"))
    doc["nodes"] = "many"
    row = run_one(doc, str(LESSON), (), 7)
    assert row["ok"] is False and "crashed" not in row and "nodes" in row["error"]


def test_a_hunt_reports_a_crash_as_its_finding(tmp_path, capsys, pause_crashes):
    out = tmp_path / "h"
    status = main(["hunt", str(LESSON), "--break", "liveness", "--faults", "pause,crash",
                   "--budget", "16", "--workers", "1", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert status == 1, stdout
    assert "CRASHED: the model raised an error in a run" in stdout
    assert f"ValueError: {BUG}" in stdout and "nothing broke it" not in stdout
    hunt_md = (out / "hunt.md").read_text(encoding="utf-8")
    assert "**A run crashed**" in hunt_md and f"ValueError: {BUG}" in hunt_md
    assert "crashed (the model raised)" in hunt_md
    runs = pd.read_csv(out / "runs.csv")
    assert runs["crashed"].any() and not runs.loc[runs["crashed"], "broken"].any()
    minimal = yaml.safe_load((out / "minimal.yaml").read_text(encoding="utf-8"))
    assert [f for f in minimal["faults"] if "pause" in f]  # shrunk, still with its pause
    assert "expect" not in minimal
    with pytest.raises(ValueError, match=BUG):  # the file reproduces the crash
        main(["run", str(out / "minimal.yaml"), "--quiet", "--out", str(tmp_path / "r")])
    assert not (tmp_path / "r").exists()


def test_a_hunt_whose_configuration_crashes_reports_it_without_a_search(tmp_path, capsys,
                                                                        pause_crashes):
    path = tmp_path / "paused.yaml"
    doc = yaml.safe_load(LESSON.read_text(encoding="utf-8"))
    doc["faults"] = [{"at": "1s", "pause": "node-A", "for": "5s"}]
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out = tmp_path / "h"
    assert main(["hunt", str(path), "--break", "liveness", "--budget", "16", "--workers", "1",
                 "--out", str(out)]) == 1
    assert "CRASHED" in capsys.readouterr().out
    runs = pd.read_csv(out / "runs.csv")
    assert (runs["phase"] == "search").sum() == 0 and runs["crashed"].iloc[0]


def test_a_sweep_counts_and_names_its_crashed_runs(tmp_path, capsys, pause_crashes):
    path = tmp_path / "grid.yaml"
    doc = yaml.safe_load(LESSON.read_text(encoding="utf-8"))
    doc["sweep"] = {"grid": {"faults": [[], [{"at": "1s", "pause": "node-A", "for": "5s"}]]},
                    "replications": 2}
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out = tmp_path / "s"
    status = main(["sweep", str(path), "--workers", "1", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert status == 1
    assert "4 runs over 2 grid points" in stdout and "2 failed, 2 of them crashed" in stdout
    assert "CRASHED: the model raised an error in 2 run(s)" in stdout
    commands = [ln.split("   # ")[0].strip() for ln in stdout.splitlines()
                if ln.strip().startswith("jobsim run ")]
    assert len(commands) == 2 and all(f"# ValueError: {BUG}" in ln for ln in stdout.splitlines()
                                      if ln.strip().startswith("jobsim run "))
    sweep_md = (out / "sweep.md").read_text(encoding="utf-8")
    assert "**2 of 4 runs crashed**" in sweep_md and f"ValueError: {BUG}" in sweep_md
    runs = pd.read_csv(out / "runs.csv")
    assert int(runs["crashed"].eq(True).sum()) == 2
    points = pd.read_csv(out / "points.csv")
    assert list(points["crashed_runs"]) == [0, 2]
    argv = shlex.split(commands[0])[1:]  # each command reproduces its crash
    with pytest.raises(ValueError, match=BUG):
        main(argv + ["--quiet", "--out", str(tmp_path / "r")])
