"""``jobsim run --seeds N`` and ``report.seeds``: the run's report with its figures and
expectations over N seeds (the run's own and the N - 1 after it, every variant on the same
seeds), the other seeds run on the sweep's pool."""

import json
import math
import os
import subprocess
import sys

import pytest

from conftest import SCENARIOS
from jobsim.cli import main
from jobsim.format import scenario
from jobsim.output.report import analyse
from jobsim.output.seeds import OverSeeds
from jobsim.sim.world import run

#: a small scenario whose figures move with the seed: a 2 s lock against runs of up to 4 s
SMALL = """\
# A small scenario run over seeds by the tests.
name: small_seeds
seed: 5
until: drained
nodes: 2
executor: {poll_interval: 1s, lock_time: 3s, threads: 1}
handlers:
  work:
    duration: {uniform: {low: 100ms, high: 4s}}
    outcome: {fail_rate: 0.3}
workload:
  streams:
    - {name: s, handler: work, count: 20, rate: 2/s}
expect:
  jobs.lost: "== 0"
variants:
  short: {set: {executor.lock_time: 2s}, expect: {jobs.dead_lettered: "== 2"}}
  long: {set: {executor.lock_time: 10s}}
report:
  compare: [duplicate_executions.total]
"""
QUICK = ["--quiet", "--no-plots", "--no-view"]


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL, encoding="utf-8")
    return path


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _summary(folder):
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def test_the_figures_over_seeds_are_the_runs_at_those_seeds(small, tmp_path, capsys):
    """Each headline figure's values over the seeds are those of ``jobsim run --seed S``
    at each seed, the mean and range theirs; the run's own is the folder's run; every
    variant has the same seeds; an expectation failing at some seeds names them."""
    out = tmp_path / "over"
    assert main(["run", str(small), "--seeds", "3", "--workers", "2", "--out", str(out)]
                + QUICK) == 0  # an expectation failing at another seed does not fail the run
    printed = capsys.readouterr().out
    over = _summary(out)["over_seeds"]
    assert over["seeds"] == [5, 6, 7]
    one = {}
    for s in over["seeds"]:
        folder = tmp_path / f"seed{s}"
        main(["run", str(small), "--seed", str(s), "--out", str(folder)] + QUICK)
        one[s] = _summary(folder)["variants"]
    assert _summary(out)["variants"] == {k: {x: y for x, y in v.items() if x != "overrides"}
                                         for k, v in one[5].items()}  # the run's own: seed 5
    moved = 0
    for name, got in over["runs"].items():
        for path, f in got["figures"].items():
            values = []
            for s in over["seeds"]:
                v = one[s][name]
                for part in path.split("."):
                    v = v.get(part) if isinstance(v, dict) else None
                values.append(v)
            assert f["values"] == values and f["run"] == values[0], (name, path)
            nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if nums:
                assert (f["min"], f["max"]) == (min(nums), max(nums))
                assert f["mean"] == pytest.approx(sum(nums) / len(nums))
                moved += min(nums) != max(nums)
    assert moved >= 5  # the scenario's figures move with the seed: the test tests something
    # the expectation that holds at seed 5 only where the seed says so
    dead = {s: one[s]["short"]["jobs"]["dead_lettered"] for s in over["seeds"]}
    failing = [s for s in over["seeds"] if dead[s] != 2]
    assert dead[5] == 2 and failing, dead
    (e,) = [e for e in over["runs"]["short"]["expectations"]
            if e["expectation"] == "jobs.dead_lettered == 2"]
    assert e == {"expectation": "jobs.dead_lettered == 2", "fails_at": failing,
                 "holds_at": 3 - len(failing), "of": 3}
    seeds = ", ".join(map(str, failing))
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Over 3 seeds" in report
    assert f"| ✗ | short | `jobs.dead_lettered == 2` | {3 - len(failing)} of 3 | {seeds} |" \
        in report
    plural = "s" if len(failing) > 1 else ""
    assert f"short `jobs.dead_lettered == 2` (fails at seed{plural} {seeds})" in report
    assert f"short: jobs.dead_lettered == 2 fails at seed{plural} {seeds}\n" in printed
    assert "the invariants at every seed" in printed


