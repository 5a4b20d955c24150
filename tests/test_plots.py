"""The figures: each function returns a Figure that saves as a non-empty PNG, draws what the
data says (lines, bars, markers counted), copes with empty input, and never uses pyplot."""

import ast
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

from jobsim.output import plots
from jobsim.output.plots.common import text_outside
from jobsim.format import scenario
from jobsim.analysis.history import CAUSES
from jobsim.analysis.metrics import jobs_frame, trace_frame
from jobsim.output.report import analyse
from jobsim.base.trace import K, Trace
from jobsim.sim.world import run

ROOT = Path(__file__).resolve().parent.parent
#: the figures' sources: every module of the output layer (the report draws through them)
PLOTS_SOURCES = sorted((ROOT / "jobsim" / "output").rglob("*.py"))


# --- inputs ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lesson():
    return analyse(run(scenario.load(ROOT / "scenarios" / "lesson.yaml")))


@pytest.fixture(scope="module")
def race():
    return analyse(run(scenario.load(ROOT / "scenarios" / "race.yaml")))


@pytest.fixture(scope="module")
def race_unsafe():
    text = (ROOT / "scenarios" / "race.yaml").read_text(encoding="utf-8")
    assert "acquisition: guarded_update" in text
    text = text.replace("acquisition: guarded_update", "acquisition: read_then_write")
    return analyse(run(scenario.loads(text)))


def faulty_trace() -> Trace:
    """Two nodes, four jobs: node-1 crashes (losing job 2's run) and restarts, node-2 pauses
    for 2 s, fails job 3, hangs on job 4 and runs job 2 again once its lock expired."""
    tr = Trace()
    n1, n2 = tr.node("node-1"), tr.node("node-2")
    tr.add(0.0, K["run_start"], x=math.inf)
    for j in (1, 2, 3, 4):
        tr.add(0.0, K["job_created"], job=j, x=0.0, text=tr.text("work"))
    tr.add(0.5, K["locked"], n1, 1, a=-1, x=30.5)
    tr.add(0.5, K["exec_start"], n1, 1, 1, a=0)
    tr.add(0.6, K["locked"], n1, 2, a=-1, x=10.6)
    tr.add(0.6, K["exec_start"], n1, 2, 1, a=1)
    tr.add(2.0, K["exec_end"], n1, 1, 1, a=1)
    tr.add(2.0, K["completed"], n1, 1, 1, a=1)
    tr.add(3.0, K["node_crashed"], n1, a=1)
    tr.add(4.0, K["locked"], n2, 3, a=-1, x=34.0)
    tr.add(4.0, K["exec_start"], n2, 3, 1, a=0)
    tr.add(5.0, K["node_paused"], n2, x=2.0)
    tr.add(6.0, K["node_restarted"], n1)
    tr.add(7.0, K["node_resumed"], n2)
    tr.add(8.0, K["exec_end"], n2, 3, 1, a=0, text=tr.text("boom"))
    tr.add(8.0, K["dead_lettered"], n2, 3, 1, text=tr.text("boom"))
    tr.add(9.0, K["locked"], n2, 4, a=-1, x=39.0)
    tr.add(9.0, K["exec_start"], n2, 4, 1, a=1)
    tr.add(10.6, K["locked"], n2, 2, a=n1, x=40.6)
    tr.add(10.6, K["exec_start"], n2, 2, 2, a=0)
    tr.add(11.0, K["exec_end"], n2, 2, 2, a=1)
    tr.add(11.0, K["completed"], n2, 2, 2, a=1)
    tr.add(12.0, K["pending"], job=4, text=tr.text("job: locked by node-2"))
    tr.add(12.0, K["run_end"], a=4, b=1)
    return tr


def saved(fig: Figure, tmp_path: Path, name: str) -> Path:
    assert isinstance(fig, Figure)
    path = plots.save(fig, tmp_path / f"{name}.png")
    assert path.exists() and path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


def bar_counts(ax) -> dict[str, int]:
    """Bars drawn by node_timeline: one PolyCollection per style, one path per bar."""
    return {c.get_label(): len(c.get_paths()) for c in ax.collections
            if isinstance(c, PolyCollection)}


