"""The timer mover: timers the timer loop locked go to the job table (a delete and an insert in
one statement), straight to the node's pool while it has room (the hint), else unlocked for
any node.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...base.trace import K
from ...database.db import StatementFailed
from ...database.store import JOB, TIMER

if TYPE_CHECKING:
    from .host import Host


def move(node: Host) -> Generator[Any, Any, None]:
    """Move the timers this node locked to the job table (delete + insert, one statement
    here): each goes in locked by this node and straight to its pool while the pool has
    room (the hint), else unlocked for any node's acquisition."""
    ids, node.timers_locked = node.timers_locked, []
    store, me, cfg = node.db.store, node.name, node.cfg

    def move(now: float) -> list[tuple[int, float, bool]]:
        out = []
        room = cfg.queue_size - len(node.queue) + len(node.idle)
        for rid in ids:
            row = store.get(rid)
            if row is None or row.table != TIMER or row.locked_by != me:
                continue
            store.move(rid, JOB)
            hinted = cfg.hint and room > 0
            if hinted:
                room -= 1
                store.lock([rid], me, now, now + cfg.lock_time, guard=False)
            out.append((rid, row.due, hinted))
        return out

    try:
        moved, _ = yield from node.db.run(me, move, wakes=True, rows=ids)
    except StatementFailed:
        node.failed("move timers")
        return
    now, trace = node.env.now, node.trace
    for rid, due, hinted in moved:
        trace.add(now, K["timer_due"], node.code, rid, x=due)
        if hinted:
            node.hint(store.rows[rid])
