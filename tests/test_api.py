"""The public API takes the natural thing: a run from a path, a ``Scenario`` or a dict; its
tables, story and figures from a ``RunResult`` or an ``Analysis``; ``dir()`` shows only the
API, every public function says what it does; the command line has ``--version``, every
option's help its default, and the shipped scenarios are found from anywhere."""

import argparse
from pathlib import Path

import pandas as pd
import pytest
import yaml
from matplotlib.figure import Figure

import jobsim
import jobsim.plots
from jobsim import cli
from jobsim.cli.parser import _parser

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "scenarios" / "lesson.yaml"


@pytest.fixture(scope="module")
def lesson():
    result = jobsim.run(LESSON)
    return result, jobsim.analyse(result)


def test_run_takes_a_path_a_scenario_or_a_document(lesson):
    result, _ = lesson
    sha = jobsim.analyse(result).summary["trace_sha256"]
    doc = yaml.safe_load(LESSON.read_text(encoding="utf-8"))
    for what in (str(LESSON), LESSON, jobsim.load(LESSON), doc):
        assert jobsim.analyse(jobsim.run(what)).summary["trace_sha256"] == sha
    assert jobsim.analyse(str(LESSON)).summary["trace_sha256"] == sha  # runs it first
    with pytest.raises(TypeError, match="a scenario file's path"):
        jobsim.run(3)


def test_tables_story_and_figures_take_a_result_or_an_analysis(lesson):
    result, analysis = lesson
    jobs = jobsim.jobs_frame(analysis.histories)
    for what in (result, analysis, result.trace):
        pd.testing.assert_frame_equal(jobsim.jobs_frame(what), jobs)
        assert len(jobsim.trace_frame(what)) == len(result.trace)
        assert jobsim.narrate(what) == jobsim.narrate(result.trace)
    for draw in (jobsim.plots.node_timeline, jobsim.plots.table_depth,
                 jobsim.plots.latency_cdf, jobsim.plots.duplicates_by_cause):
        for what in (result, analysis):
            assert isinstance(draw(what), Figure), draw.__name__
    assert isinstance(jobsim.plots.node_timeline(jobsim.trace_frame(result)), Figure)
    assert isinstance(jobsim.plots.duplicates_by_cause(analysis.histories), Figure)
    with pytest.raises(TypeError, match="a RunResult"):
        jobsim.jobs_frame("lesson")


def test_dir_shows_the_api_and_every_public_function_says_what_it_does():
    assert dir(jobsim) == sorted(jobsim.__all__)
    assert dir(jobsim.plots) == sorted(jobsim.plots.__all__)
    for module in (jobsim, jobsim.plots):
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj):
                assert (obj.__doc__ or "").strip(), f"{module.__name__}.{name} has no docstring"
    assert jobsim.__version__


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"jobsim {jobsim.__version__}"


def test_every_option_with_a_default_shows_it_in_its_help():
    parser = _parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, command in sub.choices.items():
        formatter = command._get_formatter()
        for action in command._actions:
            if not action.option_strings or action.dest == "help":
                continue
            text = formatter._get_help_string(action) or ""
            if action.default not in (None, False, []):
                assert "default" in text, f"jobsim {name} {action.option_strings[0]}: {text}"


def test_a_missing_file_named_like_a_shipped_scenario_says_where_that_is(tmp_path, monkeypatch,
                                                                        capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "lesson"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and str(LESSON) in err
    assert cli.main(["list"]) == 0  # no scenarios/ here: the shipped ones
    out, err = capsys.readouterr()
    assert "lesson" in out and "the shipped scenarios" in err


def test_run_picks_a_variant_and_takes_overrides(capsys):
    path = ROOT / "scenarios" / "lock_expiry.yaml"
    r = jobsim.run(path, variant="heartbeat")
    assert r.scenario.variant == "heartbeat"
    with pytest.raises(ValueError, match="the variants are no_heartbeat, heartbeat"):
        jobsim.run(path, variant="nope")
    r = jobsim.run(ROOT / "scenarios" / "node_crash.yaml", sets=["executor.lock_time=10s"])
    assert r.scenario.executor.lock_time == 10.0
    assert r.scenario.overrides == ("--set executor.lock_time=10s",)
    with pytest.raises(TypeError, match="already one run"):
        jobsim.run(jobsim.load(path), variant="heartbeat")


def test_a_path_set_twice_is_refused_and_a_bare_jobsim_shows_the_commands(capsys):
    assert cli.main(["run", str(LESSON), "--set", "executor.lock_time=10s", "--set",
                     "executor.lock_time=20s"]) == 2
    assert "expected each path set once (got 10s and 20s)" in capsys.readouterr().err
    assert cli.main([]) == 2
    assert "run a scenario and write its report folder" in capsys.readouterr().err


def test_setting_one_node_where_the_nodes_are_a_count_says_how(tmp_path, capsys):
    """``--set nodes[1].threads=2`` (the README's form) on a file with ``nodes: 6``: the
    error says the nodes are a count and how to set one, or all, of them."""
    path = tmp_path / "six.yaml"
    path.write_text("name: six\nnodes: 6\nhandlers: {w: {duration: 1s}}\n"
                    "workload: {streams: [{handler: w, count: 3, rate: 1/s}]}\n")
    assert cli.main(["run", str(path), "--set", "nodes[1].threads=2",
                     "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "--set nodes[1].threads: expected an index into a list at step 2 (got [1] into " \
        "not a list); the file's nodes is a count (6), not a list: write them as a list " \
        "(nodes: [{name: node-1}, …]) to set one of them, or set executor.threads for all" \
        in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_an_empty_table_of_duplicates_is_no_data_not_an_error():
    assert isinstance(jobsim.plots.duplicates_by_cause(pd.DataFrame()), Figure)
