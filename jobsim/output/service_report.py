"""The report's part on downstream services: a table per run (or side by side across the
variants), the load-beside-health picture, and each job's attempts made in an outage."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analysis import services
from ..base.progress import step
from ..analysis.expect import NO_FIGURE, figure
from ..analysis.metrics import jobs_frame

if TYPE_CHECKING:
    from .report import Analysis

#: rows shown only where some run has one (the idempotency keys', fencing's, the callers
#: that left): a table of a service without them stays as it was
_WHERE_SOME = {"errors.conflict", "replayed", "fenced", "completed_after_timeout",
               "completed_after_crash", "effects_after_caller_left"}
_ROWS = (("calls", "calls"), ("answered ok", "ok"), ("its error (outage, brown-out)",
                                                     "errors.error"),
         ("timed out", "errors.timeout"), ("refused: at capacity", "errors.refused"),
         ("rate limited (429)", "errors.rate_limited"),
         ("cut by the worker's timeout", "errors.worker_timeout"),
         ("conflict: its key's call in progress (409)", "errors.conflict"),
         ("replayed: its key's remembered answer", "replayed"),
         ("refused: a stale fencing token", "fenced"),
         ("never answered", "unanswered"),
         ("ended after its caller timed out", "completed_after_timeout"),
         ("ended after its caller crashed", "completed_after_crash"),
         ("… of those, took effect (nobody heard)", "effects_after_caller_left"),
         ("failed by an open circuit breaker (never made)", "short_circuited"),
         ("calls in an outage", "calls_in_outage"),
         ("job attempts in an outage", "attempts_in_outage"),
         ("waited for a token or a place", "waited"),
         ("mean wait of those (s)", "mean_wait"),
         ("mean service time of ok calls (s)", "mean_latency"), ("time down (s)", "time.down"),
         ("… of it held down by load (s)", "time.held"),
         ("time in brown-out (s)", "time.brownout"),
         ("back up at (s)", "recovered_at"), ("peak calls/s", "peak_calls_per_s"),
         ("peak calls/s after it recovered", "peak_after_recovery"))


def _cell(v: Any) -> str:
    if v is None or v is NO_FIGURE:
        return "–"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def service_section(analyses: list[Analysis]) -> list[str]:
    """``## Services``: one table per service, a column per run."""
    names = list(dict.fromkeys(n for a in analyses for n in a.summary.get("services", {})))
    if not names:
        return []
    out = ["## Services", ""]
    for name in names:
        out += [f"### {name}", "", "| | " + " | ".join(a.name for a in analyses) + " |",
                "|---|" + "---:|" * len(analyses)]
        for label, path in _ROWS:
            values = [figure(a.summary, f"services.{name}.{path}") for a in analyses]
            if path in _WHERE_SOME and not any(isinstance(v, int) and v for v in values):
                continue
            out.append(f"| {label} | " + " | ".join(_cell(v) for v in values) + " |")
        out.append("")
    done = [(a.name, a.summary["end_time"], a.summary["drained"],
             a.summary["jobs"]["dead_lettered"] + a.summary["jobs"]["incident"]
             + a.summary["jobs"]["failed"]) for a in analyses]
    if len(analyses) > 1:
        out += ["| | " + " | ".join(n for n, *_ in done) + " |",
                "|---|" + "---:|" * len(done),
                "| jobs whose retries ran out | " + " | ".join(f"{d:,}" for *_, d in done)
                + " |",
                "| time to drain (s) | " + " | ".join(f"{t:,.1f}" if dr else f"not drained "
                                                      f"by {t:,.0f}" for _, t, dr, _d in done)
                + " |", ""]
    out += ["A call's wait is for a token of the rate limit or a place within the capacity. "
            "A job attempt in an outage is one that called the service while it was down. "
            "The answers add up to the calls, each counted once as its caller saw it: one "
            "it gave up on timed out, one whose caller crashed never answered. Such a call "
            "may still have ended at the service afterwards, and taken effect there"
            + (", or been refused there for a stale fencing token (then counted among those "
               "refused as well)" if any(a.summary["services"].get(n, {}).get("fenced")
                                         for a in analyses for n in names) else "") + ".", ""]
    return out