def test_over_seeds_is_deterministic_and_one_seed_changes_nothing(small, tmp_path):
    """The same command gives the same bytes, on one worker or two and under another
    PYTHONHASHSEED; ``--seeds 1`` is the run without the flag, byte for byte."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", str(small), "--seeds", "3", "--workers", "1", "--out", str(a)]
                + QUICK) == 0
    assert main(["run", str(small), "--seeds", "3", "--workers", "2", "--out", str(b)]
                + QUICK) == 0
    assert _files(a) == _files(b)
    c = tmp_path / "c"
    env = {**os.environ, "PYTHONHASHSEED": "17"}
    subprocess.run([sys.executable, "-m", "jobsim", "run", str(small), "--seeds", "3",
                    "--out", str(c)] + QUICK, env=env, check=True, capture_output=True)
    assert _files(a) == _files(c)
    plain, one = tmp_path / "plain", tmp_path / "one"
    assert main(["run", str(small), "--out", str(plain)] + QUICK) == 0
    assert main(["run", str(small), "--seeds", "1", "--out", str(one)] + QUICK) == 0
    assert _files(plain) == _files(one)
    assert "over_seeds" not in _summary(plain) and "Over " not in \
        (plain / "report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("value, said", [
    ("0", "expected a positive integer (got '0')"),
    ("-3", "expected a positive integer (got '-3')"),
    ("ten", "expected a positive integer (got 'ten')"),
    ("1001", "expected at most 1,000 (got '1001')"),
    ("1" + "0" * 30, "expected at most 1,000"),
])
def test_bad_seeds_exit_2_before_any_work(small, tmp_path, capsys, value, said):
    out = tmp_path / "o"
    assert main(["run", str(small), "--seeds", value, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--seeds" in err and said in err and "Traceback" not in err
    assert not out.exists()


def test_seeds_past_the_largest_seed_or_with_every_poll_are_refused(small, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", str(small), "--seed", str(2 ** 63 - 2), "--seeds", "3",
                 "--out", str(out)]) == 2
    assert "--seeds: expected seeds up to 9,223,372,036,854,775,807" in capsys.readouterr().err
    assert main(["run", str(small), "--seeds", "2", "--every-poll", "--out", str(out)]) == 2
    assert "--every-poll: expected one seed with --every-poll" in capsys.readouterr().err
    from jobsim.sim.cost import estimate

    events = [estimate(sc).events for sc in scenario.load_variants(small)]
    budget = math.ceil(max(events))  # each run within it, 40 seeds × 2 runs not within 50×
    assert main(["run", str(small), "--seeds", "40", "--budget", str(budget), "--out",
                 str(out)]) == 2
    assert f"--seeds: expected runs of at most {budget * 50:.2g} events in all (50 × the run " \
        "budget" in capsys.readouterr().err
    assert not out.exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text(SMALL.replace("  compare:", "  seeds: 0\n  compare:"), encoding="utf-8")
    assert main(["run", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "report.seeds: expected an integer from 1 to 1,000 (got 0)" in err
    assert not out.exists()


def test_the_file_asks_for_seeds_and_reports_gives_them(small, tmp_path, capsys, monkeypatch):
    """``report.seeds`` is the default of ``--seeds``, also for ``jobsim reports``; a number
    of seeds other than the file's is a what-if, in the scratch folder."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "small.yaml").write_text(SMALL.replace("  compare:", "  seeds: 2\n  compare:"),
                                       encoding="utf-8")
    out = tmp_path / "reports"
    assert main(["reports", str(folder), "--out", str(out)]) == 0
    assert _summary(out / "small_seeds")["over_seeds"]["seeds"] == [5, 6]
    monkeypatch.chdir(tmp_path)
    assert main(["run", "scenarios/small.yaml"] + QUICK) == 0  # its own folder, as reports
    assert _summary(tmp_path / "reports" / "small_seeds") == _summary(out / "small_seeds")
    assert main(["run", "scenarios/small.yaml", "--seeds", "3"] + QUICK) == 0
    what_if = tmp_path / "reports" / "_scratch" / "small_seeds" / "seeds=3"
    assert _summary(what_if)["over_seeds"]["seeds"] == [5, 6, 7]
    capsys.readouterr()


