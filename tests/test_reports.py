"""The committed reports of the shipped scenarios are what a fresh run produces.

Regenerate them with ``jobsim run scenarios/<name>.yaml --quiet`` for each shipped scenario
(``for f in scenarios/*.yaml; do jobsim run "$f" --quiet; done``).
"""

import json

import pytest

from conftest import ROOT, SCENARIOS
from jobsim import scenario
from jobsim.report import analyse
from jobsim.world import run

SHIPPED = sorted(SCENARIOS.glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_committed_summary_matches_a_fresh_run(path):
    sc = scenario.load(path)
    committed = ROOT / "reports" / sc.name / "summary.json"
    assert committed.exists(), f"no committed report for {path.name}; run jobsim run {path}"
    fresh = analyse(run(sc)).summary
    assert json.loads(committed.read_text()) == json.loads(json.dumps(fresh))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_each_shipped_scenario_opens_with_a_comment_and_holds_its_invariants(path):
    assert path.read_text(encoding="utf-8").startswith("# ")
    a = analyse(run(scenario.load(path)))
    assert a.violations == []
