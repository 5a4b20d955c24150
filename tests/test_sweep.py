"""jobsim sweep: the grid × replications, common random numbers, tables, plots, the cache,
failed runs, replicate-until-precise, and the same rows on a Dask cluster; and its safety: a
folder of the user's is refused, a damaged cache entry is computed again, workers end with
the sweep, a bad Dask address and an absurd sweep are refused at once."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from jobsim import cli
from jobsim.base import outdir
from jobsim.base import progress as progress_mod
from jobsim.tools import sweep as sweep_mod
from jobsim.tools.sweep import cache as sweep_cache
from jobsim.tools.sweep import runs as sweep_runs
from jobsim.base.errors import ScenarioError
from jobsim.tools.sweep import parse_grid, replication_seed, sweep

ROOT = Path(__file__).resolve().parent.parent
LOCK_EXPIRY = ROOT / "scenarios" / "lock_expiry.yaml"

SMALL = """
name: small
seed: 3
until: drained
executor: {poll_interval: 1s, lock_time: 30s}
nodes: 2
handlers:
  w: {duration: {exponential: {mean: 2s}}, outcome: {fail_rate: 0.1}}
workload:
  streams: [{name: s, handler: w, count: 40, rate: 2/s}]
"""


def small_doc():
    return yaml.safe_load(SMALL)


def test_replication_seeds_are_the_same_at_every_point_and_differ_between_replications():
    r = sweep(small_doc(), parse_grid(["executor.lock_time=5s,30s", "nodes=1,2"]), 3)
    seeds = r.rows.pivot(index="replication", columns="point", values="seed")
    assert (seeds.nunique(axis=1) == 1).all()  # common random numbers
    assert seeds[0].nunique() == 3
    assert seeds[0].tolist() == [replication_seed(3, i) for i in range(3)]
    # the workload is the same random stream at every point: the same arrivals
    assert r.rows.groupby("replication")["jobs.created"].nunique().eq(1).all()


@pytest.mark.slow  # 39 CPU s: 80 runs three ways, one on Dask
def test_the_lock_expiry_sweep_in_parallel_and_on_dask_gives_identical_rows(
        tmp_path, dask_scheduler):
    """Acceptance: 4 lock times × 20 replications on 2 worker processes, the tables and a
    plot of duplicate executions against lock time with confidence bands; the same sweep on
    a Dask LocalCluster gives the same rows."""
    doc = yaml.safe_load(LOCK_EXPIRY.read_text(encoding="utf-8"))
    axes = parse_grid(["executor.lock_time=10s,30s,2m,10m"])
    figure = "duplicate_executions.by_cause.lock_expired"
    local = sweep(doc, axes, 20, source=str(LOCK_EXPIRY), workers=2, out=tmp_path / "local",
                  plot=[figure])
    assert local.computed == 80 and (local.rows["ok"]).all()
    for name in ("runs.csv", "runs.parquet", "points.csv", "sweep.md",
                 "sweep_duplicate_executions_by_cause_lock_expired.png"):
        assert (tmp_path / "local" / name).stat().st_size > 0
    pts = local.points.set_index("executor.lock_time")
    # shorter locks, more double runs from lock expiry; a long lock, none
    assert pts.loc["10s", figure] > pts.loc["30s", figure] > pts.loc["2m", figure] >= \
        pts.loc["10m", figure]
    assert pts.loc["30s", figure + ".lo"] <= pts.loc["30s", figure] <= \
        pts.loc["30s", figure + ".hi"]
    parquet = pd.read_parquet(tmp_path / "local" / "runs.parquet")
    assert len(parquet) == 80 and parquet["trace_sha256"].tolist() == \
        local.rows["trace_sha256"].tolist()
    on_dask = sweep(doc, axes, 20, source=str(LOCK_EXPIRY), dask=dask_scheduler,
                    out=tmp_path / "dask")
    assert on_dask.computed == 80
    pd.testing.assert_frame_equal(local.rows, on_dask.rows)


def test_an_interrupted_sweep_run_again_computes_only_the_missing_runs(tmp_path):
    axes = parse_grid(["executor.lock_time=5s,30s"])
    seen = []

    def stop_after_five(done, total):
        seen.append(done)
        if done == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(small_doc(), axes, 6, out=tmp_path, progress=stop_after_five)
    again = sweep(small_doc(), axes, 6, out=tmp_path)
    assert (again.computed, again.cached) == (12 - 5, 5)
    full = sweep(small_doc(), axes, 6)  # no cache: everything computed
    pd.testing.assert_frame_equal(again.rows, full.rows)


def test_a_run_that_fails_is_recorded_and_the_sweep_goes_on(monkeypatch):
    real = sweep_runs.run

    def flaky(sc, **kwargs):
        if sc.seed == replication_seed(3, 1):
            raise RuntimeError("boom in the model")
        return real(sc, **kwargs)

    monkeypatch.setattr(sweep_runs, "run", flaky)
    r = sweep(small_doc(), parse_grid(["nodes=1,2"]), 3)
    failed = r.rows[~r.rows["ok"]]
    assert failed["replication"].tolist() == [1, 1]
    assert failed["error"].str.contains("RuntimeError: boom in the model").all()
    assert r.points["failed_runs"].tolist() == [1, 1] and r.rows["ok"].sum() == 4


def test_replicate_until_the_confidence_interval_is_narrow_enough():
    figure = "jobs.created"  # the same in every replication: precise at once
    r = sweep(small_doc(), parse_grid(["nodes=1,2"]), 50, precision=(figure, 0.05))
    assert r.points["runs"].tolist() == [3, 3]
    noisy = "latency.start_delay.max"
    r = sweep(small_doc(), parse_grid(["nodes=1,2"]), 12, precision=(noisy, 0.001))
    assert r.points["runs"].tolist() == [12, 12]  # never that precise: the cap


def test_the_cli_sweeps_with_the_files_own_grid_and_refuses_bad_input(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    doc = small_doc()
    doc["sweep"] = {"grid": {"executor.lock_time": ["5s", "30s"]}, "replications": 2,
                    "plot": ["duplicate_executions.total"]}
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert cli.main(["sweep", str(f), "--workers", "1", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "4 runs over 2 grid points" in out and "duplicate_executions.total" in out
    assert (tmp_path / "o" / "sweep_duplicate_executions_total.png").exists()
    for bad in (["--grid", "executor.lock_tme=1s"], ["--grid", "executor.lock_time=1s,-3s"],
                ["--grid", "nodes"], ["--plot", "no.such"], ["--precision", "jobs.done"]):
        assert cli.main(["sweep", str(f), "--out", str(tmp_path / "bad")] + bad) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "expected" in err
    assert not (tmp_path / "bad").exists()  # nothing half-written


def test_a_figure_is_refused_where_it_was_written_with_the_nearest_figure(tmp_path, capsys):
    """A --plot typo is the command line's, not the file's; a typo in the file's own
    sweep.plot is named by its dotted path (it was labelled --plot); both suggest the key
    meant."""
    f = tmp_path / "s.yaml"
    doc = small_doc()
    doc["sweep"] = {"grid": {"executor.lock_time": ["5s", "30s"]},
                    "plot": ["duplicate_executions.total", "latency.start_dealy.p50"]}
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert cli.main(["sweep", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"1 problem(s) in {f}:" in err, err
    assert (f"{f}: sweep.plot[1]: expected a figure of the summary: one of start_delay, "
            "end_to_end, by_priority (got 'latency.start_dealy.p50'); did you mean "
            "'start_delay'?") in err, err
    assert cli.main(["sweep", str(f), "--out", str(tmp_path / "o"), "--plot",
                     "latency.end_to_edn.p99"]) == 2
    err = capsys.readouterr().err
    assert f"1 problem(s) on the command line (for {f}):\n--plot: expected" in err, err
    assert "did you mean 'end_to_end'?" in err
    assert not (tmp_path / "o").exists()


def test_reserved_or_repeated_axes_are_refused(capsys, tmp_path):
    """Review findings: a seed axis crashed the tables; a repeated value dropped a point."""
    f = tmp_path / "s.yaml"
    f.write_text(SMALL, encoding="utf-8")
    for grid in ("seed=1,2", "nodes=2,2", "replication=1"):
        assert cli.main(["sweep", str(f), "--grid", grid, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "expected" in err
    assert not (tmp_path / "o").exists()


# --- the sweep folder is safe for the user's files ------------------------------------------

LINUX = sys.platform.startswith("linux")


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``folder``, hidden ones too."""
    out: dict[str, bytes | None] = {}
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            out[str(Path(root, d).relative_to(folder))] = None
        for f in files:
            out[str(Path(root, f).relative_to(folder))] = Path(root, f).read_bytes()
    return out


