"""Safe what-ifs: a run that overrides the file (``--set``, ``--seed``, ``--no-expect``)
never replaces the file's own report folder, says what it overrode in its report, summary
and scenario copy, and goes to a git-ignored folder unless ``--out`` says otherwise; a
sweep's default folder is git-ignored too."""

import json
from pathlib import Path

import yaml

from jobsim import cli

SMALL = """
name: small
description: "Two nodes, forty jobs; one expectation that a short lock breaks."
seed: 3
until: drained
executor: {poll_interval: 1s, lock_time: 30s}
nodes: 2
handlers:
  w: {duration: {exponential: {mean: 2s}}, outcome: {fail_rate: 0.1}}
workload:
  streams: [{name: s, handler: w, count: 40, rate: 2/s}]
expect:
  duplicate_executions.total: "== 0"
"""


def _scenario(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "small.yaml"
    f.write_text(SMALL, encoding="utf-8")
    return f


def _manifest(folder: Path) -> str:
    return (folder / ".jobsim-manifest.json").read_text(encoding="utf-8")


def test_a_set_run_leaves_the_files_own_report_alone_and_says_what_it_overrode(
        tmp_path, monkeypatch, capsys):
    f = _scenario(tmp_path, monkeypatch)
    assert cli.main(["run", str(f), "--quiet", "--no-plots"]) == 0
    own = tmp_path / "reports" / "small"
    before = _manifest(own)
    status = cli.main(["run", str(f), "--quiet", "--no-plots", "--set",
                       "executor.lock_time=0.5s"])
    printed = capsys.readouterr().out
    assert _manifest(own) == before  # the file's own report is untouched
    scratch = tmp_path / "reports" / "_scratch"
    folder = scratch / "small" / "set=executor.lock_time=0.5s"
    assert (folder / "report.md").is_file()
    assert "what-if: --set executor.lock_time=0.5s" in printed
    assert f"report: {Path('reports/_scratch/small/set=executor.lock_time=0.5s')}" in printed
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert "A what-if run" in report and "`--set executor.lock_time=0.5s`" in report
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert summary["overrides"] == ["--set executor.lock_time=0.5s"]
    assert "overrides" not in json.loads((own / "summary.json").read_text(encoding="utf-8"))
    copy = (folder / "scenario.yaml").read_text(encoding="utf-8")
    assert copy.startswith("# a what-if run: --set executor.lock_time=0.5s")
    assert yaml.safe_load(copy)["executor"]["lock_time"] == "0.5s"
    # the scratch folder ignores itself, wherever it is
    assert (scratch / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    # the copy reproduces the what-if's trace
    again = tmp_path / "again"
    cli.main(["run", str(folder / "scenario.yaml"), "--quiet", "--no-plots", "--out",
              str(again)])
    sha = json.loads((again / "summary.json").read_text(encoding="utf-8"))["trace_sha256"]
    assert sha == summary["trace_sha256"] and status in (0, 1)


def test_two_what_ifs_get_two_folders_and_out_wins(tmp_path, monkeypatch):
    f = _scenario(tmp_path, monkeypatch)
    for lock in ("0.5s", "1s"):
        cli.main(["run", str(f), "--quiet", "--no-plots", "--set", f"executor.lock_time={lock}"])
    assert sorted(p.name for p in (tmp_path / "reports" / "_scratch" / "small").iterdir()) == \
        ["set=executor.lock_time=0.5s", "set=executor.lock_time=1s"]
    cli.main(["run", str(f), "--quiet", "--no-plots", "--seed", "9", "--out", "mine"])
    assert (tmp_path / "mine" / "report.md").is_file()
    assert not (tmp_path / "reports" / "small").exists()  # nothing written but what was asked
    assert "`--seed 9`" in (tmp_path / "mine" / "report.md").read_text(encoding="utf-8")


def test_a_long_list_of_overrides_gets_a_short_folder_name(tmp_path, monkeypatch):
    f = _scenario(tmp_path, monkeypatch)
    sets = ["executor.poll_interval=2s", "executor.lock_time=45s", "executor.batch_size=7",
            "executor.threads=3", "executor.queue_size=9", "seed=11",
            "handlers.w.outcome.fail_rate=0.2"]
    cli.main(["run", str(f), "--quiet", "--no-plots"] + [a for s in sets for a in ("--set", s)])
    (folder,) = (tmp_path / "reports" / "_scratch" / "small").iterdir()
    assert len(folder.name) <= 80


def test_no_expect_skips_the_files_expectations_but_not_the_invariants(tmp_path, monkeypatch,
                                                                      capsys):
    f = _scenario(tmp_path, monkeypatch)
    short = ["--set", "executor.lock_time=0.5s", "--quiet", "--no-plots"]
    assert cli.main(["run", str(f)] + short) == 1  # the expectation fails
    assert cli.main(["run", str(f), "--no-expect"] + short) == 0
    printed = capsys.readouterr().out
    folder = tmp_path / "reports" / "_scratch" / "small" / "set=executor.lock_time=0.5s+no-expect"
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Expectations" not in report and "`--no-expect`" in report
    assert "## Invariants" in report
    assert "what-if: --set executor.lock_time=0.5s --no-expect" in printed
    copy = yaml.safe_load((folder / "scenario.yaml").read_text(encoding="utf-8"))
    assert "expect" not in copy  # the copy runs as the what-if did


def test_the_default_sweep_folder_is_git_ignored(tmp_path, monkeypatch):
    f = _scenario(tmp_path, monkeypatch)
    doc = yaml.safe_load(SMALL)
    doc["sweep"] = {"grid": {"executor.lock_time": ["5s", "30s"]}, "replications": 1}
    f.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert cli.main(["sweep", str(f), "--workers", "1"]) in (0, 1)
    assert (tmp_path / "sweeps" / "small" / "sweep.md").is_file()
    assert (tmp_path / "sweeps" / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] \
        == "*"


def test_no_expect_runs_a_file_whose_set_took_away_what_an_expectation_names(
        tmp_path, monkeypatch, capsys):
    """A newcomer's finding: --set 'workload.jobs=[]' --no-expect exited 2 on an expectation
    about a named job the --set had removed, and the message did not mention the --set."""
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "named.yaml"
    f.write_text(SMALL.replace("expect:\n  duplicate_executions.total: \"== 0\"\n", "") + """
  jobs: [{name: urgent, handler: w, at: 10s}]
expect:
  named.urgent.start_delay: "<= 30s"
""", encoding="utf-8")
    text = f.read_text(encoding="utf-8")
    assert "streams: [{name: s" in text and "named.urgent" in text
    args = ["run", str(f), "--quiet", "--no-plots", "--set", "workload.jobs=[]"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "expect.named.urgent.start_delay" in err
    assert "the file's own value, checked with --set workload.jobs=[] (--no-expect leaves " \
           "the expectations out)" in err
    assert cli.main(args + ["--no-expect"]) == 0
