"""The statistics' window: a warm-up and a cool-down left out of the summary's statistics.

The windowed figures equal a hand computation from jobs.csv and trace.csv; the trace, the
correctness counts and every byte of a run without a window stay as they were; the command
line's ``--warmup``/``--cooldown`` win over the file's, in ``run`` and in each run of a
``sweep``; bad values are refused with the file, the dotted path or the flag, exit 2, before
any run; a window the run never reached is said, not a crash.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from jobsim import cli
from jobsim.format.scenario import loads

STEADY = """
name: steady
seed: 5
until: 8m
warmup: 2m
cooldown: 1m
executor: {poll_interval: 2s, threads: 2, lock_time: 30s}
nodes: 2
handlers: {w: {duration: {exponential: {mean: 3s}}, outcome: {fail_rate: 0.1}}}
workload:
  streams:
    - {name: s, handler: w, count: 150, rate: 0.4/s}
    - {name: urgent, handler: w, count: 20, rate: 0.05/s, priority: 5}
faults:
  - {at: 200s, crash: node-1, restart_after: 30s}
  - {at: 300s, pause: node-2, for: 20s}
"""


def _run(tmp_path: Path, text: str, *flags: str, name: str = "out") -> tuple[int, Path]:
    f = tmp_path / f"{name}.yaml"
    f.write_text(text, encoding="utf-8")
    out = tmp_path / name
    status = cli.main(["run", str(f), "--out", str(out), "--quiet", "--no-plots",
                       "--no-view", *flags])
    return status, out


def _summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def _dist(values: np.ndarray) -> dict:
    values = values[~np.isnan(values)]
    return {"n": len(values), "mean": values.mean(), "max": values.max(),
            **{f"p{p}": np.percentile(values, p) for p in (50, 90, 99)}}


def _close(got: dict, want: dict) -> None:
    assert got["n"] == want["n"]
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-6), k


def _overlap(a: np.ndarray, b: np.ndarray, t0: float, t1: float) -> float:
    return float((np.clip(b, t0, t1) - np.clip(a, t0, t1)).sum())


def test_the_windowed_figures_equal_a_hand_computation_from_the_run_folder(tmp_path):
    status, out = _run(tmp_path, STEADY)
    assert status == 0
    s = _summary(out)
    jobs = pd.read_csv(out / "jobs.csv")
    trace = pd.read_csv(out / "trace.csv", keep_default_na=False)
    end = s["end_time"]
    t0, t1 = 120.0, end - 60.0
    assert end == 480.0
    counted = jobs[(jobs["due"] >= t0) & (jobs["due"] <= t1)]
    assert 0 < len(counted) < len(jobs)
    assert s["window"] == {"warmup": 120.0, "cooldown": 60.0, "start": 120.0, "end": 420.0,
                           "jobs_counted": len(counted), "empty": False,
                           "figures": s["window"]["figures"]}
    _close(s["latency"]["start_delay"], _dist((counted["first_start"] - counted["due"])
                                              .to_numpy(float)))
    done = counted[counted["outcome"] == "done"]
    _close(s["latency"]["end_to_end"], _dist((done["end"] - done["created"]).to_numpy(float)))
    for prio, group in counted.groupby("priority"):
        f = s["latency"]["by_priority"][str(prio)]
        assert f["jobs"] == len(group)
        _close(f["start_delay"], _dist((group["first_start"] - group["due"]).to_numpy(float)))
    finished = jobs[(jobs["outcome"] == "done") & (jobs["end"] >= t0) & (jobs["end"] <= t1)]
    assert s["throughput_per_s"] == pytest.approx(len(finished) / (t1 - t0))
    # the nodes' figures, from the trace's rows
    kind, time = trace["kind"], trace["time"]
    starts = trace[kind == "exec_start"]
    ends = trace[kind == "exec_end"].set_index(["job", "attempt"])["time"]
    for node in ("node-1", "node-2"):
        f = s["nodes"][node]
        mine = trace["node"] == node
        inside = (time >= t0) & (time <= t1)
        assert f["executions"] == int((mine & inside & (kind == "exec_start")).sum())
        assert f["claims"] == int((mine & inside & (kind == "locked")).sum())
        assert f["lost_races"] == int(trace[mine & inside & (kind == "acquire")]["c"].sum())
        crashes = time[mine & (kind == "node_crashed")].to_numpy()
        restarts = time[mine & (kind == "node_restarted")].to_numpy()
        pauses = time[mine & (kind == "node_paused")].to_numpy()
        resumes = time[mine & (kind == "node_resumed")].to_numpy()
        down = _overlap(crashes, restarts, t0, t1)
        assert f["time_down"] == pytest.approx(down)
        assert f["time_paused"] == pytest.approx(_overlap(pauses, resumes, t0, t1))
        assert f["time_up"] == pytest.approx(t1 - t0 - down)
        busy = 0.0
        for r in starts[starts["node"] == node].itertuples():
            stop = ends.get((r.job, r.attempt))
            if stop is None:  # cut short by its node's crash
                stop = min([c for c in crashes if c >= r.time], default=end)
            busy += _overlap(np.array([r.time]), np.array([stop]), t0, t1)
        assert f["busy_thread_seconds"] == pytest.approx(busy)
        assert f["busy_share"] == pytest.approx(busy / (2 * (t1 - t0 - down)))
    assert s["nodes"]["node-1"]["time_down"] == pytest.approx(30.0)  # the crash is inside
    assert s["nodes"]["node-2"]["time_paused"] == pytest.approx(20.0)
    # the counts that say whether the run was correct are the whole run's
    assert s["jobs"]["created"] == len(jobs) == 170
    assert s["executions"] == int((kind == "exec_start").sum())
    report = (out / "report.md").read_text(encoding="utf-8")
    assert (f"Statistics leave out the first 2 min (warm-up) and the last 1 min (cool-down): "
            f"{len(counted)} of 170 jobs counted (those due from 2 min to 7 min)") in report


def test_no_window_and_a_zero_window_change_nothing_and_the_trace_never_changes(tmp_path):
    plain = STEADY.replace("warmup: 2m\ncooldown: 1m\n", "")
    _, a = _run(tmp_path, plain, name="plain")
    _, b = _run(tmp_path, plain.replace("until: 8m", "until: 8m\nwarmup: 0s\ncooldown: 0ms"),
                name="zero")
    _, c = _run(tmp_path, STEADY, name="windowed")
    for f in ("summary.json", "jobs.csv", "trace.csv"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    assert "window" not in _summary(a) and "Statistics leave out" not in \
        (a / "report.md").read_text(encoding="utf-8")
    for f in ("jobs.csv", "trace.csv"):
        assert (a / f).read_bytes() == (c / f).read_bytes(), f
    sa, sc = _summary(a), _summary(c)
    assert sa["trace_sha256"] == sc["trace_sha256"]
    for key in ("jobs", "executions", "failures", "duplicate_executions", "acquisition",
                "polls", "invariants", "crash_recovery", "completions", "named"):
        assert sa[key] == sc[key], key
    for node, f in sa["nodes"].items():
        for key in ("acquire_attempts", "even_share", "longest_idle_wait",
                    "idle_while_work_waited", "threads", "executions_after_restart"):
            assert sc["nodes"][node][key] == f[key], (node, key)
    assert sc["latency"]["start_delay"]["n"] < sa["latency"]["start_delay"]["n"]


def test_each_variant_has_its_own_window(tmp_path):
    status, out = _run(tmp_path, STEADY + "variants:\n  short: {set: {until: 6m}}\n"
                                          "  long: {}\n")
    assert status == 0
    s = _summary(out)["variants"]
    assert (s["short"]["window"]["end"], s["long"]["window"]["end"]) == (300.0, 420.0)
    assert s["short"]["window"]["jobs_counted"] < s["long"]["window"]["jobs_counted"]
    report = (out / "report.md").read_text(encoding="utf-8")
    for name in ("short", "long"):
        assert f"> **Window ({name}):** Statistics leave out the first 2 min" in report


def test_a_windowed_report_is_the_same_bytes_twice(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    _, a = _run(tmp_path / "one", STEADY)
    _, b = _run(tmp_path / "two", STEADY)
    for f in ("summary.json", "report.md"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f


def test_the_flags_win_over_the_file_and_are_told_as_overrides(tmp_path, capsys):
    status, out = _run(tmp_path, STEADY, "--warmup", "3m")
    assert status == 0
    s = _summary(out)
    assert (s["window"]["warmup"], s["window"]["cooldown"]) == (180.0, 60.0)  # file's cooldown
    assert s["overrides"] == ["--warmup 3m"]
    copy = yaml.safe_load((out / "scenario.yaml").read_text(encoding="utf-8"))
    assert (copy["warmup"], copy["cooldown"]) == ("3m", "1m")
    assert "window       " in capsys.readouterr().out
    # the copy the run wrote gives the same figures
    _, again = _run(tmp_path, (out / "scenario.yaml").read_text(encoding="utf-8"),
                    name="again")
    assert _summary(again)["latency"] == s["latency"]
    plain = STEADY.replace("warmup: 2m\ncooldown: 1m\n", "")
    _, flags = _run(tmp_path, plain, "--warmup", "2m", "--cooldown", "60s", name="flags")
    _, filed = _run(tmp_path, STEADY, name="filed")
    for key in ("latency", "nodes", "throughput_per_s", "window"):
        assert _summary(flags)[key] == _summary(filed)[key], key


def test_a_sweep_leaves_the_same_window_out_of_each_run(tmp_path, capsys):
    f = tmp_path / "steady.yaml"
    f.write_text(STEADY.replace("warmup: 2m\ncooldown: 1m\n", ""), encoding="utf-8")
    assert cli.main(["sweep", str(f), "--grid", "executor.threads=1,2", "--replications", "2",
                     "--workers", "1", "--warmup", "2m", "--cooldown", "1m",
                     "--out", str(tmp_path / "sw")]) == 0
    rows = pd.read_csv(tmp_path / "sw" / "runs.csv")
    assert len(rows) == 4 and (rows["window.warmup"] == 120.0).all()
    assert (rows["window.cooldown"] == 60.0).all()
    assert "--set warmup=2m --set cooldown=1m" in \
        (tmp_path / "sw" / "sweep.md").read_text(encoding="utf-8")
    for i, r in rows.iterrows():  # each row is the run with the window in the file
        _, one = _run(tmp_path, STEADY, "--seed", str(r["seed"]), "--set",
                      f"executor.threads={r['executor.threads']}", name=f"one-{i}")
        s = _summary(one)
        assert r["latency.start_delay.mean"] == pytest.approx(s["latency"]["start_delay"]["mean"])
        assert r["window.jobs_counted"] == s["window"]["jobs_counted"]
        assert r["nodes.node-1.busy_share"] == pytest.approx(s["nodes"]["node-1"]["busy_share"])


BAD_FILES = [
    ("warmup: 9m", "warmup: expected a warm-up and a cool-down that together leave part of "
                   "the run (until: 8 min) (got warmup 9 min + cooldown 1 min)"),
    ("cooldown: 8m\nwarmup: 0s", "cooldown: expected a warm-up and a cool-down that together "
                                 "leave part of the run (until: 8 min)"),
    ("warmup: -5s", "warmup: expected a duration that is not negative (got '-5s')"),
    ("warmup: 5", "warmup: expected a duration with a unit (a bare number is ambiguous)"),
    ("warmup: [1m]", "warmup: expected a duration with a unit, like 250ms"),
    ("warmup: true", "warmup: expected a duration with a unit, like 250ms"),
]


@pytest.mark.parametrize("line,said", BAD_FILES)
def test_a_bad_window_in_the_file_is_refused_before_any_run(tmp_path, capsys, line, said):
    text = STEADY.replace("warmup: 2m\ncooldown: 1m", "cooldown: 1m\n" + line) \
        if not line.startswith("cooldown") else STEADY.replace("warmup: 2m\ncooldown: 1m", line)
    for command in ("run", "validate"):
        status, out = _run(tmp_path, text) if command == "run" else (
            cli.main(["validate", str(tmp_path / "out.yaml")]), None)
        err = capsys.readouterr()
        assert status == 2, command
        assert said in err.err + err.out and "out.yaml: " in err.err + err.out
        assert "Traceback" not in err.err
        assert out is None or not out.exists()


def test_a_drained_runs_window_is_held_to_its_horizon_and_a_variants_to_its_until(
        tmp_path, capsys):
    drained = STEADY.replace("until: 8m", "until: drained\nhorizon: 3m")
    assert _run(tmp_path, drained)[0] == 2
    assert "(until: drained, by its horizon: 3 min)" in capsys.readouterr().err
    variant = STEADY + "variants:\n  short: {set: {until: 2m}}\n  long: {}\n"
    assert _run(tmp_path, variant)[0] == 2
    assert "variants.short → warmup: expected a warm-up" in capsys.readouterr().err


@pytest.mark.parametrize("flags,said", [
    (["--warmup=-1m"], "argument --warmup: expected a duration that is not negative"),
    (["--cooldown", "abc"], "argument --cooldown: expected a duration with a unit"),
    (["--warmup", "30"], "argument --warmup: expected a duration with a unit"),
    (["--warmup", "7m"], "--warmup: expected a warm-up and a cool-down that together leave "
                         "part of the run (until: 8 min) (got --warmup 7 min + cooldown 1 min)"),
    (["--warmup", "4m", "--cooldown", "4m"], "--warmup: expected a warm-up and a cool-down "
                                             "that together leave part of the run"),
])
def test_a_bad_flag_is_refused_naming_it(tmp_path, capsys, flags, said):
    for command in ("run", "sweep"):
        f = tmp_path / "s.yaml"
        f.write_text(STEADY, encoding="utf-8")
        extra = ["--grid", "nodes=1,2", "--workers", "1"] if command == "sweep" else ["--quiet"]
        assert cli.main([command, str(f), "--out", str(tmp_path / "o"), *extra, *flags]) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, command
        assert not (tmp_path / "o").exists()


def test_a_window_the_run_never_reached_is_said_not_a_crash(tmp_path, capsys):
    text = """