def all_text(fig: Figure) -> str:
    parts = [t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text"))]
    return "\n".join(p for p in parts if p)


# --- latency_cdf -----------------------------------------------------------------------------

def test_latency_cdf_on_runs(lesson, race, tmp_path):
    fig = plots.latency_cdf(jobs_frame(lesson.histories))
    saved(fig, tmp_path, "lesson_cdf")
    (ax,) = fig.axes
    assert len(ax.lines) == 1
    assert ax.get_legend().get_texts()[0].get_text() == \
        "priority 0 (3 jobs; under 20: each step is a job, not a percentile)"
    assert ax.get_xscale() == "linear"  # delays 0 s, 0 s, 70 s

    fig = plots.latency_cdf(jobs_frame(race.histories))
    saved(fig, tmp_path, "race_cdf")
    (ax,) = fig.axes
    assert len(ax.lines) == 1 and ax.get_xscale() == "log"  # 2 ms … 1.8 s
    y = ax.lines[0].get_ydata()
    assert y[0] == 0 and y[-1] == 1 and np.all(np.diff(y) >= 0)


def test_latency_cdf_priorities_and_never_started(tmp_path):
    jobs = pd.DataFrame({
        "priority": [5] * 5 + [0] * 5 + [9] * 2,
        "due": [0.0] * 12,
        "first_start": [1, 2, 30, 100, 1000, 0, 0.001, 0.01, 0.5, np.nan, np.nan, np.nan],
    })
    fig = plots.latency_cdf(jobs)
    saved(fig, tmp_path, "cdf")
    (ax,) = fig.axes
    assert len(ax.lines) == 2  # priority 9 never started: no line
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    few = "; under 20: each step is a job, not a percentile)"
    assert labels == ["priority 0 (4 jobs, 1 never started" + few, "priority 5 (5 jobs" + few,
                      "priority 9 (0 jobs, 2 never started)"]
    assert "3 never started" in ax.get_title()
    assert ax.get_xscale() == "symlog"  # zeros and four decades


def test_a_run_of_too_few_jobs_lists_their_start_delays_instead_of_a_cdf():
    """Under ``CDF_JOBS`` jobs a distribution says nothing a list does not: report.md names
    each job's start delay (by name, else id and handler; priority where there are several;
    one that never started, said so)."""
    from jobsim.output.figures import job_delays

    jobs = pd.DataFrame({"id": [1, 2, 3], "name": ["urgent", "", ""], "handler": "h",
                         "priority": [9, 0, 0], "due": [10.0, 0.0, 0.0],
                         "first_start": [10.25, 70.0, np.nan]})
    assert job_delays(jobs) == (
        "Start delays (first start − due), job by job — 3 jobs, too few to draw as a "
        "distribution: urgent, priority 9: 250ms · job 2 (h), priority 0: 70s · job 3 (h), "
        "priority 0: never started")
    assert job_delays(jobs[jobs["priority"] == 0]).endswith(
        "2 jobs, too few to draw as a distribution: job 2 (h): 70s · job 3 (h): never started")


# --- node_timeline ---------------------------------------------------------------------------

def test_node_timeline_lesson(lesson, tmp_path):
    fig = plots.node_timeline(trace_frame(lesson.result.trace))
    saved(fig, tmp_path, "lesson_timeline")
    (ax,) = fig.axes
    assert bar_counts(ax) == {"succeeded": 2, "failed": 5}
    assert [t.get_text() for t in ax.get_yticklabels()] == ["node-A", "node-B"]
    marks = {ln.get_label(): ln for ln in ax.lines}
    assert sorted(marks) == ["claim (rows locked)", "empty acquisition"]  # no crash, no restart
    acq = lesson.summary["acquisition"]
    claims, empty = marks["claim (rows locked)"], marks["empty acquisition"]
    assert len(empty.get_xdata()) == acq["empty"] == 4
    assert len(claims.get_xdata()) + len(empty.get_xdata()) == acq["attempts"]
    # the lesson's point: node-B (row 1) found nothing at t=0, node-A (row 0) locked rows
    at_zero = [round(y) for x, y in zip(empty.get_xdata(), empty.get_ydata()) if x == 0]
    assert at_zero == [1]
    assert [round(y) for x, y in zip(claims.get_xdata(), claims.get_ydata()) if x == 0] == [0]


def test_zero_length_runs_of_one_instant_stand_side_by_side(lesson):
    """At t=70 node-B runs job 2 (succeeds) and job 3 (fails) in one instant on one thread:
    both bars show, the success first, not one under the other."""
    (ax,) = plots.node_timeline(trace_frame(lesson.result.trace)).axes
    bars = {c.get_label(): c for c in ax.collections}

    def lefts(label):
        return sorted(float(p.vertices[:, 0].min()) for p in bars[label].get_paths())

    ok, failed = lefts("succeeded"), lefts("failed")
    at_70 = [x for x in ok + failed if 70 <= x < 75]
    assert len(at_70) == 2 and len(set(at_70)) == 2
    assert min(x for x in ok if x >= 70) < min(x for x in failed if x >= 70)


def test_the_timeline_colours_by_priority_and_by_handler(lesson):
    fig = plots.node_timeline(lesson.result, colour="handler")
    labels = {c.get_label() for c in fig.axes[0].collections}
    assert {"bureau-call", "misconfigured", "reminder", "failed (hatched)"} <= labels
    fig = plots.node_timeline(trace_frame(lesson.result.trace), colour="priority")
    counts = bar_counts(fig.axes[0])
    assert counts["priority 0"] == lesson.summary["executions"] == 7
    assert counts["failed (hatched)"] == lesson.summary["failures"] == 5
    assert "coloured by priority" in fig.axes[0].get_title()
    with pytest.raises(ValueError):
        plots.node_timeline(trace_frame(lesson.result.trace), colour="rainbow")


def test_node_timeline_subsets_evenly(race, tmp_path):
    df = trace_frame(race.result.trace)
    n = int((df["kind"] == "exec_start").sum())
    full = plots.node_timeline(df, max_bars=10 * n)
    assert sum(bar_counts(full.axes[0]).values()) == n
    assert "showing" not in full.axes[0].get_title()
    fig = plots.node_timeline(df, max_bars=300)
    saved(fig, tmp_path, "race_timeline")
    (ax,) = fig.axes
    assert sum(bar_counts(ax).values()) == 300
    assert f"showing 300 of {n} executions" in ax.get_title()
    again = plots.node_timeline(df, max_bars=300)
    assert [c.get_paths()[0].vertices.tolist() for c in again.axes[0].collections] == \
        [c.get_paths()[0].vertices.tolist() for c in ax.collections]


def test_node_timeline_crash_pause_and_open_executions(tmp_path):
    fig = plots.node_timeline(trace_frame(faulty_trace()))
    saved(fig, tmp_path, "faulty_timeline")
    (ax,) = fig.axes
    # job 2's second run, after node-1 crashed in its first, is drawn as a duplicate
    assert bar_counts(ax) == {"succeeded": 2, "failed": 1, "no end (hung or crashed)": 2,
                              "down (crash → restart)": 1, "paused": 1,
                              "ran again (a duplicate)": 1}
    spans = {c.get_label(): c.get_paths()[0].vertices for c in ax.collections}
    assert spans["paused"][:, 0].min() == 5.0 and spans["paused"][:, 0].max() == 7.0
    assert spans["down (crash → restart)"][:, 0].max() == 6.0
    open_ends = [p.vertices[:, 0].max() for c in ax.collections
                 if c.get_label().startswith("no end") for p in c.get_paths()]
    # job 2's run ends where node-1 crashed; job 4 hangs to the end of the trace
    assert open_ends == [3.0, 12.0]
    markers = {line.get_label(): len(line.get_xdata()) for line in ax.lines}
    assert markers == {"crash": 1, "restart": 1}
    assert "2 without end" in ax.get_title()


# --- table_depth -----------------------------------------------------------------------------

def test_table_depth_runs(lesson, race, tmp_path):
    for name, a in (("lesson", lesson), ("race", race)):
        fig = plots.table_depth(trace_frame(a.result.trace))
        saved(fig, tmp_path, f"{name}_depth")
        (ax,) = fig.axes
        table, locked, running = depth_lines(ax)
        assert table.get_ydata()[-1] == 0 and running.get_ydata()[-1] == 0  # drained
        assert table.get_ydata().max() >= locked.get_ydata().max() >= 0
    assert table.get_ydata().max() > 10  # the race piles up jobs between polls


def depth_lines(ax):
    """table_depth's three step series (in the table, locked, running), not its marks."""
    return [ln for ln in ax.lines if ln.get_label().startswith(
        ("in the table", "locked", "running"))]


def test_the_lessons_depth_shows_rows_held_within_an_instant(lesson):
    """The lesson's fake clock locks, runs and releases at one instant: node-A's claim at
    t=0 locks both due jobs (2 locked) and runs them one at a time (1 running) — spikes
    with their tops marked, not a flat 0 all along."""
    fig = plots.table_depth(trace_frame(lesson.result.trace))
    (ax,) = fig.axes
    table, locked, running = depth_lines(ax)
    assert locked.get_ydata().max() == 2 and running.get_ydata().max() == 1
    tops = {(round(float(x), 6), float(y)) for ln in ax.lines if ln.get_marker() == "^"
            for x, y in zip(ln.get_xdata(), ln.get_ydata())}
    assert {(0.0, 2.0), (0.0, 1.0), (10.0, 2.0), (70.0, 2.0)} <= tops
    assert "2 locked and 1 running" in ax.get_title()
    assert text_outside(fig) == []


def test_a_spike_is_a_rise_within_an_instant_not_a_fall_in_steps():
    """Rows leaving one by one at one instant step down once (no top marked between the
    level before and after); a rise and fall within one instant is a spike; so is one
    that ends higher than it began, if it went higher still."""
    from jobsim.output.plotdata import step_series

    t = np.array([1.0, 2.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 5.0])
    d = np.array([1, 1, -1, -1, 1, -1, 1, 1, -1])
    x, v = step_series(t, d, 0.0, 6.0)
    assert list(zip(x.tolist(), v.tolist())) == [
        (0.0, 0), (1.0, 1), (2.0, 2),
        (3.0, 0),  # 2 → 1 → 0 at 3 s: one step down (a top at 1 was marked before)
        (4.0, 1), (4.0, 0),  # 0 → 1 → 0 at 4 s: a spike, then its last value
        (5.0, 2), (5.0, 1),  # 0 → 1 → 2 → 1 at 5 s: up to 2, ends at 1: a spike
        (6.0, 1)]


def test_table_depth_follows_locks_and_crashes(tmp_path):
    fig = plots.table_depth(trace_frame(faulty_trace()))
    saved(fig, tmp_path, "faulty_depth")
    (ax,) = fig.axes
    table, locked, running = depth_lines(ax)

    def at(line, t):
        x, y = line.get_xdata(), line.get_ydata()
        return y[np.searchsorted(x, t, side="right") - 1]

    assert [at(table, t) for t in (1, 2.5, 8.5, 11.5)] == [4, 3, 2, 1]
    # job 2's lock lives on after node-1's crash, until it expires at 10.6 and is retaken
    assert [at(locked, t) for t in (0.7, 2.5, 5, 8.5, 9.5, 10.8, 11.5)] == [2, 1, 2, 1, 2, 2, 1]
    # the crash loses job 2's run; job 4 hangs to the end
    assert [at(running, t) for t in (0.7, 2.5, 3.5, 5, 8.5, 10.8, 11.5)] == [2, 1, 0, 1, 0, 2, 1]
    assert any(isinstance(c, LineCollection) and c.get_label() == "node crash"
               for c in ax.collections)


def test_a_busy_start_before_a_long_quiet_tail_gets_a_zoomed_panel(tmp_path):
    """skip_locked's crash at 60 s strands two locked rows for the hour of their lock: the
    whole run's axis leaves its busy first two minutes a sliver, so a second panel draws
    them, its span shaded on the first; a run busy all along (the lesson's) has one."""
    from jobsim.output.plots.depth import _busy_end

    a = analyse(run(scenario.load(ROOT / "scenarios" / "skip_locked.yaml")))
    fig = plots.table_depth(trace_frame(a.result.trace))
    saved(fig, tmp_path, "zoomed_depth")
    whole, zoomed = fig.axes
    steps = [ln for ln in zoomed.lines if ln.get_linestyle() != "None"]  # not spike tops
    assert [ln.get_xydata().tolist() for ln in depth_lines(whole)] == \
        [ln.get_xydata().tolist() for ln in steps]
    lo, hi = zoomed.get_xlim()
    assert hi < 0.25 * whole.get_xlim()[1] and lo < 0 < 60 < hi  # the crash is in it
    assert zoomed.get_title() == ("zoomed: the first 125 s of 3,961 s (shaded above); the "
                                  "lines step 7 times in all in the 3,836 s after it")
    assert any(p.get_facecolor()[:3] == (0.9, 0.9, 0.9) for p in whole.patches)  # shaded
    assert text_outside(fig) == []
    # the variants' figure alike, over all their lines
    both = plots.table_depth_by_variant({"one": trace_frame(a.result.trace),
                                         "two": trace_frame(a.result.trace)})
    whole, zoomed = both.axes
    assert zoomed.get_xlim() == (lo, hi) and len(zoomed.lines) == len(whole.lines) == 2
    # runs of one span: their means need no span said
    assert all(", mean 2.0, " in ln.get_label() for ln in whole.lines)
    # the rule: 99% of the changes within a quarter of the span, rounded up, 20 changes or more
    t = np.r_[0.0, np.linspace(0, 10, 50), 1000.0]
    assert _busy_end([t], 0.0, 1000.0) == (12.5, 0)  # 10% past 9.9, to a multiple of 2.5
    assert _busy_end([np.r_[0.0, np.linspace(0, 400, 50), 1000.0]], 0.0, 1000.0) is None
    assert _busy_end([np.r_[0.0, np.linspace(0, 10, 10), 1000.0]], 0.0, 1000.0) is None
    assert _busy_end([np.r_[0.0, np.zeros(30), 1000.0]], 0.0, 1000.0) is None  # no span
    # ... or the last change before a quiet stretch of half the span, after 80% of them: a
    # small run's recovery an hour later is more than 1% of its few changes
    late = np.r_[0.0, np.linspace(0, 30, 60), np.linspace(1815, 1816, 7), 1817.0]
    assert _busy_end([late], 0.0, 1817.0) == (35.0, 7)
    early = np.r_[0.0, np.linspace(0, 30, 10), np.linspace(1815, 1816, 60), 1817.0]
    assert _busy_end([early], 0.0, 1817.0) is None  # most of the changes come late


# --- duplicates_by_cause ---------------------------------------------------------------------

def test_duplicates_by_cause(race, race_unsafe, tmp_path):
    fig = plots.duplicates_by_cause(race_unsafe.histories.duplicates, CAUSES)
    saved(fig, tmp_path, "duplicates")
    (ax,) = fig.axes
    assert len(ax.patches) == 2 * len(CAUSES)
    executions, side_effects = ax.containers
    by_cause = race_unsafe.summary["duplicate_executions"]["by_cause"]
    assert [int(b.get_height()) for b in executions] == [by_cause[c] for c in CAUSES]
    by_cause = race_unsafe.summary["duplicate_side_effects"]["by_cause"]
    assert [int(b.get_height()) for b in side_effects] == [by_cause[c] for c in CAUSES]
    assert by_cause["unsafe_acquisition"] > 0

    fig = plots.duplicates_by_cause(race.histories.duplicates, CAUSES)
    saved(fig, tmp_path, "no_duplicates")
    (ax,) = fig.axes
    assert len(ax.patches) == 2 * len(CAUSES)  # zeros included
    assert all(b.get_height() == 0 for b in ax.patches)
    assert "no duplicates" in all_text(fig)


# --- compare_bars ----------------------------------------------------------------------------

def test_compare_bars(tmp_path):
    fig = plots.compare_bars(["guarded_update", "read_then_write", "optimistic"],
                             [0, 57, None], "Duplicate executions by strategy", "executions")
    saved(fig, tmp_path, "compare")
    (ax,) = fig.axes
    assert len(ax.patches) == 4  # three bars, and the hatched one of the run without a value
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "guarded_update", "read_then_write", "optimistic"]
    text = all_text(fig)
    assert "no value" in text and "57" in text
    with pytest.raises(ValueError):
        plots.compare_bars(["a"], [1, 2], "t", "y")


