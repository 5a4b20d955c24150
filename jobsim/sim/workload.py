"""Arrivals: the jobs a run creates, as a few SimPy processes (never one per job).

- explicit jobs, each created at ``at`` and due ``due_in`` later (a timer is a job whose due
  date lies ahead);
- streams: Poisson arrivals at ``rate`` per second up to ``count`` jobs, from the stream
  ``workload/<name>``; or, with no rate, a burst of ``count`` jobs at ``start``;
- recurring schedules: ``count`` jobs, one every ``every`` (``fixed_rate``: the schedule does
  not wait for the jobs) or ``every`` after the previous one reached a terminal state
  (``fixed_delay``: a slow or failing job pushes the next one back).

Explicit ids are kept; the others are numbered after the largest explicit id, in order of
creation.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ..executor.config import JobSpec, RecurringSpec, StreamSpec

if TYPE_CHECKING:
    from .world import World


def explicit_jobs(world: "World", jobs: tuple[JobSpec, ...]) -> Generator[Any, Any, None]:
    env = world.env
    for spec in sorted(jobs, key=lambda j: j.at):  # stable: file order at equal times
        if spec.at > env.now:
            yield env.timeout(spec.at - env.now)
        world.create(spec.handler, spec.kind, spec.priority, spec.due_in, spec.id, spec.name,
                     spec.node, spec.queue, spec.record_failure)
    world.source_done()


def stream(world: "World", spec: StreamSpec) -> Generator[Any, Any, None]:
    env = world.env
    if spec.start > 0:
        yield env.timeout(spec.start)
    create = world.create
    nodes = spec.nodes or (None,)  # the nodes that create its jobs, in turn
    h, kind, prio, due_in, queue = spec.handler, spec.kind, spec.priority, spec.due_in, \
        spec.queue
    plain = not spec.nodes and queue is None  # the common case: no keywords to pass
    if spec.rate is None:
        for i in range(spec.count):
            if plain:
                create(h, kind, prio, due_in)
            else:
                create(h, kind, prio, due_in, node=nodes[i % len(nodes)], queue=queue)
    else:
        rng = world.streams.stream(f"workload/{spec.name}")
        mean = 1.0 / spec.rate
        timeout = env.timeout
        exponential = rng.exponential
        for i in range(spec.count):
            yield timeout(mean * exponential())
            if plain:
                create(h, kind, prio, due_in)
            else:
                create(h, kind, prio, due_in, node=nodes[i % len(nodes)], queue=queue)
    world.source_done()


def recurring(world: "World", spec: RecurringSpec) -> Generator[Any, Any, None]:
    env = world.env
    if spec.start > 0:
        yield env.timeout(spec.start)
    for i in range(spec.count):
        if i and spec.mode == "fixed_rate":
            yield env.timeout(spec.every)
        jid = world.create(spec.handler, spec.kind, spec.priority, 0.0)
        if spec.mode == "fixed_delay" and i < spec.count - 1:
            yield world.wait_for(jid)
            yield env.timeout(spec.every)
    world.source_done()
