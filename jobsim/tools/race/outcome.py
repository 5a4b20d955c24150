"""What a race showed, real or simulated (``Outcome``), and the qualitative verdict the two
must agree on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Outcome:
    """What one race (real or simulated) showed."""

    source: str  # "real" or "simulated"
    jobs: int
    workers: int
    batch: int
    attempts: int = 0
    claims: int = 0  # rows claimed, a job claimed twice counts twice
    jobs_claimed: int = 0
    doubled_jobs: int = 0  # jobs claimed by more than one claim
    extra_claims: int = 0  # claims beyond the first of a job
    lost_races: int = 0
    errors: int = 0
    empty: int = 0
    partial: int = 0
    full: int = 0
    seconds: float = float("nan")
    error_kinds: dict[str, int] = field(default_factory=dict)
    #: the share of the workers' time spent runnable but waiting for a core (nan: unknown)
    cpu_wait: float = float("nan")
    #: CPU seconds the machine (the model: its cores) spent while the race ran (nan: unknown)
    cpu_seconds: float = float("nan")
    #: a real race's timed statements, per worker (``workers.Clock``): what a profile is
    #: drawn from
    timings: list[dict[str, Any]] = field(default_factory=list, repr=False)

    @property
    def double_share(self) -> float:
        """Share of the jobs claimed more than once."""
        return self.doubled_jobs / self.jobs if self.jobs else 0.0

    @property
    def cpu_per_claim(self) -> float:
        """CPU seconds per row claimed."""
        return self.cpu_seconds / self.claims if self.claims else math.nan

    @property
    def per_second(self) -> float:
        return self.claims / self.seconds if self.seconds and self.seconds > 0 else math.nan

    def row(self) -> dict[str, Any]:
        a = max(self.attempts, 1)
        return {"double acquisitions (jobs)": self.doubled_jobs,
                "share of jobs claimed twice or more": round(self.double_share, 4),
                "extra claims": self.extra_claims, "lost races": self.lost_races,
                "errors (40001 / BUSY)": self.errors, "attempts": self.attempts,
                "empty attempts": round(self.empty / a, 4),
                "partial batches": round(self.partial / a, 4),
                "full batches": round(self.full / a, 4),
                "jobs claimed": self.jobs_claimed,
                "claims per second": round(self.per_second, 1)}



def verdict(o: Outcome) -> dict[str, Any]:
    """The qualitative outcome the real and simulated runs must agree on."""
    a = max(o.attempts - o.errors, 1)
    return {"safe": o.doubled_jobs == 0,
            "all_or_nothing": o.partial == 0 and o.full > 0,
            "lost_races": o.lost_races > 0,
            "errors": o.errors > 0,
            "full_share": o.full / a}

