"""A report's part over seeds: what one seed's figures would hide.

A run's figures come from one seed; another seed can give other ones (a duplicate run
that happens at one seed in two, a stranded time that doubles). ``jobsim run --seeds N``
runs the scenario's own seed and the ``N - 1`` after it (``tools.seeds``), every variant on
the same seeds, and this module turns their rows — each the summary's figures flattened
(``jobs.lost``, ``latency.start_delay.p50`` …) with its unexpected violations, or its error
— into the report's part:

- each **headline figure** (report.md's summary table, the file's expectations and its
  ``report.compare`` figures) as the run's value beside its mean and range over the seeds;
- each **expectation** of the file: at how many seeds it holds, and the seeds where it
  fails, which ``jobsim run --seed`` replays;
- the seeds where an invariant broke unexpectedly, or whose run did not complete.

``OverSeeds.summary()`` is summary.json's ``over_seeds``, ``markdown()`` report.md's
section, ``lines()`` what the command prints. All of it follows the seeds' order: the same
bytes for the same runs, on any number of workers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.expect import NO_FIGURE
from .report import _ROWS, Analysis, _cell

__all__ = ["OverSeeds", "headline"]


#: the effects' verdicts reported over seeds (where the run's own analysis has the effect):
#: the report says what happened at its seed, and these say at how many seeds it happens
EFFECTS = {"effects.poll_phases.lock_step": "poll phases in lock-step",
           "effects.imbalance.imbalanced": "nodes out of balance",
           "effects.load.verdict": "load (offered against capacity)",
           "effects.load.offered": "offered load (share of the threads)"}


def headline(a: Analysis) -> list[str]:
    """The figures reported over seeds for a run: report.md's summary table's, its
    expectations' and its ``report.compare`` figures, then the verdicts of the effects its
    analysis found meaningful (each once, in that order)."""
    sc = a.result.scenario
    found = a.summary.get("effects") or {}
    effects = [p for p in EFFECTS if found.get(p.split(".")[1]) is not None]
    paths = [p for _, p in _ROWS] + [e.path for e in sc.expect] + list(sc.compare) + effects
    return list(dict.fromkeys(paths))


def _word(v: Any, path: str) -> str:
    """A value that is not a number, as a cell says it (a yes/no figure in words)."""
    return ("yes" if v else "no") if isinstance(v, bool) else _cell(v, path)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _plain(v: Any) -> Any:
    """A figure's value for summary.json: None for a figure a run lacks or cannot define."""
    if v is NO_FIGURE or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return v


def _shown(v: float, path: str) -> str:
    """A mean or a bound in report.md: seconds as the summary table shows them, counts to
    three significant digits (no exponent)."""
    if _cell(1.0, path).endswith(("s", "ms")):
        return _cell(v, path)
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


