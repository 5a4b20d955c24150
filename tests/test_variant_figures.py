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
        mean = float(np.dot(y[:-1], np.diff(x)) / (x[-1] - x[0]))  # each level by its time
        # over its own run's span, said so: the runs' spans differ
        assert f"peak {int(y.max())}, mean {mean:.1f} over its {x[-1] - x[0]:.3g} s, " \
            f"{int(y[-1])} left at the end" in lines[a.name].get_label()
    # the run again on the same seeds is the same run: dashed over base's line, and said
    assert "the same as base" in lines["again"].get_label()
    assert lines["base"].get_linestyle() != "-" and lines["one-thread"].get_linestyle() == "-"
    assert [ln.get_color() for ln in lines.values()] == ["C0", "C1", "C2", "C3"]
    # the first drawn widest: a line that a later one nearly covers shows at its edges
    widths = [ln.get_linewidth() for ln in lines.values()]
    assert widths == sorted(widths, reverse=True) and widths[0] > widths[-1]
    # the legend's samples solid, whatever dash a line takes in turn with its twins
    legend = fig.legends[0]
    assert [h.get_linestyle() for h in legend.legend_handles] == ["-"] * 4
    assert [t.get_text() for t in legend.get_texts()] == [ln.get_label() for ln in lines.values()]


def test_a_variant_without_jobs_is_said_and_no_jobs_at_all_is_no_data(runs):
    tdf = trace_frame(runs[0].result.trace)
    fig = plots.table_depth_by_variant({"some": tdf, "none": tdf.iloc[:0]})
    assert [ln.get_label() for ln in fig.axes[0].lines][1] == "none (no jobs)"
    fig = plots.table_depth_by_variant({"none": tdf.iloc[:0]})
    assert "no jobs created" in [t.get_text() for t in fig.axes[0].texts]


def test_each_variants_load_lines_are_its_load(runs):
    loads = {}
    end = max(a.result.end_time for a in runs)  # bins of one width
    for a in runs:
        threads = sum(n.executor.threads for n in a.result.scenario.nodes)
        loads[a.name] = load_series(a.result.trace.arrays(), jobs_frame(a.histories), threads,
                                    end)
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
    # a dashed line at each variant's threads in its colour: 2 (2 nodes × 1) and 8
    dashed = {(ln.get_color(), float(ln.get_ydata()[0])) for ln in busy.lines
              if ln.get_linestyle() == "--" and len(ln.get_xdata()) == 2}
    assert dashed == {("C0", 8.0), ("C1", 8.0), ("C2", 2.0), ("C3", 8.0)}
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
    assert "No variant has 20 jobs or more, so there is no plot of the load over time." in \
        (out / "report.md").read_text(encoding="utf-8")


def test_a_run_without_variants_keeps_its_own_figures(tmp_path):
    a = analyse(run(scenario.from_dict({k: v for k, v in _doc().items() if k != "variants"})))
    out = write(a, tmp_path / "o", with_view=False)
    assert sorted(p.name for p in out.glob("*.png")) == [
        "latency_cdf.png", "load_over_time.png", "table_depth.png", "timeline.png"]


def test_a_variant_without_a_load_keeps_the_others_colours_and_is_named(runs):
    """A variant of too few jobs for a load figure is named in its legend, and the variants
    after it keep the colours they have in every other figure."""
    loads = {}
    for a in runs:
        threads = sum(n.executor.threads for n in a.result.scenario.nodes)
        loads[a.name] = load_series(a.result.trace.arrays(), jobs_frame(a.histories), threads,
                                    a.result.end_time)
    loads["again"] = None
    fig = plots.load_by_variant(loads, None, {"again": 7})
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[1] == "again (7 jobs: too few for a load figure)"
    colours = {ln.get_label().split(" (")[0]: ln.get_color() for ln in fig.axes[0].lines
               if not ln.get_label().startswith("_")}
    assert colours == {"base": "C0", "again": "C1", "one-thread": "C2", "few": "C3"}


