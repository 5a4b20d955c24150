"""Everything after the simulation in ``jobsim run``: the same outputs as the row-by-row code
it replaced, and the time and memory it takes.

- the CSV files are byte for byte what pandas' ``to_csv`` wrote (the old writer is kept here,
  as the reference);
- the histories, worked out on whole columns for the plain stories, equal the event-by-event
  telling of every job (``history.told`` over all events: the old pass);
- ``--timings`` writes the phases and changes no output; it never overwrites a user's file;
- the narrative counts exactly the lines past its limit;
- (slow) the full model at 1,000,000 jobs: the simulation is at least half of the wall time,
  and the peak memory under 1.5 GB.
"""

from __future__ import annotations

import os
import re
import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from jobsim.analysis.history import _INTERESTING, histories, told
from jobsim.analysis.metrics import trace_frame
from jobsim.analysis.narrative import narrate
from jobsim.base.trace import K, Trace
from jobsim.cli import main
from jobsim.format import scenario as scenario_mod
from jobsim.output.columns import trace_columns
from jobsim.output.csvtext import float_text, printable_frame, write_csv
from jobsim.output.report import analyse, combined_summary
from jobsim.output.service_report import jobs_with_services
from jobsim.sim.world import run
from jobsim.tools.bench import full_model_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
#: a few scenarios that between them have variants, crashes, pauses, retries, services (the
#: breaker of retry_storm: its quickest variant), boundary timers, texts with commas and quotes
SOME = ("lesson", "node_crash", "zombie_pause", "flowable", "retry_storm", "zeebe_like",
        "failsafe")
ONLY = {"retry_storm": "breaker"}


def _runs(name: str) -> list:
    return [run(sc) for sc in scenario_mod.load_variants(SCENARIOS / f"{name}.yaml")
            if ONLY.get(name, sc.variant) == sc.variant]


@pytest.fixture(scope="module")
def results() -> dict[str, list]:
    return {name: _runs(name) for name in SOME}


# --- CSV: the bytes pandas wrote -------------------------------------------------------------

def _old_csv(frame, path: Path) -> bytes:
    """The writer this replaced: pandas, row by row."""
    frame.to_csv(path, index=False)
    return path.read_bytes()


def test_csv_files_are_what_pandas_wrote(results, tmp_path):
    for name, runs in results.items():
        for r in runs:
            a = analyse(r)
            jobs = jobs_with_services(a)
            write_csv(tmp_path / "jobs.csv", {c: jobs[c] for c in jobs.columns}, len(jobs))
            assert (tmp_path / "jobs.csv").read_bytes() == _old_csv(jobs, tmp_path / "j0.csv"), \
                name
            write_csv(tmp_path / "trace.csv", trace_columns(r.trace), len(r.trace))
            assert (tmp_path / "trace.csv").read_bytes() == _old_csv(
                trace_frame(r.trace), tmp_path / "t0.csv"), name


def _awkward_trace() -> Trace:
    tr = Trace()
    node = tr.node("node, A")
    texts = ['say "hi"', "a,b", "two\nlines", "cr\rhere", "", "plain", " padded "]
    xs = [0.0, -0.0, 0.1, 1e-05, 2.5e-07, 1e16, 9999999999999998.0, 1e15, 123456789012.5,
          100000.0, 1.5e300, 5e-324, math.inf, -math.inf, math.nan, 0.30000000000000004,
          -12.75, 0.0001, 9.999999999999999e-05]
    for i, x in enumerate(xs):
        tr.add(float(i) / 7.0, K["tick"], node if i % 2 else -1, i - 3, i, -i, 2 ** 40, 0, x,
               tr.text(texts[i % len(texts)]))
    return tr


def test_csv_quoting_and_floats_match_pandas(tmp_path):
    """Quoting and floats as pandas writes them; a text's control characters (the line
    break in "two lines") escaped first, so that no name drives a reader's terminal."""
    tr = _awkward_trace()
    write_csv(tmp_path / "t.csv", trace_columns(tr), len(tr))
    frame = trace_frame(tr)
    frame["text"] = frame["text"].astype(object)
    assert (tmp_path / "t.csv").read_bytes() == _old_csv(printable_frame(frame),
                                                         tmp_path / "o.csv")
    assert b"two\\u000alines" in (tmp_path / "t.csv").read_bytes()
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.random(20_000) * 10.0 ** rng.integers(-9, 19, 20_000),
                        np.round(rng.random(5_000) * 1e4, 3), [0.0, math.nan, math.inf]])
    assert float_text(x).to_pylist() == ["" if v != v else repr(v) for v in x.tolist()]


