"""Progress through every phase of ``jobsim run``: off a terminal (a log, a pipe), a line as
each phase begins — the simulation, the analysis, the CSV files, each plot, report.md, the
page — with whole and rounded numbers; on a terminal, bars; with ``--quiet``, nothing."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from jobsim.base.progress import Bar, Steps
from jobsim.cli import main
from jobsim.output import children

ROOT = Path(__file__).resolve().parents[1]

#: a float's noise: a number with more decimals than a person reads (33.879999999999995)
NOISE = re.compile(r"\d\.\d{4,}")

#: 150 jobs on two nodes calling a service: a run whose report (plots, page) costs more
#: than its simulation, and whose plots include the service's load
SCENARIO = """\
name: lines
seed: 7
until: drained
executor: {threads: 4, poll_interval: 1s}
nodes: 2
services:
  shop: {latency: {uniform: {low: 10ms, high: 50ms}}, capacity: 4, when_full: queue}
handlers:
  buy:
    calls: [{work: 100ms}, {service: shop, timeout: 1s}]
workload:
  streams: [{name: orders, handler: buy, count: 150, rate: 20/s}]
"""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(tmp_path: Path, capsys, *extra: str) -> tuple[int, str, Path]:
    path = tmp_path / "lines.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    out = tmp_path / "out"
    status = main(["run", str(path), "--out", str(out), *extra])
    return status, capsys.readouterr().err, out


@pytest.mark.parametrize("parallel", ["1", "0"])
def test_a_log_gets_a_line_for_each_phase(tmp_path, capsys, monkeypatch, parallel):
    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    monkeypatch.setenv("JOBSIM_PARALLEL", parallel)
    monkeypatch.setattr(children, "PAGE_FROM", 0)  # its page in a child where parallel
    timings = tmp_path / "timings.json"
    status, err, out = _run(tmp_path, capsys, "--timings", str(timings))
    assert status == 0, err
    phases = json.loads(timings.read_text())["phases"]
    after = sum(phases[p]["cpu_s"] for p in ("analysis", "csv", "plots", "page"))
    assert after > phases["simulate"]["cpu_s"], phases  # the report is the longer part
    lines = err.splitlines()
    assert "\r" not in err and "\x1b" not in err  # whole lines, no bar redrawn

    def said(text: str) -> list[str]:
        return [line for line in lines if text in line]

    assert said("lines: simulating 150 jobs until drained"), err
    assert said("lines: analysing the trace"), err
    assert said("report: jobs.csv and trace.csv ("), err
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "service_load.png" in pngs and len(pngs) >= 4, pngs
    for png in pngs:  # each plot its own line, in the order written
        assert said(f"report: {png}"), (png, err)
    assert said("report: report.md") and said("report: view.html (")
    written = re.search(r"^report: (\d+) files written to .+ in \d+\.\d s$", lines[-1])
    assert written, lines[-1]
    on_disk = [p for p in out.rglob("*") if p.is_file() and p.name != ".jobsim-manifest.json"]
    assert int(written.group(1)) == len(on_disk), (lines[-1], sorted(map(str, on_disk)))
    # the page is said when it begins: first where a child builds it beside the other
    # files, last where it is built here after them
    page_first = children.parallel()
    order = [next(i for i, line in enumerate(lines) if t in line)
             for t in ("simulating", "analysing", "view.html", "trace.csv", "report.md",
                       "files written")]
    if not page_first:
        order = order[:2] + order[3:5] + order[2:3] + order[5:]
    assert order == sorted(order), err
    noisy = [line for line in lines if NOISE.search(line)]
    assert not noisy, noisy


def test_a_log_says_the_runs_over_seeds_and_a_sweeps_as_they_begin(tmp_path, capsys,
                                                                      monkeypatch):
    """The other seeds' runs and a sweep's had no line before 10 s: a log said "analysing
    the trace" through 9 s of runs over seeds, and nothing at all for a sweep's first 15 s."""
    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    status, err, _ = _run(tmp_path, capsys, "--seeds", "3", "--workers", "1")
    assert status == 0, err
    lines = err.splitlines()
    runs = lines.index("lines: seeds: 2 more runs at seeds 8 to 9")
    assert "analysing the trace" in lines[runs - 1] and "report:" in lines[runs + 1], lines
    path = tmp_path / "lines.yaml"
    status = main(["sweep", str(path), "--grid", "executor.threads=2,4", "--replications", "2",
                   "--out", str(tmp_path / "sweep"), "--workers", "1"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert err.splitlines()[0] == "sweep lines: 4 runs", err


def test_quiet_says_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    status, err, _ = _run(tmp_path, capsys, "--quiet")
    assert status == 0 and err == "", err


@pytest.mark.parametrize("off", ["0", "false", "False", "no", "off", " OFF "])
def test_progress_off_says_nothing(tmp_path, capsys, monkeypatch, off):
    monkeypatch.setenv("JOBSIM_PROGRESS", off)
    status, err, _ = _run(tmp_path, capsys)
    assert status == 0 and err == "", err


@pytest.mark.parametrize("on", ["1", "true", "yes"])
def test_progress_on_is_any_other_word(monkeypatch, on):
    from jobsim.base.progress import enabled

    monkeypatch.setenv("JOBSIM_PROGRESS", on)
    assert enabled(default=False)


@pytest.mark.parametrize("n", [33.879999999999995, 1 / 3 * 100, 99.99999999999])
def test_a_share_is_drawn_whole(monkeypatch, n):
    """tqdm prints a count as given: a float share read 33.879999999999995/100."""
    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    term = Terminal()
    bar = Bar(100, "run", unit="%", stream=term)
    bar.set(n, "t=1,234s")
    bar.bar.refresh()
    text = term.getvalue()
    bar.close()
    assert f"run: {int(n)}%" in text and not NOISE.search(text), text
    log = io.StringIO()
    bar = Bar(100, "run", unit="%", stream=log, log_every=0.0)
    bar.set(n)
    bar.bar.refresh()
    bar.close()
    assert f"{int(n)}%" in log.getvalue() and not NOISE.search(log.getvalue()), log.getvalue()


def test_steps_on_a_terminal_name_the_step_and_count_no_files(monkeypatch):
    """The bar names the step under way; it counted "file 10" where the closing line then
    said "12 files written" (summary.json and scenario.yaml are no step of their own)."""
    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    term = Terminal()
    steps = Steps("report", stream=term)
    steps.step("jobs.csv and trace.csv", 2)
    steps.step("timeline.png")
    steps.bar.refresh()
    text = term.getvalue()
    steps.close("done")
    assert "report: timeline.png [00:00]" in text, text
    assert "file" not in text, text
    assert term.getvalue().endswith("report: done\n")  # the bar goes, the closing line stays


def test_each_step_is_drawn_as_it_begins(monkeypatch):
    """Steps begun within tqdm's ``mininterval`` of each other were not drawn: a 200,000-job
    report showed "report: file 0 [00:00]" for the 3 s of its CSV files."""
    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    term = Terminal()
    steps = Steps("report", stream=term)
    for i, what in enumerate(["view.html", "jobs.csv and trace.csv (2,000 events)",
                              "timeline.png"]):
        steps.step(what, 2 if i == 1 else 1)
        assert term.getvalue().rstrip().endswith(f"report: {what} [00:00]"), \
            (what, term.getvalue())
    steps.close()


def test_a_notebook_without_ipywidgets_gets_lines_and_no_traceback(monkeypatch):
    """tqdm's notebook bar, made without ipywidgets, failed half-way and its ``__del__``
    printed "Exception ignored … 'tqdm_notebook' object has no attribute 'disp'" into the
    cell, twice; the lines of a log came after it."""
    import gc
    import sys

    from jobsim.base import progress
    from tqdm import notebook

    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "_in_notebook", lambda: True)
    monkeypatch.setattr(notebook, "IProgress", None)  # as tqdm has it without ipywidgets
    ignored: list = []
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    log = io.StringIO()
    with Bar(100, "run", unit="%", stream=log) as bar:
        bar.stage("simulating 3 jobs")
    steps = Steps("report", stream=log)
    steps.step("timeline.png")
    steps.close()
    gc.collect()
    assert ignored == []
    assert log.getvalue() == "run: simulating 3 jobs\nreport: timeline.png\n"


def test_the_api_draws_a_runs_progress_when_asked(monkeypatch):
    """``jobsim.run(…)`` in a notebook said nothing for the seconds a big run takes;
    ``progress=True`` draws it as ``jobsim run`` does, and moves nothing in the run."""
    import sys

    import jobsim

    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    drawn = jobsim.run(ROOT / "scenarios" / "retry_storm.yaml", progress=True)
    assert re.search(r"retry_storm: +\d+%\|", term.getvalue()), term.getvalue()[:300]
    assert "t=" in term.getvalue() and not NOISE.search(term.getvalue())
    plain = jobsim.run(ROOT / "scenarios" / "retry_storm.yaml")
    assert drawn.trace.sha256() == plain.trace.sha256()
    log = io.StringIO()  # in a log (a notebook without ipywidgets), what it runs at once
    monkeypatch.setattr(sys, "stderr", log)
    jobsim.run(ROOT / "scenarios" / "retry_storm.yaml", progress=True)
    assert log.getvalue() == "retry_storm: simulating 1,000 jobs until drained\n"


@pytest.mark.parametrize("rows, columns", [(0, 100), (0, 0), (30, 0), (30, 100)])
def test_a_terminal_of_no_size_still_shows_the_bars(monkeypatch, rows, columns):
    """A pseudo-terminal never sized (``script``, some CI runners) says 0 rows: tqdm took
    the screen as -1 rows high and hid every bar, and a run showed no progress at all."""
    fcntl = pytest.importorskip("fcntl")
    pty = pytest.importorskip("pty")
    import os
    import struct
    import termios

    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    with os.fdopen(slave, "w", encoding="utf-8", closefd=True) as term:
        with Bar(100, "run", unit="%", stream=term) as bar:
            bar.set(40, "t=12s")
            bar.bar.refresh()
        steps = Steps("report", stream=term)
        steps.step("timeline.png")
        steps.close()
        term.flush()
        import select
        import time

        shown, deadline = b"", time.monotonic() + 10.0
        # what the terminal received, until the last step's name (the kernel passes it on
        # from the pty's one end to the other in its own time)
        while b"timeline.png" not in shown and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                shown += os.read(master, 65536)
        while select.select([master], [], [], 0.2)[0]:  # and the rest
            shown += os.read(master, 65536)
    os.close(master)
    text = shown.decode("utf-8", "replace")
    assert "run: 40%|" in text and "t=12s" in text, text
    assert "report: timeline.png [" in text, text


def test_the_simulations_last_count_is_the_runs_end(monkeypatch):
    """A log's last count of the simulation is its end, the instant its summary gives
    (``run_watched`` tells the end after the last chunk of events)."""
    from functools import partial

    from jobsim.format.scenario import load_variants
    from jobsim.output import runs
    from jobsim.sim.cost import Guard, estimate

    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    log = io.StringIO()
    monkeypatch.setattr(runs, "Bar", partial(Bar, stream=log, log_every=0.0))
    sc = next(s for s in load_variants(ROOT / "scenarios" / "retry_storm.yaml")
              if s.variant == "exponential")
    (a,) = runs.run_variants([sc], [Guard(estimate(sc), what="exponential")])
    lines = log.getvalue().splitlines()
    assert lines[-1] == "exponential: analysing the trace", lines
    assert "100%" in lines[-2] and f"t={a.result.end_time:,.0f}s" in lines[-2], lines


def test_a_drained_runs_progress_moves_while_its_jobs_retry():
    """Jobs that fail and retry end only late in a run until drained: its progress counts
    the executions started against the estimate's, so it moves while no job has ended yet,
    never goes back, stays under 100 % until the run ends, and ends at 100 %."""
    from jobsim.format.scenario import load_variants
    from jobsim.sim.world import World

    sc = next(s for s in load_variants(ROOT / "scenarios" / "retry_storm.yaml")
              if s.variant == "exponential")
    world = World(sc)
    seen: list[tuple[float, int]] = []
    world.run(progress=lambda f, t: seen.append((f, world.created - world.live)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert all(f <= 0.99 for f in fractions[:-1])
    while_none_ended = [f for f, ended in seen if ended == 0]
    assert while_none_ended and max(while_none_ended) > 0.25, seen[:10]


def test_in_a_log_the_counts_last_line_comes_before_the_next_phase(monkeypatch):
    """A long simulation's 100 % line came at ``close``, after the analysis' line and
    naming it ("run: 100%|…| [00:21<00:00, analysing the trace]")."""
    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    log = io.StringIO()
    with Bar(100, "run", unit="%", stream=log, log_every=0.0) as bar:
        bar.stage("simulating 3 jobs")
        bar.set(48, "t=491s")
        bar.set(100, "t=1,013s")
        bar.stage("analysing the trace")
    lines = log.getvalue().splitlines()
    assert "run: simulating 3 jobs" in lines[:2] and lines[-1] == "run: analysing the trace"
    assert "100%" in lines[-2] and "t=1,013s" in lines[-2], lines
    assert sum("analysing" in line for line in lines) == 1, lines
    # a short count showed no line of its own: its phases' lines alone
    log = io.StringIO()
    with Bar(100, "run", unit="%", stream=log) as bar:
        bar.stage("simulating 3 jobs")
        bar.set(100, "t=9s")
        bar.stage("analysing the trace")
    assert log.getvalue() == "run: simulating 3 jobs\nrun: analysing the trace\n"


def test_a_page_left_out_for_its_size_is_said_in_the_log(tmp_path, monkeypatch):
    """Over ``VIEW_LIMIT`` executions the page is not built: the log says so where its line
    would have been (it said nothing)."""
    import jobsim
    from jobsim.base.progress import Steps
    from jobsim.output import report

    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    a = jobsim.analyse(jobsim.run(jobsim.load(ROOT / "scenarios" / "lesson.yaml")))
    for limit, said in ((2, True), (report.VIEW_LIMIT, False)):
        monkeypatch.setattr(report, "VIEW_LIMIT", limit)
        log = io.StringIO()
        report.write(a, tmp_path / f"out{limit}", steps=Steps("report", stream=log))
        text = log.getvalue()
        assert ("view.html left out: 7 executions, over 2 (jobsim view builds it)" in text) \
            is said, text
        assert ("view.html (7 executions)" in text) is not said, text
        assert (tmp_path / f"out{limit}" / "view.html").exists() is not said