def test_more_than_ten_variants_each_have_a_colour_of_their_own(runs):
    tdf = trace_frame(runs[2].result.trace)
    fig = plots.table_depth_by_variant({f"v{i}": tdf.copy() for i in range(12)})
    colours = [ln.get_color() for ln in fig.axes[0].lines]
    assert len(colours) == 12 and len(set(colours)) == 12


def test_a_variant_with_priority_classes_keeps_its_start_delays_by_class(tmp_path):
    """The shared start-delay figure merges a variant's classes: a variant whose jobs have
    more than one priority also gets its own CDF by class; one of a single class does not."""
    doc = _doc()
    doc["workload"]["streams"].append({"name": "urgent", "handler": "work", "rate": "1/s",
                                       "count": 5, "priority": 10})
    doc["variants"] = {"mixed": {"set": {}},
                       "plain": {"set": {"workload.streams.1.priority": 0}}}
    runs = [analyse(run(sc)) for sc in scenario.variants_of(doc)]
    out = write(runs, tmp_path / "o", with_view=False)
    assert sorted(p.name for p in (out / "mixed").glob("*.png")) == ["latency_cdf.png",
                                                                    "timeline.png"]
    assert sorted(p.name for p in (out / "plain").glob("*.png")) == ["timeline.png"]