def test_float_runs_are_spelled_once_and_the_same():
    """A column where most values repeat the one before (a trace's times, a column of
    mostly NaN) is spelled run by run: the same texts as value by value, -0.0 apart from
    0.0, NaN empty, whatever the runs."""
    from jobsim.output import csvtext

    rng = np.random.default_rng(11)
    pool = np.array([0.0, -0.0, math.nan, math.inf, -math.inf, 1e-7, 2.5, 3.0, 1e17,
                     0.1 + 0.2])
    for _ in range(20):
        values = np.concatenate([pool, rng.random(50) * 10.0 ** rng.integers(-6, 18, 50)])
        x = np.repeat(rng.choice(values, 400), rng.integers(1, 6, 400))
        want = ["" if v != v else repr(v) for v in x.tolist()]
        assert np.count_nonzero(x[1:].view(np.int64) != x[:-1].view(np.int64)) + 1 <= \
            csvtext.RUNS_SHARE * len(x)  # the runs' way is the one taken
        assert float_text(x).to_pylist() == want
    assert float_text(np.array([math.nan])).to_pylist() == [""]
    assert float_text(np.zeros(0)).to_pylist() == []


def test_csv_in_blocks(tmp_path, monkeypatch):
    from jobsim.output import csvtext

    r = _runs("lesson")[0]
    write_csv(tmp_path / "whole.csv", trace_columns(r.trace), len(r.trace))
    monkeypatch.setattr(csvtext, "BLOCK", 7)
    write_csv(tmp_path / "blocks.csv", trace_columns(r.trace), len(r.trace))
    assert (tmp_path / "whole.csv").read_bytes() == (tmp_path / "blocks.csv").read_bytes()


# --- histories: the same stories as telling every event --------------------------------------

def _same(a, b) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) \
        or a == b


def _assert_same_histories(trace: Trace) -> None:
    cols = trace.arrays()
    everything = np.flatnonzero(np.isin(cols["kind"], _INTERESTING))
    stories, found = told(trace, cols, everything)  # the old pass: every event, one by one
    hist = histories(trace)
    assert list(hist.jobs) == sorted(stories)
    for j, s in stories.items():
        mine = hist.jobs[j]
        s.retry_delays = list(hist.delays.get(j, []))
        for key, value in asdict(s).items():
            assert _same(value, getattr(mine, key)), (j, key, value, getattr(mine, key))
    dups, doubles, stranded, recoveries, rejected, row_gone, after, unrecovered, by_crash = found
    assert [asdict(d) for d in hist.duplicates] == [asdict(d) for d in dups]
    assert (hist.double_acquisitions, hist.stranded, hist.recoveries, hist.completions_rejected,
            hist.completions_row_gone, hist.after_terminal, hist.unrecovered,
            hist.stranded_by_crash) == (
        doubles, stranded, recoveries, rejected, row_gone, after, unrecovered, by_crash)
    assert sum(n for _, _, n in hist.stranded_by_crash) == hist.stranded


def test_histories_equal_the_event_by_event_pass(results):
    for runs in results.values():
        for r in runs:
            _assert_same_histories(r.trace)


def test_histories_of_the_full_model():
    r = run(full_model_scenario(3000))
    _assert_same_histories(r.trace)
    plain = histories(r.trace)
    assert len(plain.jobs) == 3000 and plain.table["executions"].sum() > 3000


def test_summary_matches_the_committed_reports(results):
    reports = Path(__file__).resolve().parent.parent / "reports"
    for name in ("node_crash", "zombie_pause", "lesson"):
        committed = json.loads((reports / name / "summary.json").read_text(encoding="utf-8"))
        fresh = combined_summary([analyse(r) for r in results[name]])  # every variant
        assert json.loads(json.dumps(fresh, sort_keys=True)) == committed, name


# --- --timings -----------------------------------------------------------------------------

