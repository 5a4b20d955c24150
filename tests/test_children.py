"""view.html, and a big run's share of the plots, built in child processes beside the
report's other files (where fork and a second core are there): the same bytes as built in
the process itself, the child's CPU counted as its phase's, and a failure there a clear
error with nothing left behind."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from jobsim.cli import main
from jobsim.output import children

ROOT = Path(__file__).resolve().parents[1]
CHALLENGE = ROOT / "scenarios" / "challenge.yaml"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_the_page_built_in_a_child_is_the_same_bytes(tmp_path, monkeypatch):
    args = ["run", str(CHALLENGE), "--quiet", "--set", "workload.streams.0.count=20"]
    monkeypatch.setattr(children, "PAGE_FROM", 0)  # a small run's page, as a big one's
    monkeypatch.setenv("JOBSIM_PARALLEL", "0")
    assert not children.parallel()
    assert main(args + ["--out", str(tmp_path / "serial")]) in (0, 1)
    monkeypatch.setenv("JOBSIM_PARALLEL", "1")
    timings = tmp_path / "t.json"
    assert main(args + ["--out", str(tmp_path / "child"), "--timings", str(timings)]) in (0, 1)
    serial, child = _files(tmp_path / "serial"), _files(tmp_path / "child")
    assert "view.html" in child and serial == child
    figures = json.loads(timings.read_text())
    page = figures["phases"]["page"]
    # the child's CPU is the page's, and the command's: the rest is not made negative
    assert page["cpu_s"] > 0 and figures["phases"]["other"]["cpu_s"] >= 0
    assert figures["cpu_s"] >= sum(p["cpu_s"] for p in figures["phases"].values()) - 1e-3


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_a_big_runs_plots_shared_with_a_child_are_the_same_bytes(tmp_path, monkeypatch):
    """Every other plot of a run of ``SHARED_FROM`` events or more is drawn in a child:
    the folder is byte for byte the one drawn here, and the child's CPU is the plots'."""
    from jobsim.output import figures

    monkeypatch.setattr(figures, "SHARED_FROM", 0)  # the lesson's 3 plots: 1 in the child
    monkeypatch.setattr(children, "PAGE_FROM", 0)  # and its page
    monkeypatch.setattr(figures, "CDF_JOBS", 0)  # its 3 jobs' start delays drawn, not listed
    args = ["run", str(ROOT / "scenarios" / "lesson.yaml"), "--quiet"]
    monkeypatch.setenv("JOBSIM_PARALLEL", "0")
    assert main(args + ["--out", str(tmp_path / "serial")]) in (0, 1)
    monkeypatch.setenv("JOBSIM_PARALLEL", "1")
    timings = tmp_path / "t.json"
    calls = []
    begin = children.Child.begin
    monkeypatch.setattr(children.Child, "begin", lambda self: calls.append(self.what) or
                        begin(self))
    assert main(args + ["--out", str(tmp_path / "child"), "--timings", str(timings)]) in (0, 1)
    assert calls == ["view.html could not be built", "plots could not be drawn"]
    serial, child = _files(tmp_path / "serial"), _files(tmp_path / "child")
    assert "timeline.png" in child and serial == child
    figures_ = json.loads(timings.read_text())
    assert figures_["phases"]["plots"]["cpu_s"] > 0 and \
        figures_["phases"]["other"]["cpu_s"] >= 0
    assert figures_["cpu_s"] >= sum(p["cpu_s"] for p in figures_["phases"].values()) - 1e-3


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_progress_tells_what_each_process_draws_as_it_begins_it(tmp_path, monkeypatch):
    """With a child drawing every other plot, progress names the child's plots once, as it
    begins them, and this process's as it draws each: not a plot as done here that the
    child draws."""
    import io

    from jobsim.analysis.metrics import jobs_frame
    from jobsim.base.progress import Steps
    from jobsim.format import scenario
    from jobsim.output import figures
    from jobsim.output.report import analyse
    from jobsim.sim.world import run

    monkeypatch.setattr(figures, "SHARED_FROM", 0)
    monkeypatch.setattr(figures, "CDF_JOBS", 0)
    monkeypatch.setattr(figures, "parallel", lambda: True)
    a = analyse(run(scenario.load(ROOT / "scenarios" / "lesson.yaml")))
    log = io.StringIO()
    steps = Steps("report", stream=log)
    figures.run_plots(a, jobs_frame(a.histories), tmp_path, steps)
    steps.close()
    assert log.getvalue().splitlines() == [
        "report: latency_cdf.png", "report: timeline.png (in a second process)",
        "report: table_depth.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "latency_cdf.png", "table_depth.png", "timeline.png"]


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
@pytest.mark.parametrize("part", ["page", "plots", "csv"])
def test_a_part_that_fails_in_its_child_is_a_clear_error_and_nothing_is_written(
        part, tmp_path, monkeypatch):
    """The page, a big run's every other plot, a bigger run's CSV files: a failure in the
    child is jobsim's own failure, as it would be in the process (not a usage error, exit 2),
    with the child's traceback, and no report and no temporary folder are left."""
    from jobsim.output import figures, plots, run_files

    def broken(*args, **kwargs):
        raise RuntimeError(f"the {part} broke")

    if part == "page":
        monkeypatch.setattr(children, "_build", broken)
        monkeypatch.setattr(children, "PAGE_FROM", 0)
        what = "view.html could not be built"
    elif part == "plots":
        monkeypatch.setattr(figures, "SHARED_FROM", 0)
        monkeypatch.setattr(figures, "CDF_JOBS", 0)  # 3 plots, as a big run's: 1 in the child
        monkeypatch.setattr(plots, "node_timeline", broken)  # the child's: the second of three
        what = "plots could not be drawn"
    else:
        monkeypatch.setattr(run_files, "APART_FROM", 0)
        monkeypatch.setattr(run_files, "write_csv", broken)
        what = "jobs.csv and trace.csv could not be written"
    out = tmp_path / "out"
    with pytest.raises(children.ChildError) as exc:
        main(["run", str(ROOT / "scenarios" / "lesson.yaml"), "--quiet", "--out", str(out)])
    said = str(exc.value)
    assert what in said and f"RuntimeError: the {part} broke" in said
    assert not out.exists() and not list(tmp_path.iterdir())  # no temporary folder either