def test_many_variants_start_delays_keep_their_legend_off_the_lines_and_bounds_apart():
    """Past six variants the legend goes under the axes (it covered 40 % of the plot), and
    each bound's words sit below the ones before, where a long one ran into the next."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from jobsim.output.plots.common import text_outside

    rng = np.random.default_rng(1)
    delays = {f"variant-number-{i}": rng.exponential(1.0 + i, 50) for i in range(12)}
    bounds = [(15.0, "urgent expected ≤ 15 s (lesson)"),
              (2.0, "urgent expected > 2 s (fifo, prefetch)\nurgent expected ≤ 2 s (priority, "
                    "aging, lesson-one-at-a-time)")]
    fig = plots.start_delay_by_variant(delays, None, bounds)
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1
    assert len(fig.legends[0].get_texts()) == 12 and text_outside(fig) == []
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw_without_rendering()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts if "expected" in
             t.get_text()]
    assert len(boxes) == 2 and not boxes[0].overlaps(boxes[1])
    few = plots.start_delay_by_variant(dict(list(delays.items())[:3]))
    assert few.axes[0].get_legend() is not None and not few.legends


def test_a_shorter_variants_load_ends_where_it_ends(tmp_path):
    """The variants' loads share bins up to the latest end; a variant that ended sooner has
    no line after its end (it drew its last state on: its open runs busy to the end)."""
    from jobsim.output.figures import _ended, _load

    doc = _doc()
    doc["variants"] = {"long": {"set": {"workload.streams.0.rate": "1/s"}}, "short": {"set": {}}}
    long, short = [analyse(run(sc)) for sc in scenario.variants_of(doc)]
    assert short.result.end_time < long.result.end_time / 1.5
    end = long.result.end_time
    load = _ended(_load(short, jobs_frame(short.histories), end), short.result.end_time)
    after = load.edges[:-1] >= short.result.end_time
    assert after.any() and (~after).sum() > 10
    for x in (load.busy, load.waiting, load.polls, load.writes):
        assert np.isnan(x[after]).all() and not np.isnan(x[~after]).any()
    fig = plots.load_by_variant({"long": _load(long, jobs_frame(long.histories), end),
                                 "short": load})
    (line,) = [ln for ln in fig.axes[0].lines if ln.get_label().startswith("short")]
    x = line.get_xdata()[~np.isnan(line.get_ydata())]
    assert x.max() < short.result.end_time


def test_variants_that_created_no_job_say_so_instead_of_an_empty_depth(tmp_path):
    doc = _doc()
    doc["until"], doc["workload"]["streams"][0]["start"] = "10s", "1h"  # nothing in 10 s
    runs = [analyse(run(sc)) for sc in scenario.variants_of(doc)]
    out = write(runs, tmp_path / "o", with_view=False)
    assert not (out / "table_depth.png").exists()
    assert "No variant created a job, so there is no plot of the table depth." in \
        (out / "report.md").read_text(encoding="utf-8")


def test_lines_that_step_more_often_than_the_figure_has_pixels_are_drawn_as_their_means():
    """polling_vs_notify's table holds 0 or 1 rows, a thousand times over: drawn as steps,
    both variants' lines fill one solid block, whatever share of the time each holds a row.
    Drawn as each one's mean per bin, polling's line sits near its mean over the run (0.056)
    and notify's near its own (0.005), as their labels say."""
    from jobsim.output.plotdata import binned_mean as _binned_mean, toggles as _toggles

    from conftest import SCENARIOS

    runs = [analyse(run(sc)) for sc in scenario.load_variants(
        SCENARIOS / "polling_vs_notify.yaml")]
    fig = plots.table_depth_by_variant({a.name: trace_frame(a.result.trace) for a in runs})
    (ax,) = fig.axes
    assert "mean in 100 bins of" in ax.get_title() and ax.get_ylim()[1] < 1  # 20 steps a bin
    means = {}
    for line in ax.get_lines():
        name = line.get_label().split(" (")[0]
        x, y = line.get_xdata(), line.get_ydata()
        assert len(x) == 100 + 1
        means[name] = float(np.nansum(y[:-1] * np.diff(x)) / (x[-1] - x[0]))
        said = float(re.search(r"mean ([\d.]+)", line.get_label()).group(1))
        assert means[name] == pytest.approx(said, rel=0.05, abs=0.0005), (name, said)
    assert means["polling"] > 5 * means["notify"]
    # a run's own figure alike: its three lines (in the table, locked, running) as means
    (alone,) = plots.table_depth(trace_frame(runs[0].result.trace)).axes
    bins = len(alone.get_lines()[0].get_xdata()) - 1  # one per 20 steps of its longest
    assert 20 <= bins <= 200 and f"mean in {bins} bins of" in alone.get_title()
    assert [len(ln.get_xdata()) for ln in alone.get_lines()] == [bins + 1] * 3
    assert alone.get_ylim()[1] < 1
    assert alone.get_title().split("\n")[1].startswith("at most 3 in the table (mean 0.056)")
    # the mean per bin by hand: 2 rows for 1 s, 0 for 3 s, 1 for 2 s; then the run ends
    t, v = np.array([0.0, 1.0, 4.0, 6.0]), np.array([2, 0, 1, 1])
    assert _binned_mean(t, v, np.array([0.0, 2.0, 4.0, 6.0, 8.0])).tolist()[:3] == \
        [1.0, 0.0, 1.0]
    assert np.isnan(_binned_mean(t, v, np.array([0.0, 6.0, 8.0]))[1])
    # a busy run's lines read as they are: steps small beside its height
    assert not _toggles(np.arange(5000.0), np.r_[np.arange(2500), np.arange(2500, 0, -1)])
    assert _toggles(np.arange(5000.0), np.tile([0, 1], 2500))


def test_lines_nearly_the_same_are_dashed_in_turn_and_said_so():
    """The challenge's two one-thread lessons drain their table two jobs apart: drawn over
    it, the later line hid the earlier. Nearly the same (their spans and their means per
    bin within 2%), they are dashed in turn, each colour showing, and the label says so."""
    from conftest import SCENARIOS

    runs = {str(sc.variant): trace_frame(run(sc).trace)
            for sc in scenario.load_variants(SCENARIOS / "challenge.yaml")}
    (ax,) = plots.table_depth_by_variant(runs).axes
    lines = {ln.get_label().split(" (")[0]: ln for ln in ax.get_lines()}
    assert lines["lesson-one-at-a-time"].get_label().endswith("; nearly the same as lesson)")
    assert lines["lesson"].get_linestyle() != "-" != lines["lesson-one-at-a-time"].get_linestyle()
    assert lines["aging"].get_label().endswith("; the same as priority)")  # identical
    assert "nearly" not in lines["lesson"].get_label() + lines["priority"].get_label()