def _bin(end: float) -> float:
    """1 s bins, wider for long runs (at most about 2,000 bars)."""
    return max(1.0, float(int(end / 2000.0) + 1)) if end > 2000 else 1.0


def load_panels(a: Analysis) -> dict[str, tuple[pd.DataFrame, dict, list]]:
    """One panel per service of a run, with its reference lines (``references``)."""
    trace = a.result.trace
    end = _shown(a)
    return {name: (services.load(trace, name, end, _bin(end)),
                   services.intervals(trace, name, end),
                   references(a.result.scenario.services.get(name)))
            for name in services.names(trace)}


def references(spec: Any) -> list[tuple[float, str]]:
    """What bounds a service's load, in calls/s, as lines on its load figure: its
    capacity (concurrent calls) over its mean latency — the most it answers a second — its
    rate limit, and the load below which it recovers from an outage."""
    if spec is None:
        return []
    out = []
    mean = float(spec.latency.mean) if spec.latency is not None else 0.0
    if spec.capacity and mean > 0:
        out.append((spec.capacity / mean, f"capacity: {spec.capacity} at once ÷ mean latency "
                                          f"{mean:.3g} s = {spec.capacity / mean:.4g} calls/s"))
    if spec.rate_limit:
        out.append((spec.rate_limit[0], f"rate limit {spec.rate_limit[0]:g} calls/s"))
    if spec.recovery:
        out.append((spec.recovery[0], f"recovers below {spec.recovery[0]:g} calls/s "
                                      f"(held for {spec.recovery[1]:g} s)"))
    return out


def _shown(a: Analysis) -> float:
    """Up to the run's end, or a little past the last service event of a run that did not
    drain (a horizon of 30 days would squeeze what happened into one bar)."""
    end = a.result.end_time
    if a.result.drained:
        return end
    return min(end, services.last_event(a.result.trace, end) * 1.05 + 1.0)


def compared_loads(analyses: list[Analysis], folder: Path,
                   steps: Any = None) -> list[tuple[str, str]]:
    """One picture per service, a panel per variant, on one time axis; ``steps``
    (``base.progress.Steps``) is told each file as it begins."""
    from . import plots  # matplotlib: imported by what draws, not by ``--no-plots``

    made = []
    names = list(dict.fromkeys(n for a in analyses for n in a.summary.get("services", {})))
    end = max(_shown(a) for a in analyses)
    for i, name in enumerate(names):
        panels = {}
        for a in analyses:
            if name in a.summary.get("services", {}):
                panels[a.name] = (services.load(a.result.trace, name, end, _bin(end)),
                                  services.intervals(a.result.trace, name,
                                                     min(end, a.result.end_time)),
                                  references(a.result.scenario.services.get(name)))
        file = f"service_load_{i + 1}.png"
        step(steps, file)
        plots.save(plots.service_load(panels, f"load on {name}, by variant"), folder / file)
        made.append((f"load on {name} by variant", file))
    return made


def python_note(sc: Any, prefix: str) -> str:
    """A line saying which handlers Python functions ran (``with_handler``): the file alone
    runs their YAML models instead, and gives another trace."""
    ran = {n: getattr(h.python, "__qualname__", repr(h.python))
           for n, h in sc.handlers.items() if h.python is not None}
    if not ran:
        return ""
    which = ", ".join(f"{n} by the Python function {f}" for n, f in ran.items())
    return (f"{prefix}Handlers run in Python (jobsim.with_handler): {which}. This file alone "
            f"runs their models as written here instead, and gives another trace.\n")


def jobs_with_services(a: Analysis) -> pd.DataFrame:
    """The per-job table, with ``attempts_in_outage`` where the run called services."""
    jobs = jobs_frame(a.histories)
    if "services" in a.summary:
        per_job = services.attempts_in_outage(a.result.trace, a.result.end_time)
        jobs["attempts_in_outage"] = jobs["id"].map(per_job).fillna(0).astype("int64")
    return jobs
