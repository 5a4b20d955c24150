"""``jobsim hunt``: the search finds what breaks a configuration, shrinks it to a minimal
scenario file that ``jobsim run`` reproduces, says what it covered when nothing breaks, and
does the same on one process, many, or a Dask cluster."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from jobsim.cli import main
from jobsim.tools.hunt import configuration, hunt, parse
from jobsim.tools.hunt.shrink import toward
from jobsim.tools.hunt.space import bounds, draw

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
LOCK_EXPIRY = SCENARIOS / "lock_expiry.yaml"
ZOMBIE = SCENARIOS / "zombie_pause.yaml"
ZEEBE = SCENARIOS / "zeebe_like.yaml"


def _run_file(path: Path, tmp: Path, capsys) -> tuple[int, str]:
    status = main(["run", str(path), "--out", str(tmp), "--quiet", "--no-plots", "--no-view"])
    return status, capsys.readouterr().out


def _minimal(folder: Path) -> dict:
    return yaml.safe_load((folder / "minimal.yaml").read_text(encoding="utf-8"))


def _jobs(doc: dict) -> int:
    work = doc["workload"]
    return sum(s["count"] for s in work.get("streams") or []) + len(work.get("jobs") or [])


@pytest.mark.slow  # 58 CPU s: hunts on two configurations, shrunk
def test_a_heartbeat_survives_its_crash_but_a_pause_past_the_lock_runs_a_job_twice(
        tmp_path, capsys):
    """Acceptance 1: the heartbeat variant of lock_expiry, its own crash removed; the hunt
    (every kind of fault) finds a pause longer than the lock can bear and shrinks it to one
    pause and at most 2 jobs; the minimal file fails jobsim run with that figure."""
    out = tmp_path / "hunt"
    status = main(["hunt", str(LOCK_EXPIRY), "--variant", "heartbeat", "--set", "faults=[]",
                   "--break", "duplicate_executions == 0", "--budget", "64", "--workers", "2",
                   "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 1, printed
    doc = _minimal(out)
    added = doc["faults"]
    assert len(added) == 1 and "pause" in added[0], added
    # a heartbeat every 7.5 s over a 30 s lock: a pause shorter than 22.5 s cannot outlast it
    assert float(added[0]["for"].rstrip("s")) > 22.5
    assert _jobs(doc) <= 2
    assert doc["expect"] == {"duplicate_executions.total": "== 0"}
    status, text = _run_file(out / "minimal.yaml", tmp_path / "rerun", capsys)
    assert status == 1
    assert "FAIL duplicate_executions.total == 0" in text
    md = (out / "hunt.md").read_text(encoding="utf-8")
    assert "## Original and shrunk" in md and "| pause |" in md
    assert "TAKEN OVER" in md  # the minimal run's story
    for name in ("minimal/report.md", "minimal/timeline.png", "faults.png", "runs.csv",
                 "original.yaml"):
        assert (out / name).stat().st_size > 0, name


def test_the_zombie_makes_its_payment_twice_under_one_pause(tmp_path, capsys):
    """Acceptance 2: zombie_pause, completion guarded by owner, its own pause removed."""
    out = tmp_path / "hunt"
    status = main(["hunt", str(ZOMBIE), "--variant", "guarded", "--set", "faults=[]",
                   "--break", "duplicate_side_effects == 0", "--budget", "64", "--workers",
                   "1", "--out", str(out)])
    capsys.readouterr()
    assert status == 1
    doc = _minimal(out)
    assert len(doc["faults"]) == 1 and "pause" in doc["faults"][0]
    assert doc["executor"]["complete_guard"] == "owner"
    status, text = _run_file(out / "minimal.yaml", tmp_path / "rerun", capsys)
    assert status == 1 and "FAIL duplicate_side_effects.total == 0" in text


@pytest.mark.slow  # 105 CPU s: the 500-run acceptance
def test_zeebe_never_double_acquires_and_the_hunt_says_only_what_it_covered(tmp_path, capsys):
    """Acceptance 3, first half: 500 runs of the Zeebe-like server against exclusive_locks
    find nothing; the coverage is reported, never as proof."""
    out = tmp_path / "hunt"
    status = main(["hunt", str(ZEEBE), "--break", "exclusive_locks", "--budget", "500",
                   "--workers", "2", "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "runs of the search: 500" in printed and "0 broke the property" in printed
    assert "proves nothing safe" in printed
    md = (out / "hunt.md").read_text(encoding="utf-8")
    assert "not a proof that the configuration is safe" in md
    for kind in ("pause", "crash", "crash (no restart)", "partition", "slow_db",
                 "restart_server"):
        assert f"| {kind} |" in md, kind
    assert not (out / "minimal.yaml").exists()


@pytest.mark.slow  # 19 CPU s
def test_zeebe_strands_a_job_for_ever_when_a_worker_crashes_holding_it(tmp_path, capsys):
    """Acceptance 3, second half: the liveness property breaks; the minimal run's job is
    stranded for ever (not merely cut off by a horizon shrinking chose: a liveness property
    never has its horizon shortened)."""
    out = tmp_path / "hunt"
    status = main(["hunt", str(ZEEBE), "--break", "liveness", "--budget", "100",
                   "--workers", "2", "--out", str(out)])
    capsys.readouterr()
    assert status == 1
    doc = _minimal(out)
    assert "until" not in doc or doc["until"] == "drained"
    own = yaml.safe_load(ZEEBE.read_text(encoding="utf-8"))["faults"]
    added = [f for f in doc["faults"] if f not in own]
    assert len(added) == 1 and "crash" in added[0], added
    status, text = _run_file(out / "minimal.yaml", tmp_path / "rerun", capsys)
    assert status == 1 and "stranded" in text and "crashed while holding it" in text


@pytest.mark.slow  # 44 CPU s: three hunts, one on Dask
def test_a_hunt_is_the_same_on_one_process_on_many_and_on_dask(tmp_path, dask_scheduler):
    """Acceptance 4: the same configuration, property, budget and seed give the same
    minimal file on 1 and 3 local workers and on a Dask LocalCluster."""
    doc = configuration(yaml.safe_load(ZOMBIE.read_text(encoding="utf-8")), "guarded",
                        ["faults=[]"], str(ZOMBIE))
    texts = []
    for i, kw in enumerate([{"workers": 1}, {"workers": 3}]):
        r = hunt(doc, "duplicate_side_effects == 0", source=str(ZOMBIE), runs=40, seed=7,
                 out=tmp_path / f"h{i}", **kw)
        texts.append((tmp_path / f"h{i}" / "minimal.yaml").read_bytes())
        assert r.minimal is not None
    hunt(doc, "duplicate_side_effects == 0", source=str(ZOMBIE), runs=40, seed=7,
         dask=dask_scheduler, out=tmp_path / "dask")
    texts.append((tmp_path / "dask" / "minimal.yaml").read_bytes())
    assert texts[0] == texts[1] == texts[2]
    runs = [(tmp_path / d / "runs.csv").read_bytes() for d in ("h0", "h1", "dask")]
    assert runs[0] == runs[1] == runs[2]


def test_a_hunt_run_again_takes_every_run_from_its_cache(tmp_path):
    doc = configuration(yaml.safe_load(ZOMBIE.read_text(encoding="utf-8")), "guarded",
                        ["faults=[]"], str(ZOMBIE))
    first = hunt(doc, "duplicate_side_effects == 0", source=str(ZOMBIE), runs=20,
                 out=tmp_path / "h")
    again = hunt(doc, "duplicate_side_effects == 0", source=str(ZOMBIE), runs=20,
                 out=tmp_path / "h")
    assert first.computed > 20 and again.computed == 0
    assert again.cached == first.computed
    assert again.minimal == first.minimal


def test_a_fresh_hunt_seed_always_shrinks_to_a_file_that_reproduces(tmp_path, capsys,
                                                                   fresh_seed):
    """Fuzz with the session's fresh seed (printed, to replay a failure): whatever the hunt
    finds, its minimal file fails jobsim run (the hunt itself checks this and raises if not)."""
    seed = fresh_seed
    print(f"hunt seed {seed} (or by hand: jobsim hunt … --seed {seed})")
    out = tmp_path / "hunt"
    status = main(["hunt", str(ZOMBIE), "--variant", "unguarded", "--set", "faults=[]",
                   "--break", "duplicate_executions == 0", "--budget", "32", "--seed",
                   str(seed), "--workers", "2", "--out", str(out)])
    capsys.readouterr()
    assert status in (0, 1), f"seed {seed}"
    if status == 1:
        status, _ = _run_file(out / "minimal.yaml", tmp_path / "rerun", capsys)
        assert status == 1, f"seed {seed}"


@pytest.mark.parametrize("args, words", [
    (["--break", "duplicate_executions =="], "an invariant (no_job_lost"),
    (["--break", "no_such_figure == 0"], "a figure of the summary"),
    # a typo: the nearest figures first, not the first of its group in the alphabet
    (["--break", "duplicate_executions.totl > 0"],
     "did you mean 'duplicate_executions.total'"),
    (["--break", "latency.start_dealy.p99 > 1s"], "did you mean 'latency.start_delay.p99'"),
    (["--break", "exclusive_locks", "--budget", "ten"], "runs (500), a time (10m)"),
    (["--break", "exclusive_locks", "--variant", "nope"], "one of the scenario's variants"),
    (["--break", "exclusive_locks", "--faults", "restart_server"],
     "only the Zeebe-like server has one"),
    (["--break", "exclusive_locks", "--faults", "earthquake"], "some of pause"),
])
def test_bad_flags_are_refused_before_any_run_with_exit_2(tmp_path, capsys, args, words):
    out = tmp_path / "hunt"
    status = main(["hunt", str(LOCK_EXPIRY), "--out", str(out), *args])
    err = capsys.readouterr().err
    assert status == 2 and words in err, err
    assert "Traceback" not in err
    assert not (out / "runs.csv").exists()
    # a flag's problem is the command line's, said as such; the file is named once
    assert "problem(s) on the command line" in err, err
    assert f"{LOCK_EXPIRY}: --" not in err and "the command line: --" not in err, err


def test_a_bad_hunt_section_names_its_dotted_path(tmp_path, capsys):
    doc = yaml.safe_load(ZOMBIE.read_text(encoding="utf-8"))
    doc["hunt"] = {"between": ["10m", "1m"], "nodes": ["node-Z"]}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    status = main(["hunt", str(path), "--break", "exclusive_locks", "--out",
                   str(tmp_path / "h")])
    err = capsys.readouterr().err
    assert status == 2
    assert "hunt.between" in err and "hunt.nodes" in err and "node-A, node-B" in err


def test_a_hunt_will_not_write_over_a_users_folder(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine", encoding="utf-8")
    status = main(["hunt", str(ZOMBIE), "--break", "exclusive_locks", "--out", str(mine),
                   "--budget", "4"])
    assert status == 2 and "notes.txt" not in os.listdir(mine) or \
        (mine / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert status == 2
    capsys.readouterr()


def test_the_draws_never_kill_every_node_for_ever():
    names = ("a", "b")
    b = bounds({"kinds": ["crash"], "faults": 5}, names, 30.0, 100.0, False, None, "x")
    for i in range(300):
        case = draw(b, 1, i, 0)
        forever = {f["crash"] for f in case["faults"] if "restart_after" not in f}
        assert forever != set(names), case
    gone = bounds({"kinds": ["crash"]}, names, 30.0, 100.0, False, None, "x",
                  [{"at": "1s", "crash": "a"}])
    for i in range(100):
        assert all("restart_after" in f or f["crash"] != "b"
                   for f in draw(gone, 2, i, 0)["faults"])


def test_numbers_shrink_toward_their_floor_boldest_first():
    assert toward(100.0, 0.0) == [0.0, 50.0, 75.0, 87.5, 93.75]
    assert toward(100.5, 0.0)[-1] == 100.0  # the whole second below
    assert toward(1.0, 1.0) == [] and toward(0.002, 0.001) == [0.001]


def test_a_liveness_property_never_has_its_horizon_cut():
    assert parse("exclusive_locks").grows and parse("duplicate_executions == 0").grows
    assert not parse("liveness").grows and not parse("jobs.done == 10").grows
    assert not parse("latency.start_delay.max <= 30s").grows
    assert json.dumps(parse("named.payment.executions == 1").expect()) == \
        '{"named.payment.executions": "== 1"}'


def test_the_python_of_docs_hunt_md_runs(monkeypatch):
    """docs/hunt.md's Python example, run as written (from the project's folder)."""
    import re

    root = SCENARIOS.parent
    text = (root / "docs" / "hunt.md").read_text(encoding="utf-8")
    code, = re.findall(r"```python\n(.*?)```", text, re.S)
    monkeypatch.chdir(root)
    space: dict = {}
    exec(compile(code, "docs/hunt.md", "exec"), space)
    r = space["r"]
    assert r.minimal is not None and len(r.minimal["faults"]) == 1
    assert "pause" in r.minimal["faults"][0]


def test_shrinking_keeps_the_job_the_property_names_and_says_no_fault_was_needed(
        tmp_path, capsys):
    """The challenge's FIFO variant delays the urgent timer by itself: the baseline breaks
    the property, and shrinking may take the other jobs away but not the urgent one (a run
    without the figure breaks nothing)."""
    out = tmp_path / "hunt"
    status = main(["hunt", str(SCENARIOS / "challenge.yaml"), "--variant", "fifo", "--break",
                   "named.urgent.start_delay <= 2s", "--budget", "8", "--workers", "1",
                   "--out", str(out)])
    capsys.readouterr()
    assert status == 1
    doc = _minimal(out)
    assert [j["name"] for j in doc["workload"]["jobs"]] == ["urgent"] and doc["faults"] == []
    assert _jobs(doc) < 101
    assert "breaks without any added fault" in (out / "hunt.md").read_text(encoding="utf-8")
    status, text = _run_file(out / "minimal.yaml", tmp_path / "rerun", capsys)
    assert status == 1 and "FAIL named.urgent.start_delay <= 2s" in text
