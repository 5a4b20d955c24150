"""No figure's text is cut: every kind of figure, drawn as ``save`` draws it, keeps its
titles, axis labels, tick labels, legends and notes inside its edges (``text_outside``
measures each text's extent against the figure's); titles are words with a unit, never a
dotted path; and every PNG jobsim writes goes through a figure these tests draw."""

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from jobsim.analysis.metrics import trace_frame
from jobsim.format import scenario
from jobsim.output import plots
from jobsim.output.figure_words import describe
from jobsim.output.plots.common import headline, text_outside
from jobsim.output.report import analyse
from jobsim.sim.world import run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def lesson():
    return analyse(run(scenario.load(ROOT / "scenarios" / "lesson.yaml")))


def kinds(lesson):
    """One of each kind of figure jobsim draws, with long names where a name may be long."""
    tdf = trace_frame(lesson.result.trace)
    load = pd.DataFrame({"t": np.arange(5.0), "ok": [1.0, 5, 9, 3, 0], "error": [0.0, 2, 0, 0, 1]})
    long = "a variant with a rather long name"
    yield "latency_cdf", plots.latency_cdf(lesson.result)
    for colour in ("outcome", "priority", "handler"):
        yield f"timeline_{colour}", plots.node_timeline(lesson.result, colour=colour)
    yield "timeline_subset", plots.node_timeline(tdf, max_bars=3)
    yield "table_depth", plots.table_depth(tdf)
    # a long name, an identical twin (dashed, said in its label) and a run with no jobs
    yield "table_depth_by_variant", plots.table_depth_by_variant(
        {long: tdf, "twin": tdf, "empty": tdf.iloc[:0]})
    yield "duplicates", plots.duplicates_by_cause([], None)
    yield "compare", plots.compare_bars(
        [long, "b", "never_ran_at_all", "fixed_40"], [1.5, None, None, 1e6],
        "start delay of the job named a_job_with_a_long_name_indeed (s)", "time (s)",
        ["", "never recovered", "no job started", ""],
        [(2.0, "expected ≤ 2 s (b, fixed_40)\nexpected > 2 s (a variant with a rather long "
               "name)")], "named.a_job_with_a_long_name_indeed.start_delay")
    yield "compare_none", plots.compare_bars(["a", "b"], [None, None], "nothing (s)", "time (s)")
    yield "start_delay_by_variant", plots.start_delay_by_variant(
        {long: np.array([0.5, 1.0, np.nan]), "b": np.array([2.0, 3.0])},
        {long: {"urgent": 1.0}})
    yield "service_load", plots.service_load(
        {"payments": (load, {"down": [(1.0, 2.0)], "held": [(2.0, 2.5)]},
                      [(8.0, "capacity: 20 at once ÷ mean latency 0.2 s = 100 calls/s"),
                       (2.0, "recovers below 2 calls/s (held for 10 s)")]),
         long: (load, {})}, "load on payments, by variant")
    yield "sweep_bands", plots.sweep_bands(
        [("guarded_update", np.array([1.0, 2, 4]), np.array([1.0, 2, 3]),
          np.array([0.5, 1.5, 2.5]), np.array([1.5, 2.5, 3.5]))],
        "executor.lock_time (s)", "duplicate executions by cause: lock expired (executions)",
        scenario="lock_expiry")
    yield "race_bars", plots.race_bars([("sqlite read_then_write K=8", 0.4, 0.5),
                                        ("postgres skip_locked K=8", 0.0, 0.0)])
    yield from _load_kinds()
    for name, fig in (("empty_timeline", plots.node_timeline(None)),
                      ("empty_depth", plots.table_depth(None))):
        yield name, fig


def _load_kinds():
    """Load over time (with a window) and the poll phases, from a short run of four
    pollers with long names."""
    from jobsim.analysis.effects import phase_series
    from jobsim.analysis.metrics import jobs_frame
    from jobsim.analysis.series import load_series

    doc = {"name": "pollers", "seed": 1, "until": "5m",
           "executor": {"poll_interval": "10s", "threads": 8},
           "nodes": [{"name": f"a-node-with-a-long-name-{i}"} for i in range(1, 5)],
           "handlers": {"work": {"duration": "200ms"}},
           "workload": {"streams": [{"name": "s", "handler": "work", "rate": "2/s",
                                     "count": 600}]}}
    sc = scenario.from_dict(doc)
    a = analyse(run(sc))
    cols, end = a.result.trace.arrays(), a.result.end_time
    load = load_series(cols, jobs_frame(a.histories), 32, end)
    yield "load_over_time", plots.load_over_time(load, (60.0, 240.0))
    yield "load_by_variant", plots.load_by_variant(
        {"a variant with a rather long name": load, "twin": load}, (60.0, 240.0))
    yield "poll_phases", plots.poll_phases(*phase_series(cols, a.result.trace.nodes, sc.nodes,
                                                         end))


