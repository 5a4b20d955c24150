"""Bad input gets a clear error naming the file, the dotted path, what was expected and what
came; the CLI exits with status 2 and prints no traceback; every problem is reported at once.

Each bad scenario here is the shipped lesson with one mistake (or several) written into it,
as text, the way a user would make it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobsim.format import scenario as scenario_mod
from jobsim.cli import main
from jobsim.base.errors import Problem, ScenarioError
from jobsim.executor.retry import ListBackoff

LESSON = Path(__file__).resolve().parents[1] / "scenarios" / "lesson.yaml"
LESSON_TEXT = LESSON.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# helpers


def edited(*changes: tuple[str, str], append: str = "") -> str:
    """The lesson's text with each ``(old, new)`` replaced once, then ``append`` added."""
    text = LESSON_TEXT
    for old, new in changes:
        assert old in text, f"test setup: {old!r} is not in the lesson any more"
        text = text.replace(old, new, 1)
    return text + append


def write(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> ScenarioError:
    """The ScenarioError that loading ``path`` raises (failing clearly if it loads)."""
    try:
        scenario_mod.load(path)
    except ScenarioError as exc:
        return exc
    pytest.fail(f"{path.name} loaded without a ScenarioError:\n{path.read_text()}")


def listing(exc: ScenarioError) -> str:
    return "\n".join(f"  {p!r}" for p in exc.problems)


def problem_at(exc: ScenarioError, path: str) -> Problem:
    found = [p for p in exc.problems if p.path == path]
    assert found, f"no problem at {path!r}; the problems were:\n{listing(exc)}"
    return found[0]


def line_of(text: str, fragment: str) -> int:
    """The 1-based number of the line where ``fragment`` first occurs."""
    return text[:text.index(fragment)].count("\n") + 1


# ---------------------------------------------------------------------------------------------
# the shipped scenario


def test_lesson_loads_with_its_values_as_written():
    sc = scenario_mod.load(LESSON)

    assert sc.name == "lesson"
    assert sc.seed == 0
    assert sc.until is None  # until: drained
    assert [n.name for n in sc.nodes] == ["node-A", "node-B"]
    assert [(t.at, t.nodes) for t in sc.ticks] == [
        (0.0, ("node-A", "node-B")), (10.0, ("node-B", "node-A")),
        (70.0, ("node-B", "node-A")), (370.0, ("node-B", "node-A"))]
    assert sc.ticks[0].note == "both async jobs due, timer is not"

    for ex in (sc.executor, *(n.executor for n in sc.nodes)):
        assert ex.wakeup == "ticks"
        assert ex.acquisition == "guarded_update"
        assert ex.batch_size == 10
        assert ex.lock_time == 300.0
        assert ex.retry.attempts == 3
        assert ex.retry.backoff == ListBackoff((10.0, 60.0))

    assert list(sc.handlers) == ["reminder", "bureau-call", "misconfigured"]
    reminder, bureau, bad = (sc.handlers[k] for k in sc.handlers)
    assert (reminder.outcome, reminder.says) == ("succeed", "reminder sent")
    assert (bureau.outcome, bureau.fail_first) == ("fail_first", 2)
    assert bureau.error == "bureau 502 (attempt {attempt})"
    assert bureau.says == "bureau responded, token advances"
    assert (bad.outcome, bad.error, bad.says) == ("always_fail", "bad config", None)

    assert [(j.id, j.kind, j.handler, j.due_in) for j in sc.jobs] == [
        (1, "timer", "reminder", 300.0), (2, "async", "bureau-call", 0.0),
        (3, "async", "misconfigured", 0.0)]
    assert sc.streams == ()
    assert sc.source == str(LESSON)


# ---------------------------------------------------------------------------------------------
# one mistake each: the exact dotted path, what was expected, what came, and a hint if any

# (id, text, every problem path expected (in order), the path examined, a fragment of what was
# expected, the exact "got", the exact hint)
CASES = [
    ("unknown-key", edited(append="executor: {lock_tme: 5m}\n"),
     ["executor.lock_tme"], "executor.lock_tme", "lock_time", "unknown key 'lock_tme'",
     "did you mean 'lock_time'?"),
    ("duration-without-unit", edited(append="executor: {lock_time: 30}\n"),
     ["executor.lock_time"], "executor.lock_time", "a duration with a unit", "30", ""),
    ("negative-duration", edited(append="executor: {lock_time: -5s}\n"),
     ["executor.lock_time"], "executor.lock_time", "duration", "'-5s'", ""),
    ("negative-due-in", edited(("due_in: 5m", "due_in: -5m")),
     ["workload.jobs[0].due_in"], "workload.jobs[0].due_in", "duration", "'-5m'", ""),
    ("undefined-handler", edited(("handler: bureau-call", "handler: bureau-cal")),
     ["workload.jobs[1].handler"], "workload.jobs[1].handler", "handler", "'bureau-cal'",
     "did you mean 'bureau-call'?"),
    ("undefined-node", edited(("{at: 0s, nodes: [node-A, node-B]",
                               "{at: 0s, nodes: [node-A, node-C]")),
     ["clock.ticks[0].nodes[1]"], "clock.ticks[0].nodes[1]", "node", "'node-C'",
     "did you mean 'node-B'?"),
    ("count-1e12-is-a-string", edited(append="  streams:\n    - {handler: reminder, count: 1e12}\n"),
     ["workload.streams[0].count"], "workload.streams[0].count", "an integer", "'1e12'", ""),
    ("count-too-large",
     edited(append="  streams:\n    - {handler: reminder, count: 100000000000}\n"),
     ["workload.streams[0].count"], "workload.streams[0].count", "10,000,000", "100000000000",
     ""),
    ("wrong-type", edited(append='executor: {threads: "four"}\n'),
     ["executor.threads"], "executor.threads", "an integer", "'four'", ""),
    ("unknown-dialect", edited(append="db: {dialect: oracle}\n"),
     ["db.dialect"], "db.dialect", "atomic", "'oracle'", ""),
    ("misspelt-dialect", edited(append="db: {dialect: atomc}\n"),
     ["db.dialect"], "db.dialect", "atomic", "'atomc'", "did you mean 'atomic'?"),
    ("duplicate-node-name", edited(("  - name: node-B\n", "  - name: node-B\n  - name: node-A\n")),
     ["nodes[2].name"], "nodes[2].name", "a name no other node has", "'node-A'", ""),
    ("duplicate-job-id", edited(("{id: 2,", "{id: 1,")),
     ["workload.jobs[1].id"], "workload.jobs[1].id", "an id no other job has", "1", ""),
    ("ticks-name-a-polling-node",
     edited(("  - name: node-B\n", "  - {name: node-B, wakeup: poll}\n")),
     ["clock.ticks[0].nodes[1]", "clock.ticks[1].nodes[0]", "clock.ticks[2].nodes[0]",
      "clock.ticks[3].nodes[0]"],
     "clock.ticks[0].nodes[1]", "wakeup is ticks", "'node-B', which wakes by poll", ""),
]


@pytest.mark.parametrize("text, paths, path, expected, got, hint",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_mistake_names_its_dotted_path(tmp_path, text, paths, path, expected, got, hint):
    exc = error_of(write(tmp_path, text))

    assert [p.path for p in exc.problems] == paths, (
        f"expected problems exactly at {paths}; got:\n{listing(exc)}")
    p = problem_at(exc, path)
    assert expected in p.expected, f"{p!r}: 'expected' should mention {expected!r}"
    assert p.got == got, f"{p!r}: 'got' should be {got!r}"
    assert p.hint == hint, f"{p!r}: hint should be {hint!r}"
    for q in exc.problems:
        assert q.expected and q.got, f"{q!r} does not say both what was expected and what came"


def test_yaml_reads_1e12_as_a_string():
    # The premise of the count-1e12 case: YAML 1.1 needs a dot in a float.
    assert yaml.safe_load("count: 1e12") == {"count": "1e12"}


def test_duplicate_yaml_key_names_the_line_and_the_key(tmp_path):
    text = edited(append="executor:\n  lock_time: 5m\n  lock_time: 6m\n")
    exc = error_of(write(tmp_path, text))

    assert len(exc.problems) == 1, listing(exc)
    p = exc.problems[0]
    line = line_of(text, "lock_time: 6m")
    assert p.path == "executor.lock_time", p
    assert f"line {line}," in p.got, f"{p!r} should name line {line}"
    assert "duplicate key" in p.got and "lock_time" in p.got, p
    assert p.expected


def test_duplicate_yaml_key_names_the_dotted_path(tmp_path):
    text = edited(append="executor:\n  lock_time: 5m\n  lock_time: 6m\n")
    exc = error_of(write(tmp_path, text))

    assert "executor.lock_time" in exc.format(), (
        "GAP: a duplicate YAML key is reported by line and column only; the error should "
        f"also name the dotted path 'executor.lock_time'. The error was:\n{exc.format()}")


def test_invalid_yaml_names_the_line(tmp_path):
    text = edited(("  - name: node-B\n", "  - name: node-B: x\n"))
    exc = error_of(write(tmp_path, text))

    assert len(exc.problems) == 1, listing(exc)
    p = exc.problems[0]
    line = line_of(text, "name: node-B: x")
    assert p.path.startswith(f"line {line},"), f"{p!r} should name line {line}"
    assert p.expected == "valid YAML"
    assert "mapping values are not allowed" in p.got, p


def test_unhashable_yaml_key_is_an_error_not_a_crash(tmp_path):
    # A complex (sequence) key is legal YAML but can never be a scenario key.
    path = write(tmp_path, edited(append="? [a, b]\n: 1\n"))
    try:
        scenario_mod.load(path)
    except ScenarioError as exc:
        assert exc.problems and exc.problems[0].path, listing(exc)
    except Exception as exc:  # noqa: BLE001 - the point is which exception escapes
        pytest.fail(f"GAP: a sequence used as a mapping key escapes as "
                    f"{type(exc).__name__}: {exc} instead of a ScenarioError")
    else:
        pytest.fail("a sequence used as a mapping key loaded without an error")


# ---------------------------------------------------------------------------------------------
# all problems at once


def test_several_mistakes_are_reported_in_one_error(tmp_path):
    text = edited(append="executor: {lock_tme: 5m, threads: four, lock_time: 30}\n"
                         "db: {dialect: oracle}\n")
    exc = error_of(write(tmp_path, text))

    assert sorted(p.path for p in exc.problems) == sorted([
        "db.dialect", "executor.lock_tme", "executor.threads", "executor.lock_time"]), (
        listing(exc))
    assert problem_at(exc, "executor.lock_tme").hint == "did you mean 'lock_time'?"
    text = str(exc)
    for path in ("db.dialect", "executor.lock_tme", "executor.threads", "executor.lock_time"):
        assert path in text


def test_several_cross_reference_mistakes_are_reported_in_one_error(tmp_path):
    text = edited(("handler: bureau-call", "handler: bureau-cal"),
                  ("{id: 3,", "{id: 1,"),
                  ("{at: 0s, nodes: [node-A, node-B]", "{at: 0s, nodes: [node-A, node-C]"))
    exc = error_of(write(tmp_path, text))

    assert sorted(p.path for p in exc.problems) == sorted([
        "workload.jobs[1].handler", "workload.jobs[2].id", "clock.ticks[0].nodes[1]"]), (
        listing(exc))


def test_field_and_cross_reference_mistakes_are_reported_together(tmp_path):
    text = edited(("handler: bureau-call", "handler: bureau-cal"),
                  append="executor: {lock_tme: 5m}\n")
    exc = error_of(write(tmp_path, text))

    paths = [p.path for p in exc.problems]
    assert "executor.lock_tme" in paths, listing(exc)
    assert "workload.jobs[1].handler" in paths, (
        "GAP: cross-reference checks (undefined handler/node, duplicate names and ids) run "
        "only when every field is valid, so a file with both kinds of mistake reports only "
        f"the field problems. The problems were:\n{listing(exc)}")


# ---------------------------------------------------------------------------------------------
# the file's name is in the error


@pytest.mark.parametrize("text", [
    edited(append="executor: {lock_tme: 5m}\n"),
    edited(("handler: bureau-call", "handler: bureau-cal"),
           append="db: {dialect: oracle}\n"),
    edited(("  - name: node-B\n", "  - name: node-B: x\n")),
    "- just\n- a list\n",
    "",
], ids=["field", "several", "yaml-syntax", "not-a-mapping", "empty"])
def test_every_line_of_the_error_names_the_file(tmp_path, text):
    path = write(tmp_path, text, "my-scenario.yaml")
    exc = error_of(path)

    assert exc.source == str(path)
    lines = str(exc).splitlines()
    assert len(lines) == len(exc.problems) >= 1
    for line in lines:
        assert line.startswith(f"{path}: "), f"{line!r} does not start with the file's name"


def test_a_missing_file_is_named(tmp_path):
    path = tmp_path / "nowhere.yaml"
    exc = error_of(path)
    assert str(path) in str(exc)
    assert "no such file" in str(exc)


# ---------------------------------------------------------------------------------------------
# the command line: status 2, nothing written, no traceback


@pytest.fixture
def out(tmp_path, monkeypatch):
    """An empty report folder; the working directory is a scratch one so nothing leaks."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def assert_nothing_written(out: Path):
    assert list(out.iterdir()) == [], f"the report folder got {sorted(out.iterdir())}"
    assert list(Path.cwd().iterdir()) == [], "something was written to the working directory"


BAD_FILES = {
    "unknown-key": (edited(append="executor: {lock_tme: 5m}\n"), "executor.lock_tme"),
    "undefined-handler": (edited(("handler: bureau-call", "handler: bureau-cal")),
                          "workload.jobs[1].handler"),
    "yaml-syntax": (edited(("  - name: node-B\n", "  - name: node-B: x\n")),
                    f"line {line_of(LESSON_TEXT, '  - name: node-B')},"),
    "duplicate-key": (edited(append="seed: 1\n"), "duplicate key 'seed'"),
}


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_run_with_a_bad_file_exits_2_without_traceback(tmp_path, out, capsys, name):
    text, where = BAD_FILES[name]
    path = write(tmp_path, text)

    status = main(["run", str(path), "--out", str(out)])
    captured = capsys.readouterr()

    assert status == 2
    assert "Traceback" not in captured.err + captured.out
    assert str(path) in captured.err, captured.err
    assert where in captured.err, captured.err
    assert_nothing_written(out)


def test_run_with_a_missing_file_exits_2_without_traceback(tmp_path, out, capsys):
    path = tmp_path / "missing.yaml"
    status = main(["run", str(path), "--out", str(out)])
    captured = capsys.readouterr()

    assert status == 2
    assert "Traceback" not in captured.err + captured.out
    assert str(path) in captured.err and "no such file" in captured.err, captured.err
    assert_nothing_written(out)


@pytest.mark.parametrize("seed", ["-3", "abc"])
def test_run_with_a_bad_seed_flag_exits_2_without_traceback(out, capsys, seed):
    status = main(["run", str(LESSON), "--seed", seed, "--out", str(out)])
    captured = capsys.readouterr()

    assert status == 2
    assert "Traceback" not in captured.err + captured.out
    assert "--seed" in captured.err and repr(seed) in captured.err, captured.err
    assert_nothing_written(out)


@pytest.mark.parametrize("argv", [
    ["run", str(LESSON), "--out", ""], ["run", str(LESSON), "--timings", " "],
    ["sweep", str(LESSON), "--out", ""], ["hunt", str(LESSON), "--out", ""],
    ["view", "somewhere", "--out", ""], ["new", "mine", "--out", ""],
    ["reports", "--out", ""],
])
def test_an_empty_file_or_folder_name_is_refused(tmp_path, monkeypatch, capsys, argv):
    """``--out ""`` wrote the report to the default folder, ``--timings ""`` wrote no
    timings: each as if the flag were not given."""
    monkeypatch.chdir(tmp_path)
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    flag = next(a for a in argv if a.startswith("--"))
    assert f"argument {flag}: expected a file or folder name (got " in err, err
    assert "Traceback" not in err and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, says", [
    (["run", "--nope"], "unrecognized arguments: --nope; the following arguments are required"),
    (["run", "--nope=1", "--quiet"], "unrecognized arguments: --nope=1;"),
    (["sweep", "--nope"], "unrecognized arguments: --nope;"),
    (["run"], "jobsim run: the following arguments are required: scenario"),
])
def test_an_unknown_flag_is_named_before_the_missing_scenario(capsys, argv, says):
    """argparse asks for the missing scenario before it names a flag it does not know: the
    flag (the likelier mistake) is named, with what is missing."""
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and says in err and "Traceback" not in err, err
    if argv == ["run"]:
        assert "unrecognized" not in err
    # the help to read is the command's, whichever parser refused it
    assert err.endswith(f"(run 'jobsim {argv[0]} --help' for usage)\n"), err


@pytest.mark.parametrize("argv, says", [
    (["run", str(LESSON), "--sed", "3"], "unrecognized arguments: --sed 3; did you mean --seed?"),
    (["run", "--quite"], "; did you mean --quiet?"),
    (["run", str(LESSON), "--sed", "3", "--quite"],
     "did you mean --seed (for --sed), --quiet (for --quite)?"),
    (["sweep", str(LESSON), "--wokers", "2"], "did you mean --workers?"),
])
def test_a_misspelt_flag_is_named_with_the_one_meant(capsys, argv, says, tmp_path):
    status = main(argv + ["--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert status == 2 and says in err and "Traceback" not in err, err
    assert not (tmp_path / "r").exists()


def test_a_far_flag_is_named_with_no_guess(capsys):
    assert main(["run", str(LESSON), "--zzz"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --zzz\n" in err and "did you mean" not in err


def test_a_rate_spelt_with_sec_or_min_is_refused_with_the_spelling_meant(tmp_path, capsys):
    for written, meant in (("25/sec", "25/s"), ("1500/min", "1500/m"), ("2/hour", "2/h")):
        path = write(tmp_path, edited(append=f"  streams:\n    - {{handler: reminder, "
                                             f"count: 3, rate: {written}}}\n"))
        assert main(["run", str(path), "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert f"(got '{written}'); did you mean '{meant}'?" in err, err
    path = write(tmp_path, edited(append="  streams:\n    - {handler: reminder, count: 3, "
                                         "rate: 25/fortnight}\n"))
    assert main(["run", str(path), "--out", str(tmp_path / "r")]) == 2
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--frob"], ["runn", "x.yaml"]])
def test_a_line_that_names_no_command_points_to_jobsims_help(capsys, argv):
    assert main(argv) == 2
    assert capsys.readouterr().err.endswith("(run 'jobsim --help' for usage)\n")


def test_run_with_an_unhashable_key_exits_2_without_traceback(tmp_path, out, capsys):
    path = write(tmp_path, edited(append="? [a, b]\n: 1\n"))
    try:
        status = main(["run", str(path), "--out", str(out)])
    except Exception as exc:  # noqa: BLE001 - the point is that nothing escapes main
        pytest.fail(f"GAP: main() let {type(exc).__name__}: {exc} escape (a traceback) for "
                    "a YAML file with a sequence as a mapping key")
    captured = capsys.readouterr()
    assert status == 2
    assert "Traceback" not in captured.err + captured.out
    assert_nothing_written(out)


def test_validate_reports_each_file_and_exits_2_if_any_is_bad(tmp_path, capsys):
    bad = write(tmp_path, edited(append="executor: {lock_tme: 5m, threads: four}\n"))

    status = main(["validate", str(LESSON), str(bad)])
    captured = capsys.readouterr()
    text = captured.out + captured.err

    assert status == 2
    assert "Traceback" not in text
    assert f"{LESSON}: ok" in text, text
    assert f"{bad}: 2 problem(s)" in text, text
    assert "executor.lock_tme" in text and "did you mean 'lock_time'?" in text
    assert "executor.threads" in text


def test_validate_of_good_files_exits_0(capsys):
    assert main(["validate", str(LESSON)]) == 0
    assert f"{LESSON}: ok" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# the JSON Schema


def test_schema_is_valid_json_schema_and_accepts_the_lesson():
    jsonschema = pytest.importorskip(
        "jsonschema", reason="jsonschema is not installed in this environment "
                             "(it is in the [test] extra: pip install -e '.[test]')")
    s = scenario_mod.schema()
    jsonschema.Draft202012Validator.check_schema(s)

    document = yaml.safe_load(LESSON_TEXT)
    errors = list(jsonschema.Draft202012Validator(s).iter_errors(document))
    assert errors == [], [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
                          for e in errors]
