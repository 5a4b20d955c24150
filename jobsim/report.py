"""A run folder: everything a run leaves, self-describing.

- ``summary.json`` — the run's figures (sorted keys, no wall-clock figures, ``trace_sha256``);
- ``jobs.csv`` — one row per job;
- ``trace.csv`` — one row per event, codes turned into names;
- ``scenario.yaml`` — the scenario as it was run (the file's document, seed applied);
- ``violations.txt`` — present only when an invariant failed: each violation with its events.

Files are written to a temporary folder beside the target and moved into place at the end,
so an interrupted run never leaves a half-written report.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from .checks import Violation, check
from .history import Histories, histories
from .metrics import jobs_frame, summary, trace_frame
from .world import RunResult


@dataclass
class Analysis:
    """A run with its stories, violations and summary worked out."""

    result: RunResult
    histories: Histories
    violations: list[Violation]
    summary: dict


def analyse(result: RunResult) -> Analysis:
    hist = histories(result.trace)
    violations = check(result.trace, result.scenario, hist)
    s = summary(result.trace, hist, violations, scenario_name=result.scenario.name,
                seed=result.seed, end_time=result.end_time, drained=result.drained,
                statements=result.statements, polls=result.polls,
                polls_skipped=result.polls_skipped)
    return Analysis(result, hist, violations, s)


def format_violation(v: Violation, trace_df: pd.DataFrame) -> str:
    lines = [f"{v.invariant}: {v.message}"]
    for seq in v.events:
        if 0 <= seq < len(trace_df):
            r = trace_df.iloc[seq]
            lines.append(f"    #{seq} t={r['time']:g} {r['kind']} node={r['node'] or '-'} "
                         f"job={r['job']} a={r['a']} b={r['b']} x={r['x']:g} {r['text']}")
    return "\n".join(lines)


def write(analysis: Analysis, out: str | Path) -> Path:
    """Write the run folder ``out`` (replacing it) and return its path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        result = analysis.result
        (tmp / "summary.json").write_text(
            json.dumps(analysis.summary, sort_keys=True, indent=2) + "\n", encoding="utf-8")
        jobs_frame(analysis.histories).to_csv(tmp / "jobs.csv", index=False)
        tdf = trace_frame(result.trace)
        tdf.to_csv(tmp / "trace.csv", index=False)
        doc = dict(result.scenario.document)
        doc["seed"] = result.seed
        (tmp / "scenario.yaml").write_text(
            yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
        if analysis.violations:
            (tmp / "violations.txt").write_text(
                "\n".join(format_violation(v, tdf) for v in analysis.violations) + "\n",
                encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _pct(d: dict) -> str:
    if not d.get("n"):
        return "—"
    f = format_seconds
    return f"p50 {f(d['p50'])} · p90 {f(d['p90'])} · p99 {f(d['p99'])} · max {f(d['max'])}"


def format_seconds(x: float | None) -> str:
    if x is None:
        return "—"
    if abs(x) < 1:
        return f"{x * 1000:.3g}ms"
    return f"{x:.4g}s"


def format_summary(s: dict, violations: list[Violation], out: Path | None) -> list[str]:
    """The one-screen summary of a run."""
    j, d, se = s["jobs"], s["duplicate_executions"], s["duplicate_side_effects"]
    acq, polls = s["acquisition"], s["polls"]
    ended = "drained" if s["drained"] else "stopped"
    bad = {k: v for k, v in s["invariants"].items() if v}
    lines = [
        f"── {s['scenario']} · seed {s['seed']} · {ended} at t={s['end_time']:g}s ──",
        f"jobs         {j['created']} created · {j['done']} done · {j['dead_lettered']} "
        f"dead-lettered · {j['pending']} pending · {j['lost']} lost",
        f"executions   {s['executions']} ({s['failures']} failed) · duplicate executions "
        f"{d['total']} · duplicate side effects {se['total']} · double acquisitions "
        f"{s['double_acquisitions']}",
        f"acquisition  {acq['attempts']} attempts ({acq['empty']} empty) · {acq['rows']} rows "
        f"· {acq['lost_races']} lost races · {s['statements']} statements · {polls['total']} "
        f"polls ({polls['skipped']} skipped idle)",
        f"start delay  {_pct(s['latency']['start_delay'])}",
        f"end to end   {_pct(s['latency']['end_to_end'])}",
    ]
    if d["total"]:
        causes = ", ".join(f"{k} {v}" for k, v in d["by_cause"].items() if v)
        lines.append(f"duplicates   by cause: {causes}")
    if bad:
        lines.append("invariants   FAILED: " + ", ".join(f"{k} ({v})" for k, v in bad.items()))
    else:
        lines.append(f"invariants   all {len(s['invariants'])} hold")
    lines.append(f"trace        {s['trace_events']} events · sha256 {s['trace_sha256'][:16]}…")
    if out is not None:
        lines.append(f"report       {out}/")
    return lines
