"""``jobsim reports`` sweeps every file with a ``sweep:`` section into ``OUT/sweeps/<name>``,
as ``jobsim sweep FILE --out OUT/sweeps/NAME --fresh`` would: the committed sweeps are
rebuilt with the reports (they had gone stale while nothing rebuilt them), their sweep.md is
the same whatever their cache held, a user's folder in the way is refused before any run,
and ``--no-sweeps`` leaves them out."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobsim.cli import main

ROOT = Path(__file__).resolve().parent.parent

SWEPT = """
name: swept
seed: 3
until: drained
executor: {poll_interval: 1s, lock_time: 30s}
nodes: 2
handlers:
  w: {duration: {exponential: {mean: 2s}}}
workload:
  streams: [{name: s, handler: w, count: 30, rate: 2/s}]
sweep:
  grid: {executor.lock_time: [5s, 30s]}
  replications: 2
  plot: [duplicate_executions.total]
"""


def _folder(tmp_path: Path) -> Path:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "swept.yaml").write_text(SWEPT, encoding="utf-8")
    plain = yaml.safe_load(SWEPT)
    del plain["sweep"]
    plain["name"] = "plain"
    (scenarios / "plain.yaml").write_text(yaml.safe_dump(plain), encoding="utf-8")
    return scenarios


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_reports_sweep_each_file_with_a_sweep_section_the_same_whatever_the_cache(
        tmp_path, capsys):
    scenarios, out = _folder(tmp_path), tmp_path / "reports"
    assert main(["reports", str(scenarios), "--out", str(out)]) == 0
    swept = out / "sweeps" / "swept"
    text = (swept / "sweep.md").read_text(encoding="utf-8")
    assert "4 runs: 2 grid points × replications (4 computed, 0 from the cache)" in text
    assert (swept / "sweep_duplicate_executions_total.png").is_file()
    assert sorted(p.name for p in (out / "sweeps").iterdir()) == ["swept"]  # plain: none
    first = _files(swept)
    capsys.readouterr()
    # again, with every run in its cache: computed again, every byte the same
    assert main(["reports", str(scenarios), "--out", str(out)]) == 0
    assert "(4 computed, 0 from the cache)" in capsys.readouterr().out
    assert _files(swept) == first


def test_reports_no_sweeps_leaves_them_out(tmp_path):
    scenarios, out = _folder(tmp_path), tmp_path / "reports"
    assert main(["reports", str(scenarios), "--out", str(out), "--no-sweeps"]) == 0
    assert (out / "swept" / "report.md").is_file()
    assert not (out / "sweeps").exists()


def test_a_users_folder_where_a_sweep_goes_is_refused_before_any_run(tmp_path, capsys):
    scenarios, out = _folder(tmp_path), tmp_path / "reports"
    mine = out / "sweeps" / "swept"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert main(["reports", str(scenarios), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot write the sweep of swept.yaml" in err and "did not write it" in err
    assert _files(mine) == {"notes.txt": b"mine\n"}
    assert not (out / "swept").exists() and not (out / "plain").exists()  # no run at all


def test_a_fresh_sweep_reads_nothing_from_its_cache(tmp_path, capsys):
    scenarios = _folder(tmp_path)
    out = tmp_path / "sw"
    args = ["sweep", str(scenarios / "swept.yaml"), "--out", str(out), "--workers", "1"]
    assert main(args) == 0
    first = (out / "sweep.md").read_bytes()
    capsys.readouterr()
    assert main(args) == 0  # from its cache: said so in sweep.md
    assert "(0 computed, 4 from the cache)" in capsys.readouterr().out
    assert main(args + ["--fresh"]) == 0
    assert "(4 computed, 0 from the cache)" in capsys.readouterr().out
    assert (out / "sweep.md").read_bytes() == first


SHIPPED_SWEEPS = sorted(p.name for p in (ROOT / "reports" / "sweeps").iterdir() if p.is_dir())


@pytest.mark.slow  # each sweep again: ~8 and ~25 CPU s
@pytest.mark.parametrize("name", SHIPPED_SWEEPS)
def test_a_committed_sweep_is_what_its_file_sweeps_now(name, tmp_path):
    """What ``jobsim reports`` writes to reports/sweeps/NAME: a change that moves a row (a
    figure of the summary, a trace hash) fails here until the reports are regenerated."""
    out = tmp_path / name
    assert main(["sweep", str(ROOT / "scenarios" / f"{name}.yaml"), "--out", str(out),
                 "--fresh"]) in (0, 1)
    committed = ROOT / "reports" / "sweeps" / name
    for f in ("sweep.md", "points.csv", "runs.csv"):
        assert (out / f).read_bytes() == (committed / f).read_bytes(), \
            f"reports/sweeps/{name}/{f} is stale: run jobsim reports"