def test_where_a_fork_fails_the_work_is_done_here(tmp_path, monkeypatch):
    """No memory or no process left for a fork: the page, the plots and the CSV files are
    written in the process, the same files as a run that never forks."""
    import multiprocessing.process

    from jobsim.output import figures, run_files

    def refused(self):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(figures, "SHARED_FROM", 0)
    monkeypatch.setattr(children, "PAGE_FROM", 0)
    monkeypatch.setattr(run_files, "APART_FROM", 0)
    monkeypatch.setattr(figures, "CDF_JOBS", 0)  # 3 plots, as a big run's: 1 in the child
    args = ["run", str(ROOT / "scenarios" / "lesson.yaml"), "--quiet", "--out"]
    monkeypatch.setenv("JOBSIM_PARALLEL", "0")
    assert main(args + [str(tmp_path / "serial")]) in (0, 1)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refused)
    monkeypatch.setattr(children, "parallel", lambda: True)
    monkeypatch.setattr(figures, "parallel", lambda: True)
    out = tmp_path / "out"
    assert main(args + [str(out)]) in (0, 1)
    assert {"view.html", "timeline.png", "latency_cdf.png", "table_depth.png",
            "trace.csv"} <= set(_files(out))
    assert _files(out) == _files(tmp_path / "serial")


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_a_stop_while_waiting_for_a_child_ends_it_at_once(monkeypatch):
    """Ctrl-C or SIGTERM while the plots' child draws: it is ended, not waited for."""
    import time

    child = children.Child(lambda: time.sleep(60), "sleeping")
    assert child.begin()
    proc = child.proc

    def stopped():
        raise KeyboardInterrupt

    monkeypatch.setattr(child.receive, "recv", stopped)
    with pytest.raises(KeyboardInterrupt):
        child.wait()
    # ended, not waited for: its minute of sleep is cut short (terminated, SIGTERM)
    assert not proc.is_alive() and proc.exitcode == -15 and child.proc is None


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_a_big_runs_csv_files_written_in_a_child_are_the_same_bytes_and_digests(
        tmp_path, monkeypatch):
    """A run of ``APART_FROM`` events or more has its CSV files written by a child beside
    the plots: the folder is byte for byte the one written here, the manifest's digests are
    the files' own, taken by the child as it wrote (this process never reads the files to
    hash them), and its plots are not shared with a second child."""
    import hashlib

    from jobsim.base import outdir
    from jobsim.base.outdir import MANIFEST
    from jobsim.output import figures, run_files

    monkeypatch.setattr(run_files, "APART_FROM", 0)
    monkeypatch.setattr(figures, "SHARED_FROM", 0)  # shared, were the CSV files written here
    args = ["run", str(CHALLENGE), "--quiet", "--no-view",
            "--set", "workload.streams.0.count=20"]
    monkeypatch.setenv("JOBSIM_PARALLEL", "0")
    assert main(args + ["--out", str(tmp_path / "serial")]) in (0, 1)
    monkeypatch.setenv("JOBSIM_PARALLEL", "1")
    calls, read = [], []
    begin = children.Child.begin
    monkeypatch.setattr(children.Child, "begin",
                        lambda self: calls.append((self.what, begin(self))) or calls[-1][1])
    monkeypatch.setattr(outdir, "open", lambda path, *a, **k: read.append(str(path)) or
                        open(path, *a, **k), raising=False)
    assert main(args + ["--out", str(tmp_path / "child")]) in (0, 1)
    serial, child = _files(tmp_path / "serial"), _files(tmp_path / "child")
    traces = sorted(name for name in child if name.endswith("trace.csv"))
    # the challenge has variants: each writes its files in a child of its own, forked
    assert len(traces) > 1 and sorted(calls) == [
        (f"{name[:-len('trace.csv')]}jobs.csv and trace.csv could not be written", True)
        for name in traces], calls
    assert serial == child
    manifest = json.loads(child[MANIFEST])["files"]
    assert manifest == {name: hashlib.sha256(data).hexdigest()
                        for name, data in child.items() if name != MANIFEST}
    assert read and not [r for r in read if r.endswith(".csv")], read


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_a_childs_cpu_and_the_wait_for_it_are_its_phases():
    from jobsim.base.phases import Phases

    def busy():
        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
        return "done"

    phases = Phases()
    child = children.Child(busy, "busy")
    assert child.begin()
    assert child.waited(phases, "csv") == "done"
    figures = phases.figures()
    csv = figures["phases"]["csv"]
    assert csv["cpu_s"] >= 0.3 and csv["wall_s"] > 0  # the child's CPU, this one's wait
    assert figures["cpu_s"] >= csv["cpu_s"]  # the command's CPU counts it


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
@pytest.mark.parametrize("parallel", ["0", "1"])
def test_a_disk_error_writing_the_csv_files_is_the_same_clear_error_in_a_child(
        parallel, tmp_path, monkeypatch, capsys):
    """A full disk while the CSV files are written: exit 2 and what the system said, as in
    the process itself, not a traceback; nothing is left."""
    import errno

    from jobsim.output import run_files

    def full(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(run_files, "APART_FROM", 0)
    monkeypatch.setattr(run_files, "write_csv", full)
    monkeypatch.setenv("JOBSIM_PARALLEL", parallel)
    forked = []
    begin = children.Child.begin
    monkeypatch.setattr(children.Child, "begin", lambda self: forked.append(begin(self)) or
                        forked[-1])
    out = tmp_path / "out"
    assert main(["run", str(ROOT / "scenarios" / "lesson.yaml"), "--quiet",
                 "--out", str(out)]) == 2
    assert forked == ([True] if parallel == "1" else [])  # the CSV files' child, if any
    said = capsys.readouterr().err
    assert f"jobsim: cannot write the report folder {out}: No space left on device" in said
    assert "Traceback" not in said
    assert not out.exists() and not list(tmp_path.iterdir())


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_a_log_says_when_the_report_waits_for_the_csv_files(tmp_path, monkeypatch):
    """The plots done before the child's CSV files: a line says what the report waits for,
    rather than the last plot's name standing for the wait."""
    import io

    from jobsim.base.progress import Steps
    from jobsim.format import scenario
    from jobsim.output import run_files
    from jobsim.output.report import analyse
    from jobsim.sim.world import run

    import os

    flag = tmp_path / "go"
    write = run_files._csv_files
    here = os.getpid()

    def held(*args):  # in the child: written only once this process waits for it
        assert os.getpid() != here, "the CSV files were not written in a child"
        while not flag.exists():
            time.sleep(0.01)
        return write(*args)

    waited = children.Child.waited

    def waiting(self, phases, name):
        flag.touch()
        return waited(self, phases, name)

    monkeypatch.setattr(run_files, "APART_FROM", 0)
    monkeypatch.setattr(run_files, "_csv_files", held)
    monkeypatch.setattr(children.Child, "waited", waiting)
    a = analyse(run(scenario.load(ROOT / "scenarios" / "lesson.yaml")))
    log = io.StringIO()
    steps = Steps("report", stream=log)
    folder = tmp_path / "out"
    run_files.write_run(a, folder, True, None, steps)
    steps.close()
    lines = log.getvalue().splitlines()
    assert lines[-1] == "report: jobs.csv and trace.csv: waiting for the other process", lines
    assert (folder / "trace.csv").read_bytes().count(b"\n") == len(a.result.trace) + 1


def test_without_plots_the_csv_files_are_written_here(tmp_path, monkeypatch):
    """``--no-plots``: nothing to draw meanwhile, so no child for the CSV files."""
    from jobsim.output import run_files

    monkeypatch.setattr(run_files, "APART_FROM", 0)
    calls = []
    monkeypatch.setattr(children.Child, "begin", lambda self: calls.append(self.what))
    out = tmp_path / "out"
    assert main(["run", str(ROOT / "scenarios" / "lesson.yaml"), "--quiet", "--no-plots",
                 "--out", str(out)]) in (0, 1)
    assert calls == [] and (out / "trace.csv").is_file()


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_progress_says_the_csv_files_are_written_in_another_process(tmp_path, monkeypatch):
    import io

    from jobsim.base.progress import Steps
    from jobsim.format import scenario
    from jobsim.output import run_files
    from jobsim.output.report import analyse
    from jobsim.sim.world import run

    monkeypatch.setattr(run_files, "APART_FROM", 0)
    a = analyse(run(scenario.load(ROOT / "scenarios" / "lesson.yaml")))
    log = io.StringIO()
    steps = Steps("report", stream=log)
    run_files.write_run(a, tmp_path, True, None, steps)
    steps.close()
    n = len(a.result.trace)
    assert log.getvalue().splitlines()[0] == \
        f"report: jobs.csv and trace.csv ({n:,} events) (in another process)"
    assert (tmp_path / "trace.csv").read_bytes().count(b"\n") == n + 1


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_the_csv_childs_cpu_is_the_csv_phases(tmp_path, monkeypatch):
    """The CPU the CSV files' child spends counts as the CSV phase's, and the command's."""
    from jobsim.base.phases import Phases
    from jobsim.format import scenario
    from jobsim.output import run_files
    from jobsim.output.report import analyse
    from jobsim.sim.world import run

    write = run_files._csv_files

    def costly(*args):  # the files, and 0.5 CPU s more, in the child
        got = write(*args)
        t = time.process_time()
        while time.process_time() - t < 0.5:
            pass
        return got

    monkeypatch.setattr(run_files, "APART_FROM", 0)
    monkeypatch.setattr(run_files, "_csv_files", costly)
    a = analyse(run(scenario.load(ROOT / "scenarios" / "lesson.yaml")))
    phases = Phases()
    run_files.write_run(a, tmp_path, True, phases)
    figures = phases.figures()
    assert figures["phases"]["csv"]["cpu_s"] >= 0.5, figures
    assert figures["cpu_s"] >= figures["phases"]["csv"]["cpu_s"] + \
        figures["phases"]["plots"]["cpu_s"] - 1e-3


@pytest.mark.skipif(not children.parallel(), reason="no fork or one core: always serial")
def test_a_freeze_the_program_made_is_left_as_it_was():
    """A program that froze its own objects (gc.freeze, before forks of its own) keeps them
    frozen through a child of jobsim's."""
    import gc

    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        child = children.Child(lambda: 1, "one")
        assert child.begin()
        assert child.wait() >= 0 and child.result == 1
        # still frozen (an unfreeze empties it): not the same count, since a frozen object
        # that dies meanwhile leaves it (this failed once beside other tests in a worker)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    child = children.Child(lambda: 2, "two")  # none of the program's: none left after
    assert child.begin()
    child.wait()
    assert gc.get_freeze_count() == 0 and child.result == 2