@dataclass
class OverSeeds:
    """The runs of a report (a variant each, or the scenario) over the same seeds: each
    run's rows, one per seed, the first the run's own."""

    seeds: list[int]
    analyses: list[Analysis]
    rows: list[list[dict[str, Any]]]

    # --- what was found ----------------------------------------------------------------

    def _paths(self) -> list[str]:
        """The headline figures of every run (each once): the runs are set side by side."""
        return list(dict.fromkeys(p for a in self.analyses for p in headline(a)))

    def _figures(self, i: int) -> dict[str, dict[str, Any]]:
        """Run ``i``'s headline figures: the run's value, each seed's, and over the seeds
        whose value is a number, their mean, min and max (none where no seed has one)."""
        rows = self.rows[i]
        out = {}
        for path in self._paths():
            values = [_plain(r.get(path, NO_FIGURE)) if r.get("ok") else None for r in rows]
            if all(v is None for v in values):
                continue
            f: dict[str, Any] = {"run": values[0], "values": values}
            nums = [v for v in values if _number(v)]
            if nums:
                f.update(mean=sum(nums) / len(nums), min=min(nums), max=max(nums), n=len(nums))
            out[path] = f
        return out

    def _expectations(self, i: int) -> list[dict[str, Any]]:
        """Run ``i``'s expectations: at how many seeds each holds, and where it fails (the
        run's own verdict at its own seed; at the others, the same check on the row)."""
        a, rows = self.analyses[i], self.rows[i]
        out = []
        for j, e in enumerate(a.result.scenario.expect):
            fails = [s for s, r in zip(self.seeds, rows) if r.get("ok") and not (
                a.verdicts[j].ok if r is rows[0] else e.holds(r.get(e.path, NO_FIGURE)))]
            ran = sum(bool(r.get("ok")) for r in rows)
            out.append({"expectation": e.text, "holds_at": ran - len(fails),
                        "fails_at": fails, "of": ran})
        return out

    def _broken(self, i: int) -> tuple[list[int], dict[int, str]]:
        """Run ``i``'s seeds with an invariant broken unexpectedly, and those whose run did
        not complete, with its error."""
        rows = self.rows[i]
        broken = [s for s, r in zip(self.seeds, rows) if r.get("ok") and r.get("violations")]
        errors = {s: str(r.get("error")) for s, r in zip(self.seeds, rows) if not r.get("ok")}
        return broken, errors

    @property
    def failed(self) -> bool:
        """Whether a run at another seed broke an invariant unexpectedly or did not
        complete (the run's own verdict is its own)."""
        return any(b or e for b, e in (self._broken(i) for i in range(len(self.analyses))))

    def summary(self) -> dict[str, Any]:
        """summary.json's ``over_seeds``."""
        runs = {}
        for i, a in enumerate(self.analyses):
            broken, errors = self._broken(i)
            runs[a.name] = {"figures": self._figures(i), "expectations": self._expectations(i),
                            "invariants_broken_at": broken,
                            "not_completed": {str(s): e for s, e in errors.items()}}
        return {"seeds": list(self.seeds), "runs": runs}

    # --- how it is said ----------------------------------------------------------------

    def _replayed(self) -> str:
        """The run's own overrides (``--set``, ``--warmup``…), for its replay command."""
        said = [o for o in self.analyses[0].result.scenario.overrides
                if not o.startswith(("--seed", "seed="))]
        return "".join(" " + (o if o.startswith("--") else f"--set {o}") for o in said)

    def _span(self) -> str:
        s = self.seeds
        return f"seeds {s[0]} to {s[-1]}" if len(s) > 2 else "seeds " + " and ".join(map(str, s))

    def markdown(self) -> list[str]:
        """report.md's section over the seeds."""
        n, variants = len(self.seeds), self.analyses[0].result.scenario.variant is not None
        source = Path(self.analyses[0].result.scenario.source).name  # no folder of a machine
        out = [f"## Over {n} seeds", "",
               f"The figures above are those of seed {self.seeds[0]}. Here the same run at "
               f"{self._span()}: the run's own seed and the "
               + ("one" if n == 2 else str(n - 1)) + " after it"
               + (", the same seeds for every variant (common random numbers: the variants "
                  "are compared on the same draws)" if variants else "")
               + ". Each cell: this run's value · the mean over the seeds (min–max); a "
               "figure the same at every seed is shown once. `jobsim run "
               f"{source}{self._replayed()} --seed N` replays seed N.", ""]
        figures = [self._figures(i) for i in range(len(self.analyses))]
        paths = [p for p in self._paths() if any(p in f for f in figures)]
        labels = {**{p: label for label, p in _ROWS}, "polls.total": "polls", **EFFECTS}
        out += ["| | " + " | ".join(a.name for a in self.analyses) + " |",
                "|---|" + "---:|" * len(self.analyses)]
        for p in paths:
            cells = [self._cell(f.get(p), p) for f in figures]
            out.append(f"| {labels.get(p, f'`{p}`')} | " + " | ".join(cells) + " |")
        out += [""] + self._expectation_lines() + self._broken_lines()
        return out

    def _cell(self, f: dict[str, Any] | None, path: str) -> str:
        if f is None:
            return "—"
        run = _shown(f["run"], path) if _number(f["run"]) else _cell(f["run"], path)
        if "mean" not in f:  # not a number at any seed (an outcome): each value's count
            return self._counted(f, path)
        if f["min"] == f["max"] and f["n"] == len(self.seeds):
            return f"{run} (every seed)"
        few = f" (of {f['n']})" if f["n"] < len(self.seeds) else ""
        return (f"{run} · {_shown(f['mean'], path)} ({_shown(f['min'], path)}–"
                f"{_shown(f['max'], path)}){few}")

    def _counted(self, f: dict[str, Any], path: str) -> str:
        """A figure that is not a number: each value with its seeds' count, the run's own
        first ("overloaded ×7 · stable ×3")."""
        counts: dict[str, int] = {}
        for v in f["values"]:
            counts[_word(v, path)] = counts.get(_word(v, path), 0) + 1
        own = _word(f["run"], path)
        if counts.get(own) == len(self.seeds):
            return f"{own} (every seed)"
        return " · ".join(f"{k} ×{c}" for k, c in sorted(counts.items(),
                                                         key=lambda kc: (kc[0] != own, kc[0])))

    def _effect_lines(self) -> list[str]:
        """What the command prints of the effects: each verdict that differs between seeds
        (what the report says of its own seed is not what every seed shows)."""
        variants = self.analyses[0].result.scenario.variant is not None
        out = []
        for i, a in enumerate(self.analyses):
            for path, f in self._figures(i).items():
                if path in EFFECTS and "mean" not in f and \
                        len({_word(v, path) for v in f["values"]}) > 1:
                    out.append(f"  {a.name + ': ' if variants else ''}{EFFECTS[path]}: "
                               f"{self._counted(f, path)} of {len(self.seeds)} seeds")
        return out

    def _expectation_lines(self) -> list[str]:
        table, failing, total = [], [], 0
        variants = self.analyses[0].result.scenario.variant is not None
        for i, a in enumerate(self.analyses):
            for e in self._expectations(i):
                total += 1
                seeds = ", ".join(map(str, e["fails_at"]))
                table.append(f"| {'✓' if not e['fails_at'] else '✗'} | {a.name} | "
                             f"`{e['expectation']}` | {e['holds_at']} of {e['of']} | "
                             f"{seeds} |")
                if e["fails_at"]:
                    failing.append(f"{a.name + ' ' if variants else ''}`{e['expectation']}` "
                                   f"(fails at seed{'s' if len(e['fails_at']) > 1 else ''} "
                                   f"{seeds})")
        if not total:
            return []
        out = ["### Expectations at each seed", "",
               "| | run | expectation | holds at | fails at seeds |", "|---|---|---|---:|---|"]
        out += table + [""]
        if not failing:
            out.append(f"{'All ' if total > 1 else 'The '}{total} expectation"
                       f"{'s hold' if total > 1 else ' holds'} at every seed.")
        else:
            out.append(f"{total - len(failing)} of {total} expectations hold at every seed; "
                       f"{len(failing)} do{'es' if len(failing) == 1 else ''} not: "
                       + "; ".join(failing) + ".")
        return out + [""]

    def _broken_lines(self) -> list[str]:
        out = []
        for i, a in enumerate(self.analyses):
            broken, errors = self._broken(i)
            if broken:
                out.append(f"- **{a.name}:** an invariant broke, beyond what the scenario "
                           f"expects, at seed{'s' if len(broken) > 1 else ''} "
                           f"{', '.join(map(str, broken))}.")
            out += [f"- **{a.name}:** the run at seed {s} did not complete: {e}"
                    for s, e in errors.items()]
        if not out:
            return [f"The invariants hold at all {len(self.seeds)} seeds (beyond what the "
                    "scenario expects to break).", ""]
        return out + [""]

    def lines(self) -> list[str]:
        """What ``jobsim run`` prints of it: the expectations that do not hold at every
        seed, with their seeds, and the seeds where a run broke or did not complete."""
        n = len(self.seeds)
        variants = self.analyses[0].result.scenario.variant is not None
        out, total, bad = [], 0, 0
        for i, a in enumerate(self.analyses):
            name = f"{a.name}: " if variants else ""
            for e in self._expectations(i):
                total += 1
                if e["fails_at"]:
                    bad += 1
                    out.append(f"  {name}{e['expectation']} fails at seed"
                               f"{'s' if len(e['fails_at']) > 1 else ''} "
                               + ", ".join(map(str, e["fails_at"])))
            broken, errors = self._broken(i)
            if broken:
                out.append(f"  {name}invariant broken at seed{'s' if len(broken) > 1 else ''} "
                           + ", ".join(map(str, broken)))
            out += [f"  {name}seed {s} did not complete: {e}" for s, e in errors.items()]
        head = (f"over {n} seeds ({self._span()}): "
                + (f"{total - bad} of {total} expectations hold at every seed" if total
                   else "no expectations") + (", the invariants at every seed"
                                               if not self.failed else ""))
        return [head] + out + self._effect_lines()
