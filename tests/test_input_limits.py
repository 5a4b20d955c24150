"""Every way a value enters jobsim is held to a scenario file's limits: ``--set`` and
``--grid`` values, a variant's ``set`` values, and the documents the Python API takes
(``from_dict``, ``run``, ``variants_of``, ``load(..., sets=...)``).

An alias bomb ("billion laughs") given as a ``--set`` value once ran for minutes and took
gigabytes before it was refused; a dict that shares one list a billion times over, or contains
itself, walked forever. The work of a refusal is bounded here by what it may allocate
(``tracemalloc``'s peak) and by what it must not reach (no validation, no deep copy), never by
a clock.
"""

from __future__ import annotations

import copy
import tracemalloc
from pathlib import Path

import pytest

import jobsim
from jobsim.base.errors import ScenarioError
from jobsim.cli import main
from jobsim.format import scenario as scenario_mod
from jobsim.format.reading import MAX_DEPTH, MAX_NODES, check_document, parse_value
from jobsim.tools.hunt import configuration
from jobsim.tools.sweep import parse_grid

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "scenarios" / "lesson.yaml"
MB = 1024 ** 2


def flow_bomb(levels: int, width: int = 9) -> str:
    """A YAML flow list of ``levels`` anchors, each aliasing the one before ``width`` times
    (``width ** levels`` values expanded), in a few hundred bytes."""
    parts = ["&a0 [" + ",".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        parts.append(f"&a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]")
    return "[" + ", ".join(parts) + "]"


def block_bomb(levels: int, width: int = 9) -> str:
    """The same in block style: no comma in it (a ``--grid`` value splits at commas)."""
    lines = ["- &a0", *["  - lol"] * width]
    for i in range(1, levels):
        lines += [f"- &a{i}", *[f"  - *a{i - 1}"] * width]
    return "\n".join(lines)


def shared_bomb(levels: int, width: int = 10) -> list:
    """A Python list sharing one list ``width`` times per level: ``width ** levels`` values
    when walked, a few hundred objects in memory."""
    value: list = ["lol"] * width
    for _ in range(levels - 1):
        value = [value] * width
    return value


def small_doc() -> dict:
    return {"name": "small", "nodes": 1, "handlers": {"w": {"duration": "1s"}},
            "workload": {"jobs": [{"handler": "w"}]}}


@pytest.fixture
def no_validation(monkeypatch):
    """Fails the test if a refused input reaches validation or a deep copy: its refusal
    must come from the walk with a budget, before either."""
    reached: list[str] = []
    real_deepcopy = copy.deepcopy

    def check(*args, **kwargs):
        reached.append("validation")
        raise AssertionError("a refused input reached validation")

    def deepcopy(value, *args, **kwargs):
        reached.append("deepcopy")
        return real_deepcopy(value, *args, **kwargs)

    monkeypatch.setattr(scenario_mod.FORMAT, "check", check)
    monkeypatch.setattr(scenario_mod.copy, "deepcopy", deepcopy)
    return reached


def peak_of(fn) -> tuple[BaseException | None, int]:
    """Run ``fn``; the exception it raised (or None) and the peak of Python's allocations."""
    tracemalloc.start()
    try:
        fn()
        raised = None
    except BaseException as exc:  # noqa: BLE001 - returned to the test, which asserts on it
        raised = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return raised, peak


# --- --set on the command line ----------------------------------------------------------------

@pytest.mark.parametrize("levels", [9, 10])
def test_a_set_alias_bomb_is_refused_with_exit_2_before_any_work(levels, tmp_path, capsys,
                                                                 no_validation):
    out = tmp_path / "out"
    argv = ["run", str(LESSON), "--quiet", "--out", str(out),
            "--set", f"description={flow_bomb(levels)}"]
    status: list[int] = []
    raised, peak = peak_of(lambda: status.append(main(argv)))
    err = capsys.readouterr().err
    assert raised is None and status == [2], err
    assert f"on the command line (for {LESSON}):\n--set description → " in err, err
    assert "alias bomb" in err
    assert f"at most {MAX_NODES:,} values" in err and "Traceback" not in err
    assert "validation" not in no_validation  # refused as it was read, never built
    assert peak < 100 * MB, f"the refusal allocated {peak / MB:.0f} MB at its peak"
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["sweep", "hunt"])
def test_sweep_and_hunt_refuse_a_set_alias_bomb(command, tmp_path, capsys, no_validation):
    out = tmp_path / "out"
    argv = [command, str(LESSON), "--out", str(out), "--set", f"description={flow_bomb(9)}"]
    argv += ["--grid", "seed=1,2"] if command == "sweep" else ["--break", "liveness"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--set description → " in err and "alias bomb" in err and "Traceback" not in err
    assert "validation" not in no_validation and not out.exists()


def test_a_set_value_with_a_duplicate_key_is_refused_as_in_a_file(tmp_path, capsys):
    status = main(["run", str(LESSON), "--quiet", "--out", str(tmp_path / "o"),
                   "--set", "executor={lock_time: 5s, lock_time: 10s}"])
    err = capsys.readouterr().err
    assert status == 2
    assert "--set executor → lock_time: expected each key once in its mapping" in err


def test_a_set_value_too_deep_or_with_a_huge_integer_is_refused():
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    with pytest.raises(ScenarioError) as info:
        parse_value(deep, "--set description", "f.yaml")
    assert info.value.problems[0].path.startswith("--set description")
    assert "nesting too deep" in info.value.problems[0].got
    with pytest.raises(ScenarioError) as info:
        parse_value("1" * 40, "--set seed", "f.yaml")
    assert info.value.problems[0].path == "--set seed"
    assert "at most 30 digits" in info.value.problems[0].expected


def test_set_values_that_are_not_yaml_stay_text_and_plain_ones_still_work():
    assert parse_value("a: b: c", "--set description", "f.yaml") == "a: b: c"
    assert parse_value("30s", "--set executor.lock_time", "f.yaml") == "30s"
    assert parse_value("[1, 2]", "--set x", "f.yaml") == [1, 2]
    sc = scenario_mod.load(LESSON, sets=["executor.lock_time=30s", "description=a: b: c"])
    assert sc.description == "a: b: c"


def test_a_document_within_bounds_is_refused_when_its_set_values_take_it_beyond(capsys,
                                                                                tmp_path):
    """Each value is within the budget alone; the document with both is not."""
    each = "[&a [" + ",".join(["x"] * 100) + "], [" + ",".join(["*a"] * 1100) + "]]"
    assert len(parse_value(each, "--set x", "f")[1]) == 1100  # ~111,000 values: allowed
    status = main(["run", str(LESSON), "--quiet", "--out", str(tmp_path / "o"),
                   "--set", f"description={each}", "--set", f"clock.ticks={each}"])
    err = capsys.readouterr().err
    assert status == 2
    assert "(with the --set values)" in err and f"at most {MAX_NODES:,} values" in err


def test_a_grid_value_is_held_to_the_same_limits():
    with pytest.raises(ScenarioError) as info:
        parse_grid([f"description={block_bomb(9)}"])
    assert info.value.problems[0].path.startswith("--grid description")
    assert "alias bomb" in info.value.problems[0].got


def test_a_hunts_configuration_applies_set_values_within_the_limits():
    raw = scenario_mod.read(LESSON)
    with pytest.raises(ScenarioError) as info:
        configuration(raw, None, [f"description={flow_bomb(10)}"], str(LESSON))
    assert info.value.problems[0].path.startswith("--set description")


# --- variants' set values ---------------------------------------------------------------------

def test_a_variants_set_bomb_in_a_file_is_refused_naming_the_variant(tmp_path, capsys):
    path = tmp_path / "v.yaml"
    path.write_text("name: v\nnodes: 1\nhandlers: {w: {duration: 1s}}\n"
                    "workload: {jobs: [{handler: w}]}\n"
                    f"variants:\n  big:\n    set:\n      description: {flow_bomb(9)}\n",
                    encoding="utf-8")
    assert main(["run", str(path), "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: variants.big.set.description: expected at most" in err
    assert "alias bomb" in err and not (tmp_path / "o").exists()


# --- the Python API ---------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda d: jobsim.from_dict(d),
    lambda d: jobsim.run(d),
    lambda d: scenario_mod.variants_of(d),
    lambda d: jobsim.run(d, sets=["executor.lock_time=30s"]),
], ids=["from_dict", "run", "variants_of", "run_with_sets"])
def test_a_dict_sharing_a_list_a_billion_times_is_refused_at_once(call, no_validation):
    doc = small_doc()
    doc["variants"] = {"v": {"set": {"description": shared_bomb(9)}}}
    raised, peak = peak_of(lambda: call(doc))
    assert isinstance(raised, ScenarioError), raised
    problem, = raised.problems
    assert raised.source == "<scenario>"
    assert problem.path == "variants.v.set.description"
    assert f"at most {MAX_NODES:,} values" in problem.expected
    assert no_validation == [] and peak < 50 * MB


def test_load_with_a_set_bomb_is_refused(no_validation):
    with pytest.raises(ScenarioError) as info:
        scenario_mod.load(LESSON, sets=[f"description={flow_bomb(10)}"])
    assert info.value.source == str(LESSON)
    assert info.value.problems[0].path.startswith("--set description")


def test_a_dict_that_contains_itself_is_refused_not_walked_forever():
    doc = small_doc()
    doc["handlers"]["w"]["again"] = doc["handlers"]
    with pytest.raises(ScenarioError) as info:
        jobsim.from_dict(doc)
    assert [(p.path, p.got) for p in info.value.problems] == [
        ("handlers.w.again", "a value that contains itself")]


def test_a_dict_nested_too_deep_a_huge_integer_or_an_odd_key_is_refused():
    deep: list = []
    inner = deep
    for _ in range(5000):  # deeper than Python's recursion limit
        inner.append([])
        inner = inner[0]
    doc = {**small_doc(), "description": deep, "seed": 10 ** 5000, ("a", "b"): 1}
    with pytest.raises(ScenarioError) as info:
        check_document(doc, "<scenario>")
    assert "nesting too deep" in info.value.problems[0].got
    assert info.value.problems[0].path.startswith("description[0][0]")
    doc["description"] = "fine"
    with pytest.raises(ScenarioError) as info:
        jobsim.from_dict(doc)
    problems = {p.path: p for p in info.value.problems}
    assert problems["seed"].expected == "an integer of at most 30 digits"
    assert problems["seed"].got == "about 5,001 digits"
    assert problems["(top level)"].got == "a tuple used as a key"


def test_a_dict_whose_values_are_shared_but_within_the_budget_is_fine():
    doc = small_doc()
    job = {"handler": "w"}
    doc["workload"]["jobs"] = [job] * 50  # one dict, reached 50 times: 50 jobs
    assert len(jobsim.from_dict(doc).jobs) == 50