def test_the_runs_over_other_seeds_are_a_phase_with_their_workers_cpu(tmp_path):
    """They were counted as ``other``, and their worker processes' CPU not at all: 8.5 s of
    a run's wall time, of which 0.25 CPU s, and a ``simulate_share`` of 0.17."""
    def timed(workers: str) -> dict:
        timings = tmp_path / f"t{workers}.json"
        assert main(["run", str(SCENARIOS / "challenge.yaml"), "--out",
                     str(tmp_path / f"o{workers}"), "--quiet", "--seeds", "4", "--workers",
                     workers, "--timings", str(timings)]) == 0
        return json.loads(timings.read_text(encoding="utf-8"))

    alone, pooled = timed("1"), timed("2")  # the same 12 runs, here or in two workers
    here = alone["phases"]["seeds"]["cpu_s"]
    assert here > 0 and alone["phases"]["seeds"]["wall_s"] > 0
    # CPU seconds of the same work, whoever did it: the workers' counted (without them,
    # this process's share is a tenth of it), and not counted twice (the sum below). The
    # workers' start is theirs too: forked from a test process of a few hundred MB, their
    # copy-on-write faults read 0.6 CPU s more on a loaded CI machine (0.80 against 0.21
    # here; 0.27-0.29 against 0.22-0.26 on an idle one), whatever the runs
    assert 0.5 * here < pooled["phases"]["seeds"]["cpu_s"] < 2.5 * here + 1.0, \
        (alone, pooled)
    for figures in (alone, pooled):
        assert figures["cpu_s"] >= sum(p["cpu_s"] for p in figures["phases"].values()) - 1e-3


def test_timings_file_and_unchanged_report(tmp_path, capsys):
    lesson = str(SCENARIOS / "lesson.yaml")
    assert main(["run", lesson, "--out", str(tmp_path / "plain"), "--quiet"]) == 0
    timings = tmp_path / "t.json"
    assert main(["run", lesson, "--out", str(tmp_path / "timed"), "--quiet",
                 "--timings", str(timings)]) == 0
    figures = json.loads(timings.read_text(encoding="utf-8"))
    assert set(figures["phases"]) == {"simulate", "analysis", "seeds", "csv", "plots",
                                      "page", "other"}
    assert figures["phases"]["seeds"]["cpu_s"] == 0  # one seed: no other runs
    for f in figures["phases"].values():
        assert f["wall_s"] >= 0 and f["cpu_s"] >= 0
    assert figures["wall_s"] >= sum(f["wall_s"] for f in figures["phases"].values()) - 1e-3
    assert figures["peak_rss_mb"] > 0 and 0 < figures["simulate_share"] < 1
    # what it measured: a timings file read later says whose they are
    assert (figures["scenario"], figures["file"], figures["seed"], figures["variants"],
            figures["report"]) == ("lesson", lesson, 0, 1, str(tmp_path / "timed"))
    for f in sorted((tmp_path / "plain").iterdir()):
        if f.name != ".jobsim-manifest.json":
            assert f.read_bytes() == (tmp_path / "timed" / f.name).read_bytes(), f.name
    # jobsim's own timings file is replaced; a user's file never
    assert main(["run", lesson, "--out", str(tmp_path / "timed"), "--quiet",
                 "--timings", str(timings)]) == 0
    mine = tmp_path / "mine.json"
    mine.write_text('{"notes": 1}\n', encoding="utf-8")
    capsys.readouterr()
    assert main(["run", lesson, "--out", str(tmp_path / "x"), "--quiet",
                 "--timings", str(mine)]) == 2
    assert "did not write it" in capsys.readouterr().err
    assert mine.read_text(encoding="utf-8") == '{"notes": 1}\n' and not (tmp_path / "x").exists()
    assert main(["run", lesson, "--out", str(tmp_path / "x"), "--quiet",
                 "--timings", str(tmp_path / "x" / "t.json")]) == 2
    assert main(["run", lesson, "--out", str(tmp_path / "x"), "--quiet",
                 "--timings", str(tmp_path / "no" / "t.json")]) == 2


# --- the narrative's limit -------------------------------------------------------------------

#: a routine line of the story (a job done as expected), and a count of such lines
_DONE = re.compile(r"  \[[^\]]+\] job \d+ \([^)]*\) done")
_COUNT = re.compile(r"  \(([\d,]+) jobs? done (at|from) t=.*\)")


