"""The heartbeat: every ``heartbeat`` it extends the locks of the jobs the node is running
(``heartbeat_scope: running``) or of every job it holds, those waiting in its local queue too
(``held``).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...base.trace import K
from ...database.db import StatementFailed

if TYPE_CHECKING:
    from .host import Host


def heartbeat(node: Host) -> Generator[Any, Any, None]:
    env, cfg, store, me = node.env, node.cfg, node.world.store, node.name
    while True:
        yield env.timeout(cfg.heartbeat)
        if node.paused is not None:
            yield node.paused
        held = set(node.running)
        if cfg.heartbeat_scope == "held":  # also the jobs waiting in the local queue
            held.update(item[0] for item in node.queue)
        if not held:
            continue
        ids = sorted(held)
        try:
            done, _ = yield from node.db.run(
                me, lambda now: (store.extend(ids, me, now + cfg.lock_time),
                                 now + cfg.lock_time), rows=ids)
        except StatementFailed:
            node.failed("heartbeat")
            continue
        extended, until = done
        for jid in extended:
            node.trace.add(env.now, K["lock_extended"], node.code, jid, a=1, x=until)
