"""The load's verdict in words (``summary["effects"]["load"]``, ``analysis.intake``): the
work the jobs asked for against what the threads can do, and what it means for the waits."""

from __future__ import annotations

from typing import Any

from .numbers import seconds as _s


def load_sentences(load: dict[str, Any]) -> list[str]:
    """The load's verdict (``effects.load``) in a sentence: overloaded, starved, bounded by
    aging or near capacity; nothing for a load well under capacity."""
    classes = load["by_priority"]
    worst = ", ".join(f"priority {p} {_s(f['worst_wait'])}" for p, f in
                      sorted(classes.items(), key=lambda pf: -int(pf[0]))
                      if f["worst_wait"] is not None)
    split = "" if len(classes) < 2 else " (" + ", ".join(
        f"priority {p}: {f['offered']:.2f}" for p, f in
        sorted(classes.items(), key=lambda pf: -int(pf[0]))) + ")"
    count = f"{load['threads']:.3g}"
    threads = f"{count} thread{'' if count == '1' else 's'}"
    return [line + _near(load["offered"]) for line in _verdict(load, threads, split, worst)]


def _load_x(x: float) -> str:
    """An offered load to 2 decimals, or 3 where 2 would read 1.00 (0.995 is not 1)."""
    return f"{x:.3f}" if f"{x:.2f}" == "1.00" and x != 1.0 else f"{x:.2f}"


#: an offered load this close to 1 is near capacity: its verdict may differ at another seed
#: (at 0.92-1.09 a strict-priority stream read stable, starved or overloaded by seed)
NEAR = 0.1


def _near(offered: float) -> str:
    if abs(offered - 1.0) >= NEAR:
        return ""
    return (f" Near capacity ({_load_x(offered)}), the verdict is one seed's: `--seeds 10` shows "
            f"how often the others agree.")


def _verdict(load: dict[str, Any], threads: str, split: str, worst: str) -> list[str]:
    verdict = load["verdict"]
    if verdict == "overloaded":
        return [f"Overloaded: while the jobs arrived they asked for {_load_x(load['offered'])} "
                f"times the work the {threads} can do{split}. The backlog grows for as long "
                f"as they arrive and the waits with it: an ordering only chooses who waits "
                f"longer, none bounds every class's wait." + (f" Worst waits: {worst}." if
                                                             worst and split else "")]
    if verdict == "starved":
        classes = load["by_priority"]
        low = max((c for c in classes if c != max(classes, key=int)),
                  key=lambda c: classes[c].get("overtaken") or 0.0)
        ahead = classes[low].get("overtaken")
        waited = classes[low].get("worst_wait")
        of = f" of its {_s(waited)} wait" if waited and not classes[low]["never_started"] \
            else ""
        why = (f": jobs of higher priority that fell due after priority {low}'s longest-"
               f"waiting job ran before it and kept the threads busy for {_s(ahead)}{of}"
               if ahead else "")
        return [f"Starvation, not overload: the jobs asked for {_load_x(load['offered'])} of what "
                f"the {threads} can do{split}, yet the ordering kept a class waiting far "
                f"longer than the top one (worst waits: {worst}){why}."]
    if verdict == "aging_bounded":
        return [f"Under capacity: the jobs asked for {_load_x(load['offered'])} of what the "
                f"{threads} can do{split}, and aging came into play: a job waiting "
                f"{_s(load['aging_horizon'])} overtakes any of the top class due after it, "
                f"which bounds the lower classes' waits (worst waits: {worst})."]
    if verdict == "stable" and abs(load["offered"] - 1.0) < NEAR:  # another seed may not be
        return [f"Under capacity, but near it: the jobs asked for {_load_x(load['offered'])} of "
                f"what the {threads} can do{split}, and the waits grow fast near 1"
                + (f" (worst waits: {worst})" if worst and split else "") + "."]
    return []
