"""Defaults that are visible and not traps: the schema carries a valid default and a
description for every setting, the README lists the same defaults (generated from the same
source), every preset sets what its system fixes and derives what it derives, and
``jobsim list --policies`` prints each preset in full."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import jsonschema
import pytest

from jobsim.cli import main
from jobsim.executor.config import ExecutorConfig
from jobsim.executor.policies import PRESETS, Derived
from jobsim.format.executor_keys import EXECUTOR, TABLE_ONLY, preset_settings, settings_table
from jobsim.format.fileformat import schema
from jobsim.format.scenario import loads

ROOT = Path(__file__).resolve().parents[1]


def _defaults(node, path=""):
    """(dotted path, subschema) of every schema node that carries a default."""
    if isinstance(node, dict):
        if "default" in node:
            yield path, node
        for key, value in node.items():
            yield from _defaults(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _defaults(value, f"{path}[{i}]")


def test_every_default_in_the_schema_is_valid_against_its_own_subschema():
    found = list(_defaults(schema()))
    assert len(found) > 40
    for path, node in found:
        sub = {k: v for k, v in node.items() if k != "default"}
        jsonschema.validate(node["default"], sub), path


def test_every_executor_setting_has_a_description_and_a_default_in_the_schema():
    props = schema()["properties"]["executor"]["properties"]
    assert set(props) == set(EXECUTOR) | set(TABLE_ONLY)
    for name, node in props.items():
        assert node.get("description"), name
        if name != "handles":  # absent means all: the description says so
            assert "default" in node, name


def test_every_executor_setting_of_the_config_is_in_the_file_format():
    fields = {f.name for f in dataclasses.fields(ExecutorConfig)}
    assert fields == set(EXECUTOR) | set(TABLE_ONLY)


def test_the_readme_lists_the_defaults_the_code_uses():
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- settings:begin[^>]*-->\n(.*?)\n<!-- settings:end -->", text, re.S)
    assert m, "the README's settings table is missing"
    assert m.group(1) == settings_table(), (
        "README.md's settings table is stale: regenerate it from "
        "jobsim.format.executor_keys.settings_table()")


def test_the_generic_executor_does_not_prefetch():
    sc = loads("name: x\nnodes: 2\nhandlers: {h: {}}\nworkload: {jobs: [{handler: h}]}\n")
    assert sc.executor.queue_size == 0
    assert all(n.start_at is None for n in sc.nodes)


FIXED = ("threads", "queue_size", "lock_time", "heartbeat")
POLLING = ("poll_interval", "initial_delay")


@pytest.mark.parametrize("policy", sorted(PRESETS))
def test_every_preset_sets_what_its_system_fixes(policy):
    preset = PRESETS[policy]
    wanted = FIXED + (POLLING if preset["wakeup"] != "ticks" else ())
    missing = [k for k in wanted if k not in preset]
    assert not missing, f"{policy} inherits {missing} from the generic executor"


def test_failsafe_derives_its_heartbeat_from_the_lock_time():
    assert isinstance(PRESETS["failsafe"]["heartbeat"], Derived)
    base = "handlers: {h: {}}\nworkload: {jobs: [{handler: h}]}\n"
    sc = loads("name: x\npolicy: failsafe\nnodes: 1\n" + base)
    assert sc.executor.lock_time == 300.0 and sc.executor.heartbeat == 75.0
    sc = loads("name: x\npolicy: failsafe\nexecutor: {lock_time: 1m}\nnodes: 1\n" + base)
    assert sc.executor.heartbeat == 15.0  # lockTimeout / 4, not a fixed 75 s
    sc = loads("name: x\npolicy: failsafe\nexecutor: {lock_time: 1m, heartbeat: 20s}\n"
               "nodes: 1\n" + base)
    assert sc.executor.heartbeat == 20.0  # set itself: not derived
    sc = loads("name: x\npolicy: failsafe\nnodes: [{name: a}, {name: b, lock_time: 2m}]\n"
               + base)
    assert [n.executor.heartbeat for n in sc.nodes] == [75.0, 30.0]
    sc = loads("name: x\npolicy: failsafe_v3\nexecutor: {lock_time: 3m}\nnodes: 1\n" + base)
    assert sc.executor.heartbeat == 60.0  # v3: lockTimeout / 3
    sc = loads("name: x\npolicy: db_scheduler\nexecutor: {heartbeat: 1m}\nnodes: 1\n" + base)
    assert sc.executor.lock_time == 360.0  # dead after 6 missed heartbeats


def test_list_policies_prints_every_setting_of_every_preset(capsys):
    assert main(["list", "--policies"]) == 0
    out = capsys.readouterr().out
    for policy in PRESETS:
        block = out.split(f"\n{policy}: ", 1)[1].split("\n\n", 1)[0]
        keys = [line.split()[0] for line in block.splitlines()[1:]]
        assert keys == [k for k, _, _ in preset_settings(policy)], policy
    assert "  heartbeat           75s  (derived: lock_time / 4)" in out


def test_the_file_format_knows_every_invariant_and_every_node_figure():
    """An expectation names a figure before the run: the format's shape of the summary
    must list what the checks and the per-node figures produce."""
    from jobsim.analysis.checks import INVARIANTS
    from jobsim.format.fileformat import ANY, SUMMARY_SHAPE

    assert tuple(SUMMARY_SHAPE["invariants"]) == INVARIANTS
    sc = loads("name: x\nnodes: 2\nhandlers: {h: {}}\nworkload: {jobs: [{handler: h}]}\n")
    from jobsim.output.report import analyse
    from jobsim.sim.world import run

    node = analyse(run(sc)).summary["nodes"]["node-1"]
    assert set(node) == set(SUMMARY_SHAPE["nodes"][ANY])


AGING = """
name: aging
seed: 1
until: 2h
executor: {{order: aging, aging_rate: 0.05, threads: 1, queue_size: 0, batch_size: 1,
           wakeup: notify{extra}}}
