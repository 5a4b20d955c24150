"""The ``report`` section of a scenario file: what its report sets side by side, over how many
seeds, and what colours its timeline."""

from __future__ import annotations

from typing import Any

from ..executor.config import TIMELINE_COLOURS
from .spec import Enum, Int, ListOf, Obj

MAX_SEEDS = 1000  # the most seeds of report.seeds and jobsim run --seeds


def report_format(figure: Any) -> Obj:
    """The section's keys; ``figure`` checks a dotted path of the summary."""
    return Obj({"compare": ListOf(figure, max_len=20,
                                  doc="figures drawn side by side across the variants"),
                "seeds": Int(lo=1, hi=MAX_SEEDS, doc="report the headline figures and "
                             "expectations over this many seeds, as run --seeds does"),
                "timeline_colour": Enum(TIMELINE_COLOURS, "outcome",
                                        "what colours the executions on timeline.png: "
                                        "their outcome, their job's priority or handler")})
