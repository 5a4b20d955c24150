"""A sweep's output reads as a report: intervals that stay in a figure's range (a count's
never below 0: the bootstrap where the t-interval would cross it, said so), plain numbers,
a title naming the scenario and the axes, axis labels with units."""

import math

import numpy as np
import yaml

from jobsim.tools.sweep import parse_grid, sweep
from jobsim.tools.sweep.report import plain
from jobsim.tools.sweep.tables import range_ci

SMALL = """
name: small
seed: 3
until: drained
executor: {poll_interval: 1s, lock_time: 30s}
nodes: 2
handlers:
  w: {duration: {lognormal: {median: 1s, p99: 20s}}, outcome: {fail_rate: 0.1}}
workload:
  streams: [{name: s, handler: w, count: 40, rate: 2/s}]
"""


def test_a_count_gets_an_interval_that_never_goes_below_zero():
    m, lo, hi, how = range_ci(np.array([0.0, 0.0, 6.0]), "duplicate_executions.total")
    assert how == "bootstrap" and lo >= 0 and hi <= 6 and m == 2
    assert range_ci(np.array([0.0, 0.0, 6.0]), "duplicate_executions.total")[1:3] == (lo, hi)
    m, lo, hi, how = range_ci(np.array([10.0, 11.0, 12.0]), "jobs.done")
    assert how == "t" and lo > 0
    _, lo, hi, how = range_ci(np.array([0.9, 1.0, 1.0]), "doubled_share")
    assert how == "bootstrap" and hi <= 1
    _, lo, _, how = range_ci(np.array([-1.0, 0.0, 5.0]), "a.difference")
    assert how == "t" and lo < 0  # a figure that can be negative keeps its t-interval


def test_plain_numbers():
    assert [plain(x) for x in (12500.0, 12.5, 0.0125, 0.0, 1234567.0, 0.5)] == \
        ["12,500", "12.5", "0.0125", "0", "1,234,567", "0.500"]
    assert plain(math.nan) == "nan"


def test_the_sweep_folder_says_what_was_swept_in_plain_numbers(tmp_path):
    doc = yaml.safe_load(SMALL)
    figure = "duplicate_executions.total"
    r = sweep(doc, parse_grid(["executor.lock_time=1s,30s"]), 3, out=tmp_path / "s",
              plot=[figure, "latency.start_delay.max"])
    text = (tmp_path / "s" / "sweep.md").read_text(encoding="utf-8")
    assert text.startswith("# sweep of small over executor.lock_time")
    assert "e+" not in text and "bootstrap percentile interval" in text
    assert (r.points[figure + ".lo"] >= 0).all()
    assert set(r.points[figure + ".ci"]) <= {"t", "bootstrap"}
    from jobsim.output import plots
    from jobsim.tools.sweep.report import _band_plot

    fig = _band_plot(r.points, r.axes[0], (), "latency.start_delay.max", "small")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "executor.lock_time (s)"
    assert ax.get_ylabel() == "latency.start_delay.max (s)"
    assert ax.get_title().startswith("small: ")
    assert plots  # the band plot is the package's


def test_a_sweep_says_which_runs_broke_an_invariant_or_missed_an_expectation(tmp_path):
    doc = yaml.safe_load(SMALL)
    doc["expect"] = {"duplicate_executions.total": "== 0"}
    r = sweep(doc, parse_grid(["executor.lock_time=1s,30s"]), 2, out=tmp_path / "s",
              notes=["Overrides: --set executor.threads=2."])
    text = (tmp_path / "s" / "sweep.md").read_text(encoding="utf-8")
    missed = int((r.rows["expectations_missed"] > 0).sum())
    assert missed >= 2  # a 1 s lock under 1 s median runs: jobs run twice
    assert "missed one of the scenario's expectations" in text and \
        "Overrides: --set executor.threads=2." in text and "Base seed 3" in text
    assert "No figure was chosen to show" in text


def test_a_categorical_axis_is_drawn_as_points_with_intervals_not_lines():
    from jobsim.output import plots

    x = np.array([0.0, 1.0])
    series = [("nodes=2", x, np.array([1.0, 5.0]), np.array([0.5, 4.0]), np.array([1.5, 6.0])),
              ("nodes=8", x, np.array([1.0, 5.0]), np.array([0.5, 4.0]), np.array([1.5, 6.0]))]
    fig = plots.sweep_bands(series, "executor.acquisition", "double_acquisitions",
                            ["guarded_update", "read_then_write"], "race")
    (ax,) = fig.axes
    xs = sorted(float(v) for ln in ax.lines if len(ln.get_xdata()) == 2
                for v in ln.get_xdata())
    assert len(set(xs)) == 4  # the two series side by side, not on top of each other
    assert not ax.collections or all(len(c.get_paths()) for c in ax.collections)
