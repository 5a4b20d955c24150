"""A hunt's and a sweep's budgets and caches have bounds, and nothing is made before
everything is checked.

- a hunt refused for a bad ``--break``, ``--faults`` or ``hunt:`` section, or a sweep for a
  bad grid point, leaves no folder (not even the default ``hunts/`` or ``sweeps/``);
- a run budget beyond what the cache's limit (or the disk, or the cost estimate) allows is
  capped, a time budget is given the most runs it may make, each with a line saying why
  with its figures; a sweep whose cache would pass its limit or the disk's free space is
  refused before any run;
- a cache that fills anyway (the estimate is made too small here) stops the search or the
  sweep cleanly, says so, and keeps what was cached, within its limit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import jobsim.tools.hunt as hunt_mod
from conftest import ROOT
from jobsim.cli import main
from jobsim.format.scenario import from_dict
from jobsim.sim.cost import estimate
from jobsim.tools.hunt import configuration, hunt
from jobsim.tools.hunt import plan as plan_mod
from jobsim.tools.sweep import Axis, CacheFull, sweep
from jobsim.tools.sweep import disk as disk_mod
from jobsim.tools.sweep import grid as grid_mod

LESSON = ROOT / "scenarios" / "lesson.yaml"
BLOCK = disk_mod.BLOCK


def lesson_doc() -> dict:
    return configuration(yaml.safe_load(LESSON.read_text(encoding="utf-8")), None, [],
                         str(LESSON))


def cache_bytes(folder: Path) -> int:
    return sum(-(-p.stat().st_size // BLOCK) * BLOCK for p in (folder / "cache").iterdir())


# --- nothing made before everything is checked ---------------------------------------------

@pytest.mark.parametrize("args, words", [
    (["--break", "no_such_figure == 0"], "a figure of the summary"),
    (["--break", "jobs.done == 0", "--faults", "earthquake"], "--faults"),
    (["--break", "named.nobody.executions == 1"], "a figure of the summary"),
])
def test_a_refused_hunt_makes_no_folder(args, words, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default folder: hunts/lesson
    status = main(["hunt", str(LESSON), "--budget", "4", "--workers", "1", *args])
    err = capsys.readouterr().err
    assert status == 2 and words in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []  # no hunts/, no .gitignore, no cache


def test_a_refused_hunt_section_makes_no_folder(tmp_path, capsys):
    doc = yaml.safe_load(LESSON.read_text(encoding="utf-8"))
    doc["hunt"] = {"nodes": ["node-Z"]}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out = tmp_path / "h"
    assert main(["hunt", str(path), "--break", "liveness", "--out", str(out)]) == 2
    assert "hunt.nodes" in capsys.readouterr().err and not out.exists()


def test_a_refused_sweep_makes_no_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default folder: sweeps/lesson
    status = main(["sweep", str(LESSON), "--grid", "executor.lock_time=30s,-5s"])
    err = capsys.readouterr().err
    assert status == 2 and "grid point executor.lock_time=-5s" in err, err
    assert list(tmp_path.iterdir()) == []


# --- budgets capped or refused, with their figures ------------------------------------------

def test_a_hunts_run_budget_beyond_its_cache_is_capped_and_said(tmp_path, monkeypatch):
    monkeypatch.setattr(hunt_mod, "MAX_SHRINK_RUNS", 4)
    doc = lesson_doc()
    per_run = disk_mod.entry_bytes(from_dict(doc, str(LESSON)))
    said: list[str] = []
    result = hunt(doc, "liveness", source=str(LESSON), runs=5000, out=tmp_path / "h",
                  cache_limit=20 * per_run, say=said.append)
    assert said == [f"--budget 5,000 runs is beyond what this hunt may make: the search is "
                    f"capped at 15 runs by the cache's limit of "
                    f"{plan_mod._bytes(20 * per_run)} (--cache-limit), at about "
                    f"{plan_mod._bytes(per_run)} a run (room kept for the baseline and 4 runs "
                    f"of shrinking)"]
    assert len(result.searched) == 15
    assert cache_bytes(tmp_path / "h") <= 20 * per_run
    assert said[0] in (tmp_path / "h" / "hunt.md").read_text(encoding="utf-8")


def test_a_time_budget_is_given_the_most_runs_it_may_make(tmp_path, monkeypatch):
    """A budget of a hundred million hours: the line says the runs that bound it, and the
    search makes exactly those (the time never runs out)."""
    monkeypatch.setattr(hunt_mod, "MAX_SHRINK_RUNS", 4)
    monkeypatch.setattr(disk_mod, "free_bytes", lambda path: 80 * BLOCK * 3 + disk_mod.RESERVE)
    said: list[str] = []
    result = hunt(lesson_doc(), "liveness", source=str(LESSON), runs=None,
                  seconds=99_999_999 * 3600.0, out=tmp_path / "h", say=said.append)
    per_run = disk_mod.entry_bytes(from_dict(lesson_doc(), str(LESSON)))
    fit = (80 * BLOCK * 3) // per_run - 1 - 4
    assert said and said[0].startswith(f"--budget 99,999,999 h: the search ends when that time "
                                       f"is spent or after {fit:,} runs, whichever comes first")
    assert "free on the disk of" in said[0]
    assert len(result.searched) == fit


# A hunt capped at its estimate (the sweep's cap stays in the default tier)
@pytest.mark.slow  # 10 CPU s
def test_a_hunt_beyond_the_cost_estimate_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(plan_mod, "HUNT_EVENTS", 1_000.0)
    said: list[str] = []
    events = estimate(from_dict(lesson_doc(), str(LESSON))).events
    result = hunt(lesson_doc(), "liveness", source=str(LESSON), runs=100, say=said.append)
    cap = int(1_000 // events)
    assert said[0].endswith(f"capped at {cap:,} runs by the cost estimate: about "
                            f"{events:,.0f} events a run, and a hunt makes at most 1,000 "
                            "events in all")
    assert len(result.searched) == cap


def test_a_sweep_beyond_its_cache_limit_or_the_disk_is_refused_before_any_run(
        tmp_path, capsys, monkeypatch):
    out = tmp_path / "s"
    status = main(["sweep", str(LESSON), "--grid", "executor.lock_time=10s,20s",
                   "--replications", "200", "--cache-limit", "1MB", "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert "--cache-limit: expected a cache within its limit of 1.0 MB" in err
    assert "the sweep would cache about" in err and "(400 runs × about" in err
    assert "raise --cache-limit to" in err
    monkeypatch.setattr(disk_mod, "free_bytes", lambda path: 66 * 1024 ** 2)
    status = main(["sweep", str(LESSON), "--grid", "executor.lock_time=10s,20s",
                   "--replications", "200", "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert "--out: expected room for the cache on the disk of" in err
    assert "(got 66.0 MB free)" in err


# --- a cache that fills anyway ----------------------------------------------------------------

def test_a_sweep_whose_cache_fills_stops_and_keeps_it(tmp_path, monkeypatch):
    monkeypatch.setattr(grid_mod, "entry_bytes", lambda sc: 1)  # the estimate far too small
    doc = yaml.safe_load(LESSON.read_text(encoding="utf-8"))
    axes = [Axis("executor.lock_time", ("10s", "20s"))]
    with pytest.raises(CacheFull) as info:
        sweep(doc, axes, 4, out=tmp_path / "s", cache_limit=6 * BLOCK)  # 3 entries of 2
    assert "the cache reached its limit of" in str(info.value)
    assert "after 3 of 8 runs" in str(info.value)
    assert len(list((tmp_path / "s" / "cache").glob("*.json"))) == 3
    assert cache_bytes(tmp_path / "s") <= 6 * BLOCK
    again = sweep(doc, axes, 4, out=tmp_path / "s")  # the default limit: only the rest
    assert (again.computed, again.cached) == (5, 3)


# A hunt until its cache is full (the sweep's bound stays in the default tier)
@pytest.mark.slow  # 10 CPU s
def test_a_hunt_whose_cache_fills_ends_its_search_and_reports(tmp_path, monkeypatch):
    monkeypatch.setattr(plan_mod, "entry_bytes", lambda sc: 1)
    result = hunt(lesson_doc(), "liveness", source=str(LESSON), runs=64, out=tmp_path / "h",
                  cache_limit=20 * BLOCK)
    assert result.budget_note.startswith("the cache reached its limit of 80 kB "
                                         "(--cache-limit) after 32 runs")
    assert len(result.searched) == 32  # one batch of 32, then the check
    assert cache_bytes(tmp_path / "h") <= 20 * BLOCK
    assert (tmp_path / "h" / "hunt.md").is_file()
    assert result.budget_note in (tmp_path / "h" / "hunt.md").read_text(encoding="utf-8")


def test_the_cache_counts_what_an_earlier_run_left(tmp_path):
    from jobsim.tools.sweep.cache import _Cache

    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "a.json").write_text("x" * 5000, encoding="utf-8")
    cache = _Cache(folder, limit=3 * BLOCK)
    assert cache.bytes == 2 * BLOCK
    cache.put("k", (), 1, {"seed": 1, "ok": True, "error": None, "pad": "y" * 5000})
    assert cache.full and not (folder / "k.json").exists()
    assert sorted(os.listdir(folder)) == ["a.json"]


def test_a_typo_in_a_grid_path_is_said_once_not_once_per_point(tmp_path, capsys):
    """A path the scenario lacks fails at every grid point: one line that says so (a grid of
    4 × 5 points used to print the same problem 20 times); a value bad at some points names
    them, the first three and how many more."""
    out = tmp_path / "s"
    status = main(["sweep", str(LESSON), "--grid", "executor.pol_interval=1s,2s,3s,4s",
                   "--grid", "executor.threads=1,2,3,4,5", "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert err.count("pol_interval") == 2, err  # the path once, and the typo it echoes
    assert "--grid executor.pol_interval (at every one of the 20 grid points)" in err
    assert "did you mean 'poll_interval'" in err and "1 problem(s)" in err
    status = main(["sweep", str(LESSON), "--grid", "executor.lock_time=-1s,30s,-5s",
                   "--grid", "executor.threads=1,2", "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2 and "1 problem(s)" not in err and not out.exists()
    assert ("--grid executor.lock_time (at 2 of the 6 grid points: executor.lock_time=-1s, "
            "executor.threads=1; executor.lock_time=-1s, executor.threads=2)") in err, err
