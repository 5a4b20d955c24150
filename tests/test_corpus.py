"""A corpus of broken scenario files, each refused the same way by the command line.

tests/corpus/ holds small scenario files with one mistake (or one family of mistakes) each;
tests/corpus/expected.yaml says, for each, which dotted paths its error must name and which
fragment of the offending value it must show. For every file, ``jobsim run`` and ``jobsim
validate`` exit with status 2, name the file and every expected path, print no traceback and
write nothing. Beside the corpus: ``--set`` overrides that are wrong (and one that is right),
``jobsim schema`` as a Draft 2020-12 JSON Schema that the shipped scenarios satisfy, and
``jobsim list``.
"""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path

import jsonschema
import pytest
import yaml

from jobsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
SCENARIOS = ROOT / "scenarios"
LESSON = SCENARIOS / "lesson.yaml"
SHIPPED = sorted(SCENARIOS.glob("*.yaml"))

EXPECTED: dict[str, list[dict]] = yaml.safe_load(
    (CORPUS / "expected.yaml").read_text(encoding="utf-8"))
FILES = sorted(p.name for p in CORPUS.glob("*.yaml") if p.name != "expected.yaml")


# ---------------------------------------------------------------------------------------------
# helpers


def call(argv: list[str], capsys) -> tuple[int, str, str]:
    """``main(argv)`` in-process: its status, stdout and stderr. An exception escaping
    ``main`` is what the console script would show as a traceback: the test fails on it."""
    capsys.readouterr()
    try:
        status = main(argv)
    except BaseException as exc:  # noqa: BLE001 - a RecursionError too is a crash of the CLI
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        shown = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        captured = capsys.readouterr()
        pytest.fail(f"jobsim {' '.join(argv)}: main() raised {shown[:300]} instead of "
                    f"reporting the problem and returning 2 (the console script would print "
                    f"a traceback)\nstderr so far:\n{captured.err[-2000:]}", pytrace=False)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def paths_of(problem: dict) -> list[str]:
    p = problem["path"]
    return p if isinstance(p, list) else [p]


def check_report(text: str, source: str, problems: list[dict], where: str) -> None:
    """Each expected problem is on a line ``<source>: <path>…`` with its value fragment."""
    lines = text.splitlines()
    for problem in problems:
        prefixes = [f"{source}: {p}" for p in paths_of(problem)]
        value = str(problem["value"])
        says = problem.get("says")
        at_path = [ln for ln in lines if any(ln.startswith(pre) for pre in prefixes)]
        assert at_path, (f"{where} names none of the paths {paths_of(problem)} "
                         f"(no line begins with {prefixes[0]!r}); it said:\n{text}")
        with_value = [ln for ln in at_path if value in ln]
        assert with_value, (f"{where}: the problem at {paths_of(problem)} does not show the "
                            f"offending value {value!r}; the lines there were:\n"
                            + "\n".join(at_path))
        if says:
            assert any(says in ln for ln in with_value), (
                f"{where}: the problem at {paths_of(problem)} does not say {says!r}:\n"
                + "\n".join(with_value))


# ---------------------------------------------------------------------------------------------
# the corpus itself


def test_corpus_is_complete_and_documented():
    assert len(FILES) >= 24, f"only {len(FILES)} broken files in {CORPUS}"
    assert sorted(EXPECTED) == FILES, (
        "tests/corpus/expected.yaml and the corpus disagree: "
        f"without an entry {sorted(set(FILES) - set(EXPECTED))}, "
        f"entries without a file {sorted(set(EXPECTED) - set(FILES))}")
    for name in FILES:
        first = (CORPUS / name).read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# ") and len(first) > 10, (
            f"{name} must begin with a comment line saying what is wrong (got {first[:60]!r})")
        problems = EXPECTED[name]
        assert problems and all("path" in p and "value" in p for p in problems), (
            f"expected.yaml: {name} needs a list of {{path, value}}")
    assert len(EXPECTED["several_errors.yaml"]) >= 4


# ---------------------------------------------------------------------------------------------
# jobsim run / validate on every broken file


@pytest.mark.parametrize("name", FILES)
def test_run_refuses_broken_file(name, tmp_path, capsys):
    path = CORPUS / name
    out = tmp_path / "out"
    start = time.process_time()  # CPU seconds: a machine's other work does not count
    status, stdout, stderr = call(["run", str(path), "--out", str(out)], capsys)
    cpu = time.process_time() - start

    assert status == 2, (f"jobsim run {name}: exit status {status}, expected 2 (bad input)"
                         f"\nstderr:\n{stderr[-2000:]}\nstdout:\n{stdout[-1000:]}")
    assert "Traceback" not in stderr + stdout, f"jobsim run {name} printed a traceback:\n{stderr}"
    assert str(path) in stderr, f"jobsim run {name}: stderr does not name the file:\n{stderr}"
    check_report(stderr, str(path), EXPECTED[name], f"jobsim run {name}")
    assert not out.exists() or not any(out.iterdir()), (
        f"jobsim run {name} wrote into its out folder: {sorted(out.rglob('*'))}")
    assert cpu < 5, f"jobsim run {name} took {cpu:.1f} CPU s to refuse the file"


