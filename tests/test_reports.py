"""The shipped scenarios: each validates, runs, keeps its own expectations and invariants, and
its committed report is what a fresh run produces.

Regenerate the committed reports with ``jobsim reports``.
"""

import json
from pathlib import Path

import pytest

from conftest import ROOT, SCENARIOS
from jobsim.format import scenario
from jobsim.output.report import analyse, combined_summary
from jobsim.sim.world import run

SHIPPED = sorted(SCENARIOS.glob("*.yaml"))


@pytest.fixture(scope="module")
def fresh():
    """Every shipped scenario run once (all variants), shared by the tests below."""
    return {p.stem: [analyse(run(sc)) for sc in scenario.load_variants(p)] for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_expectations_and_invariants_hold(path, fresh):
    assert path.read_text(encoding="utf-8").startswith("# "), "open with a comment"
    for a in fresh[path.stem]:
        assert a.unexpected_violations == [], (a.name, a.violations[:3])
        failed = [v.format() for v in a.verdicts if not v.ok]
        assert failed == [], (a.name, failed)
        assert a.verdicts, f"{path.name} ({a.name}) asserts no expectation of its own"


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_committed_summary_matches_a_fresh_run(path, fresh):
    name = scenario.load(path).name
    folder = ROOT / "reports" / name
    committed = folder / "summary.json"
    assert committed.exists(), f"no committed report for {path.name}: run jobsim reports"
    got = json.loads(committed.read_text())
    got.pop("over_seeds", None)  # a file's report.seeds: its runs at other seeds (test_seeds)
    assert got == json.loads(json.dumps(combined_summary(fresh[path.stem])))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_committed_report_has_its_plots(path):
    folder = ROOT / "reports" / scenario.load(path).name
    text = (folder / "report.md").read_text(encoding="utf-8")
    images = [line.split("](", 1)[1].rstrip(")") for line in text.splitlines()
              if line.startswith("![")]
    assert len(images) >= 2  # a timeline and a table depth at least
    # a run with no double run has no plot of them, and one of under 20 jobs no CDF of their
    # start delays: each says so
    if not any(i.endswith("duplicates.png") for i in images):  # (its retries set apart)
        said = ("Apart from its retries, no job ran twice" if "of them failed and" in text
                else "No job ran twice")
        assert f"{said}, so there is no plot of double runs by cause." in text
    if "latency_cdf.png" not in images and "## Compared" not in text:  # not variants
        assert "too few to draw as a distribution: " in text
    for image in images:
        png = folder / image
        assert png.exists() and png.stat().st_size > 1000, png
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # ~50 CPU s of drawing; tests/test_figure_text.py draws each kind by default
@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_no_text_is_cut_in_the_figures_of_a_shipped_scenario(path, fresh, tmp_path,
                                                             monkeypatch):
    """Every figure a shipped scenario's report draws (its runs' and, with variants, the
    side-by-side ones), measured as it is saved: no title, label or legend past its edge,
    and no title a dotted path."""
    from jobsim.output import figures, plots
    from jobsim.output.plots.common import text_outside
    from jobsim.output.service_report import jobs_with_services

    seen = []

    def check(fig, where):
        cut = text_outside(fig)
        titles = [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text()
                                                        if fig._suptitle else ""]
        seen.append(Path(where).name)
        assert cut == [], (Path(where).name, cut)
        assert not any(t and " " not in t.split("\n")[0] and "." in t for t in titles), titles
        return where

    monkeypatch.setattr(plots, "save", check)
    analyses = fresh[path.stem]
    for a in analyses:
        figures.run_plots(a, jobs_with_services(a), tmp_path)
    if analyses[0].result.scenario.variant is not None:
        figures.compared(analyses, tmp_path, {})
    assert len(seen) >= 2  # a timeline and a table depth at least
