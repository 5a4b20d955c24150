"""The lesson's demo (seed 000), reproduced line for line, and what its trace shows."""

import json
import subprocess
import sys
from pathlib import Path

from jobsim.format import scenario
from jobsim.cli import main
from jobsim.analysis.history import histories
from jobsim.analysis.narrative import narrate
from jobsim.base.trace import K
from jobsim.sim.world import run

GOLDEN = (Path(__file__).parent / "golden" / "lesson.out").read_text(encoding="utf-8")


def test_the_transcript_is_the_seeds_line_for_line(lesson_path):
    """The narrative of the lesson scenario is exactly the lesson's transcript, with the line
    the lesson elides after ``t=+10s:`` (job 3's second failure) filled in."""
    result = run(scenario.load(lesson_path))
    assert "\n".join(narrate(result.trace)) + "\n" == GOLDEN


def test_node_b_acquires_nothing_at_t0(lesson_path):
    """Node-B's silence at t=0 is the cluster-correctness property: it ran one acquisition,
    found both due jobs locked by node-A, and got nothing — an empty acquire in the trace."""
    result = run(scenario.load(lesson_path))
    cols = result.trace.arrays()
    b = result.trace.nodes.index("node-B")
    at0 = (cols["time"] == 0) & (cols["kind"] == K["acquire"]) & (cols["node"] == b)
    assert at0.sum() == 1
    assert cols["a"][at0][0] == 10 and cols["b"][at0][0] == 0
    a = result.trace.nodes.index("node-A")
    locked0 = (cols["time"] == 0) & (cols["kind"] == K["locked"])
    assert set(cols["node"][locked0].tolist()) == {a}
    assert sorted(cols["job"][locked0].tolist()) == [2, 3]


def test_job_fates(lesson_path):
    """Job 2 runs three times and is done; job 3 runs three times and is dead-lettered;
    the timer runs once, at the first tick after its due time."""
    hist = histories(run(scenario.load(lesson_path)).trace)
    j = hist.jobs
    assert (j[1].outcome, j[1].executions, j[1].first_start) == ("done", 1, 370.0)
    assert (j[2].outcome, j[2].executions, j[2].failures) == ("done", 3, 2)
    assert (j[3].outcome, j[3].executions, j[3].failures) == ("dead_lettered", 3, 3)
    assert j[2].nodes == ["node-A", "node-B"]
    assert hist.duplicates == [] and hist.double_acquisitions == []


def test_cli_prints_transcript_then_summary_and_writes_the_folder(lesson_path, tmp_path, capsys):
    out = tmp_path / "lesson"
    assert main(["run", str(lesson_path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(GOLDEN)
    from jobsim.analysis.checks import INVARIANTS

    assert f"invariants   all {len(INVARIANTS)} hold" in printed
    # no job ran twice: no plot of double runs, a sentence in report.md instead; 3 jobs: their
    # start delays listed, not drawn as a distribution
    assert sorted(p.name for p in out.iterdir()) == [
        ".jobsim-manifest.json", "jobs.csv", "report.md", "scenario.yaml",
        "summary.json", "table_depth.png", "timeline.png", "trace.csv", "view.html"]
    said = (out / "report.md").read_text()
    assert "Apart from its retries, no job ran twice, so there is no plot" in said
    assert "job by job — 3 jobs, too few to draw as a distribution: job 1 (reminder): 70s · " \
        "job 2 (bureau-call): 0ms · job 3 (misconfigured): 0ms" in said
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == {"created": 3, "done": 2, "dead_lettered": 1, "incident": 0,
                               "withdrawn": 0, "failed": 0, "cancelled": 0, "pending": 0,
                               "lost": 0, "submits_ignored": 0, "resubmitted": 0}
    assert summary["invariants"] == {k: 0 for k in summary["invariants"]}
    assert list(summary) == sorted(summary)


def test_quiet_prints_only_the_summary(lesson_path, tmp_path, capsys):
    assert main(["run", str(lesson_path), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "bureau 502" not in printed and printed.startswith("── lesson")


def test_python_dash_m_runs_the_lesson(lesson_path, tmp_path):
    """``python -m jobsim`` is the same program as the console script."""
    proc = subprocess.run([sys.executable, "-m", "jobsim", "run", str(lesson_path), "--out",
                           str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(GOLDEN)


def test_one_tick_is_one_acquire_of_at_most_ten_rows_per_node():
    """The lesson's tick calls acquire(node, limit=10) once: with 25 due jobs, node-A takes
    10 and node-B the next 10; the loop then runs its jobs one after another."""
    from jobsim.base.trace import K
    from jobsim.format.scenario import loads

    r = run(loads("""
name: ticks
policy: lesson
nodes: [{name: node-A}, {name: node-B}]
clock: {ticks: [{at: 0s, nodes: [node-A, node-B]}]}
handlers: {w: {duration: 1s}}
workload: {streams: [{name: s, handler: w, count: 25}]}
until: 1m
"""))
    c = r.trace.arrays()
    acq = c["kind"] == K["acquire"]
    got = {r.trace.nodes[n]: int(b) for n, b in zip(c["node"][acq], c["b"][acq])}
    assert got == {"node-A": 10, "node-B": 10} and int(acq.sum()) == 2
    starts = c["time"][(c["kind"] == K["exec_start"]) & (c["node"] == r.trace.nodes.index("node-A"))]
    assert starts.tolist() == [float(i) for i in range(10)]  # one after another
