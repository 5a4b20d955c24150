"""Real beside simulated, with the tolerance each figure is held to.

Per strategy and K the real runs are summed up by their mean and range; each prediction
(uncalibrated, and calibrated where a profile was given) is set beside them with the
difference and whether it is inside the tolerance:

- the verdict (safe: no job claimed twice) must agree, always;
- the share of doubled jobs: within 0.10 of the real mean, or inside the real runs' range
  where that is wider;
- lost races (optimistic): within 25 % of the real mean, or inside the range;
- claims per second: within 30 % of the real mean, or inside the range.

Errors (40001, SQLITE_BUSY), the CPU wait and the CPU per claim (the whole machine's, from
``/proc/stat``; the model's cores' busy time) are shown, not held to a tolerance: they say
where a disagreement comes from.
"""

from __future__ import annotations

import math
from typing import Any

from .outcome import Outcome

DOUBLE_SHARE = 0.10  # absolute
LOST_RACES = 0.25  # relative
CLAIMS_PER_S = 0.30  # relative

NOTE = ("Expected to agree: every verdict, with or without a profile. With a profile "
        "(calibrated: each statement and client gap as measured, the machine's cores shared, "
        "SQLite's busy handler sleeping) the share of doubled jobs within 0.10 of the real "
        "mean or inside the real runs' range, lost races within 25 %, claims per second "
        "within 30 %. Without one (simulated) the statements' times are assumed and every "
        "simulated worker runs at once: only the verdicts are expected to agree, and its "
        "claims per second count simulated seconds of an assumed database.")


def _stats(values: list[float]) -> tuple[float, float, float]:
    ok = [v for v in values if not math.isnan(v)]
    if not ok:
        return math.nan, math.nan, math.nan
    return sum(ok) / len(ok), min(ok), max(ok)


def within(figure: str, value: float, real: list[float]) -> bool | None:
    """Whether ``value`` is inside ``figure``'s tolerance of the real runs (None: no
    tolerance, or nothing to compare)."""
    mean, lo, hi = _stats(real)
    if math.isnan(mean) or math.isnan(value):
        return None
    if lo <= value <= hi:
        return True
    if figure == "doubled share":
        return abs(value - mean) <= DOUBLE_SHARE + 1e-12
    if figure == "lost races":
        return abs(value - mean) <= LOST_RACES * mean
    if figure == "claims/s":
        return abs(value - mean) <= CLAIMS_PER_S * mean
    return None


def _fmt(figure: str, v: float) -> str:
    if math.isnan(v):
        return "—"
    if figure in ("doubled share", "CPU wait"):
        return f"{v:.3f}"
    return f"{v:,.0f}"


def _delta(figure: str, value: float, mean: float) -> str:
    if math.isnan(value) or math.isnan(mean):
        return "—"
    d = value - mean
    if figure in ("doubled share", "CPU wait"):
        return f"{d:+.3f}"
    rel = f" ({d / mean:+.0%})" if mean else ""
    return f"{d:+,.0f}{rel}"


FIGURES = {
    "doubled share": lambda o: o.double_share,
    "lost races": lambda o: float(o.lost_races),
    "errors": lambda o: float(o.errors),
    "claims/s": lambda o: o.per_second,
    "CPU wait": lambda o: o.cpu_wait,
    "CPU µs per claim": lambda o: o.cpu_per_claim * 1e6,
}


def _verdict(o: Outcome) -> str:
    return "safe" if o.doubled_jobs == 0 else "unsafe"


def rows(runs: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """The agreement rows: per (strategy, K, figure) the real runs and each prediction."""
    groups: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
    for strategy, k, _rep, real, sim, cal in runs:
        groups.setdefault((strategy, k), []).append((real, sim, cal))
    out = []
    for (strategy, k), group in groups.items():
        reals = [g[0] for g in group]
        verdicts = {_verdict(r) for r in reals}
        for name, source in (("simulated", 1), ("calibrated", 2)):
            preds = [g[source] for g in group if g[source] is not None]
            if not preds:
                continue
            pv = {_verdict(p) for p in preds}
            out.append({"strategy": strategy, "K": k, "figure": "verdict", "source": name,
                        "real": "/".join(sorted(verdicts)), "model": "/".join(sorted(pv)),
                        "delta": "", "within": pv == verdicts and len(verdicts) == 1})
            for figure, get in FIGURES.items():
                if figure == "lost races" and strategy != "optimistic":
                    continue
                if figure == "errors" and not any(o.errors for o in reals + preds):
                    continue
                real = [get(o) for o in reals]
                value = _stats([get(p) for p in preds])[0]
                mean, lo, hi = _stats(real)
                text = _fmt(figure, mean) + (f" [{_fmt(figure, lo)}–{_fmt(figure, hi)}]"
                                             if len(reals) > 1 else "")
                out.append({"strategy": strategy, "K": k, "figure": figure, "source": name,
                            "real": text, "model": _fmt(figure, value),
                            "delta": _delta(figure, value, mean),
                            # without a profile only the verdict is expected to agree
                            "within": within(figure, value, real)
                            if name == "calibrated" and figure in
                            ("doubled share", "lost races", "claims/s") else None})
    return out


def table(runs: list[tuple[Any, ...]], kind: str) -> str:
    """The agreement table as Markdown, with its note."""
    got = rows(runs)
    n = max(len([r for r in runs if r[0] == s and r[1] == k]) for s, k, *_ in runs)
    lines = [f"agreement ({kind}): the real runs' mean [range] of {n} run(s) beside the model",
             "", "| strategy | K | figure | real | model | prediction | difference | "
             "within tolerance |", "|---|---|---|---|---|---|---|---|"]
    for r in got:
        mark = {True: "yes", False: "NO", None: "—"}[r["within"]]
        if r["source"] == "simulated" and r["figure"] in ("doubled share", "lost races",
                                                          "claims/s"):
            mark = "not expected"
        if r["figure"] == "verdict":
            mark = "agrees" if r["within"] else "DISAGREES"
        lines.append(f"| {r['strategy']} | {r['K']} | {r['figure']} | {r['real']} | "
                     f"{r['source']} | {r['model']} | {r['delta']} | {mark} |")
    lines += ["", "claims/s of the model: per simulated second (calibrated: standing for the "
              "machine's seconds). " + NOTE]
    return "\n".join(lines)
