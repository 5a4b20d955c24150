"""Figures of a run: pure functions from tables to matplotlib ``Figure`` objects.

Every function takes data (the per-job table of ``metrics.jobs_frame``, the trace table of
``metrics.trace_frame``, the duplicates of ``history``, or plain lists) and returns a new
``Figure``; the figures of one run (``node_timeline``, ``table_depth``, ``latency_cdf``,
``duplicates_by_cause``) also take the run itself, a ``RunResult`` or an ``Analysis``. Nothing here uses ``matplotlib.pyplot``: there is no global figure registry to
leak into or to close, and no backend is chosen (``Figure.savefig`` draws with Agg). Nothing
is written to disk except by ``save``. The output depends only on the input: categories are
sorted, subsets are evenly spaced, there is no randomness. An empty input gives a figure
with a "no data" note, never an exception.

Kinds of trace events used (see ``trace.KINDS``): ``job_created``, ``locked``,
``lock_extended``, ``unlocked``, ``exec_start``, ``exec_end``, ``completed``,
``retry_scheduled``, ``dead_lettered`` and, when present, ``node_crashed``,
``node_restarted``, ``node_paused`` (``x`` = pause length) and ``node_resumed``.

One module per kind of figure: ``latency`` (start-delay CDFs), ``timeline`` (executions per
node), ``depth`` (jobs in the table over time), ``duplicates`` (double runs by cause),
``comparisons`` (one figure across variants, grid points or databases), ``services`` (the
load on each downstream service beside its health), ``load`` (busy threads, waiting jobs,
start delay and statements per second over time; the nodes' poll phases); ``common`` holds
what they share.
"""

from __future__ import annotations

from .common import DPI, save
from .comparisons import compare_bars, race_bars, sweep_bands
from .depth import table_depth, table_depth_by_variant
from .duplicates import duplicates_by_cause
from .latency import latency_cdf, start_delay_by_variant
from .load import load_by_variant, load_over_time, poll_phases
from .services import service_load
from .timeline import node_timeline

__all__ = ["DPI", "compare_bars", "duplicates_by_cause", "latency_cdf", "load_by_variant",
           "load_over_time", "node_timeline", "poll_phases", "race_bars", "save",
           "service_load", "start_delay_by_variant", "sweep_bands", "table_depth",
           "table_depth_by_variant"]


def __dir__() -> list[str]:
    """The figures only (``dir(jobsim.plots)``), not the modules they are drawn in."""
    return sorted(__all__)