# --- empty input, determinism, no pyplot -----------------------------------------------------

def test_empty_inputs_give_a_no_data_figure(tmp_path):
    empty_trace = trace_frame(Trace())
    figures = {
        "cdf": plots.latency_cdf(pd.DataFrame(columns=["priority", "due", "first_start"])),
        "timeline": plots.node_timeline(empty_trace),
        "depth": plots.table_depth(empty_trace),
        "duplicates": plots.duplicates_by_cause([], ()),
        "compare": plots.compare_bars([], [], "nothing", "y"),
        "all_na": plots.compare_bars(["a", "b"], [None, float("nan")], "unknown", "y"),
    }
    for name, fig in figures.items():
        saved(fig, tmp_path, name)
    for name in ("cdf", "timeline", "depth", "duplicates", "compare"):
        text = all_text(figures[name])
        assert "no " in text or "empty" in text, name


def test_same_input_same_png(race, tmp_path):
    df = trace_frame(race.result.trace)
    a = saved(plots.node_timeline(df, max_bars=200), tmp_path, "a")
    b = saved(plots.node_timeline(df, max_bars=200), tmp_path, "b")
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("source", PLOTS_SOURCES, ids=lambda p: p.name)
def test_plots_never_imports_pyplot(source):
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in (
                "__import__", "import_module"):
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
        else:
            continue
        assert not any("pyplot" in n for n in names), f"line {node.lineno}: {names}"


