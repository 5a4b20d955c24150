"""A run's one-screen summary, as the command line prints it: the jobs, executions,
acquisition, latencies, boundary timers (where they are timer jobs), a line per node, the
invariants and the expectations.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.metrics import idle_note
from ..analysis.unreached import unreached_note
from ..analysis.window import window_short

if TYPE_CHECKING:
    from .report import Analysis


def format_seconds(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if abs(x) < 1 and abs(float(f"{x * 1000:.3g}")) < 1000:  # (0.9996 s: "1s", not "1e+03ms")
        return f"{x * 1000:.3g}ms"
    # never 2.592e+06s, nor 1e+04s for 9999.6
    return f"{x:.4g}s" if abs(float(f"{x:.4g}")) < 1e4 else f"{x:,.0f}s"


def _pct(d: dict) -> str:
    if not d.get("n"):
        return "—"
    f = format_seconds
    if d["n"] < 20:  # too few for percentiles to mean much: the values, said so
        return (f"p50 {f(d['p50'])} · max {f(d['max'])} (only {d['n']} job"
                f"{'s' if d['n'] != 1 else ''}: too few for percentiles)")
    return f"p50 {f(d['p50'])} · p90 {f(d['p90'])} · p99 {f(d['p99'])} · max {f(d['max'])}"


def count(n: Any) -> str:
    """A count as a reader writes it: 20,000 (not 20000)."""
    return f"{n:,}" if isinstance(n, int) or hasattr(n, "__index__") else str(n)


#: the outcomes the summary's jobs line shows when some job has them
_OTHER_ENDS = ("incident", "failed", "withdrawn", "cancelled")


def format_summary(a: Analysis, out: Path | None = None) -> list[str]:
    """The one-screen summary of a run."""
    s = a.summary
    j, d, se = s["jobs"], s["duplicate_executions"], s["duplicate_side_effects"]
    acq, polls = s["acquisition"], s["polls"]
    ended = "drained" if s["drained"] else "stopped"
    title = s["scenario"] + (f" / {a.name}" if a.result.scenario.variant else "")
    bad = {k: v for k, v in s["invariants"].items() if v}
    lines = [
        f"── {title} · seed {s['seed']} · {ended} at t="
        + (f"{s['end_time']:g}s" if s["end_time"] < 1e4 else format_seconds(s["end_time"]))
        + " ──",
        f"jobs         {count(j['created'])} created · {count(j['done'])} done · "
        f"{count(j['dead_lettered'])} dead-lettered · "
        + "".join(f"{count(j[k])} {k} · " for k in _OTHER_ENDS if j[k])
        + f"{count(j['pending'])} pending · {count(j['lost'])} lost",
        f"executions   {count(s['executions'])} ({count(s['failures'])} failed) · duplicate "
        f"executions {count(d['total'])} · duplicate side effects {count(se['total'])} · "
        f"double acquisitions {count(s['double_acquisitions'])}",
        f"acquisition  {count(acq['attempts'])} attempts ({count(acq['empty'])} empty) · "
        f"{count(acq['rows'])} rows · {count(acq['lost_races'])} lost races · "
        f"{count(s['statements'])} statements · {count(polls['total'])} polls "
        f"({count(polls['skipped'])} skipped idle)",
        f"start delay  {_pct(s['latency']['start_delay'])}",
        f"end to end   {_pct(s['latency']['end_to_end'])}",
    ]
    if "window" in s:  # a warm-up or cool-down: the figures above are the window's
        lines.append(f"window       {window_short(s)}")
    bt = s.get("boundary_timers")
    if bt is not None:
        n = bt["timer_jobs"]
        lines.append(f"boundary     {count(n)} timer job{'' if n == 1 else 's'} (among the jobs) · "
                     f"{count(bt['fired'])} fired ({count(bt['withdrew'])} withdrew their job) · "
                     f"{count(bt['cancelled'])} cancelled with their task · "
                     f"delay {_pct(bt['delay'])}")
    if d["total"]:
        causes = ", ".join(f"{k} {count(v)}" for k, v in d["by_cause"].items() if v)
        lines.append(f"duplicates   by cause: {causes}")
    lines += node_lines(s["nodes"])
    missed = unreached_note(a.result.scenario, s["end_time"], s["drained"])
    if missed:
        lines.append(f"WARNING      {missed}")
    if bad:
        expected = a.expected_invariants
        lines.append("invariants   FAILED: " + ", ".join(
            f"{k} ({v}{', as this scenario expects' if k in expected else ''})"
            for k, v in bad.items()))
    else:
        lines.append(f"invariants   all {len(s['invariants'])} hold")
    for v in a.verdicts:
        lines.append(f"expect       {v.format()}")
    lines.append(f"trace        {count(s['trace_events'])} events · sha256 "
                 f"{s['trace_sha256'][:16]}…")
    if out is not None:
        lines.append(f"report       {out}/")
    return lines


def warned(analyses: list[Analysis], variants: bool) -> list[str]:
    """report.md's warnings under what the run shows: each idle node, and what the file
    scheduled after the run's end (it never happened)."""
    out = []
    for a in analyses:
        which = f" ({a.name})" if variants else ""
        out += [f"> ⚠ **Idle node{which}:** {idle_note(n, f)}.\n"
                for n, f in a.summary["nodes"].items() if f["idle_while_work_waited"]]
    for a in analyses:
        missed = unreached_note(a.result.scenario, a.summary["end_time"], a.summary["drained"])
        if missed:
            out.append(f"> ⚠ **Scheduled after the end"
                       f"{f' ({a.name})' if variants else ''}:** {missed}.\n")
    return out


