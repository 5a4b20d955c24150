"""The settings a scenario ends up with, as both the cross checks and the build read them.

A policy preset merged with the file's ``executor`` keys, and the list of nodes (a count of
nodes stands for that many named ``node-1``, ``node-2``, …).
"""

from __future__ import annotations

import copy
from typing import Any

from ..base.errors import Problem
from ..executor.config import ExecutorConfig
from ..executor.policies import PRESETS, Derived
from .fileformat import FORMAT
from .spec import MISSING

DEFAULT_EXECUTOR = ExecutorConfig()


def _d(x: Any) -> dict[str, Any]:
    """``x`` if it is a mapping that validated, else an empty one (for cross checks that
    run beside field errors)."""
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def derived_settings(v: dict[str, Any]) -> dict[str, Derived]:
    """The settings the policy derives from another (failsafe's heartbeat: lock_time / 4)
    and that the ``executor`` section does not set itself."""
    if not isinstance(v.get("policy"), str):
        return {}
    own = _d(v.get("executor"))
    return {k: x for k, x in PRESETS[v["policy"]].items()
            if isinstance(x, Derived) and own.get(k, MISSING) is MISSING}


def derive(settings: dict[str, Any], derived: dict[str, Derived], node: bool = False) -> None:
    """Set each derived setting from its source, in place. For a ``node``, only where the
    node sets the source and not the setting (else it inherits the scenario's value)."""
    for key, d in derived.items():
        if node and (key in settings or d.source not in settings):
            continue
        src = settings.get(d.source, MISSING)
        if isinstance(src, (int, float)) and not isinstance(src, bool):
            settings[key] = src * d.factor


def merge_executor(v: dict[str, Any]) -> dict[str, Any]:
    """The policy preset (validated), then the ``executor`` keys over it; ``retry`` is
    merged key by key; settings the policy derives follow their source."""
    merged: dict[str, Any] = {}
    if isinstance(v.get("policy"), str):
        preset = {k: x for k, x in copy.deepcopy(PRESETS[v["policy"]]).items()
                  if not isinstance(x, Derived)}
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
    derive(merged, derived_settings(v))
    return merged


def node_list(v: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes as mappings (invalid entries as empty ones)."""
    nodes = v.get("nodes")
    if isinstance(nodes, int):
        return [{"name": f"node-{i + 1}"} for i in range(nodes)]
    return [_d(n) for n in _l(nodes)]