# --- the pictures show the point -------------------------------------------------------------

def test_the_timeline_marks_duplicates_and_rejected_completions(tmp_path):
    """zombie_pause (guarded): node-B runs the job again after node-A's lock expired, and the
    zombie's completion is refused: one outlined bar, one marker."""
    import jobsim

    sc = jobsim.load_variants(Path(__file__).resolve().parent.parent / "scenarios" /
                              "zombie_pause.yaml")[0]
    fig = plots.node_timeline(jobsim.run(sc))
    saved(fig, tmp_path, "zombie_timeline")
    (ax,) = fig.axes
    assert bar_counts(ax)["ran again (a duplicate)"] == 1
    (marker,) = [ln for ln in ax.lines if ln.get_label().startswith("completion rejected")]
    assert len(marker.get_xdata()) == 1
    assert "1 ran a job again" in ax.get_title()


_CRASH_AND_RETRIES = """
name: crash_and_retries
seed: {seed}
until: drained
executor: {{poll_interval: 1s, batch_size: 4, threads: 2, lock_time: 20s,
           retry: {{attempts: 4, backoff: [1s]}}}}
nodes: 3
handlers:
  work: {{duration: {{exponential: {{mean: 2s}}}}, outcome: {{fail_rate: 0.5}}}}
workload: {{streams: [{{handler: work, count: 150, rate: 1.5/s}}]}}
faults: [{{at: 30s, crash: node-2, restart_after: 30s}}]
"""


