"""The page writes Bokeh's document JSON itself (``output/view/bokeh_doc.py``); Bokeh's own
classes, building the same figures (``bokeh_reference.py``, the page's code before), must
write the very same JSON item: every model, attribute, order, id and array byte. Over the
shipped scenarios that draw each kind of layer (services, crashes and restarts, pauses,
lock expiries, side effects and refused ones, instants, partitions), and over fuzzed
scenarios: fixed seeds and fresh ones (printed, for a replay). Also: the inlined BokehJS is
the text ``bokeh.resources`` inlines, and a page is built without importing Bokeh."""

from __future__ import annotations

import json
import secrets

import pytest

import bokeh_reference as reference
import fuzzgen
from conftest import SCENARIOS
from jobsim.format import scenario
from jobsim.output.report import analyse
from jobsim.output.view import figures
from jobsim.output.view.data import run_data
from jobsim.output.view.page import bokeh_js
from jobsim.sim.world import run

#: shipped scenarios whose pages draw every layer between them (the slow tier: all)
LAYERS = ("lesson", "double_charges", "node_crash", "zombie_pause", "retry_storm",
          "db_scheduler", "lock_expiry")


def _first_difference(a, b, path="item"):
    if type(a) is not type(b):
        return f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        return next((d for k in a if (d := _first_difference(a[k], b[k], f"{path}.{k}"))),
                    None)
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b))
                     if (d := _first_difference(x, y, f"{path}[{i}]"))), None)
    return None if a == b else f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"


def _same_item(sc, what: str) -> None:
    a = analyse(run(sc))
    data = run_data(a.result.trace, a.histories, a.summary, sc.variant)
    ours, bokehs = figures.item(data, "7"), reference.item(data, "7")
    assert json.dumps(ours) == json.dumps(bokehs), \
        f"{what}: {_first_difference(bokehs, ours)}"


def _check_file(name: str) -> None:
    for sc in scenario.load_variants(SCENARIOS / f"{name}.yaml"):
        _same_item(sc, f"{name} variant {sc.variant}")


@pytest.mark.parametrize("name", LAYERS)
def test_the_json_is_bokehs_for_a_shipped_scenario(name):
    _check_file(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.stem for p in SCENARIOS.glob("*.yaml")
                                        if p.stem not in LAYERS))
def test_the_json_is_bokehs_for_every_shipped_scenario(name):
    _check_file(name)


def _fuzzed(seed: int) -> None:
    for sc in fuzzgen.built(seed):
        _same_item(sc, f"fuzz seed {seed} variant {sc.variant}")


@pytest.mark.parametrize("seed", [3, 11])
def test_the_json_is_bokehs_for_fuzzed_scenarios(seed):
    _fuzzed(seed)


def test_the_json_is_bokehs_for_freshly_fuzzed_scenarios():
    """Two seeds drawn now (each printed before it runs)."""
    for _ in range(2):
        _fuzzed(secrets.randbelow(2 ** 31))


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_the_json_is_bokehs_for_many_freshly_fuzzed_scenarios(block):
    for _ in range(10):
        _fuzzed(secrets.randbelow(2 ** 31))


def test_the_inlined_bokehjs_is_what_bokeh_inlines():
    from bokeh.resources import Resources

    assert bokeh_js() == list(Resources(mode="inline", components=["bokeh", "bokeh-gl"],
                                        log_level="warn").js_raw)


def test_the_columns_written_binary_are_bokehs():
    from bokeh.util.serialization import BINARY_ARRAY_TYPES

    from jobsim.output.view.bokeh_doc import _BINARY

    assert set(_BINARY) == set(BINARY_ARRAY_TYPES)