nodes: [{{name: n, start_at: 0s}}]
handlers: {{w: {{duration: 1s}}}}
workload:
  streams:
    - {{name: deferred, handler: w, kind: timer, count: 40, start: 0s, due_in: 1h}}
    - {{name: urgent, handler: w, count: 40, start: 1h, priority: 10}}
"""


def test_aging_counts_from_the_due_time_not_from_creation():
    """Low-priority timers created at t=0 and due at 1 h, and urgent priority-10 jobs that
    arrive at 1 h: time spent not yet due earns no priority, so the urgent jobs go first
    (counted from creation, the timers had an hour's head start and went first)."""
    from jobsim.output.report import analyse
    from jobsim.sim.world import run

    def waits(extra: str) -> dict:
        s = analyse(run(loads(AGING.format(extra=extra)))).summary
        return {p: v["start_delay"]["mean"] for p, v in s["latency"]["by_priority"].items()}

    due = waits("")
    assert due["10"] < due["0"]
    created = waits(", aging_from: created")
    assert created["10"] > created["0"]


def test_every_test_the_fidelity_record_names_exists():
    """docs/policies.md says, statement by statement, which test holds each seed's claim:
    every test it names must exist (a renamed or deleted test breaks the record)."""
    docs = (ROOT / "docs" / "policies.md").read_text()
    named = set(re.findall(r"`(?:tests/(test_\w+)\.py::)?(test_\w+)`", docs))
    assert len(named) > 50
    defined: dict[str, set[str]] = {}
    for path in (ROOT / "tests").glob("test_*.py"):
        defined[path.stem] = set(re.findall(r"^def (test_\w+)", path.read_text(), re.M))
    everywhere = set().union(*defined.values())
    missing = [(f, t) for f, t in named if t not in (defined.get(f, set()) if f else everywhere)]
    assert missing == []
