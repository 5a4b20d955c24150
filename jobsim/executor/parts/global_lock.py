"""Flowable's global acquire lock: one row per table (async jobs, timers) that a node must hold
to acquire, taken with an optimistic update, waited for, and overridden when its holder is
older than ``global_lock_force`` (a crashed node).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...database.store import TIMER

if TYPE_CHECKING:
    from .host import Host


def take(node: Host, table: str) -> Generator[Any, Any, bool]:
    """Flowable's global acquire lock (a row of ACT_GE_PROPERTY, updated optimistically;
    one for async jobs, one for timers): poll every ``global_lock_poll`` for up to
    ``global_lock_wait``; a holder older than ``global_lock_force`` (a crashed node) is
    overridden. True if this node holds it."""
    env, db, cfg, me = node.env, node.db, node.cfg, node.name
    locks, name = db.global_locks, "acquireTimerJobsLock" if table == TIMER \
        else "acquireAsyncJobsLock"
    give_up = env.now + cfg.global_lock_wait

    def take(now: float) -> bool:
        holder = locks.get(name)
        if holder is None or holder[0] == me or now - holder[1] >= cfg.global_lock_force:
            locks[name] = (me, now)
            return True
        return False

    while True:
        got, _ = yield from db.run(me, take)
        if got:
            return True
        if env.now + cfg.global_lock_poll > give_up:
            return False
        yield env.timeout(cfg.global_lock_poll)


def release(node: Host, table: str) -> Generator[Any, Any, None]:
    locks, me = node.db.global_locks, node.name
    name = "acquireTimerJobsLock" if table == TIMER else "acquireAsyncJobsLock"

    def release(now: float) -> None:
        if locks.get(name, (None,))[0] == me:
            del locks[name]

    yield from node.db.run(me, release)
