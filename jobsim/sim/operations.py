"""An operator's actions (the file's ``operations``), each at its instant, on the named job
(a recurring schedule's name: its latest task) or on every job it applies to (``all``):

- ``retry`` a failed task (failsafe-executor): back to waiting, due now; a schedule it
  stopped goes on once it is done;
- ``cancel`` a failed task: deleted; a schedule it stopped is over;
- ``move`` a dead letter back to executable with ``retries`` (Flowable's
  moveDeadLetterJobToExecutableJob);
- ``suspend`` a waiting job (Flowable's suspended table: never acquired there; a job
  locked by a node is left to finish) and ``activate`` it again;
- ``fail`` an activated job (the Zeebe-like server's ``POST /jobs/{key}/fail``, called by
  an operator or a script): with ``retries`` above 0 the job waits again at once with the
  retries as sent (stored as sent, like a worker's fail), else it becomes what exhausted jobs
  become (an incident). The only release of a crashed worker's job short of a server restart.
  A job its worker still runs or holds is left to it: jobsim models the call for a worker
  that is gone.

An operation that names a job it cannot act on — not there yet, gone, or in another state —
does nothing, and says so: an ``operation_ignored`` event (the transcript's line, the
summary's ``operations_ignored``) with where the job was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.trace import K
from ..database.store import DEADLETTER, FAILED, INCIDENT, JOB, SUSPENDED, TIMER, in_table
from ..executor.config import Fault
from ..executor.operation_kinds import OPERATIONS

if TYPE_CHECKING:
    from .world import World

_TABLE_CODE = {DEADLETTER: 3, FAILED: 4, INCIDENT: 5, SUSPENDED: 6}


def operate(world: "World", f: Fault) -> None:
    """Carry out one operation (see the module's docstring)."""
    env, store, trace = world.env, world.store, world.trace
    tables = OPERATIONS[f.kind]
    if f.node == "all":
        ids = [r.id for t in tables for r in in_table(store, t)]
        ids.sort()
    else:
        jid = world.names.get(f.node)
        row = store.get(jid) if jid is not None else None
        ids = [jid] if row is not None and row.table in tables else []
    if f.kind == "suspend":  # a job being run (locked) is left to finish
        ids = [jid for jid in ids if store.get(jid).locked_by is None]
    elif f.kind == "fail":  # only an activated job, and not one its worker still has
        ids = [jid for jid in ids if store.get(jid).locked_by is not None
               and not _still_held(world, jid)]
    if not ids and f.node != "all":
        _ignored(world, f)
    for jid in ids:
        row = store.get(jid)
        if f.kind in ("retry", "move"):
            retries = f.retries if f.retries is not None else \
                world.scenario.initial_retries(row.handler)
            store.revive(jid, env.now, retries)
            world.live += 1
            trace.add(env.now, K["revived"], job=jid, a=retries, text=trace.text(f.kind))
            world.waits.operated(jid)
        elif f.kind == "fail":
            _fail(world, f, jid)
        elif f.kind == "cancel":
            store.remove(jid)
            trace.add(env.now, K["cancelled"], job=jid)
            world.waits.operated(jid, cancelled=True)
        elif f.kind == "suspend":
            store.move(jid, SUSPENDED)
            trace.add(env.now, K["suspended"], job=jid, a=1)
        else:
            back = TIMER if row.kind == "timer" and world.scenario.executor.timer_table \
                else JOB
            store.move(jid, back)
            trace.add(env.now, K["suspended"], job=jid, a=0)
    if ids and f.kind in ("retry", "move", "activate", "fail"):
        world.db.touch(insert=True)


def _still_held(world: "World", jid: int) -> bool:
    """Whether the node that holds ``jid``'s lock is up and still runs or queues it."""
    holder = world.store.get(jid).locked_by
    node = world.node(holder) if holder is not None else None
    return node is not None and node.alive and (
        node.running.get(jid, 0) > 0 or any(item[0] == jid for item in node.queue))


def _fail(world: "World", f: Fault, jid: int) -> None:
    """``POST /jobs/{key}/fail`` on an activated job whose worker is gone: retries stored as
    sent (omitted: 0); above 0 the job waits again at once, else what exhausted jobs become."""
    env, store, trace = world.env, world.store, world.trace
    now, retries = env.now, f.retries or 0
    error = f.error or "failed by an operator"
    text = trace.text("fail")
    trace.add(now, K["unlocked"], job=jid, text=text)  # the activation ends
    if retries > 0:
        store.reschedule(jid, now, retries, error, delay=0.0)
        trace.add(now, K["revived"], job=jid, a=retries, text=text)
        return
    exhausted = world.scenario.executor.exhausted
    terminal = {"incident": INCIDENT, "failed": FAILED}.get(exhausted, DEADLETTER)
    store.move(jid, terminal, error=error)
    code = {"dead_letter": 0, "incident": 1, "failed": 2}[exhausted]
    trace.add(now, K["dead_lettered"], job=jid, a=code, text=trace.text(error))
    world.finished(jid)
    world.job_done()


def _ignored(world: "World", f: Fault) -> None:
    """The named job is not where the operation acts: traced with where it was."""
    store, trace = world.store, world.trace
    jid = world.names.get(f.node)
    row = store.get(jid) if jid is not None else None
    node = -1
    if row is None:
        where = 0
    elif row.table in (JOB, TIMER) and row.locked_by is None:
        where = 1
    elif row.table in (JOB, TIMER):
        where = 7 if f.kind == "fail" else 2
        node = trace.node(row.locked_by)
    else:
        where = _TABLE_CODE.get(row.table, 0)
    trace.add(world.env.now, K["operation_ignored"], node, job=-1 if jid is None else jid,
              a=where, text=trace.text(f.kind))
