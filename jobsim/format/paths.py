"""Dotted paths into a scenario document, and setting a value at one.

``--set dotted.path=value`` and a variant's ``set`` both go through ``set_path``: ``a.b[2].c``
or ``a.b.2.c`` steps through mappings and lists, creating mappings on the way — except into a
named entry of ``handlers``, ``services`` or ``variants`` that the file does not have. A
variant's ``set`` is itself a mapping of dotted paths, so a path through one
(``variants.fifo.set.executor.order``) sets one of its keys (``executor.order``), the one
the file wrote for that path if it did, and leaves the variant's other keys as they are.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import Problem
from .spec import show, suggest

#: sections whose entries are named: a path into one must name an entry that is there
NAMED = ("handlers", "services", "variants")


def _steps(path: str) -> list[str | int] | None:
    """``a.b[2].c`` or ``a.b.2.c`` → ``["a", "b", 2, "c"]``."""
    steps: list[str | int] = []
    for part in path.replace("[", ".[").split("."):
        if not part:
            return None
        if part.startswith("["):
            if not part.endswith("]") or not part[1:-1].isdigit():
                return None
            steps.append(int(part[1:-1]))
        elif part.isdigit():
            steps.append(int(part))
        else:
            steps.append(part)
    return steps


def _into_variant_set(doc: dict[str, Any], steps: list[str | int], value: Any) -> bool:
    """Set a variant's ``set`` key for a path through it (``variants.NAME.set.a.b``: the
    key ``a.b``, or the key the file wrote for the same path), and say whether it did: a
    step into it as into nested mappings would put a mapping ``a: {b: …}`` beside the
    variant's dotted keys, which replaces the whole section ``a`` when the variant applies."""
    if len(steps) < 4 or steps[0] != "variants" or steps[2] != "set":
        return False
    entry = (doc.get("variants") or {}).get(steps[1]) if isinstance(doc.get("variants"),
                                                                    dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("set", {}), dict):
        return False
    if entry.get("set") is None:
        entry["set"] = {}
    sets, rest = entry["set"], steps[3:]
    key = next((k for k in sets if isinstance(k, str) and _steps(k) == rest),
               "".join(f"[{x}]" if isinstance(x, int) else ("." if i else "") + x
                       for i, x in enumerate(rest)))
    sets[key] = value
    return True


def set_path(doc: dict[str, Any], path: str, value: Any, where: str,
             problems: list[Problem]) -> None:
    """Set ``doc``'s value at a dotted path (creating mappings on the way); a step through a
    list or into a value that is not a mapping is reported at ``where``."""
    steps = _steps(path)
    if not steps or not isinstance(steps[0], str):
        problems.append(Problem(where, "a dotted path like executor.lock_time or "
                                "nodes[1].threads", show(path)))
        return
    section = doc.get(steps[0]) if isinstance(steps[0], str) else None
    if steps[0] in NAMED and len(steps) > 2 and isinstance(section, dict) and \
            steps[1] not in section:
        # a setting inside an entry that is not there: a misspelt name would make a new,
        # unused entry and leave the one meant unchanged (``handlers.x: {...}`` adds one)
        known = ", ".join(map(str, section)) or "none"
        problems.append(Problem(where, f"the name of one of the file's {steps[0]} ({known})",
                                show(steps[1]), suggest(str(steps[1]), tuple(map(str, section)))))
        return
    if _into_variant_set(doc, steps, value):
        return
    cur: Any = doc
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        if isinstance(step, int):
            if not isinstance(cur, list) or not 0 <= step < len(cur):
                size = f"a list of {len(cur)}" if isinstance(cur, list) else "not a list"
                hint = ""
                if steps[:i] == ["nodes"] and isinstance(cur, int) and \
                        not isinstance(cur, bool):  # ``nodes: 6``: a count, not a list
                    rest = ".".join(map(str, steps[i + 1:]))
                    hint = (f"the file's nodes is a count ({cur}), not a list: write them as "
                            f"a list (nodes: [{{name: node-1}}, …]) to set one of them"
                            + (f", or set executor.{rest} for all" if rest else ""))
                problems.append(Problem(where, f"an index into a list at step {i + 1}",
                                        f"[{step}] into {size}", hint))
                return
            if last:
                cur[step] = value
            else:
                cur = cur[step]
            continue
        if not isinstance(cur, dict):
            problems.append(Problem(where, f"a mapping at step {i + 1} ({step!r})",
                                    show(cur)))
            return
        if last:
            cur[step] = value
        else:
            if step not in cur or cur[step] is None:
                cur[step] = {}
            cur = cur[step]
