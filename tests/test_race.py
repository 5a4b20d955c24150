"""Two nodes, statement latency > 0: the guarded UPDATE never double-acquires, read-then-write
does — and the invariant checker says so (exit 1), with the events that show it."""

import json

import pytest

from jobsim import scenario
from jobsim.checks import check
from jobsim.cli import main
from jobsim.world import run


def _variant(text: str, strategy: str) -> str:
    assert "acquisition: guarded_update" in text
    return text.replace("acquisition: guarded_update", f"acquisition: {strategy}")


@pytest.mark.parametrize("strategy", ["guarded_update", "unguarded_update", "optimistic"])
def test_safe_strategies_never_double_acquire(race_text, strategy):
    """Under the atomic dialect every single-statement claim re-checks the lock at the
    instant it applies, and the optimistic claim checks the version: no double acquisition,
    no duplicate execution, every invariant holds."""
    sc = scenario.loads(_variant(race_text, strategy))
    result = run(sc)
    violations = check(result.trace, sc)
    assert violations == []


def test_optimistic_loses_races_instead(race_text):
    """Both nodes select the same candidates; the second UPDATE finds the version moved."""
    from jobsim.report import analyse

    a = analyse(run(scenario.loads(_variant(race_text, "optimistic"))))
    assert a.summary["acquisition"]["lost_races"] > 0
    assert a.summary["double_acquisitions"] == 0


def test_read_then_write_double_acquires_and_the_check_fails(race_text):
    sc = scenario.loads(_variant(race_text, "read_then_write"))
    violations = check(run(sc).trace, sc)
    kinds = {v.invariant for v in violations}
    assert kinds == {"exclusive_locks"}
    v = violations[0]
    assert len(v.events) == 2 and v.events[0] < v.events[1]


def test_read_then_write_needs_latency(race_text):
    """With zero latency the two statements of read-then-write apply at the same instant,
    before any other node's statement: nothing can slip in between."""
    text = _variant(race_text, "read_then_write").replace(
        "latency: {uniform: {low: 2ms, high: 8ms}}", "latency: 0s")
    sc = scenario.loads(text)
    assert check(run(sc).trace, sc) == []


def test_cli_exit_status_says_which(race_text, tmp_path, capsys):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(race_text)
    bad.write_text(_variant(race_text, "read_then_write"))
    assert main(["run", str(good), "--out", str(tmp_path / "g"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", str(bad), "--out", str(tmp_path / "b"), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: exclusive_locks" in out
    assert "double acquisition" in out and "locked node=node-" in out
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["double_acquisitions"] > 0
    assert summary["duplicate_executions"]["by_cause"]["unsafe_acquisition"] > 0
    assert summary["duplicate_executions"]["by_cause"]["unexplained"] == 0
    assert (tmp_path / "b" / "violations.txt").exists()
    assert not (tmp_path / "g" / "violations.txt").exists()
