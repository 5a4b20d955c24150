"""Variants and overrides: one scenario, several runs, values set by dotted path."""

import pytest

from jobsim.format import scenario
from jobsim.base.errors import ScenarioError

DOC = """
name: v
nodes: 1
executor: {threads: 4}
handlers:
  work: {duration: 1s}
workload:
  jobs: [{handler: work}]
expect:
  jobs.lost: "== 0"
variants:
  baseline:
  two-threads:
    set: {executor.threads: 2, "nodes": [{name: a}, {name: b, threads: 1}]}
    expect: {jobs.done: "== 1"}
"""


def test_a_variant_without_changes_is_the_base_run():
    runs = scenario.variants_of(scenario.parse(DOC))
    assert [r.variant for r in runs] == ["baseline", "two-threads"]
    assert runs[0].executor.threads == 4 and len(runs[0].nodes) == 1
    assert [e.text for e in runs[0].expect] == ["jobs.lost == 0"]


def test_a_variant_sets_values_and_adds_expectations():
    two = scenario.variants_of(scenario.parse(DOC))[1]
    assert two.executor.threads == 2
    assert [(n.name, n.executor.threads) for n in two.nodes] == [("a", 2), ("b", 1)]
    assert [e.text for e in two.expect] == ["jobs.lost == 0", "jobs.done == 1"]


def test_set_overrides_before_validation_and_errors_name_the_flag():
    doc = scenario.parse(DOC)
    sc = scenario.from_dict(doc, sets=["executor.lock_time=45s", "seed=9"])
    assert sc.executor.lock_time == 45.0 and sc.seed == 9
    with pytest.raises(ScenarioError) as err:
        scenario.from_dict(doc, sets=["workload.jobs[3].priority=1"])
    assert err.value.problems[0].path == "--set workload.jobs[3].priority"
    # a value the file's validation refuses is the flag's too, not the file's
    with pytest.raises(ScenarioError) as err:
        scenario.from_dict(doc, sets=["executor.threads=many"])
    assert err.value.problems[0].path == "--set executor.threads"
    with pytest.raises(ScenarioError) as err:
        scenario.from_dict(doc, sets=["warmup=-1s", "executor=[1]"])
    assert sorted(p.path for p in err.value.problems) == ["--set executor", "--set warmup"]
    # the file's own mistakes keep their paths beside a flag's
    bad = scenario.parse(DOC.replace("threads: 4", "threads: four"))
    with pytest.raises(ScenarioError) as err:
        scenario.from_dict(bad, sets=["warmup=-1s"])
    assert sorted(p.path for p in err.value.problems) == ["--set warmup", "executor.threads"]


def test_a_bad_value_in_a_variant_names_the_variant():
    bad = DOC.replace("executor.threads: 2", "executor.threads: lots")
    with pytest.raises(ScenarioError) as err:
        scenario.variants_of(scenario.parse(bad))
    assert err.value.problems[0].path.startswith("variants.two-threads")
    assert "lots" in err.value.format()


def test_expectation_paths_are_checked_before_the_run():
    bad = DOC.replace('jobs.lost: "== 0"', 'jobs.lsot: "== 0"')
    with pytest.raises(ScenarioError) as err:
        scenario.variants_of(scenario.parse(bad))
    p = err.value.problems[0]
    assert p.path == "expect.jobs.lsot" and "did you mean 'lost'" in p.hint
