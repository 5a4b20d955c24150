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

from ..executor.config import Fault
from ..database.store import DEADLETTER, FAILED, JOB, SUSPENDED, TIMER
from ..base.trace import K

#: operation -> the tables it takes jobs from
OPERATIONS = {"retry": (FAILED,), "cancel": (FAILED,), "move": (DEADLETTER,),
              "suspend": (JOB, TIMER), "activate": (SUSPENDED,)}

if TYPE_CHECKING:
    from .world import World


def schedule(world: "World", faults: tuple[Fault, ...]) -> None:
    for fault in faults:
        if fault.kind in OPERATIONS:
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
    elif f.kind in OPERATIONS:
        operate(world, f)
        world.source_done()
    elif f.kind == "restart_server":
        # The seed-003 server restores every activated job; a server whose jobs time out
        # (real Zeebe) recovers its state, deadlines included: activated jobs stay so.
        ids = world.store.unlock_all() if world.store.lock_expiry == "never" else []
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
    """An operator's action on the named job, or on every job it applies to (``all``):

    - ``retry`` a failed task (failsafe-executor): back to waiting, due now;
    - ``cancel`` a failed task: deleted;
    - ``move`` a dead letter back to executable with ``retries`` (Flowable's
      moveDeadLetterJobToExecutableJob);
    - ``suspend`` a waiting job (Flowable's suspended table: never acquired there; a job
      locked by a node is left to finish) and ``activate`` it again.
    """
    env, store, trace = world.env, world.store, world.trace
    tables = OPERATIONS[f.kind]
    if f.node == "all":
        ids = [r.id for t in tables for r in store.in_table(t)]
        ids.sort()
    else:
        jid = world.names.get(f.node)
        row = store.get(jid) if jid is not None else None
        ids = [jid] if row is not None and row.table in tables else []
    if f.kind == "suspend":  # a job being run (locked) is left to finish
        ids = [jid for jid in ids if store.get(jid).locked_by is None]
    for jid in ids:
        row = store.get(jid)
        if f.kind in ("retry", "move"):
            retries = f.retries if f.retries is not None else \
                world.scenario.initial_retries(row.handler)
            store.revive(jid, env.now, retries)
            world.live += 1
            trace.add(env.now, K["revived"], job=jid, a=retries, text=trace.text(f.kind))
        elif f.kind == "cancel":
            store.remove(jid)
            trace.add(env.now, K["cancelled"], job=jid)
        elif f.kind == "suspend":
            store.move(jid, SUSPENDED)
            trace.add(env.now, K["suspended"], job=jid, a=1)
        else:
            back = TIMER if row.kind == "timer" and world.scenario.executor.timer_table \
                else JOB
            store.move(jid, back)
            trace.add(env.now, K["suspended"], job=jid, a=0)
    if ids and f.kind in ("retry", "move", "activate"):
        world.db.touch(insert=True)
