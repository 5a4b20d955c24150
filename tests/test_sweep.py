"""jobsim sweep: the grid × replications, common random numbers, tables, plots, the cache,
failed runs, replicate-until-precise, and the same rows on a Dask cluster."""

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml

from jobsim import cli
from jobsim import sweep as sweep_mod
from jobsim.sweep import parse_grid, replication_seed, sweep

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


def test_the_lock_expiry_sweep_in_parallel_and_on_dask_gives_identical_rows(tmp_path):
    """Acceptance: 4 lock times × 20 replications on 2 worker processes, the tables and a
    plot of duplicate executions against lock time with confidence bands; the same sweep on
    a Dask LocalCluster gives the same rows."""
    distributed = pytest.importorskip("distributed")
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
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        on_dask = sweep(doc, axes, 20, source=str(LOCK_EXPIRY), dask=cluster.scheduler_address,
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
    real = sweep_mod.run

    def flaky(sc):
        if sc.seed == replication_seed(3, 1):
            raise RuntimeError("boom in the model")
        return real(sc)

    monkeypatch.setattr(sweep_mod, "run", flaky)
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


def test_reserved_or_repeated_axes_are_refused(capsys, tmp_path):
    """Review findings: a seed axis crashed the tables; a repeated value dropped a point."""
    f = tmp_path / "s.yaml"
    f.write_text(SMALL, encoding="utf-8")
    for grid in ("seed=1,2", "nodes=2,2", "replication=1"):
        assert cli.main(["sweep", str(f), "--grid", grid, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "expected" in err
    assert not (tmp_path / "o").exists()