MAX_NODES_SHOWN = 16  # in the printed summary (summary.json and report.md: all)
def node_cell(f: dict[str, Any], key: str) -> str:
    v = f.get(key)
    if v is None or key == "idle_while_work_waited":
        return "—" if v is None else "⚠ **yes**" if v else "no"
    if key == "busy_share":
        return f"{100 * v:.1f}%"
    if key.startswith("time_") or key == "longest_idle_wait":
        return format_seconds(v) if v else "0s"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"  # 17,570, not 1.757e+04
    return count(v)


def node_lines(nodes: dict[str, dict[str, Any]]) -> list[str]:
    """A line per node (the first ``MAX_NODES_SHOWN``), and a warning per idle node."""
    names, lines = list(nodes), []
    width = max((len(n) for n in names[:MAX_NODES_SHOWN]), default=0)
    for i, (n, f) in enumerate((n, nodes[n]) for n in names[:MAX_NODES_SHOWN]):
        line = (f"{count(f['executions'])} executions · {count(f['claims'])} rows locked · "
                f"{count(f['acquire_attempts'])} acquisitions · "
                f"{count(f['lost_races'])} lost races · busy {node_cell(f, 'busy_share')}")
        line += "".join(f" · {key[5:]} {format_seconds(f[key])}"
                        for key in ("time_down", "time_paused") if f[key])
        lines.append(f"{'nodes' if i == 0 else '':13}{n:<{width}}  {line}")
    if len(names) > MAX_NODES_SHOWN:
        lines.append(f"{'':13}… and {len(names) - MAX_NODES_SHOWN} more nodes")
    idle = [n for n in names if nodes[n]["idle_while_work_waited"]]
    lines += [f"WARNING      {idle_note(n, nodes[n])}" for n in idle[:MAX_NODES_SHOWN]]
    if len(idle) > MAX_NODES_SHOWN:
        lines.append(f"WARNING      … and {len(idle) - MAX_NODES_SHOWN} more idle nodes")
    return lines


#: the trace's columns named as each kind of event means them (``trace.KINDS``), for the
#: lines that show the events behind a violation; ``previous_owner`` is a node
_FIELDS: dict[str, dict[str, str]] = {
    "job_created": {"a": "kind", "b": "priority", "x": "due"},
    "acquire": {"attempt": "errors", "a": "rows_asked", "b": "rows_got", "c": "lost_races",
                "x": "latency"},
    "locked": {"a": "previous_owner", "b": "previous_lock_valid", "x": "lock_until"},
    "lock_extended": {"a": "rows", "x": "lock_until"},
    "exec_start": {"attempt": "execution", "a": "thread"},
    "side_effect": {"attempt": "execution"},
    "exec_end": {"attempt": "execution", "a": "ok", "b": "effect_at_end"},
    "completed": {"a": "rows_deleted", "b": "held_by_another"},
    "retry_scheduled": {"attempt": "execution", "a": "retries_left", "c": "wait_ms",
                        "x": "due"},
    "dead_lettered": {"attempt": "execution", "a": "went_to", "c": "wait_ms"},
    "node_crashed": {"a": "running_lost", "b": "queued_lost"},
    "node_paused": {"x": "pause"},
}


def format_violation(v: Any, trace_df: Any, nodes: list[str] | None = None) -> str:
    """A violation and the events behind it, one line each, every field by its name
    (``nodes``: the trace's node names, for a field that is a node)."""
    lines = [f"{v.invariant}: {v.message}"]
    for seq in v.events:
        if not 0 <= seq < len(trace_df):
            continue
        r = trace_df.iloc[seq]
        kind = str(r["kind"])
        fields = _FIELDS.get(kind)
        if fields is None:
            named = f"a={r['a']} b={r['b']} x={r['x']:g}"
        else:
            parts = []
            for col, name in fields.items():
                value = r[col]
                if name == "previous_owner":
                    value = "-" if value < 0 else nodes[int(value)] if nodes and \
                        value < len(nodes) else f"#{value}"
                elif col == "x":
                    value = f"{value:g}"
                parts.append(f"{name}={value}")
            named = " ".join(parts)
        text = f" {r['text']}" if r["text"] else ""
        lines.append(f"    #{seq} t={r['time']:g} {kind} node={r['node'] or '-'} "
                     f"job={r['job']} {named}{text}".rstrip())
    return "\n".join(lines)
