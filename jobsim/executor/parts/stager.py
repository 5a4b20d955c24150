"""The stager: a thread that looks, every ``stager_interval``, for rows waiting to be claimed
and, when it finds any, notifies the nodes as an insert does.

Oban's stager works so: once a second it makes scheduled and retryable jobs whose time has
come available and notifies the queues that have available jobs, and that notification is
what wakes the fetching producers. With ``wakeup: notify`` and a long ``poll_interval``, it is
the stager, not a node's own poll, that brings a retry or a scheduled job to the nodes'
attention. Each node that has the setting runs one; give it to a single node for a leader's
stager.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...database.db import StatementFailed

if TYPE_CHECKING:
    from .host import Host


def stager(node: Host) -> Generator[Any, Any, None]:
    env, cfg, store, db, me = node.env, node.cfg, node.db.store, node.db, node.name

    def waiting(now: float) -> bool:
        return store.next_eligible(now) == now

    while True:
        yield env.timeout(cfg.stager_interval)
        if node.paused is not None:
            yield node.paused
        try:
            found, _ = yield from db.run(me, waiting)
        except StatementFailed:
            node.failed("stage")
            continue
        if found:
            db.touch(insert=True)
