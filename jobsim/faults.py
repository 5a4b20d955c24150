"""The fault schedule: what goes wrong, and when.

One SimPy process per fault (a handful per run, never one per job):

- ``crash`` — the node dies at ``at``: its local queue and running executions are lost at
  that instant, its locks stay in the table; with ``restart_after`` it comes back that much
  later with an empty queue;
- ``pause`` — a stop-the-world stall of ``for`` (a GC pause, a frozen VM): the node resumes as
  if nothing happened, committing work whose lock may have expired meanwhile;
- ``slow_db`` — every statement latency drawn during the window is multiplied by ``factor``;
- ``partition`` — the node is cut off from the database for ``for``: its statements fail
  after ``timeout``;
- ``restart_server`` — the Zeebe-like server restarts: every activated job is restored to
  waiting with the same key and retries (the only way it reclaims a crashed worker's job).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from .config import Fault
from .trace import K

if TYPE_CHECKING:
    from .world import World


def schedule(world: "World", faults: tuple[Fault, ...]) -> None:
    for fault in faults:
        if fault.kind in ("retry", "cancel"):
            world._sources += 1  # a drained run waits for the operator's pending actions
        world.env.process(_one(world, fault))


def _one(world: "World", f: Fault) -> Generator[Any, Any, None]:
    env, trace = world.env, world.trace
    if f.at > 0:
        yield env.timeout(f.at)
    if f.kind == "crash":
        node = world.node(f.node)
        node.crash()
        if f.length is not None:
            yield env.timeout(f.length)
            node.restart()
    elif f.kind == "pause":
        world.node(f.node).pause(f.length)
    elif f.kind == "slow_db":
        world.db.slow(f.factor)
        trace.add(env.now, K["db_slowed"], x=f.factor)
        yield env.timeout(f.length)
        world.db.slow(1.0)
        trace.add(env.now, K["db_slowed"], x=1.0)
    elif f.kind in ("retry", "cancel"):
        operate(world, f)
        world.source_done()
    elif f.kind == "restart_server":
        ids = world.store.unlock_all()
        trace.add(env.now, K["server_restarted"], a=len(ids))
        text = trace.text("server restart")
        for rid in ids:
            trace.add(env.now, K["unlocked"], job=rid, text=text)
        world.db.touch(insert=True)  # waiting jobs again: wake the workers
    else:
        code = trace.node(f.node)
        world.db.cut(f.node, f.timeout)
        trace.add(env.now, K["partition"], code, a=1, x=f.timeout)
        yield env.timeout(f.length)
        world.db.heal(f.node)
        trace.add(env.now, K["partition"], code, a=0, x=f.timeout)


def operate(world: "World", f: Fault) -> None:
    """An operator's action on failed jobs (failsafe-executor's ``retry`` and ``cancel``):
    the named job, or every failed one."""
    from .store import FAILED

    env, store, trace = world.env, world.store, world.trace
    if f.node == "all":
        ids = [r.id for r in store.in_table(FAILED)]
    else:
        jid = world.names.get(f.node)
        ids = [jid] if jid is not None and store.get(jid) is not None \
            and store.get(jid).table == FAILED else []
    for jid in ids:
        row = store.get(jid)
        if f.kind == "retry":
            retries = world.scenario.initial_retries(row.handler)
            store.revive(jid, env.now, retries)
            world.live += 1
            trace.add(env.now, K["revived"], job=jid, a=retries, text=trace.text("retry"))
        else:
            store.remove(jid)
            trace.add(env.now, K["cancelled"], job=jid)
    if ids and f.kind == "retry":
        world.db.touch(insert=True)