def test_the_timeline_counts_the_duplicates_the_analysis_counts():
    """A run cut by a crash, whose re-run fails and is retried, is one duplicate (the
    summary's), not two: the timeline's title and rings are the analysis's duplicates, at
    every seed, including those where 'a run after a run that did not fail' counts more."""
    import re

    differed = 0
    for seed in range(1, 9):
        a = analyse(run(scenario.loads(_CRASH_AND_RETRIES.format(seed=seed))))
        want = a.summary["duplicate_executions"]["total"]
        fig = plots.node_timeline(trace_frame(a.result.trace), duplicates=a.histories.duplicate_starts)
        title = fig.axes[0].get_title()
        found = re.search(r"(\d+) ran a job again", title)
        assert (int(found.group(1)) if found else 0) == want, (seed, title)
        assert bar_counts(fig.axes[0]).get("ran again (a duplicate)", 0) == want
        same = plots.node_timeline(a)  # from the run itself: the same count
        assert same.axes[0].get_title() == title
        bare = plots.node_timeline(trace_frame(a.result.trace))  # no analysis: the reading
        got = re.search(r"(\d+) ran a job again", bare.axes[0].get_title())
        differed += (int(got.group(1)) if got else 0) != want
    assert differed, "no seed where the bare frame's reading differs: the test shows nothing"


