"""The executor's parts use their node and the run only through the names written down in
``jobsim/executor/parts/host.py`` (``Host``, ``Cluster``), and import neither the node's
module nor the world's: the package's modules import each other in no circle. Read from the
source (``ast``), so a part that reaches for something new fails here until the interface
names it; and the real ``Node`` and ``World`` have every name the interface declares."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from jobsim.executor.node import Node
from jobsim.executor.parts import host
from jobsim.sim.world import World

ROOT = Path(__file__).resolve().parents[1] / "jobsim"
PARTS = sorted((ROOT / "executor" / "parts").glob("*.py"))
USERS = PARTS + [ROOT / "executor" / "context.py"]


def _declared(proto: type) -> set[str]:
    """The names a protocol declares: its annotated attributes and its methods."""
    return set(proto.__annotations__) | {n for n, v in vars(proto).items()
                                         if callable(v) and not n.startswith("_")}


HOST, CLUSTER = _declared(host.Host), _declared(host.Cluster)


def _uses(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The attributes read or written on a name ``node`` (or ``self._node``), and on the
    run: ``node.world.X``, ``world.X`` where ``world`` is a local name."""
    on_node, on_world = set(), set()
    for n in ast.walk(tree):
        if not isinstance(n, ast.Attribute):
            continue
        v = n.value
        if isinstance(v, ast.Name) and v.id == "node":
            on_node.add(n.attr)
        elif isinstance(v, ast.Attribute) and v.attr == "_node" and \
                isinstance(v.value, ast.Name) and v.value.id == "self":
            on_node.add(n.attr)
        elif isinstance(v, ast.Name) and v.id == "world":
            on_world.add(n.attr)
        elif isinstance(v, ast.Attribute) and v.attr == "world" and \
                isinstance(v.value, (ast.Name, ast.Attribute)):
            on_world.add(n.attr)
    return on_node, on_world


@pytest.mark.parametrize("path", USERS, ids=lambda p: p.name)
def test_a_part_uses_only_what_the_interface_names(path):
    on_node, on_world = _uses(ast.parse(path.read_text(encoding="utf-8")))
    assert on_node - HOST == set(), f"{path.name} uses node names Host does not declare"
    assert on_world - CLUSTER == set(), f"{path.name} uses run names Cluster does not declare"


@pytest.mark.parametrize("path", USERS, ids=lambda p: p.name)
def test_a_part_imports_neither_the_node_nor_the_world(path):
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.ImportFrom):
            module = n.module or ""
            assert not module.endswith("node") and "sim" not in module.split("."), \
                f"{path.name} imports {'.' * n.level}{module}"


def test_the_node_imports_nothing_of_the_run_around_it():
    tree = ast.parse((ROOT / "executor" / "node.py").read_text(encoding="utf-8"))
    froms = {("." * n.level) + (n.module or "") for n in ast.walk(tree)
             if isinstance(n, ast.ImportFrom)}
    assert not any("sim" in m.split(".") for m in froms), froms


def test_the_node_and_the_world_have_every_declared_name():
    from jobsim.tools.bench import mmc_scenario

    world = World(mmc_scenario(10, 2, 0.5, 1.0, 1))
    node = world.nodes[0]
    node.start()  # what start binds (the hand-off) is part of the interface
    assert isinstance(node, Node)
    assert {n for n in HOST if not hasattr(node, n)} == set()
    assert {n for n in CLUSTER if not hasattr(world, n)} == set()


def test_the_interface_is_not_empty():
    # a check that reads nothing would pass every part: it must see the common names
    assert {"paused", "failed", "env", "world", "on_locked"} <= HOST
    assert {"says", "check_drained", "store", "live"} <= CLUSTER
    on_node, on_world = _uses(ast.parse((ROOT / "executor" / "parts" / "worker.py")
                                        .read_text(encoding="utf-8")))
    assert {"paused", "failed", "queue", "idle"} <= on_node
    assert {"says", "live", "check_drained"} <= on_world