def test_no_text_of_any_kind_of_figure_is_cut(lesson):
    seen = []
    for name, fig in kinds(lesson):
        assert isinstance(fig, Figure)
        assert text_outside(fig) == [], name
        seen.append(name)
    assert len(seen) == 19


def test_the_check_sees_a_cut_title():
    """It measures: a title wider than its figure is reported, wrapped by headline it fits."""
    words = "start delay of the job named urgent under strict priority with aging " * 3
    fig = Figure(figsize=(4, 3), layout="constrained")
    fig.add_subplot().set_title(words)
    assert any("start delay" in t for t in text_outside(fig))
    fig = Figure(figsize=(4, 3), layout="constrained")
    fig.add_subplot().set_title(headline(words, "s", width=4.0))
    assert text_outside(fig) == []


def test_titles_are_words_with_a_unit():
    assert describe("named.urgent.start_delay") == ("start delay of the job named urgent", "s")
    assert describe("services.payments.peak_after_recovery") == (
        "peak load on payments after it recovered", "calls/s")
    assert describe("latency.by_priority.0.start_delay.max") == (
        "longest start delay of priority 0", "s")
    assert describe("jobs.dead_lettered") == ("dead-lettered jobs", "jobs")
    assert describe("duplicate_executions.total") == ("duplicate executions", "executions")
    assert headline("start delay of the job named urgent", "s") == \
        "Start delay of the job named urgent (s)"


def _calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        getattr(n.func, "attr", None) == name or getattr(n.func, "id", None) == name)]


def test_every_png_jobsim_writes_is_a_figure_drawn_here():
    """Every PNG-producing call in the package: ``savefig`` or ``print_png`` only in
    ``plots.save`` (and the hunt's fault map, drawn by the hunt's tests), and ``plots.save``
    of the figures above."""
    savers, drawers = {}, set()
    for path in sorted((ROOT / "jobsim").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(ROOT).as_posix()
        writes = _calls(tree, "savefig") + _calls(tree, "print_png")
        if writes:
            savers[rel] = len(writes)
        for call in _calls(tree, "save"):
            if getattr(call.func, "value", None) is not None and \
                    getattr(call.func.value, "id", "") == "plots":
                drawers.add(rel)
    assert savers == {"jobsim/output/plots/common.py": 1, "jobsim/tools/hunt/report.py": 1}
    assert drawers == {"jobsim/output/figures.py", "jobsim/output/service_report.py",
                       "jobsim/tools/sweep/report.py"}
    # what they save: the plots' public figures, each drawn by kinds() above
    assert set(plots.__all__) - {"DPI", "save"} == {
        "compare_bars", "duplicates_by_cause", "latency_cdf", "load_by_variant",
        "load_over_time", "node_timeline", "poll_phases", "race_bars", "service_load",
        "start_delay_by_variant", "sweep_bands", "table_depth", "table_depth_by_variant"}


def test_a_scenario_chooses_its_timeline_colours(tmp_path, monkeypatch):
    """``report.timeline_colour`` reaches the run's timeline.png (priority_starvation's is
    coloured by priority; a file that says nothing gets the outcome colours)."""
    from jobsim.output import figures
    from jobsim.output.service_report import jobs_with_services

    starve = scenario.load_variants(ROOT / "scenarios" / "priority_starvation.yaml")
    assert {sc.timeline_colour for sc in starve} == {"priority"}
    assert scenario.load(ROOT / "scenarios" / "lesson.yaml").timeline_colour == "outcome"
    text = (ROOT / "scenarios" / "lesson.yaml").read_text(encoding="utf-8")
    a = analyse(run(scenario.loads(text + "report: {timeline_colour: handler}\n")))
    titles = {}
    monkeypatch.setattr(plots, "save", lambda fig, where: titles.setdefault(
        Path(where).name, fig.axes[0].get_title()))
    figures.run_plots(a, jobs_with_services(a), tmp_path)
    assert "coloured by handler" in titles["timeline.png"]