def _small_file(tmp_path: Path) -> Path:
    f = tmp_path / "small.yaml"
    f.write_text(SMALL, encoding="utf-8")
    return f


def _count_runs(monkeypatch) -> list:
    calls: list = []
    real = sweep_runs.run

    def counted(sc):
        calls.append(sc.seed)
        return real(sc)

    monkeypatch.setattr(sweep_runs, "run", counted)
    return calls


def test_a_folder_of_the_users_is_refused_before_any_run_and_left_byte_identical(
        tmp_path, capsys, monkeypatch):
    f = _small_file(tmp_path)
    mine = tmp_path / "mine"
    (mine / "cache").mkdir(parents=True)
    (mine / "runs.csv").write_bytes(b"my,own,runs\n1,2,3\n")
    (mine / "points.csv").write_bytes(b"x,y\n0,0\n")
    (mine / "sweep.md").write_bytes(b"# my notes on the sweep\n")
    (mine / "thesis.tex").write_bytes(b"\\documentclass{article}\n")
    (mine / "cache" / "keep.json").write_bytes(b'{"mine": true}')
    before = _snapshot(mine)
    calls = _count_runs(monkeypatch)
    argv = ["sweep", str(f), "--grid", "nodes=1,2", "--replications", "2", "--workers", "1"]
    assert cli.main(argv + ["--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jobsim: refusing to write into") and str(mine) in err
    assert "not empty" in err and "Traceback" not in err
    assert _snapshot(mine) == before and calls == []  # refused before any run
    # the library refuses too, with outdir.OutputError, before any run
    with pytest.raises(outdir.OutputError):
        sweep(small_doc(), parse_grid(["nodes=1,2"]), 2, out=mine)
    assert _snapshot(mine) == before and calls == []


def test_the_working_folder_and_its_parents_are_refused(tmp_path, capsys, monkeypatch):
    f = _small_file(tmp_path)
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    calls = _count_runs(monkeypatch)
    before = _snapshot(tmp_path)
    for out in (".", "..", str(work)):
        assert cli.main(["sweep", str(f), "--grid", "nodes=1", "--replications", "1",
                         "--workers", "1", "--out", out]) == 2
        err = capsys.readouterr().err
        assert err.startswith("jobsim: refusing") and "working folder" in err
        assert "Traceback" not in err
    assert _snapshot(tmp_path) == before and calls == []


def test_a_second_sweep_replaces_its_own_files_and_keeps_the_users(tmp_path, capsys):
    f = _small_file(tmp_path)
    out = tmp_path / "o"
    base = ["sweep", str(f), "--replications", "2", "--workers", "1", "--out", str(out)]
    assert cli.main(base + ["--grid", "nodes=1,2", "--plot", "jobs.done"]) == 0
    assert "nodes" in (out / "runs.csv").read_text()
    manifest = json.loads((out / outdir.MANIFEST).read_text())
    assert manifest["kind"] == "sweep" and manifest["dirs"] == ["cache"]
    assert {"runs.csv", "runs.parquet", "points.csv", "sweep.md",
            "sweep_jobs_done.png"} <= set(manifest["files"])
    (out / "notes.txt").write_text("my notes", encoding="utf-8")
    capsys.readouterr()
    # another grid: its own files are replaced (and the cache grows); the notes stay
    assert cli.main(base + ["--grid", "executor.lock_time=5s,30s,1m"]) == 0
    assert "6 runs over 3 grid points (6 computed, 0 from the cache)" in \
        capsys.readouterr().out
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 6 and "executor.lock_time" in runs and "nodes" not in runs
    assert (out / "notes.txt").read_text(encoding="utf-8") == "my notes"
    assert "notes.txt" not in json.loads((out / outdir.MANIFEST).read_text())["files"]
    assert len(list((out / "cache").glob("*.json"))) == 4 + 6
    # a file jobsim wrote that the user then edited is theirs now: refused, kept
    (out / "sweep.md").write_text("edited by me", encoding="utf-8")
    before = _snapshot(out)
    assert cli.main(base + ["--grid", "nodes=1,2"]) == 2
    err = capsys.readouterr().err
    assert "sweep.md changed since jobsim wrote it" in err and "Traceback" not in err
    assert _snapshot(out) == before


# --- a cache that is checked -----------------------------------------------------------------

def test_the_model_version_is_derived_from_the_code(tmp_path):
    assert not hasattr(sweep_mod, "CACHE_VERSION")  # no hand-bumped constant
    v = sweep_mod.model_version()
    assert len(v) == 64 and int(v, 16) >= 0 and sweep_mod.model_version() == v
    assert sweep_mod.model_version.cache_info().misses == 1  # once per process
    pkg = tmp_path / "jobsim"
    shutil.copytree(ROOT / "jobsim", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    h0 = sweep_mod.code_hash(pkg)
    plots = pkg / "output" / "plots"
    plots = plots / "__init__.py" if plots.is_dir() else plots.with_suffix(".py")
    for made_no_row in (pkg / "__main__.py", plots):
        made_no_row.write_text("# the command line or the figures changed\n",
                               encoding="utf-8")
    assert sweep_mod.code_hash(pkg) == h0  # they make no row
    for layer in ("executor", "database", "sim", "analysis", "format", "base"):
        before = sweep_mod.code_hash(pkg)
        module = sorted((pkg / layer).rglob("*.py"))[-1]
        with open(module, "a", encoding="utf-8") as fh:
            fh.write("\n# one byte of the model\n")
        assert sweep_mod.code_hash(pkg) != before, f"a change in {layer}/ is not seen"
    assert sweep_mod.code_hash(pkg) != h0


def _entries(out: Path) -> list[Path]:
    return sorted((out / "cache").glob("*.json"))


def _entry(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _tampered(change):
    def write(path: Path) -> None:
        entry = _entry(path)
        change(entry)
        path.write_text(json.dumps(entry), encoding="utf-8")
    return write


def _consistent(change):
    """Change the row and store the new row's checksum: a row that checks, wrongly shaped."""
    def edit(entry):
        change(entry["row"])
        entry["row_sha256"] = sweep_mod.row_sha256(entry["row"])
    return _tampered(edit)


def _text(text):
    return lambda path: path.write_text(text, encoding="utf-8")


def _to_dir(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _to_symlink(path: Path) -> None:
    target = path.parent.parent / "elsewhere.json"
    target.write_bytes(path.read_bytes())  # even the very same bytes: not followed
    path.unlink()
    path.symlink_to(target)


def _nan_row(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    entry = _entry(path)
    fig = next(k for k, v in entry["row"].items() if isinstance(v, float))
    path.write_text(text.replace(f'"{fig}": {json.dumps(entry["row"][fig])}',
                                 f'"{fig}": NaN'), encoding="utf-8")


BAD_ENTRIES = {
    "a number": _text("42"),
    "a list": _text("[]"),
    "an empty object": _text("{}"),
    "a string": _text('"text"'),
    "NaN": _text("NaN"),
    "empty": _text(""),
    "not UTF-8": lambda p: p.write_bytes(b"\xff\xfe\x00garbage"),
    "deeply nested": _text("[" * 100_000),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "wrong figures": _tampered(lambda e: e["row"].update(
        {"jobs.created": e["row"]["jobs.created"] + 1})),
    "a NaN figure": _nan_row,
    "wrong version": _tampered(lambda e: e.update(model="0" * 64)),
    "another scenario": _tampered(lambda e: e.update(scenario="0" * 64)),
    "other overrides": _tampered(lambda e: e.update(overrides=[["nodes", 7]])),
    "another seed": _tampered(lambda e: e.update(seed=e["seed"] + 1)),
    "a bool seed": _tampered(lambda e: e.update(seed=True)),
    "a missing key": _tampered(lambda e: e.pop("row_sha256")),
    "an extra key": _tampered(lambda e: e.update(extra=1)),
    "a bare row (the old format)": _tampered(lambda e: (e.update(e["row"]), [
        e.pop(k) for k in sweep_mod.ENTRY_KEYS])),
    "a row that is a list": _tampered(
        lambda e: e.update(row=[1, 2], row_sha256=sweep_mod.row_sha256([1, 2]))),
    "ok as text": _consistent(lambda r: r.update(ok="yes")),
    "a failed run": _consistent(lambda r: r.update(ok=False, error="boom")),
    "a seed as text": _consistent(lambda r: r.update(seed=str(r["seed"]))),
    "a figure as a list": _consistent(lambda r: r.update({"jobs.done": [1]})),
    "a missing column": _consistent(lambda r: r.pop("trace_sha256")),
    "a point column": _consistent(lambda r: r.update(point=99)),
    "an axis column": _consistent(lambda r: r.update(nodes=99)),
    "a huge file": _text('{"x": "' + "x" * (2 << 20) + '"}'),
    "a folder": _to_dir,
    "a symbolic link": _to_symlink,
}


def test_every_damaged_or_stale_cache_entry_is_computed_again(tmp_path):
    axes = parse_grid(["nodes=1,2"])
    fresh = sweep(small_doc(), axes, 2)  # no cache
    out = tmp_path / "o"
    first = sweep(small_doc(), axes, 2, out=out)
    assert (first.computed, first.cached, first.recomputed) == (4, 0, 0)
    pd.testing.assert_frame_equal(first.rows, fresh.rows)
    entry = _entry(_entries(out)[0])
    assert set(entry) == sweep_mod.ENTRY_KEYS and entry["model"] == sweep_mod.model_version()
    assert entry["row_sha256"] == sweep_mod.row_sha256(entry["row"])
    again = sweep(small_doc(), axes, 2, out=out)
    assert (again.computed, again.cached, again.recomputed) == (0, 4, 0)
    for name, damage in BAD_ENTRIES.items():
        victim = _entries(out)[1]
        damage(victim)
        r = sweep(small_doc(), axes, 2, out=out)
        assert (r.computed, r.cached, r.recomputed) == (1, 3, 1), name
        pd.testing.assert_frame_equal(r.rows, fresh.rows, obj=name)
        if victim.is_dir():  # a folder in the way is left alone: computed every time
            victim.rmdir()
            assert sweep(small_doc(), axes, 2, out=out).computed == 1
        else:  # rewritten: a good entry again
            assert victim.is_file() and not victim.is_symlink(), name
            assert sweep_mod.check_entry(_entry(victim), entry["scenario"],
                                         tuple((o[0], o[1]) for o in _entry(victim)[
                                             "overrides"]), _entry(victim)["seed"],
                                         ["nodes"]) is not None, name
    assert not list((out / "cache").glob(".*.tmp"))


def test_entries_from_other_code_are_stale_and_replaced(tmp_path, monkeypatch):
    axes = parse_grid(["nodes=1,2"])
    out = tmp_path / "o"
    sweep(small_doc(), axes, 2, out=out)
    monkeypatch.setattr(sweep_cache, "model_version", lambda: "f" * 64)  # the code changed
    r = sweep(small_doc(), axes, 2, out=out)
    assert (r.computed, r.cached, r.recomputed) == (4, 0, 4)
    assert len(_entries(out)) == 4  # replaced, not added beside
    assert {_entry(p)["model"] for p in _entries(out)} == {"f" * 64}
    r = sweep(small_doc(), axes, 2, out=out)
    assert (r.computed, r.cached, r.recomputed) == (0, 4, 0)


def test_the_cli_says_how_many_cache_entries_were_computed_again(tmp_path, capsys):
    f = _small_file(tmp_path)
    out = tmp_path / "o"
    argv = ["sweep", str(f), "--grid", "nodes=1,2", "--replications", "3", "--workers", "1",
            "--out", str(out)]
    assert cli.main(argv) == 0
    capsys.readouterr()
    for path, damage in zip(_entries(out), (_text("42"), _text("{}"),
                                            BAD_ENTRIES["wrong figures"])):
        damage(path)
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "jobsim: 3 cache entries were damaged or stale and were computed again" in \
        captured.err
    assert "(3 computed, 3 from the cache)" in captured.out
    assert "3 cache entries were damaged or stale" in (out / "sweep.md").read_text()
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "damaged" not in captured.err and "(0 computed, 6 from the cache)" in captured.out


# --- worker processes end with their parent ----------------------------------------------------

def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, start time) of a process, None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19])


def _children(pid: int) -> dict[int, int]:
    """The children of ``pid`` (found by scanning /proc for their ppid) → their start time."""
    kids = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _stat(int(d.name))
            if st is not None and st[1] == pid:
                kids[int(d.name)] = st[2]
    return kids


def _alive(pid: int, start: int) -> bool:
    st = _stat(pid)  # a zombie (waiting for init to reap it) has ended
    return st is not None and st[2] == start and st[0] not in ("Z", "X")


LONG_SWEEP = ["sweep", str(LOCK_EXPIRY), "--grid", "executor.lock_time=10s,30s",
              "--replications", "400", "--workers", "2"]
LONG_SWEEP_RUNS = 800
#: how long a wait for an event (a worker started, a run cached, a process gone) may last
#: before the test calls it stuck: never a verdict on speed, so generous for a busy machine
STUCK = 120.0


def _wait_for(what: str, done, proc=None) -> None:
    """Poll ``done()`` until it holds; fail, naming ``what``, if it has not after STUCK
    seconds (or once ``proc`` has ended)."""
    deadline = time.monotonic() + STUCK
    while not done():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the sweep ended (exit {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"stuck: no {what} after {STUCK:.0f} s")
        time.sleep(0.05)


def _start_long_sweep(tmp_path: Path, prelude: str = ""):
    """``jobsim sweep`` in a child process, once both its workers are running and the
    sweep has cached a finished run (it is in the middle of its runs: not a guess from the
    time that passed, which a busy machine stretches)."""
    code = prelude + "from jobsim.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"
    err = open(tmp_path / "err.txt", "w+", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-c", "import sys\n" + code] + LONG_SWEEP +
                            ["--out", str(tmp_path / "o")], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=err,
                            env={**os.environ, "JOBSIM_PROGRESS": "0"})
    kids: dict[int, int] = {}

    def started() -> bool:
        nonlocal kids
        kids = _children(proc.pid)
        return len(kids) >= 2

    try:
        _wait_for("2 workers started", started, proc)
        _wait_for("run cached", lambda: _entries(tmp_path / "o"), proc)
    except BaseException:
        proc.kill()
        proc.wait()
        print(_read(err))
        raise
    assert proc.poll() is None and all(_alive(p, s) for p, s in kids.items())
    return proc, kids, err


def _read(fh) -> str:
    fh.flush()
    fh.seek(0)
    return fh.read()


def _gone(kids: dict[int, int]) -> list[int]:
    """Wait for the processes ``kids`` to end; those still alive after STUCK seconds."""
    deadline = time.monotonic() + STUCK
    while time.monotonic() < deadline:
        left = [p for p, s in kids.items() if _alive(p, s)]
        if not left:
            return []
        time.sleep(0.05)
    left = [p for p, s in kids.items() if _alive(p, s)]
    for p in left:  # do not leave them to the next test
        os.kill(p, signal.SIGKILL)
    return left


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_killing_the_sweep_kills_its_workers(tmp_path):
    proc, kids, err = _start_long_sweep(tmp_path)
    proc.send_signal(signal.SIGKILL)  # nothing of ours runs: the kernel must do it
    assert proc.wait(STUCK) == -signal.SIGKILL
    assert _gone(kids) == []


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_without_pdeathsig_the_workers_watchdog_ends_them(tmp_path):
    """The fallback for other platforms: each worker's thread watching its parent's pid."""
    proc, kids, err = _start_long_sweep(
        tmp_path, "import jobsim.tools.sweep.pool as s\ns.die_with_parent = lambda: False\n")
    proc.send_signal(signal.SIGKILL)
    proc.wait(STUCK)
    assert _gone(kids) == []


def test_the_watchdog_acts_when_the_parent_changes():
    seen = []
    sweep_mod.watch_parent(os.getppid() + 10**7, interval=0.01, on_orphan=seen.append)
    assert seen == [1]


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_sigterm_stops_the_sweep_cleanly(tmp_path):
    """SIGTERM once a run is cached (an event, not a time: a busy machine once had nothing
    cached after a fixed wait): exit 2 with one line, no traceback, the workers gone, the
    sweep stopped short of its runs, and what finished cached whole."""
    proc, kids, err = _start_long_sweep(tmp_path)
    proc.send_signal(signal.SIGTERM)  # as a CI timeout does
    assert proc.wait(STUCK) == 128 + signal.SIGTERM
    text = _read(err)
    assert "jobsim: stopped by SIGTERM; the sweep's worker processes ended" in text
    assert "Traceback" not in text
    assert _gone(kids) == []
    # what finished is cached, and only finished runs: every entry checks
    entries = _entries(tmp_path / "o")
    assert 0 < len(entries) < LONG_SWEEP_RUNS  # stopped, not finished
    assert all(set(_entry(p)) == sweep_mod.ENTRY_KEYS and _entry(p)["row_sha256"]
                           == sweep_mod.row_sha256(_entry(p)["row"]) for p in entries)
    assert not list((tmp_path / "o" / "cache").glob(".*.tmp"))


# --- Dask addresses ----------------------------------------------------------------------------

def test_dask_addresses_are_checked_before_connecting():
    for good in ("tcp://127.0.0.1:8786", "tls://scheduler.example.org:8786", "ucx://h:1",
                 "ws://h:8786", "inproc://10.0.0.1/1234/1", "localhost:8786",
                 "tcp://[::1]:8786"):
        sweep_mod.check_dask_address(good)
    for bad in ("garbage://x", "tcp://host", "host", "tcp://h:0", "tcp://h:99999", "",
                "tcp://h:8786 extra", "tcp://:8786", "http://h:8786", None, 8786):
        with pytest.raises(ScenarioError, match="--dask"):
            sweep_mod.check_dask_address(bad)


def test_a_scheduler_that_is_not_there_is_a_clear_error(tmp_path, capsys, monkeypatch):
    """A refused connection is the answer at once: Dask's client, which would wait out its
    30 s timeout, is never made (held directly, not by the time it took)."""
    distributed = pytest.importorskip("distributed")

    def no_client(*args, **kwargs):
        raise AssertionError("a Client was made: the refusal would wait out its timeout")

    monkeypatch.setattr(distributed, "Client", no_client)
    f = _small_file(tmp_path)
    with socket.socket() as s:  # a port of ours nobody listens on: it refuses connections
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert cli.main(["sweep", str(f), "--grid", "nodes=1,2", "--dask",
                         f"tcp://127.0.0.1:{port}", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"jobsim: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


# --- bounds --------------------------------------------------------------------------------------

def _values(n: int) -> str:
    return ",".join(str(i) for i in range(1, n + 1))


def _bounded_file(tmp_path: Path, name: str, grid: dict, replications: int) -> str:
    doc = small_doc()
    doc["sweep"] = {"grid": grid, "replications": replications}
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(f)


#: runs a command and reports its exit status, CPU seconds (user + system) and peak RSS (kB):
#: from a small process, since a child's peak RSS counts the memory of the process that
#: forked it. CPU time, unlike wall time, does not grow with the machine's other work; the
#: timeout only ends a child that is stuck.
_MEASURE = """import resource, subprocess, sys
with open(sys.argv[1] + ".err", "w") as err:
    rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=err,
                        timeout=120).returncode
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{rc} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}")
"""


def _measured(argv: list[str], cwd: Path) -> tuple[int, float, float, str]:
    """Run ``jobsim`` as a child: (exit status, CPU seconds, peak RSS in MB, stderr)."""
    report = cwd / "measured.txt"
    subprocess.run([sys.executable, "-S", "-c", _MEASURE, str(report), sys.executable, "-m",
                    "jobsim"] + argv, cwd=cwd, check=True, timeout=180)
    rc, seconds, peak = report.read_text().split()
    rss_mb = int(peak) / 1024 if LINUX else int(peak) / 2**20
    err = Path(str(report) + ".err").read_text(encoding="utf-8")
    return int(rc), float(seconds), rss_mb, err


@pytest.mark.slow  # 17 CPU s: 9 children starting Python and jobsim
def test_absurd_sweeps_are_refused_at_once_in_little_memory(tmp_path):
    three_axes = {"executor.lock_time": [f"{i}s" for i in range(1, 1001)],
                  "executor.poll_interval": [f"{i}ms" for i in range(1, 1001)],
                  "executor.batch_size": list(range(1, 1001))}
    cases = {
        "--replications 100000000": (
            ["--grid", "nodes=1,2", "--replications", "100000000"],
            ["--replications", "at most 100,000", "100,000,000"]),
        "--grid of 10^9 points": (
            ["--grid", f"executor.batch_size={_values(1000)}",
             "--grid", f"nodes={_values(1000)}",
             "--grid", "executor.lock_time=" + ",".join(f"{i}s" for i in range(1, 1001))],
            ["100,000 runs", "10,000,000,000 runs = 1,000,000,000 grid points",
             "executor.batch_size: 1,000 values × nodes: 1,000 values", "× 10 replications",
             "fewer values per axis"]),
        "sweep: 3 × 1,000 values": (
            [_bounded_file(tmp_path, "three_axes", three_axes, 10)],
            ["1,000,000,000 grid points", "executor.poll_interval: 1,000 values"]),
        "sweep: 1,000 values × 1,000 replications": (
            [_bounded_file(tmp_path, "many_reps", {"nodes": list(range(1, 1001))}, 1000)],
            ["1,000,000 runs = 1,000 grid points (nodes: 1,000 values) × 1,000 replications",
             "fewer replications"]),
        "one run over the bound": (
            ["--grid", f"nodes={_values(1000)}", "--replications", "101"],
            ["101,000 runs"]),
        "--grid of 15,000 values": (  # about the longest argument Linux passes (128 kB)
            ["--grid", f"nodes={_values(15_000)}"],
            ["at most 1,000 values per axis (got 15,000 values)"]),
        "--workers 100000": (
            ["--grid", "nodes=1,2", "--workers", "100000"],
            ["at most 512 worker processes"]),
        "--dask garbage://x": (
            ["--grid", "nodes=1,2", "--dask", "garbage://x"],
            ["--dask: expected a Dask scheduler's address"]),
    }
    small = str(_small_file(tmp_path))
    # the baseline: a valid command's child (starting Python, importing jobsim: about 2 CPU
    # seconds here); a refusal may take 3 CPU seconds more (building what it refuses takes
    # tens of seconds, or never ends)
    status, base_cpu, _, err = _measured(["validate", small], tmp_path)
    assert status == 0, err
    measured = {"(baseline) validate": round(base_cpu, 2)}
    for name, (args, says) in cases.items():
        argv = ["sweep"] + ([small] + args if not args[0].endswith(".yaml") else args)
        status, cpu, rss, err = _measured(argv + ["--out", "o"], tmp_path)
        measured[name] = (round(cpu, 2), round(rss))
        assert status == 2, (name, err)
        assert cpu < base_cpu + 3 and rss < 500, (name, cpu, base_cpu, rss)
        assert "Traceback" not in err and all(s in err for s in says), (name, err)
        assert not (tmp_path / "o").exists(), name
    print(measured)  # shown with -s: the CPU seconds and peak memory of each


def test_the_grid_is_counted_not_built():
    """10 axes of 1,000 values are 10^30 points: refused at once, nothing materialised (in
    CPU seconds of this process: a machine's other work does not count)."""
    axes = [sweep_mod.Axis(f"handlers.w.p{i}", tuple(range(1000))) for i in range(10)]
    t0 = time.process_time()
    with pytest.raises(ScenarioError, match=r"10{30}|1,000,000,000,000"):
        sweep(small_doc(), axes, 1)
    assert time.process_time() - t0 < 1
    assert sweep_mod.grid_size(axes) == 1000 ** 10
    t0 = time.process_time()  # an axis of a million values is counted before it is parsed
    with pytest.raises(ScenarioError, match="1,000,000 values"):
        parse_grid([f"nodes={_values(1_000_000)}"])
    with pytest.raises(ScenarioError, match="at most 10 axes"):
        parse_grid([f"a{i}=1" for i in range(11)])
    assert time.process_time() - t0 < 1
    assert sweep_mod.check_size(axes[:1], 100) == 100_000  # the bound itself is allowed
    with pytest.raises(ScenarioError, match="100,100 runs"):
        sweep_mod.check_size([sweep_mod.Axis("nodes", tuple(range(1001)))], 100)


# --- progress ------------------------------------------------------------------------------------

def test_the_cli_shows_progress_with_the_shared_bar(tmp_path, monkeypatch, capsys):
    events = []
    out = tmp_path / "o"

    class Recorder:
        def __init__(self, total, desc, unit="it", **kw):
            self.total = total
            events.append(("new", total, desc, unit))

        def set(self, n, postfix=None):
            events.append(("set", n))

        def stage(self, text):
            events.append(("stage", text, (out / "runs.csv").exists()))

        def close(self):
            events.append(("close",))

    monkeypatch.setattr(progress_mod, "Bar", Recorder)
    f = _small_file(tmp_path)
    assert cli.main(["sweep", str(f), "--grid", "nodes=1,2", "--replications", "2",
                     "--workers", "1", "--out", str(out)]) == 0
    assert events[0] == ("new", 4, "sweep small", "runs")
    sets = [e[1] for e in events if e[0] == "set"]
    assert sets == [0, 1, 2, 3, 4]
    # after 100 %: what comes next, before the tables are written
    assert events[-2:] == [("stage", "writing tables and plots", False), ("close",)]


def test_a_sweep_of_a_file_with_variants_says_it_runs_the_base_or_sweeps_the_one_named(
        tmp_path, capsys):
    """A sweep of the challenge ran its base run (no order of its variants') and said
    every expectation held, the variants' never checked (a newcomer)."""
    f = Path(__file__).resolve().parent.parent / "scenarios" / "challenge.yaml"
    args = ["sweep", str(f), "--grid", "executor.threads=1,4", "--replications", "2",
            "--workers", "1"]
    assert cli.main(args + ["--out", str(tmp_path / "base")]) == 0
    assert "has variants (fifo, priority, prefetch, aging, lesson, lesson-one-at-a-time); " \
           "the sweep runs its base run" in capsys.readouterr().err
    assert cli.main(args + ["--variant", "fifo", "--out", str(tmp_path / "fifo")]) == 0
    err = capsys.readouterr().err
    assert "sweep challenge_fifo" in err and "has variants" not in err
    runs = pd.read_csv(tmp_path / "fifo" / "runs.csv")
    assert (runs["named.urgent.start_delay"] > 2).all()  # the fifo variant's order: late
    assert cli.main(args + ["--variant", "fifoo", "--out", str(tmp_path / "x")]) == 2
    assert "did you mean 'fifo'" in capsys.readouterr().err


def test_a_trap_a_grid_value_sets_is_warned_before_the_sweep_with_its_points(tmp_path, capsys):
    """A newcomer swept lock_time over 30s, 1m and 5m for 20-60 s transcodes: the 30 s point
    ran 383 duplicates, and the sweep said nothing of the trap that jobsim validate --set
    executor.lock_time=30s names."""
    f = tmp_path / "crashy.yaml"
    f.write_text("""
name: crashy
seed: 1
nodes: 3
until: drained
handlers: {transcode: {duration: {uniform: {low: 20s, high: 60s}}}}
workload: {streams: [{name: videos, handler: transcode, count: 40, rate: 0.25/s}]}
""", encoding="utf-8")
    assert cli.main(["sweep", str(f), "--grid", "executor.lock_time=30s,5m", "--replications",
                     "1", "--workers", "1", "--out", str(tmp_path / "sw")]) in (0, 1)
    err = capsys.readouterr().err
    said = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert len(said) == 1 and said[0].startswith(
        f"warning: {f}: at executor.lock_time=30s: executor.lock_time: the lock (30s) is "
        f"shorter than the p99 run of 'transcode'"), said