@pytest.mark.parametrize("name", FILES)
def test_validate_refuses_broken_file(name, capsys):
    path = CORPUS / name
    status, stdout, stderr = call(["validate", str(path)], capsys)

    assert status == 2, (f"jobsim validate {name}: exit status {status}, expected 2; it said:"
                         f"\n{stdout[-2000:]}{stderr[-2000:]}")
    assert "Traceback" not in stderr + stdout
    check_report(stdout + stderr, str(path), EXPECTED[name], f"jobsim validate {name}")


def test_several_errors_are_reported_in_one_run(tmp_path, capsys):
    path = CORPUS / "several_errors.yaml"
    status, _, stderr = call(["run", str(path), "--out", str(tmp_path / "out")], capsys)

    assert status == 2
    reported = [ln for ln in stderr.splitlines() if ln.startswith(f"{path}: ")]
    expected = EXPECTED["several_errors.yaml"]
    assert len(reported) >= len(expected) >= 4, (
        f"expected all {len(expected)} mistakes at once, got {len(reported)}:\n{stderr}")
    assert f"{len(reported)} problem(s)" in stderr
    check_report(stderr, str(path), expected, "jobsim run several_errors.yaml")


def test_alias_bomb_is_refused_quickly(tmp_path, capsys):
    path = CORPUS / "alias_bomb.yaml"
    start = time.process_time()  # CPU seconds: a machine's other work does not count
    status, _, stderr = call(["run", str(path), "--out", str(tmp_path / "out")], capsys)
    cpu = time.process_time() - start

    assert status == 2, stderr
    assert "alias" in stderr
    assert cpu < 3, f"the alias bomb took {cpu:.2f} CPU s to refuse"


# ---------------------------------------------------------------------------------------------
# --set


@pytest.mark.parametrize("override, named, shows", [
    ("executor.lock_tme=5s", "executor.lock_tme", "did you mean 'lock_time'"),
    ("nodes[9].threads=2", "--set nodes[9].threads", "[9] into a list of 2"),
    ("=3", "--set =3", "dotted.path=value"),
])
def test_bad_set_is_refused_with_its_path(override, named, shows, tmp_path, capsys):
    out = tmp_path / "out"
    status, stdout, stderr = call(["run", str(LESSON), "--set", override, "--out", str(out)],
                                  capsys)

    assert status == 2, f"--set {override}: exit {status}\n{stderr}{stdout[-500:]}"
    assert "Traceback" not in stderr
    lines = [ln for ln in stderr.splitlines() if named in ln]
    assert lines, f"--set {override}: stderr does not name {named!r}:\n{stderr}"
    assert any(shows in ln for ln in lines), f"--set {override}: no {shows!r} in:\n{stderr}"
    assert not out.exists() or not any(out.iterdir())


def test_good_set_is_run_and_recorded(tmp_path, capsys):
    out = tmp_path / "out"
    status, stdout, stderr = call(["run", str(LESSON), "--set", "executor.lock_time=30s",
                                   "--out", str(out), "--quiet", "--no-plots"], capsys)

    assert status == 0, f"exit {status}\n{stderr}\n{stdout[-2000:]}"
    written = out / "scenario.yaml"
    assert written.is_file(), f"no scenario.yaml in {sorted(out.rglob('*'))}"
    text = written.read_text(encoding="utf-8")
    assert yaml.safe_load(text)["executor"]["lock_time"] == "30s"
    assert "lock_time: 30s" in text


# ---------------------------------------------------------------------------------------------
# jobsim schema / jobsim list


def test_schema_is_draft_2020_12_and_the_shipped_scenarios_satisfy_it(capsys):
    status, stdout, _ = call(["schema"], capsys)
    assert status == 0
    schema = json.loads(stdout)

    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert SHIPPED
    for path in SHIPPED:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in validator.iter_errors(doc)]
        assert not errors, f"{path.name} does not satisfy the schema:\n" + "\n".join(errors)


def test_list_prints_each_shipped_scenario_with_its_description(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    status, stdout, _ = call(["list"], capsys)

    assert status == 0
    lines = stdout.splitlines()
    assert len(lines) == len(SHIPPED), f"expected {len(SHIPPED)} lines:\n{stdout}"
    for path in SHIPPED:
        description = yaml.safe_load(path.read_text(encoding="utf-8"))["description"]
        assert any(ln.split(maxsplit=1) == [path.stem, description] for ln in lines), (
            f"no line '{path.stem}  {description}' in:\n{stdout}")


def test_list_policies_names_each_preset_with_its_settings(capsys):
    from jobsim.executor.policies import PRESETS

    assert main(["list", "--policies"]) == 0
    out = capsys.readouterr().out
    for name in PRESETS:
        assert any(line.startswith(name) for line in out.splitlines())
    assert "guarded_update" in out
