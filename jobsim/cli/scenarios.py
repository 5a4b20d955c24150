"""``jobsim validate``, ``jobsim list`` and ``jobsim schema``: reading scenario files without
running them — checking them and estimating their cost, listing the shipped scenarios and
policy presets, printing the format as JSON Schema."""

from __future__ import annotations

import argparse
import sys
from typing import Any
from pathlib import Path

from ..base.errors import ScenarioError
from .status import BAD_INPUT, OK


def _validate(args: argparse.Namespace) -> int:
    from ..format import scenario as scenario_mod
    from ..format.lint import lint_runs
    from ..sim.cost import Budget, BudgetError, check, estimate

    budget = Budget(args.budget, args.memory_budget)
    status = OK
    for f in args.files:
        try:
            doc = scenario_mod.read(f)
            runs = scenario_mod.variants_of(doc, f, sets=args.sets)
            grid = _grid_problem(doc, f)
        except ScenarioError as exc:
            print(f"{f}: {len(exc.problems)} problem(s)")
            print(exc.format())
            status = BAD_INPUT
            continue
        sc = runs[0]
        variants = f", variants: {', '.join(r.variant for r in runs)}" \
            if sc.variant is not None else ""
        nodes = f"{len(sc.nodes)} node{'s' if len(sc.nodes) != 1 else ''}"
        handlers = f"{len(sc.handlers)} handler{'s' if len(sc.handlers) != 1 else ''}"
        refused, events = [], []
        for r in runs:
            est = estimate(r)
            events.append(est.events)
            label = f"  {r.variant}: " if r.variant is not None else "  cost: "
            try:
                check(est, budget, f + (f" (variant {r.variant})" if r.variant else ""))
                refused.append((label + est.describe(), None))
            except BudgetError as exc:
                refused.append((label + est.describe(), str(exc)))
        refused += _seeds_cost(sc, events, budget, f)
        bad = [why for _, why in refused if why] + ([grid] if grid else [])
        warnings = lint_runs(runs)  # known traps: warnings, or errors with --strict
        if warnings and args.strict:
            bad.append(f"--strict refuses {len(warnings)} warning"
                       f"{'s' if len(warnings) != 1 else ''} about known traps (on stderr)")
        if bad:
            print(f"{f}: valid, but refused ({sc.name}: {nodes}, {handlers}{variants})")
            status = BAD_INPUT
        else:
            print(f"{f}: ok ({sc.name}: {nodes}, {handlers}{variants})")
        for line, why in refused:
            if why is None:
                print(line)
        for why in bad:
            print("  " + why.replace("\n", "\n  "))
        for w in warnings:
            print(w.format(f, "error" if args.strict else "warning"), file=sys.stderr)
    return status


def _seeds_cost(sc: Any, events: list[float], budget: Any, source: str
                ) -> list[tuple[str, str | None]]:
    """The cost of the file's ``report.seeds`` (none for one seed), and why it is refused."""
    from ..tools.seeds import check, file_seeds

    n = file_seeds(sc)
    if n <= 1:
        return []
    line = f"  over {n} seeds (report.seeds): about {n * sum(events):,.0f} events in all"
    try:
        check(sc.seed, n, events, budget.events, source, "report.seeds")
    except ScenarioError as exc:
        return [(line, exc.format().strip())]
    return [(line, None)]


def _grid_problem(doc: dict, source: str) -> str | None:
    """Why the file's own (valid) sweep grid would be refused for its size, or None."""
    from ..tools.sweep import Axis, check_size

    spec = doc.get("sweep") or {}
    axes = [Axis(path, tuple(values)) for path, values in (spec.get("grid") or {}).items()]
    try:
        check_size(axes, spec.get("replications") or 10, source)
    except ScenarioError as exc:
        return "its sweep: " + exc.format().strip()
    return None


def _schema() -> int:
    import json

    from ..format.fileformat import schema

    print(json.dumps(schema(), indent=2, sort_keys=True))
    return OK


def _scenario_folder(given: str | None) -> Path | None:
    from ..format.reading import shipped_folder

    folder = Path(given) if given else Path("scenarios")
    if not folder.is_dir():
        shipped = shipped_folder()
        if given is None and shipped is not None:
            print(f"(no scenarios/ here: the shipped scenarios, in {shipped})", file=sys.stderr)
            return shipped
        print(f"jobsim: {folder}: expected a folder of scenario files (got none)",
              file=sys.stderr)
        return None
    return folder



def _list(args: argparse.Namespace) -> int:
    from ..format import scenario as scenario_mod

    if args.policies:
        from ..executor.policies import DESCRIPTIONS, PRESETS
        from ..format.executor_keys import preset_settings

        print("Each policy's settings in full: set by the preset, derived from another "
              "setting (it follows it), or\nthe generic executor's default (marked *).")
        for name in PRESETS:
            print(f"\n{name}: {DESCRIPTIONS[name]}")
            for key, value, origin in preset_settings(name):
                mark = "*" if origin == "default" else " "
                rule = f"  ({origin})" if origin.startswith("derived") else ""
                print(f"  {key:<18}{mark} {value}{rule}")
        return OK

    folder = _scenario_folder(args.folder)
    if folder is None:
        return BAD_INPUT
    files = sorted(folder.glob("*.yaml"))
    width = max((len(f.stem) for f in files), default=0)
    for f in files:
        try:
            sc = scenario_mod.load(f)
            text = sc.description or "(no description)"
        except ScenarioError as exc:
            text = f"INVALID: {len(exc.problems)} problem(s); run jobsim validate {f}"
        print(f"{f.stem:<{width}}  {text}")
    return OK
