"""What of the scenario format a set of drawn scenarios covers, judged by the format's own
JSON Schema (``jobsim.format.scenario.schema()``), so that a key added to the format and
not to the fuzz generator fails tests/test_fuzz.py until the generator draws it.

Three things are counted, each by its path in the schema (``handlers.*.calls[].breaker.after``:
``*`` a named entry, ``[]`` a list's items):

- **keys**: every key the schema has (``properties``, ``additionalProperties``, ``items``,
  through ``anyOf``/``oneOf``/``allOf``); a key the schema forbids (``{"not": {}}``, as a
  node's ``retry``) is none;
- **values**: every value of an ``enum`` or ``const``, as ``path=value``;
- **forms**: every alternative of an ``anyOf``, as ``path#k (what it is)`` — a backoff's
  list, ISO cycle, fixed and exponential, a jitter's number and names, a latency's plain
  duration and its distributions.
"""

from __future__ import annotations

import re
from typing import Any

#: forms no draw takes, and why
EXEMPT_FORMS = {
    # a profile *file* must exist beside the scenario; the generator writes the same figures
    # inline (the other form), and tests/test_calibrate.py reads files
    "db.profile#0",
}


def _alternatives(node: Any) -> list[dict]:
    """``node`` and what its anyOf/oneOf/allOf hold, flattened; forbidden keys left out."""
    if not isinstance(node, dict) or node.get("not") == {}:
        return []
    out = [node]
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key) or []:
            out += _alternatives(sub)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _what(alt: dict) -> str:
    if "const" in alt:
        return repr(alt["const"])
    if "enum" in alt:
        return "one of " + ", ".join(map(str, alt["enum"]))
    if alt.get("type") == "object" and alt.get("properties"):
        return "{" + ", ".join(alt["properties"]) + "}"
    return str(alt.get("type", "any")) + (f" {alt['pattern']}" if "pattern" in alt else "")


def schema_targets(schema: dict) -> tuple[set[str], set[str], dict[str, str]]:
    """(keys, ``path=value`` enum values, ``path#k`` forms → what each is) of a schema."""
    keys: set[str] = set()
    values: set[str] = set()
    forms: dict[str, str] = {}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict) and path:
            for k in ("anyOf", "oneOf"):
                for i, alt in enumerate(node.get(k) or []):
                    if alt.get("type") != "null":  # YAML's null for none: drawn as "none"
                        forms[f"{path}#{i}"] = _what(alt)
        for alt in _alternatives(node):
            for v in alt.get("enum") or []:
                values.add(f"{path}={v}")
            if "const" in alt:
                values.add(f"{path}={alt['const']}")
            for k, sub in (alt.get("properties") or {}).items():
                if _alternatives(sub):
                    keys.add(_join(path, k))
                    walk(sub, _join(path, k))
            extra = alt.get("additionalProperties")
            if isinstance(extra, dict) and _alternatives(extra):
                keys.add(_join(path, "*"))
                walk(extra, _join(path, "*"))
            if isinstance(alt.get("items"), dict):
                walk(alt["items"], path + "[]")

    walk(schema, "")
    return keys, values, forms


_TYPES = {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}


def _fits(value: Any, alt: dict) -> bool:
    """Whether ``value`` is of the alternative's shape (type, pattern, enum, const, keys)."""
    t = alt.get("type")
    if t in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                t == "integer" and not isinstance(value, int)):
            return False
    elif t is not None and not isinstance(value, _TYPES[t]):
        return False
    if "const" in alt and not (type(value) is type(alt["const"]) and value == alt["const"]):
        return False
    if "enum" in alt and not (isinstance(value, str) and value in alt["enum"]):
        return False
    if "pattern" in alt and not (isinstance(value, str) and re.search(alt["pattern"], value)):
        return False
    if isinstance(value, dict) and t == "object":
        if any(k not in value for k in alt.get("required") or []):
            return False
        if alt.get("additionalProperties") is False and any(
                k not in (alt.get("properties") or {}) for k in value):
            return False
    return True


def drawn(doc: Any, schema: dict) -> tuple[set[str], set[str], set[str]]:
    """(keys, ``path=value``, ``path#k``) a document draws, walked beside the schema."""
    keys: set[str] = set()
    values: set[str] = set()
    forms: set[str] = set()

    def visit(value: Any, node: Any, path: str) -> None:
        if isinstance(node, dict) and path:
            for k in ("anyOf", "oneOf"):
                for i, alt in enumerate(node.get(k) or []):
                    if _fits(value, alt):
                        forms.add(f"{path}#{i}")
        alts = _alternatives(node)
        if isinstance(value, dict):
            for k, v in value.items():
                subs = [a["properties"][k] for a in alts if k in (a.get("properties") or {})]
                p = _join(path, k)
                if not subs:
                    subs = [a["additionalProperties"] for a in alts
                            if isinstance(a.get("additionalProperties"), dict)]
                    p = _join(path, "*")
                if subs:
                    keys.add(p)
                    for s in subs:
                        visit(v, s, p)
        elif isinstance(value, list):
            for s in [a["items"] for a in alts if isinstance(a.get("items"), dict)]:
                for item in value:
                    visit(item, s, path + "[]")
        else:
            for a in alts:
                if "enum" in a and isinstance(value, str) and value in a["enum"]:
                    values.add(f"{path}={value}")
                if "const" in a and type(value) is type(a["const"]) and value == a["const"]:
                    values.add(f"{path}={a['const']}")

    visit(doc, schema, "")
    return keys, values, forms


def uncovered(docs: list[dict], schema: dict) -> dict[str, list[str]]:
    """What of the schema no document draws: ``keys``, ``values``, ``forms`` (sorted)."""
    want_keys, want_values, want_forms = schema_targets(schema)
    got_keys: set[str] = set()
    got_values: set[str] = set()
    got_forms: set[str] = set()
    for doc in docs:
        k, v, f = drawn(doc, schema)
        got_keys |= k
        got_values |= v
        got_forms |= f
    return {"keys": sorted(want_keys - got_keys),
            "values": sorted(want_values - got_values),
            "forms": sorted(f"{f} ({want_forms[f]})"
                            for f in set(want_forms) - got_forms - EXEMPT_FORMS)}


def figures(docs: list[dict], schema: dict) -> dict[str, tuple[int, int]]:
    """(drawn, total) of keys, values and forms."""
    want = schema_targets(schema)
    missing = uncovered(docs, schema)
    totals = {"keys": len(want[0]), "values": len(want[1]),
              "forms": len(set(want[2]) - EXEMPT_FORMS)}
    return {k: (totals[k] - len(missing[k]), totals[k]) for k in totals}
