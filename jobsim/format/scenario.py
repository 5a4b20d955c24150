"""Scenario files: YAML → a validated, frozen ``Scenario``.

The file is read with a safe loader after a walk that refuses duplicate keys; nothing in it is
executed (``reading``). Every value is checked against the format (``fileformat``), then
across sections (``crosschecks``), and every problem is reported at once as
``file: dotted.path: expected … (got …)``, with "did you mean" for near misses and for
references to undefined nodes or handlers. Sizes are bounded, so a typo cannot exhaust
memory. ``schema()`` is the format as JSON Schema, for editors. This module holds the entry
points, and the variants: the base run, and one run per variant with its ``set`` applied
(``paths``); ``build`` makes the objects.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..base.errors import Problem, ScenarioError
from ..executor.config import Scenario
from .build import build
from .crosschecks import cross_checks
from .fileformat import FORMAT, schema
from .paths import set_path
from .profile import resolve
from .reading import (MAX_FILE_BYTES, MAX_NODES, check_document, parse, parse_value,
                      read)
from .spec import show, suggest

__all__ = ["MAX_FILE_BYTES", "MAX_NODES", "apply_sets", "check_document", "from_dict", "load",
           "load_variants", "loads", "parse", "parse_value", "read", "schema", "set_path",
           "variants_of", "with_handler"]


def load(path: str | Path, seed: int | None = None,
         sets: list[str] | tuple[str, ...] = ()) -> Scenario:
    """Read and validate a scenario file (its base run; ``load_variants`` gives them all)."""
    return from_dict(read(path), str(path), seed, sets)


def load_variants(path: str | Path, seed: int | None = None,
                  sets: list[str] | tuple[str, ...] = (), no_expect: bool = False
                  ) -> list[Scenario]:
    """The runs a file asks for: one per variant, or the base run alone; with ``no_expect``
    without the file's expectations (not checked either: a ``--set`` may have taken away
    what one names)."""
    return variants_of(read(path), str(path), seed, sets, no_expect=no_expect)


def loads(text: str, source: str = "<scenario>", seed: int | None = None) -> Scenario:
    """Validate a scenario given as YAML text."""
    return from_dict(parse(text, source), source, seed)


def from_dict(doc: Any, source: str = "<scenario>", seed: int | None = None,
              sets: list[str] | tuple[str, ...] = ()) -> Scenario:
    """Validate a scenario given as a parsed document; ``seed`` overrides the file's and each
    of ``sets`` (``"dotted.path=value"``) overrides one value."""
    return variants_of(doc, source, seed, sets, base_only=True)[0]


def variants_of(doc: Any, source: str = "<scenario>", seed: int | None = None,
                sets: list[str] | tuple[str, ...] = (), base_only: bool = False,
                no_expect: bool = False) -> list[Scenario]:
    """The base run, and one run per variant (its ``set`` applied, its ``expect`` added).

    A document given as Python values is held to a file's limits before anything else is
    done with it (``reading.check_document``), each ``--set`` value as it is read, and the
    document with them once more."""
    if not isinstance(doc, dict):
        raise ScenarioError([Problem("", "a mapping of scenario keys", show(doc))], source)
    check_document(doc, source)  # before any copy or validation: it walks a bomb for ever
    doc = copy.deepcopy(doc)
    if no_expect:  # the file's expectations, the base run's and each variant's, left out
        doc.pop("expect", None)
        for v in (doc.get("variants") or {}).values() if isinstance(
                doc.get("variants"), dict) else ():
            if isinstance(v, dict):
                v.pop("expect", None)
    problems: list[Problem] = []
    apply_sets(doc, sets, source, problems)
    if seed is not None:
        doc["seed"] = seed
    if problems:
        raise ScenarioError(problems, source)
    if sets or seed is not None:
        check_document(doc, source, "(with the --set values)")
    given = tuple(f"--set {item}" for item in sets) + \
        ((f"--seed {seed}",) if seed is not None else ())
    try:
        runs = _variants(doc, source, base_only)
    except ScenarioError as exc:
        raise _blamed(exc, sets, seed) from None
    return [dataclasses.replace(sc, overrides=given) if given else sc for sc in runs]


def _blamed(exc: ScenarioError, sets: list[str] | tuple[str, ...],
            seed: int | None) -> ScenarioError:
    """``exc`` with each problem at a path a ``--set`` (or ``--seed``) gave a value named by
    that flag: the value came from the command line, not from the file."""
    flags = {item.partition("=")[0].strip(): "--set" for item in sets}
    if seed is not None:
        flags["seed"] = "--seed"  # applied after the --set values: its value stands

    def flag(path: str) -> str:
        for given, how in flags.items():
            if path == given or path.startswith((given + ".", given + "[")):
                return f"--set {path}" if how == "--set" else how
        return path

    def why(p: Problem) -> Problem:  # the file's own value, wrong only with the flags'
        if not flags or flag(p.path) != p.path or p.hint:
            return p
        return dataclasses.replace(p, hint="the file's own value, checked with "
                                   + " ".join(f"--set {s}" for s in sets)
                                   + (f" --seed {seed}" if seed is not None else "")
                                   + (" (--no-expect leaves the expectations out)"
                                      if p.path.startswith("expect") else ""))

    return ScenarioError([why(dataclasses.replace(p, path=flag(p.path)))
                          for p in exc.problems], exc.source)


def apply_sets(doc: dict[str, Any], sets: list[str] | tuple[str, ...], source: str,
               problems: list[Problem]) -> None:
    """Apply ``"dotted.path=value"`` overrides to ``doc`` in place, each value read as YAML
    within a file's limits (``reading.parse_value``: an alias bomb is refused as it is in a
    file); what is wrong with one is added to ``problems``, naming ``--set PATH``."""
    seen: dict[str, str] = {}
    for item in sets:
        if not isinstance(item, str):
            problems.append(Problem("--set", "dotted.path=value as text", show(item)))
            continue
        path, sep, text = item.partition("=")
        path = path.strip()
        if sep and path in seen:  # which one was meant? say so, do not pick one
            problems.append(Problem(f"--set {path}", "each path set once",
                                    f"{seen[path]} and {text}"))
            continue
        seen[path] = text
        if not sep or not path:
            problems.append(Problem(f"--set {item}", "dotted.path=value", show(item)))
            continue
        where = f"--set {path}"
        try:
            value = parse_value(text, where, source)
        except ScenarioError as exc:
            problems.extend(exc.problems)
            continue
        set_path(doc, path, value, where, problems)


def _variants(doc: dict[str, Any], source: str, base_only: bool) -> list[Scenario]:
    base = _validated(doc, source, None)
    variants = doc.get("variants") or {}
    if base_only or not variants:
        return [base]
    out = []
    for name in variants:
        vdoc = variant_doc(doc, name, source)
        try:
            sc = _validated(vdoc, source, name)
        except ScenarioError as exc:
            raise ScenarioError([Problem(f"variants.{name} → {p.path}", p.expected, p.got,
                                         p.hint) for p in exc.problems], source) from None
        out.append(sc)
    return out


def variant_doc(doc: dict[str, Any], name: str, source: str) -> dict[str, Any]:
    """The document of the variant ``name``: the file's with the variant's ``set`` applied
    and its ``expect`` added, and no variants."""
    var = (doc.get("variants") or {})[name]
    var = var if isinstance(var, dict) else {}
    vdoc = copy.deepcopy(doc)
    vdoc.pop("variants", None)
    p: list[Problem] = []
    for path, value in (var.get("set") or {}).items():
        set_path(vdoc, path, value, f"variants.{name}.set.{path}", p)
    if p:
        raise ScenarioError(p, source)
    vexpect = dict(doc.get("expect") or {})
    vexpect.update(var.get("expect") or {})
    vdoc["expect"] = vexpect
    return vdoc


def chosen_variant(doc: dict[str, Any], name: str, source: str) -> dict[str, Any]:
    """``variant_doc`` of the variant a command's ``--variant`` names, refused (with the
    file's variants and the nearest) where the file has none of that name."""
    variants = doc.get("variants") if isinstance(doc.get("variants"), dict) else {}
    if name not in variants:
        raise ScenarioError([Problem("--variant", "one of the scenario's variants: " + (
            ", ".join(map(str, variants)) or "(it has none)"), repr(name),
            suggest(name, tuple(map(str, variants))))], source)
    return variant_doc(doc, name, source)


