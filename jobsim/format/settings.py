"""The settings a scenario ends up with, as both the cross checks and the build read them.

A policy preset merged with the file's ``executor`` keys, and the list of nodes (a count of
nodes stands for that many named ``node-1``, ``node-2``, …).
"""

from __future__ import annotations

import copy
from typing import Any

from ..base.errors import Problem
from ..executor.config import ExecutorConfig
from ..executor.policies import PRESETS
from .fileformat import FORMAT
from .spec import MISSING

DEFAULT_EXECUTOR = ExecutorConfig()


def _d(x: Any) -> dict[str, Any]:
    """``x`` if it is a mapping that validated, else an empty one (for cross checks that
    run beside field errors)."""
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def merge_executor(v: dict[str, Any]) -> dict[str, Any]:
    """The policy preset (validated), then the ``executor`` keys over it; ``retry`` is
    merged key by key."""
    merged: dict[str, Any] = {}
    if isinstance(v.get("policy"), str):
        preset = copy.deepcopy(PRESETS[v["policy"]])
        p: list[Problem] = []
        checked = FORMAT.fields["executor"].check(preset, "policy", p)
        assert not p, p  # presets are ours and must validate
        merged.update(checked)
    for k, x in _d(v.get("executor")).items():
        if x is MISSING:
            continue
        if k == "retry" and isinstance(merged.get("retry"), dict) and isinstance(x, dict):
            merged["retry"] = {**merged["retry"], **x}  # key by key: attempts, backoff
        else:
            merged[k] = x
    return merged


def node_list(v: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes as mappings (invalid entries as empty ones)."""
    nodes = v.get("nodes")
    if isinstance(nodes, int):
        return [{"name": f"node-{i + 1}"} for i in range(nodes)]
    return [_d(n) for n in _l(nodes)]