def test_the_double_runs_title_counts_in_words_one_or_many():
    from jobsim.analysis.stories import Duplicate

    one = [Duplicate(1, 0.0, 1, "n", "execution", "crash", []),
           Duplicate(2, 0.0, 1, "n", "side_effect", "crash", [])]
    title = plots.duplicates_by_cause(one).axes[0].get_title()
    assert "1 duplicate execution, 1 duplicate side effect" in title, title
    many = one + [Duplicate(3, 0.0, 2, "n", "execution", "crash", [])] * 1200
    title = plots.duplicates_by_cause(many).axes[0].get_title()
    assert "1,201 duplicate executions, 1 duplicate side effect" in title, title


def test_back_to_back_executions_stay_separate_bars():
    tr = Trace()
    n = tr.node("n")
    for j, (t0, t1) in enumerate([(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)], start=1):
        tr.add(t0, K["exec_start"], n, j, 1, a=0)
        tr.add(t1, K["exec_end"], n, j, 1, a=1)
    (ax,) = plots.node_timeline(trace_frame(tr)).axes
    (bars,) = [c for c in ax.collections if c.get_label() == "succeeded"]
    assert len(bars.get_paths()) == 3 and bars.get_linewidths()[0] > 0  # edged apart


def test_a_run_without_a_value_is_a_marked_bar_and_a_one_job_axis_starts_at_zero():
    """Not an empty place: a hatched bar up to the axis's top with its reason in words."""
    fig = plots.compare_bars(["a", "b", "c"], [None, 3.0, None], "t", "seconds",
                             ["never recovered", "", "no job started"], [(2.0, "expected ≤ 2 s")])
    (ax,) = fig.axes
    heights = [p.get_height() for p in ax.patches]
    assert heights[:3] == [0.0, 3.0, 0.0]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 2 and all(p.get_y() + p.get_height() == ax.get_ylim()[1]
                                     for p in hatched)
    assert [t.get_text() for t in ax.texts] == ["", "3", "", "never recovered",
                                                "no value: no job\nstarted", "expected ≤ 2 s"]
    (line,) = [ln for ln in ax.lines if list(ln.get_ydata()) == [2.0, 2.0]]
    assert text_outside(fig) == []
    one = pd.DataFrame({"priority": [0], "due": [0.0], "first_start": [0.002]})
    (ax,) = plots.latency_cdf(one).axes
    assert ax.get_xlim()[0] == 0.0


