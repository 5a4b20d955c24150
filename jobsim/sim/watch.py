"""A run watched while it runs: the event loop in chunks, with progress and a guard between.

``run_watched`` steps SimPy's loop a chunk of events at a time and calls ``progress`` and
``guard`` between chunks; they observe only, so the trace is the same with or without them.
``events_scheduled`` counts the events a run has scheduled (what its cost estimate predicts).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import simpy
from simpy.core import StopSimulation

if TYPE_CHECKING:
    from .world import World

_CHUNK = 4096


def events_scheduled(env: simpy.Environment) -> int:
    """How many events ``env`` has scheduled (SimPy numbers them as it schedules them)."""
    counter = getattr(env, "_eid", None)
    if counter is None:
        return 0
    return next(counter)


def run_watched(world: World, finish: simpy.Event,
                progress: Callable[[float, float], None] | None,
                guard: Callable[[int, float], None] | None) -> None:
    """``env.run(until=finish)`` in chunks of events, calling ``progress`` and ``guard``
    between them; they observe only, so the trace is the same with or without them."""
    env, sc, step = world.env, world.scenario, world.env.step
    total = (len(sc.jobs) + sum(s.count for s in sc.streams)
             + sum(r.count for r in sc.recurring))
    finish.callbacks.append(StopSimulation.callback)
    chunk = range(_CHUNK)
    n = 0
    try:
        while True:
            for _ in chunk:
                step()
            n += _CHUNK
            if guard is not None:
                guard(n, env.now)
            if progress is not None:
                if sc.until is not None:
                    fraction = env.now / sc.until
                else:
                    fraction = (world.created - world.live) / total if total else 0.0
                progress(fraction, env.now)
    except StopSimulation:
        pass
    if progress is not None:
        progress(1.0, env.now)