def _validated(doc: dict[str, Any], source: str, variant: str | None) -> Scenario:
    problems: list[Problem] = []
    doc = resolve(doc, source)  # a db.profile file, read in its place
    v = FORMAT.check(doc, "", problems)
    if isinstance(v, dict):
        cross_checks(v, problems)
    if problems:
        raise ScenarioError(problems, source)
    return build(v, doc, source, variant)


def with_handler(scenario: Scenario, name: str, run: Callable[..., Any]) -> Scenario:
    """The scenario with handler ``name`` run by ``run``, a generator function of a
    ``Context`` that yields SimPy events (see ``executor/context.py``); the handler keeps the
    file's retry policy, worker timeout and wait before failing."""
    if name not in scenario.handlers:
        raise ScenarioError([Problem(f"handlers.{name}", "a handler the scenario declares ("
                                     + ", ".join(scenario.handlers) + ")", repr(name),
                                     suggest(name, tuple(scenario.handlers)))],
                            scenario.source)
    plain = inspect.isfunction(run) and not inspect.isgeneratorfunction(run)
    if not callable(run) or plain:
        raise ScenarioError([Problem(f"handlers.{name}", "a generator function of a context "
                                     "(a def with yield in it)",
                                     f"{type(run).__name__} {getattr(run, '__name__', '')}"
                                     .strip(), "a Python handler yields the events it waits "
                                               "for")], scenario.source)
    handler = dataclasses.replace(scenario.handlers[name], python=run, steps=None)
    return dataclasses.replace(scenario, handlers={**scenario.handlers, name: handler})
