"""The most jobs that wait for a thread, in a fluid model of a scenario's workload (for the
lint's check of a local queue that outlives its lock)."""

from __future__ import annotations

import math

from ..executor.config import Scenario


def peak_backlog(sc: Scenario, handlers: frozenset[str], threads: int, mean: float) -> float:
    """The most jobs of ``handlers`` waiting for a thread, in a fluid model: explicit jobs and
    bursts arrive at their due instant, Poisson streams and recurring schedules at their
    rate, and ``threads`` servers of mean ``mean`` drain them: dX/dt = rate − min(X,
    threads)/mean; the backlog is X − threads."""
    mass: dict[float, float] = {}  # due instant → jobs
    step: dict[float, float] = {}  # instant → change of the arrival rate
    for j in sc.jobs:
        if j.handler in handlers and j.record_failure is None:
            mass[j.at + j.due_in] = mass.get(j.at + j.due_in, 0) + 1
    segments = [(s.start + s.due_in, s.count / s.rate, s.rate) for s in sc.streams
                if s.handler in handlers and s.rate] + \
        [(r.start, r.count * r.every, 1 / r.every) for r in sc.recurring
         if r.handler in handlers and r.every > 0]
    for s in sc.streams:
        if s.handler in handlers and s.rate is None:  # a burst
            mass[s.start + s.due_in] = mass.get(s.start + s.due_in, 0) + s.count
    for a, length, r in segments:
        step[a], step[a + length] = step.get(a, 0.0) + r, step.get(a + length, 0.0) - r
    cap, x, peak, rate, now = threads / mean, 0.0, 0.0, 0.0, None
    for t in sorted(mass.keys() | step.keys()):
        dt = 0.0 if now is None else t - now
        if x >= threads and rate < cap and dt > 0:  # drains linearly down to all-busy
            fall = min(dt, (x - threads) / (cap - rate))
            x, dt = x - (cap - rate) * fall, dt - fall
        top = rate * mean  # with a thread idle, x nears rate × mean exponentially
        if x >= threads and rate >= cap:
            x += (rate - cap) * dt
        elif dt > 0 and top > threads and \
                (cross := mean * math.log((top - x) / (top - threads))) < dt:
            x = threads + (rate - cap) * (dt - cross)
        elif dt > 0:
            x = top + (x - top) * math.exp(-dt / mean)
        x, rate = x + mass.get(t, 0), max(0.0, rate + step.get(t, 0.0))
        peak, now = max(peak, x - threads), t
    return peak
