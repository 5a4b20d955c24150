"""A hunt's files: the minimal scenario (``minimal.yaml``) and the first one found
(``original.yaml``), every run (``runs.csv``), the minimal run's own report folder
(``minimal/``: its story, timeline and interactive page), a picture of the faults tried
(``faults.png``) and ``hunt.md``, which says what was found, how the search covered the
fault space, and — when nothing broke the property — that nothing did within that
coverage, which proves nothing safe.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import yaml

from ...base.outdir import Folder
from ...base.printable import printable
from ...output.csvtext import printable_frame
from ..sweep.grid import _point_doc
from ..sweep.runs import flatten, traceback_tail
from .prop import Property
from .shrink import overrides
from .space import as_file, kind_of, seconds


def minimal_doc(doc: dict[str, Any], source: str, case: dict[str, Any], prop: Property,
                result: Any, which: str) -> dict[str, Any]:
    """The case as a scenario document of its own: the configuration with the case's
    values, its seed, and the property as its one expectation (a crash needs none)."""
    d = _point_doc(doc, source, overrides(case, doc))
    d["name"] = f"{doc['name']}_{which}"
    d["seed"] = case["seed"]
    what = "the run crashes (the model raises)" if result.crash else f"{prop.text} breaks"
    d["description"] = (f"jobsim hunt, {which}: {what}" +
                        (" with no fault added" if not case["faults"] else
                         f" under {len(case['faults'])} fault(s)"))
    if prop.expect() and not result.crash:
        d["expect"] = prop.expect()
    return d


def _analyse(d: dict[str, Any], source: str) -> Any:
    from ...format.scenario import from_dict
    from ...output.report import analyse
    from ...sim.world import run

    return analyse(run(from_dict(d, source)))


def verify(d: dict[str, Any], source: str, prop: Property, crash: bool = False
           ) -> tuple[Any, str]:
    """Run the minimal scenario as ``jobsim run`` would: its analysis (and no traceback),
    or, for a crash, no analysis and the crash's traceback, its last lines. RuntimeError if
    it does not break the property or does not fail (it would not reproduce)."""
    if crash:
        try:
            _analyse(d, source)
        except Exception as exc:  # noqa: BLE001 - the crash the hunt found, reproduced
            return None, traceback_tail(exc)
        raise RuntimeError("the minimal scenario does not reproduce: it runs without "
                           "crashing (a bug in jobsim: please report it with the hunt's "
                           "command)")
    a = _analyse(d, source)
    row = {"ok": True, **flatten(a.summary)}
    if not prop.broken(row) or a.ok:
        raise RuntimeError(f"the minimal scenario does not reproduce: {prop.text} "
                           f"{'holds' if not prop.broken(row) else 'breaks but the run passes'}"
                           " (a bug in jobsim: please report it with the hunt's command)")
    return a, ""


def file_text(d: dict[str, Any], header: list[str]) -> str:
    body = yaml.safe_dump(d, sort_keys=False, allow_unicode=True, width=100)
    return "".join(f"# {printable(h)}\n" if h else "#\n" for h in header) + body


def _schedule(case: dict[str, Any] | None) -> list[str]:
    if case is None:
        return []
    return [json.dumps(as_file(f), sort_keys=False).replace('"', "") for f in case["faults"]] \
        or ["(no fault added)"]


def _size(case: dict[str, Any], doc: dict[str, Any]) -> dict[str, str]:
    from .shrink import shape_of

    shape = shape_of(doc, 0)
    streams = case.get("streams", shape["streams"])
    jobs = case.get("jobs", shape["jobs"])
    nodes = case.get("nodes", shape["nodes"])
    return {"jobs": str(sum(streams.values()) + len(jobs)),
            "nodes": str(nodes if isinstance(nodes, int) else len(nodes)),
            "threads": str(case.get("threads", (doc.get("executor") or {}).get(
                "threads", "as configured"))),
            "horizon": f"{case['until']:g} s" if "until" in case else "as configured",
            "seed": str(case["seed"])}


def coverage(result: Any) -> tuple[list[str], dict[str, list[int]]]:
    """The search's coverage as lines, and by kind: [faults drawn, runs with one, of them
    broken, of them crashed]."""
    runs = result.searched
    broken = sum(r["broken"] for r in runs)
    crashed = sum(r.get("crashed", False) for r in runs)
    failed = sum(not r["ok"] for r in runs) - crashed
    by: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    for r in runs:
        kinds = [kind_of(f) for f in json.loads(r["faults"])]
        for k in kinds:
            by[k][0] += 1
        for k in set(kinds):
            by[k][1] += 1
            by[k][2] += r["broken"]
            by[k][3] += r.get("crashed", False)
    share = f"{broken / len(runs):.1%}" if runs else "n/a"
    lines = [f"- runs of the search: {len(runs):,} (plus 1 without added faults); "
             f"{broken:,} broke the property ({share}); {crashed:,} crashed (the model "
             f"raised); {failed:,} did not complete otherwise"
             + (f"\n- {result.budget_note}" if result.budget_note else ""),
             f"- runs of the hunt in all (search and shrinking): computed {result.computed:,}, "
             f"from the cache {result.cached:,}"] + [f"- {line}" for line in result.budget_lines]
    return lines, dict(sorted(by.items()))


def markdown(result: Any, doc: dict[str, Any], story: list[str], command: str) -> str:
    b = result.bounds
    lines = [f"# Hunt: {result.name} — {result.prop.text}", ""]
    if result.crash:
        lines += ["**A run crashed**: the model raised an error — a bug in jobsim, not a "
                  f"property of the configuration (a finding of its own, besides "
                  f"`{result.prop.text}`). `minimal.yaml` is the smallest run found that "
                  "still crashes; `jobsim run minimal.yaml` raises it again. The traceback's "
                  "last lines:", "", "```", *result.traceback.splitlines(), "```", ""]
    elif result.minimal is None:
        lines += [f"**Nothing broke `{result.prop.text}`** in the runs below. That is what "
                  "this search covered, not a proof that the configuration is safe: other "
                  "seeds, more faults, longer windows or other instants may still break it.",
                  ""]
    elif result.baseline_broken and not result.original["faults"]:
        lines += [f"**`{result.prop.text}` breaks without any added fault**: the "
                  "configuration breaks it by itself. `minimal.yaml` is the smallest run "
                  "found that still does.", ""]
    else:
        lines += [f"**`{result.prop.text}` breaks.** The smallest run found is "
                  "`minimal.yaml`; `jobsim run minimal.yaml` reproduces it (exit 1).", ""]
    lines += ["## The search", "",
              f"Hunt seed {result.hunt_seed}; faults hit {', '.join(b.nodes)}; at most "
              f"{b.faults} per run, of the kinds {', '.join(b.kinds)}; starting between "
              f"{seconds(b.between[0])} and {seconds(b.between[1])}; windows "
              f"{seconds(b.length[0])} to {seconds(b.length[1])}; slow_db ×{b.slow_factor[0]:g}–×{b.slow_factor[1]:g}; "
              + ("each run with its own seed." if b.seeds else "every run with the file's seed."),
              ""]
    cov, by = coverage(result)
    crashes = any(v[3] for v in by.values())
    lines += cov + ["", "| fault kind | faults drawn | runs with it | of them broke it |"
                    + (" of them crashed |" if crashes else ""),
                    "|---|---:|---:|---:|" + ("---:|" if crashes else "")]
    lines += [f"| {k} | {v[0]:,} | {v[1]:,} | {v[2]:,} ({v[2] / v[1]:.0%}) |"
              + (f" {v[3]:,} |" if crashes else "") for k, v in by.items()]
    lines += ["", "![the faults tried](faults.png)", ""]
    if result.minimal is not None:
        shrinks = [r for r in result.records if r["phase"] == "shrink"]
        lines += ["## Original and shrunk", "",
                  f"Shrinking made {len(shrinks):,} runs"
                  + (" and stopped at its cap" if result.shrink_capped else "") + ".", "",
                  "| | original | minimal |", "|---|---|---|"]
        o, m = _size(result.original, doc), _size(result.minimal, doc)
        for k in o:
            lines.append(f"| {k} | {o[k]} | {m[k]} |")
        so, sm = _schedule(result.original), _schedule(result.minimal)
        for i in range(max(len(so), len(sm))):
            lines.append(f"| fault {i + 1} | {so[i] if i < len(so) else ''} | "
                         f"{sm[i] if i < len(sm) else ''} |")
        if result.crash:
            lines += ["", "## The minimal run", "", "It crashes: `jobsim run minimal.yaml` "
                      "reproduces the traceback above (no report of it can be written)."]
        else:
            lines += ["", "## The minimal run", "", "```", *story, "```", "",
                      "![timeline](minimal/timeline.png)", "",
                      "Its report: [minimal/report.md](minimal/report.md), its interactive "
                      "page minimal/view.html.", "", "Reproduce it: `jobsim run minimal.yaml`."]
    lines += ["", f"This hunt: `{command}`; its runs: runs.csv.", ""]
    return "\n".join(lines)


def _faults_png(result: Any, path: Path) -> None:
    """One panel per kind of fault: each fault the search drew, when it started against how
    long it lasted; red where its run broke the property — dark where it was the run's only
    fault (it alone broke it), light where other faults were in the run — grey where the
    run held."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {"alone": ("#b2182b", "broke it, the run's only fault"),
              "with": ("#f4a582", "broke it, with other faults"),
              "held": ("#aaaaaa", "held")}
    pts: dict[str, dict[str, list[tuple[float, float]]]] = collections.defaultdict(
        lambda: collections.defaultdict(list))
    for r in result.searched:
        faults = json.loads(r["faults"])
        group = "held" if not r["broken"] else "alone" if len(faults) == 1 else "with"
        for f in faults:
            pts[kind_of(f)][group].append((f["at"], f.get("for", f.get("restart_after", 0.0))))
    kinds = sorted(pts) or ["(no faults drawn)"]
    fig, axes = plt.subplots(1, len(kinds), figsize=(3.2 * len(kinds) + 1, 3.6), sharey=True,
                             squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        for group in ("held", "with", "alone"):  # the runs that broke it on top
            xy = pts.get(kind, {}).get(group)
            if xy:
                xs, ys = zip(*xy)
                ax.scatter(xs, ys, s=14, alpha=0.8, color=groups[group][0],
                           label=groups[group][1], linewidths=0)
        ax.set_title(kind, fontsize=9)
        ax.set_xlabel("starts at (s)", fontsize=8)
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("lasts (s); a crash for ever: 0", fontsize=8)
    handles = [plt.Line2D([], [], marker="o", linestyle="", color=c, label=t)
               for c, t in groups.values()]
    fig.legend(handles=handles, loc="upper right", fontsize=7, ncol=3)
    fig.suptitle(f"{result.name}: the faults tried against {result.prop.text}", fontsize=10,
                 x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)


def write(folder: Folder, result: Any, doc: dict[str, Any], source: str,
          command: str) -> None:
    """The hunt folder's files (see the module's doc)."""
    import pandas as pd

    from ...analysis.narrative import narrate
    from ...output.report import write as write_run

    story: list[str] = []
    if result.minimal_doc is not None:
        for which, d, case in (("minimal", result.minimal_doc, result.minimal),
                               ("original", result.original_doc, result.original)):
            header = [f"Found by: {command}", "The model crashes on it (a bug in jobsim): "
                      "jobsim run on this file raises the error again." if result.crash else
                      f"It breaks {result.prop.text}: jobsim run on this file exits 1.", ""]
            folder.write_text(f"{which}.yaml", file_text(d, header))
        a = result.analysis
        if a is not None:
            write_run(a, folder.path / "minimal", with_plots=True)
            story = narrate(a.result.trace, 40)
    frame = pd.DataFrame(result.records, columns=["phase", "index", "seed", "faults", "kinds",
                                                  "jobs", "ok", "broken", "value", "crashed",
                                                  "error"])
    folder.write_with("runs.csv", lambda p: printable_frame(frame).to_csv(p, index=False))
    folder.write_with("faults.png", lambda p: _faults_png(result, p))
    folder.write_text("hunt.md", printable(markdown(result, doc, story, command), lines=True))
