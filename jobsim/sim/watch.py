"""A run watched while it runs: the event loop in chunks, with progress and a guard between.

``run_watched`` steps SimPy's loop a chunk of events at a time and calls ``progress`` and
``guard`` between chunks; they observe only, so the trace is the same with or without them.
``events_scheduled`` counts the events a run has scheduled (what its cost estimate predicts).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop
from typing import TYPE_CHECKING

import simpy
from simpy.core import StopSimulation

from .cost import estimate

if TYPE_CHECKING:
    from .world import World

_CHUNK = 4096


def events_scheduled(env: simpy.Environment) -> int:
    """How many events ``env`` has scheduled (SimPy numbers them as it schedules them)."""
    counter = getattr(env, "_eid", None)
    if counter is None:
        return 0
    return next(counter)


def steps(env: simpy.Environment, n: int) -> None:
    """Process the next ``n`` events of ``env`` — SimPy's ``Environment.step`` written out in
    one loop (the same order, the same failure of an undefused failed event), which saves a
    method call per event. Returns early when the schedule is empty; ``StopSimulation``
    raised by a callback ends it as it ends ``env.run``."""
    queue, pop = env._queue, heappop  # type: ignore[attr-defined]
    for _ in range(n):
        try:
            env._now, _, _, event = pop(queue)  # type: ignore[attr-defined]
        except IndexError:
            return
        callbacks, event.callbacks = event.callbacks, None
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):
            value = event._value
            exc = type(value)(*value.args)
            exc.__cause__ = value
            raise exc


def run_until(env: simpy.Environment, finish: simpy.Event) -> None:
    """``env.run(until=finish)``, through ``steps``."""
    finish.callbacks.append(StopSimulation.callback)
    queue = env._queue  # type: ignore[attr-defined]
    try:
        while queue:
            steps(env, 1 << 20)
    except StopSimulation:
        return
    raise RuntimeError("no scheduled events left but the run's end was not reached")


def run_watched(world: World, finish: simpy.Event,
                progress: Callable[[float, float], None] | None,
                guard: Callable[[int, float], None] | None) -> None:
    """``env.run(until=finish)`` in chunks of events, calling ``progress`` and ``guard``
    between them; they observe only, so the trace is the same with or without them.

    The fraction told is the simulated time over ``until``; a run until drained has no end
    time, so its fraction is the larger of the jobs ended and the executions started over
    the executions the cost estimate expects (held under 99 % until the run ends): jobs
    that all fail and retry end only late in the run, and a bar of ended jobs sat at 0 %
    while they ran again and again."""
    env, sc = world.env, world.scenario
    total = sc.job_count
    expected = 0.0
    if progress is not None and sc.until is None:
        expected = estimate(sc).executions
    finish.callbacks.append(StopSimulation.callback)
    n = 0
    queue = env._queue  # type: ignore[attr-defined]
    try:
        while True:
            if not queue:
                raise RuntimeError("no scheduled events left but the run's end was not "
                                   "reached")
            steps(env, _CHUNK)
            n += _CHUNK
            if guard is not None:
                guard(n, env.now)
            if progress is not None:
                if sc.until is not None:
                    fraction = env.now / sc.until
                else:
                    fraction = (world.created - world.live) / total if total else 0.0
                    if expected >= 1:
                        fraction = max(fraction, min(0.99, world.started / expected))
                progress(fraction, env.now)
    except StopSimulation:
        pass
    if progress is not None:
        progress(1.0, env.now)