def test_the_variants_cdf_marks_the_named_job():
    fig = plots.start_delay_by_variant({"fifo": np.array([1.0, 2.0, 16.0]),
                                        "priority": np.array([1.1, 2.0, 3.0])},
                                       {"fifo": {"urgent": 16.0}, "priority": {"urgent": 1.1}})
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["● urgent: fifo 16 s, priority 1.1 s"]
    assert sum(len(ln.get_xdata()) == 1 for ln in fig.axes[0].lines) == 2  # the two marks


def test_a_lock_extended_is_one_lock_not_a_spike():
    """A heartbeat's lock_extended ends the old hold and starts the new one at one event:
    the locked series stays at 1, with no spike to 2."""
    tr = Trace()
    n = tr.node("n")
    tr.add(0.0, K["job_created"], job=1, x=0.0, text=tr.text("work"))
    tr.add(1.0, K["locked"], n, 1, a=-1, x=31.0)
    tr.add(1.0, K["exec_start"], n, 1, 1, a=0)
    for t in (11.0, 21.0, 31.0):
        tr.add(t, K["lock_extended"], n, 1, a=1, x=t + 30)
    tr.add(35.0, K["exec_end"], n, 1, 1, a=1)
    tr.add(35.0, K["completed"], n, 1, 1, a=1)
    (ax,) = plots.table_depth(trace_frame(tr)).axes
    table, locked, running = depth_lines(ax)
    assert locked.get_ydata().max() == 1 and "1 locked" in ax.get_title()
    assert not [ln for ln in ax.lines if ln.get_marker() == "^"]


