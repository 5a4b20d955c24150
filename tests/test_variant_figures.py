"""A run with variants draws what sets them side by side once, for all of them: the start
delays, the table depth and the load over time of every variant on one figure each; each
variant's sub-folder holds the figures of what happened in it alone (its timeline, and its
double runs, services' load or poll phases where it has them). The lines on the shared
figures are each variant's own series, identical ones dashed in turn and said to be the
same."""

import re

import numpy as np
import pytest

from jobsim.analysis.metrics import jobs_frame, trace_frame
from jobsim.analysis.series import load_series
from jobsim.format import scenario
from jobsim.output import plots
from jobsim.output.report import analyse, write
from jobsim.sim.world import run


def _doc(**extra):
    """A user's scenario with defaults everywhere, and variants of different sizes: two the
    same, one with a single thread, one with too few jobs for a load figure."""
    doc = {"name": "mine", "seed": 4, "until": "drained", "nodes": 2,
           "handlers": {"work": {"duration": {"exponential": {"mean": "300ms"}}}},
           "workload": {"streams": [{"name": "s", "handler": "work", "rate": "5/s",
                                     "count": 60}]},
           "variants": {"base": {"set": {}}, "again": {"set": {}},
                        "one-thread": {"set": {"executor.threads": 1}},
                        "few": {"set": {"workload.streams.0.count": 5}}}}
    doc.update(extra)
    return doc


@pytest.fixture(scope="module")
def runs():
    return [analyse(run(sc)) for sc in scenario.variants_of(_doc())]


def test_each_variants_depth_line_is_its_own_runs(runs):
    fig = plots.table_depth_by_variant({a.name: trace_frame(a.result.trace) for a in runs})
    (ax,) = fig.axes
    lines = {ln.get_label().split(" (")[0]: ln for ln in ax.get_lines()}
    assert list(lines) == [a.name for a in runs]
    for a in runs:
        # the very line the run's own depth figure draws as "in the table"
        (alone,) = [ln for ln in plots.table_depth(trace_frame(a.result.trace)).axes[0].lines
                    if ln.get_label().startswith("in the table")]
        x, y = lines[a.name].get_xdata(), lines[a.name].get_ydata()
        assert np.array_equal(x, alone.get_xdata()) and np.array_equal(y, alone.get_ydata())
        assert f"peak {int(y.max())}, {int(y[-1])} left at the end" in lines[a.name].get_label()
    # the run again on the same seeds is the same run: dashed over base's line, and said
    assert "the same as base" in lines["again"].get_label()
    assert lines["base"].get_linestyle() != "-" and lines["one-thread"].get_linestyle() == "-"
    assert [ln.get_color() for ln in lines.values()] == ["C0", "C1", "C2", "C3"]


def test_a_variant_without_jobs_is_said_and_no_jobs_at_all_is_no_data(runs):
    tdf = trace_frame(runs[0].result.trace)
    fig = plots.table_depth_by_variant({"some": tdf, "none": tdf.iloc[:0]})
    assert [ln.get_label() for ln in fig.axes[0].lines][1] == "none (no jobs)"
    fig = plots.table_depth_by_variant({"none": tdf.iloc[:0]})
    assert "no jobs created" in [t.get_text() for t in fig.axes[0].texts]


def test_each_variants_load_lines_are_its_load(runs):
    loads = {}
    for a in runs:
        threads = sum(n.executor.threads for n in a.result.scenario.nodes)
        loads[a.name] = load_series(a.result.trace.arrays(), jobs_frame(a.histories), threads,
                                    a.result.end_time)
    fig = plots.load_by_variant(loads, (2.0, 6.0))
    busy, waiting, delay, statements = fig.axes
    for ax in fig.axes:
        assert len(ax.patches) == 2  # the warm-up and the cool-down shaded
    for ax in (waiting, delay, statements):
        assert len(ax.lines) == len(loads)  # one line per variant
    drawn = [ln for ln in busy.lines if not ln.get_label().startswith("_")]
    assert [ln.get_label().split(" (")[0] for ln in drawn] == list(loads)
    for ln, ld in zip(drawn, loads.values()):
        assert np.array_equal(ln.get_ydata(), ld.busy)
    assert "one-thread (2 threads)" in [ln.get_label() for ln in drawn]  # 2 nodes × 1
    # a dashed line at each cluster's threads: 2 and the default's (2 nodes × 4)
    dashed = sorted({float(ln.get_ydata()[0]) for ln in busy.lines if ln.get_color() == "0.3"})
    assert dashed == [2.0, 8.0]
    for ln, ld in zip(statements.lines, loads.values()):
        assert np.array_equal(ln.get_ydata(), ld.polls + ld.writes)


def test_a_variant_report_draws_each_shared_figure_once(runs, tmp_path):
    out = write(runs, tmp_path / "o", with_view=False)
    md = (out / "report.md").read_text(encoding="utf-8")
    shown = re.findall(r"\]\(([^)]+\.png)\)", md)
    assert all((out / p).is_file() for p in shown), shown
    assert sorted(p.name for p in out.glob("*.png")) == [
        "load_over_time.png", "start_delay.png", "table_depth.png"]
    for a in runs:
        assert sorted(p.name for p in (out / a.name).glob("*.png")) == ["timeline.png"], a.name
        assert f"{a.name}/timeline.png" in shown
    assert sorted(p for p in shown if "/" not in p) == [
        "load_over_time.png", "start_delay.png", "table_depth.png"]


def test_variants_all_too_small_for_a_load_figure_get_none(tmp_path):
    doc = _doc()
    doc["workload"]["streams"][0]["count"] = 10
    runs = [analyse(run(sc)) for sc in scenario.variants_of(doc)]
    out = write(runs, tmp_path / "o", with_view=False)
    assert sorted(p.name for p in out.glob("*.png")) == ["start_delay.png", "table_depth.png"]


def test_a_run_without_variants_keeps_its_own_figures(tmp_path):
    a = analyse(run(scenario.from_dict({k: v for k, v in _doc().items() if k != "variants"})))
    out = write(a, tmp_path / "o", with_view=False)
    assert sorted(p.name for p in out.glob("*.png")) == [
        "latency_cdf.png", "load_over_time.png", "table_depth.png", "timeline.png"]
