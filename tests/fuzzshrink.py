"""Shrinking a failing fuzz draw to a few lines: greedy deletion over the document.

``shrink(doc, keeps)`` tries, again and again until nothing more goes: one variant made the
base run (its ``set`` applied, the others dropped), then removing each key of each mapping
and each item of each list, then smaller numbers (counts, attempts, threads, nodes); it
keeps a change when ``keeps(candidate)`` still says the failure is there. A candidate the
format refuses does not keep it, so what comes out is a valid scenario. ``signature`` is the
usual ``keeps``: the same class of outcome with the same invariants, or the same exception
at the same frame.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from fuzzjudge import Outcome, judge


def signature(o: Outcome) -> str:
    """What a failure is, without which run showed it: ``break exclusive_locks``,
    ``crash ZeroDivisionError at jobsim/...``, ``hang``, ``cost``."""
    if o.kind in ("break", "expect", "hang", "refused", "invalid", "known"):
        detail = o.detail.split(": ", 1)[-1] if o.kind in ("break", "expect") else o.detail
        return f"{o.kind} {detail.split(' (actual')[0]}" if o.kind != "hang" else "hang"
    if o.kind == "crash":
        return "crash " + o.detail.split(": ")[0]
    return o.kind


def same_failure(target: str, cost_over: float = 10.0) -> Callable[[dict], bool]:
    """``keeps`` for a failure of signature ``target`` (``cost`` : a ratio over
    ``cost_over``)."""
    def keeps(doc: dict) -> bool:
        o = judge(doc)
        if target == "cost":
            return o.kind == "ok" and o.ratio > cost_over
        return signature(o) == target
    return keeps


def _paths(node: Any, path: tuple = ()) -> list[tuple]:
    """Every place in the document, deepest last (so parents go first)."""
    out = []
    if isinstance(node, dict):
        for k in node:
            out.append(path + (k,))
            out += _paths(node[k], path + (k,))
    elif isinstance(node, list):
        for i in range(len(node)):
            out.append(path + (i,))
            out += _paths(node[i], path + (i,))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _without(doc: dict, path: tuple) -> dict | None:
    if path in (("name",), ("nodes",), ("handlers",), ("workload",)):
        return None
    out = copy.deepcopy(doc)
    parent = _get(out, path[:-1])
    try:
        del parent[path[-1]]
    except (KeyError, IndexError, TypeError):
        return None
    return out


def _smaller(doc: dict, path: tuple) -> list[dict]:
    value = _get(doc, path)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 1:
        return []
    out = []
    for v in sorted({1, value // 2, value - 1}):
        if v < value:
            d = copy.deepcopy(doc)
            _get(d, path[:-1])[path[-1]] = v
            out.append(d)
    return out


def _chunks(doc: dict, path: tuple) -> list[dict]:
    """A long list with a half, a quarter … of its items removed (as delta debugging does),
    before the items one by one."""
    value = _get(doc, path)
    if not isinstance(value, list) or len(value) < 4:
        return []
    out = []
    size = len(value) // 2
    while size >= 2:
        for start in range(0, len(value), size):
            d = copy.deepcopy(doc)
            lst = _get(d, path)
            del lst[start:start + size]
            if lst:
                out.append(d)
        size //= 2
    return out


def _promoted(doc: dict) -> list[dict]:
    """Each variant as the base run: its ``set`` applied by the format's own paths."""
    from jobsim.format.paths import set_path

    out = []
    for name, var in (doc.get("variants") or {}).items():
        d = copy.deepcopy(doc)
        del d["variants"]
        problems: list = []
        for path, value in ((var or {}).get("set") or {}).items():
            set_path(d, path, copy.deepcopy(value), name, problems)
        if not problems:
            out.append(d)
    return out


def shrink(doc: dict, keeps: Callable[[dict], bool], budget: int = 2000,
           log: Callable[[str], None] | None = None) -> dict:
    """The smallest document found by greedy deletion that ``keeps`` the failure."""
    tries = 0
    for d in _promoted(doc):
        tries += 1
        if keeps(d):
            doc = d
            break
    changed = True
    while changed and tries < budget:
        changed = False
        for path in _paths(doc):
            if tries >= budget:
                break
            try:
                _get(doc, path)
            except (KeyError, IndexError, TypeError):
                continue  # gone with its parent
            for cand in _chunks(doc, path) + [_without(doc, path)] + _smaller(doc, path):
                if cand is None:
                    continue
                tries += 1
                if keeps(cand):
                    doc, changed = cand, True
                    if log:
                        log(f"shrunk: {'.'.join(map(str, path))} ({tries} tries)")
                    break
    return doc