@pytest.mark.parametrize("seed", [1, 2, 3, None])
def test_a_thinned_depth_series_keeps_every_bins_ends_lowest_and_highest(seed):
    """``plotdata.thin``: each time bin keeps its first and last points, its first lowest and
    its last highest (what a pixel column draws); the rest are dropped. ``None``: a fresh
    seed, printed for a replay."""
    from jobsim.output.plotdata import thin
    import random
    seed = random.randrange(2 ** 32) if seed is None else seed
    print("seed", seed)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 20_000))
    t = np.sort(rng.choice(rng.uniform(0, 100, n // 3 + 1), n))  # instants shared by events
    v = np.cumsum(rng.integers(-1, 2, n))
    for bins in (1, 7, 64):
        tk, vk = thin(t, v, 0.0, 100.0, above=0, bins=bins)
        b = np.clip((t / 100.0 * bins).astype(np.int64), 0, bins - 1)
        keep = set()
        for k in np.unique(b):
            at = np.flatnonzero(b == k)
            keep |= {at[0], at[-1], at[v[at] == v[at].min()][0], at[v[at] == v[at].max()][-1]}
        keep = np.array(sorted(keep))
        assert np.array_equal(tk, t[keep]) and np.array_equal(vk, v[keep]), (seed, bins)


def test_variants_with_the_same_start_delays_are_each_seen_and_said_to_be_the_same():
    """Identical CDFs (double_charges' none, fencing and outbox) would hide all but the last
    drawn: each is dashed in turn on the one line, and its label names the first."""
    a, b = np.array([0.1, 0.5, 1.0, np.nan]), np.array([0.2, 0.3])
    fig = plots.start_delay_by_variant({"none": a, "fencing": a.copy(), "key": b,
                                        "outbox": a.copy()})
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["none (3 jobs, 1 never started)",
                      "fencing (3 jobs, 1 never started; the same as none)", "key (2 jobs)",
                      "outbox (3 jobs, 1 never started; the same as none)"]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert lines[labels[2]].get_linestyle() == "-"
    # three dash patterns of one period, each at its own offset: the colours take turns
    patterns = [lines[n]._unscaled_dash_pattern for n in (labels[0], labels[1], labels[3])]
    assert [p[0] for p in patterns] == [0.0, 4.0, 8.0]
    assert all(p[1] == patterns[0][1] for p in patterns), patterns


def test_save_writes_the_bytes_savefig_writes_and_leaves_the_figure_as_it_was(lesson,
                                                                              tmp_path):
    """``plots.save`` draws a figure once (``savefig`` draws a laid-out figure twice): the
    PNG is byte for byte ``savefig``'s at ``DPI``, and the figure keeps its resolution and
    canvas (a notebook may show it after)."""
    tdf = trace_frame(lesson.result.trace)
    for draw in (lambda: plots.node_timeline(tdf), lambda: plots.table_depth(tdf),
                 lambda: plots.latency_cdf(lesson)):
        fig = draw()
        canvas, dpi = fig.canvas, fig.dpi
        plots.save(fig, tmp_path / "once.png")
        assert fig.canvas is canvas and fig.dpi == dpi
        draw().savefig(tmp_path / "twice.png", dpi=plots.DPI, format="png")
        assert (tmp_path / "once.png").read_bytes() == (tmp_path / "twice.png").read_bytes()


def test_near_twins_join_lines_within_two_percent_in_every_panel():
    from jobsim.output.plots.common import near_twins, twin_words, twins

    x = np.linspace(0.0, 100.0, 50)
    values = {"a": [x, np.full(50, 4.0)], "b": [x + 1.0, np.full(50, 4.0)],  # 1% of 100 off
              "c": [x + 1.0, np.full(50, 3.0)],  # its second panel 25% off
              "d": [x, np.r_[np.full(49, 4.0), np.nan]],  # ends a bin early
              "e": [x, np.r_[np.full(25, 4.0), np.full(25, np.nan)]]}  # ends halfway
    groups, nearly = near_twins(twins({k: b"|".join(a.tobytes() for a in v)
                                       for k, v in values.items()}), values)
    assert groups["a"] == groups["b"] == groups["d"] == ["a", "b", "d"]
    assert groups["c"] == ["c"] and groups["e"] == ["e"] and nearly == {"b", "d"}
    assert twin_words("b", groups["b"], nearly) == "; nearly the same as a"
    assert twin_words("a", groups["a"], nearly) == ""


def test_fault_labels_that_would_print_over_each_other_take_rows():
    """A slow database from 240 s and a crash at 300 s on a 900 s axis: their labels
    printed over each other (a newcomer's run); each now takes the first row free."""
    from jobsim.output.plots.load import _label_rows

    labels = [(240.0, "database ×20"), (300.0, "node-2 down"), (700.0, "node-3 down")]
    assert _label_rows(labels, (0.0, 900.0), 9.0) == [0, 1, 0]
    assert _label_rows(labels, (0.0, 9000.0), 9.0) == [0, 1, 2]  # all three close at this scale
    assert _label_rows([(0.0, "a"), (500.0, "b")], (0.0, 900.0), 9.0) == [0, 0]
    assert _label_rows([], (0.0, 1.0), 9.0) == []