def test_a_commands_timings_count_from_jobsims_import(tmp_path):
    """A command that is its process counts its imports too, as ``start`` (a user's
    ``time jobsim run`` read 0.7 CPU s more than the file's phases); ``main`` called in a
    test's process has no ``start`` (above)."""
    import subprocess
    import sys

    timings = tmp_path / "t.json"
    subprocess.run([sys.executable, "-m", "jobsim", "run", str(SCENARIOS / "lesson.yaml"),
                    "--out", str(tmp_path / "out"), "--quiet", "--timings", str(timings)],
                   check=True, capture_output=True, env={**os.environ, "JOBSIM_PROGRESS": "0"})
    figures = json.loads(timings.read_text(encoding="utf-8"))
    phases = figures["phases"]
    assert set(phases) == {"start", "simulate", "analysis", "seeds", "csv", "plots", "page",
                           "other"}
    # the imports before the command: more CPU than the lesson's simulation, and counted
    assert phases["start"]["cpu_s"] > phases["simulate"]["cpu_s"] > 0
    for key in ("wall_s", "cpu_s"):
        assert figures[key] == pytest.approx(sum(p[key] for p in phases.values()), abs=1e-4)
    assert 0 < figures["simulate_share"] < 1


_LANDMARK = re.compile(r"  (\[[^\]]+\] (CRASHED at|restarted at|PAUSED at|resumed at|DOWN "
                       r"at|still DOWN at|BROWN-OUT at|back up at)|the server RESTARTED at)")


def test_a_long_story_leads_with_what_matters_and_counts_the_rest(results):
    """Past its limit the story tells every line that is not a job done as expected, in
    order, up to the limit, under a first line that counts them; past those, the run's
    landmarks (a crash, a restart, a pause, a service's change of health; up to the limit
    more), each after a line that counts the lines left out before it; the jobs done between
    the lines told are counted, and the lines past the last one in one line."""
    seen = 0
    for runs in results.values():
        for r in runs:
            whole = narrate(r.trace, None)
            story, tail = whole[:-1], whole[-1:]  # the last line: the dead letters
            done = [ln for ln in story if _DONE.fullmatch(ln)]
            notable = [ln for ln in story if not _DONE.fullmatch(ln)]
            for limit in (0, 1, 5, 60, len(story), len(story) + 3):
                lines = narrate(r.trace, limit)
                if len(story) <= limit:
                    assert lines == whole
                    continue
                assert lines[0].startswith("in short: ") and lines[-1:] == tail
                body = lines[1:-1]
                counts = [int(m.group(1).replace(",", "")) for m in map(_COUNT.fullmatch, body)
                          if m]
                more = [ln for ln in body if ln.startswith("  … ")]
                told = [ln for ln in body if not _COUNT.fullmatch(ln) and ln not in more]
                marks = [ln for ln in notable[limit:] if _LANDMARK.match(ln)][:limit]
                assert told == notable[:limit] + marks
                seen += bool(marks)
                gaps = [int(m.group(1).replace(",", "")) for m in
                        (re.match(r"  … ([\d,]+) more lines? left out before this one", ln)
                         for ln in more) if m]
                ends = [ln for ln in more if "(the whole story is in trace.csv)" in ln]
                assert len(gaps) + len(ends) == len(more) and len(ends) <= 1
                left = len(notable) - len(told)
                after = 0
                if ends:
                    m = re.search(r"… ([\d,]+) more lines", ends[0])
                    assert sum(gaps) + int(m.group(1).replace(",", "")) == left
                    m = re.search(r"and ([\d,]+) jobs done", ends[0])
                    after = int(m.group(1).replace(",", "")) if m else 0
                else:
                    assert sum(gaps) == left
                assert sum(counts) + after == len(done)
    assert seen, "no story had a landmark past its limit: the rule is not shown"


# --- the acceptance at 1,000,000 jobs --------------------------------------------------------

@pytest.mark.alone
@pytest.mark.timeout(1800)
def test_full_model_million_jobs_simulation_dominates():
    """The simulation's share of the command's wall time: what the bench suite measures, one
    run at a time. Beside the slow tier's other worker, the report's child shares a core
    with that worker: CI read 0.499 there, where the share reads 0.57-0.61 alone."""
    from jobsim.tools.bench_run import report_run

    figures = report_run(1_000_000)
    assert figures["simulate_share"] >= 0.5, figures
    assert figures["peak_rss_mb"] < 1500, figures
