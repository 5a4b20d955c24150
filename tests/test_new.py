"""``jobsim new NAME [--policy P]``: a small commented scenario that runs as written, for
every executor, and a file that is new or nothing is written."""

import subprocess
from pathlib import Path
import sys

import pytest

from jobsim.cli import main
from jobsim.executor.policies import PRESETS
from jobsim.format import scenario
from jobsim.format.lint import lint

QUICK = ["--quiet", "--no-plots", "--no-view"]


def test_new_then_run_works_from_a_fresh_folder_with_its_full_report(tmp_path):
    """The README's way in, as a user types it: `jobsim new demo && jobsim run demo.yaml`."""
    for argv in (["new", "demo"], ["run", "demo.yaml"]):
        proc = subprocess.run([sys.executable, "-m", "jobsim", *argv], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
    report = tmp_path / "reports" / "demo"
    assert {"report.md", "summary.json", "timeline.png", "view.html"} <= \
        {p.name for p in report.iterdir()}
    assert "expect       ok   jobs.lost == 0" in proc.stdout


@pytest.mark.parametrize("policy", [None, *sorted(PRESETS)])
def test_every_policys_first_scenario_runs_as_written_without_a_warning(tmp_path, policy,
                                                                         capsys):
    path = tmp_path / "first.yaml"
    assert main(["new", "first", "--out", str(path)]
                + ([] if policy is None else ["--policy", policy])) == 0
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# A first scenario, written by `jobsim new`")
    sc = scenario.load(path)
    assert sc.name == "first" and [w.code for w in lint(sc)] == []
    for seed in ("1", "2", "3"):  # its expectations are no one seed's luck
        assert main(["run", str(path), "--seed", seed, "--out", str(tmp_path / seed)]
                    + QUICK) == 0, (policy, seed, capsys.readouterr().out[-2000:])


def test_an_existing_file_is_left_alone_and_a_bad_name_or_policy_is_refused(tmp_path,
                                                                            capsys,
                                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "demo.yaml"
    mine.write_text("my own work\n", encoding="utf-8")
    assert main(["new", "demo"]) == 2
    assert mine.read_text(encoding="utf-8") == "my own work\n"
    assert "demo.yaml exists; jobsim writes only a new file" in capsys.readouterr().err
    assert main(["new", "my demo"]) == 2
    assert "name: expected a name of letters, digits" in capsys.readouterr().err
    assert main(["new", "x", "--policy", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--policy: expected one of" in err and "(got 'nope')" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.yaml"]  # nothing written
    assert main(["new", "demo.yaml", "--out", "other.yaml"]) == 0  # NAME.yaml is NAME
    assert scenario.load(tmp_path / "other.yaml").name == "demo"


# --- docs/first-scenario.md: its figures, as the page quotes them -------------------------

def _first(tmp_path):
    from jobsim.cli.new import template
    path = tmp_path / "demo.yaml"
    path.write_text(template("demo"), encoding="utf-8")
    return path


def test_the_first_scenario_pages_figures_hold(tmp_path):
    """Seed 1: 3 duplicate executions, all by the crash (node-b running again three jobs
    node-a held); 0 without the crash; over seeds 1-10 a mean of 1 in 0-3; the sweep's lock
    times: more duplicates at 10 s, and a crashed node's jobs waiting about the lock."""
    import json

    from jobsim.output.report import analyse
    from jobsim.sim.world import run
    path = _first(tmp_path)
    a = analyse(run(scenario.load(path)))
    s = a.summary
    assert (s["jobs"]["created"], s["jobs"]["done"], s["jobs"]["dead_lettered"]) == (200, 199, 1)
    assert s["duplicate_executions"]["total"] == 3
    assert s["duplicate_executions"]["by_cause"]["crash"] == 3
    assert {d.node for d in a.histories.duplicates} == {"node-b"}
    none = analyse(run(scenario.from_dict(scenario.parse(path.read_text()),
                                          sets=["faults=[]"]))).summary
    assert none["duplicate_executions"]["total"] == 0
    out = tmp_path / "seeds"
    assert main(["run", str(path), "--seeds", "10", "--workers", "1", "--out", str(out)]
                + QUICK) == 0
    f = json.loads((out / "summary.json").read_text())["over_seeds"]["runs"]["demo"][
        "figures"]["duplicate_executions.total"]
    assert (f["mean"], f["min"], f["max"]) == (1.0, 0, 3)
    page = (Path(__file__).resolve().parent.parent / "docs" / "first-scenario.md").read_text()
    assert "`3 · 1 (0–3)`" in page and "duplicate executions 3" in page


def test_the_first_scenario_pages_sweep_holds(tmp_path):
    path = _first(tmp_path)
    out = tmp_path / "sweep"
    assert main(["sweep", str(path), "--grid", "executor.lock_time=10s,1m,5m",
                 "--replications", "10", "--workers", "1", "--out", str(out),
                 "--plot", "duplicate_executions.total"]) == 0
    import pandas as pd
    runs = pd.read_csv(out / "runs.csv")
    by = runs.groupby("executor.lock_time")
    dup = by["duplicate_executions.total"].mean()
    wait = by["crash_recovery.delay.max"].mean()
    assert dup.round(1).to_dict() == {"10s": 2.4, "1m": 0.5, "5m": 0.5}, dup
    assert {k: round(v) for k, v in wait.to_dict().items()} == {"10s": 7, "1m": 56,
                                                                 "5m": 297}, wait


@pytest.mark.slow  # a hunt of 200 runs and its shrinking: ~950 runs
def test_the_first_scenario_pages_hunt_finds_a_pause_longer_than_the_lock(tmp_path):
    path = _first(tmp_path)
    out = tmp_path / "hunt"
    assert main(["hunt", str(path), "--set", "faults=[]", "--break",
                 "duplicate_executions.total == 0", "--budget", "200", "--out",
                 str(out)]) in (0, 1)
    minimal = scenario.load(out / "minimal.yaml")
    (fault,) = minimal.faults
    assert fault.kind == "pause" and fault.length > minimal.executor.lock_time
    # the shrunk run goes on past the pause: the node wakes and finishes the job, as the
    # page says (it had stopped 1.5 s before the waking, and warned of it)
    assert minimal.until > fault.at + fault.length
    from jobsim.format.lint import lint
    assert not [w for w in lint(minimal) if w.code == "fault-outlasts-the-end"]
    from jobsim import api
    s = api.analyse(api.run(minimal)).summary
    assert s["duplicate_side_effects"]["by_cause"]["pause"] == 1


def test_a_reader_that_goes_away_is_no_error_of_the_run(tmp_path):
    """`jobsim run … | head -1`: the pipe broke while the summary was printed, and the run
    said "cannot write --timings None: Broken pipe" — of a file it was never asked for."""
    path = _first(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "jobsim", "run", str(path), "--out",
                             str(tmp_path / "o"), "--no-plots", "--no-view"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away after one line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=600) == 0, err
    assert "cannot write" not in err and "Traceback" not in err, err
    assert (tmp_path / "o" / "report.md").exists()


@pytest.mark.parametrize("policy", [None, *sorted(PRESETS)])
def test_the_templates_word_on_a_failure_is_what_its_executor_does(tmp_path, policy):
    """failsafe-executor makes one attempt: its template said a failure "is retried" while
    its run kept 23 jobs failed. The comment now says what the run does, and the run
    agrees: retries exactly where the comment says so."""
    from jobsim.cli.new import template
    from jobsim.output.report import analyse
    from jobsim.sim.world import run

    text = template("t", policy)
    said = next(line for line in text.splitlines() if "fail_rate" in line)
    from jobsim.base.trace import K

    result = run(scenario.loads(text))
    s = analyse(result).summary
    retried = bool((result.trace.arrays()["kind"] == K["retry_scheduled"]).any())
    if "(retried:" in said:
        assert retried, (policy, said)
    else:
        assert "never retried here" in said and not retried, (policy, said)
        assert "is kept as failed" not in said or s["jobs"]["failed"] > 0