name: short
nodes: 1
warmup: 1m
handlers: {w: {duration: 1s}}
workload: {jobs: [{handler: w}, {handler: w, at: 2s}]}
"""
    status, out = _run(tmp_path, text)
    assert status == 0
    s = _summary(out)
    assert s["drained"] and s["end_time"] < 60
    assert s["window"]["empty"] and s["window"]["jobs_counted"] == 0
    assert s["latency"]["start_delay"] == {"n": 0} and s["throughput_per_s"] == 0.0
    assert s["nodes"]["node-1"]["busy_share"] is None
    assert s["jobs"]["done"] == 2  # the correctness counts are the whole run's
    assert "NaN" not in (out / "summary.json").read_text(encoding="utf-8")
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "nothing is left between them, so no job counted" in report
    assert "window       empty: the run ended at" in capsys.readouterr().out
    # a window that is reached but in which no job is due says that instead
    _, late = _run(tmp_path, text.replace("nodes: 1", "nodes: 1\nuntil: 10m"), name="late")
    assert _summary(late)["window"]["jobs_counted"] == 0
    assert "no job was due from 1 min to 10 min, so none counted" in \
        (late / "report.md").read_text(encoding="utf-8")


def test_an_expectation_may_name_the_window_and_windowed_figures():
    sc = loads(STEADY + "expect:\n  window.jobs_counted: '> 0'\n"
               "  latency.start_delay.p50: '< 10s'\n")
    from jobsim.output.report import analyse
    from jobsim.sim.world import run

    a = analyse(run(sc))
    assert [v.ok for v in a.verdicts] == [True, True]
    assert a.summary["window"]["jobs_counted"] > 0