def test_a_run_broken_or_not_completed_at_another_seed_fails(small):
    """A row with unexpected violations, or with an error, is said with its seed and fails
    the command; figures come from the runs that completed."""
    a = analyse(run(scenario.load(small)))
    own = {"seed": 5, "ok": True, "violations": 0, "jobs.lost": 0, "executions": 30}
    broken = {**own, "seed": 6, "violations": 2, "executions": 40}
    stopped = {"seed": 7, "ok": False, "error": "RunStopped: far past its estimate"}
    over = OverSeeds([5, 6, 7], [a], [[own, broken, stopped]])
    assert over.failed
    got = over.summary()["runs"]["small_seeds"]
    assert got["invariants_broken_at"] == [6]
    assert got["not_completed"] == {"7": "RunStopped: far past its estimate"}
    assert got["figures"]["executions"] == {"run": 30, "values": [30, 40, None], "mean": 35.0,
                                            "min": 30, "max": 40, "n": 2}
    text = "\n".join(over.markdown())
    assert "an invariant broke, beyond what the scenario expects, at seed 6" in text
    assert "the run at seed 7 did not complete: RunStopped" in text
    assert "invariant broken at seed 6" in "\n".join(over.lines())
    assert not OverSeeds([5, 6], [a], [[own, {**own, "seed": 6}]]).failed


def test_the_side_by_side_scenario_asks_for_ten_seeds():
    """Its figures move with the seed (failsafe's duplicates above all): its report gives
    them over ten."""
    from jobsim.tools.seeds import file_seeds

    runs = scenario.load_variants(SCENARIOS / "executors_side_by_side.yaml")
    assert {file_seeds(sc) for sc in runs} == {10}


def test_validate_prices_the_runs_over_seeds(small, tmp_path, capsys):
    from jobsim.sim.cost import estimate

    path = tmp_path / "seeds.yaml"
    path.write_text(SMALL.replace("  compare:", "  seeds: 4\n  compare:"), encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    events = sum(estimate(sc).events for sc in scenario.load_variants(path))
    assert f"  over 4 seeds (report.seeds): about {4 * events:,.0f} events in all\n" in \
        capsys.readouterr().out
    assert main(["validate", str(small)]) == 0
    assert "report.seeds" not in capsys.readouterr().out


#: strict priority at about capacity: the load's verdict is one seed's (seeds 1-10 read
#: stable ×4, overloaded ×2, starved ×4; offered 0.92-1.03)
NEAR_CAPACITY = """\
name: near_capacity
seed: 1
until: drained
executor: {wakeup: notify, poll_interval: 1s, batch_size: 2, queue_size: 2, threads: 2,
           order: priority}
nodes: [{name: node-1}]
handlers: {work: {duration: {exponential: {mean: 1s}}}}
workload:
  streams:
    - {name: high, handler: work, count: 1000, rate: 1.85/s, priority: 10}
    - {name: low, handler: work, count: 60, rate: 0.1/s, priority: 0}
"""


def test_an_effects_verdict_that_differs_between_seeds_is_counted_and_printed(tmp_path,
                                                                              capsys):
    path = tmp_path / "near.yaml"
    path.write_text(NEAR_CAPACITY, encoding="utf-8")
    out = tmp_path / "o"
    assert main(["run", str(path), "--seeds", "10", "--workers", "1", "--out", str(out),
                 "--no-plots", "--no-view"]) == 0
    printed = capsys.readouterr().out
    fig = _summary(out)["over_seeds"]["runs"]["near_capacity"]["figures"]
    verdicts = fig["effects.load.verdict"]["values"]
    assert len(verdicts) == 10 and len(set(verdicts)) > 1, verdicts
    counts = {v: verdicts.count(v) for v in set(verdicts)}
    said = " · ".join(f"{v} ×{c}" for v, c in sorted(counts.items(), key=lambda vc: (
        vc[0] != verdicts[0], vc[0])))
    assert f"load (offered against capacity): {said} of 10 seeds" in printed
    assert f"| load (offered against capacity) | {said} |" in \
        (out / "report.md").read_text(encoding="utf-8")


def test_a_verdict_near_capacity_says_it_is_one_seeds(tmp_path):
    """Overloaded at 1.02 of capacity (seed 3), starved at 0.95 (seed 9): each sentence says
    the verdict is one seed's, and where to look; at 2.4/s (far over) it does not."""
    from jobsim.output.words import sentences
    for seed, verdict, near in ((3, "overloaded", "1.02"), (9, "starved", "0.95")):
        s = analyse(run(scenario.loads(NEAR_CAPACITY, seed=seed))).summary
        assert s["effects"]["load"]["verdict"] == verdict
        said = " ".join(sentences(s))
        assert f"Near capacity ({near}), the verdict is one seed's: `--seeds 10`" in said
    far = analyse(run(scenario.loads(NEAR_CAPACITY.replace("1.85/s", "2.4/s"), seed=3)))
    assert far.summary["effects"]["load"]["verdict"] == "overloaded"
    assert "Near capacity" not in " ".join(sentences(far.summary))
