"""A broken invariant: which, for which job, why, and the events that show it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    invariant: str
    job: int
    message: str
    events: tuple[int, ...]
